package vfstest_test

import (
	"testing"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/io/vfs/vfstest"
	"github.com/sluicemq/sluice/sim/memfs"
)

// TestMemFS runs the shared suite, durability included, on the simulator's
// in-memory file system. fsio runs the same suite in fsio/fsio_test.go.
func TestMemFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FS { return memfs.New() })
}
