//go:build linux && !linux

package bad

import "runtime/debug" // want import

// Never built on any platform, but still checked syntactically.
func gc() { go debug.FreeOSMemory() } // want go
