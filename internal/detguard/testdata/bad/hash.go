package bad

import (
	"hash/maphash" // want import
	"weak"         // want import
)

// seed is drawn afresh by every process, so Hash gives a key a different
// value in every run.
var seed = maphash.MakeSeed()

// Hash hashes s with the per-process seed.
func Hash(s string) uint64 { return maphash.String(seed, s) }

// Cache holds weak pointers, which turn nil whenever the collector runs.
type Cache struct{ p weak.Pointer[int] }
