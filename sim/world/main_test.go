package world

import (
	"os"
	"runtime/debug"
	"testing"
)

// The simulator trades memory for speed as the sluice command does: worlds
// allocate fast and die young.
func TestMain(m *testing.M) {
	debug.SetGCPercent(400)
	os.Exit(m.Run())
}
