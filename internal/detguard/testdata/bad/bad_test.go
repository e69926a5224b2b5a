package bad

import (
	"testing"
	"time"
)

// Tests may use whatever they like.
func TestNothing(t *testing.T) {
	go func() {}()
	_ = time.Now()
}
