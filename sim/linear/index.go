package linear

import "math"

// index maps uint64 keys (publish keys, offsets) to op indices: an
// open-addressing table sized once for the entries it will hold. It stands
// in for Go maps, which grew entry by entry and cost pin about 2 MB and a
// third of its time on a standard run's history. Nothing iterates it.
type index struct {
	keys  []uint64
	vals  []int32 // op index + 1; 0: an empty slot
	shift uint    // 64 - log2(len(keys))
}

// opsMax bounds the history an index can address.
const opsMax = math.MaxInt32 - 1

// newIndex returns an index for at most n entries (at most 3/4 full).
func newIndex(n int) index {
	size, shift := 16, uint(60)
	for 3*size < 4*n {
		size, shift = 2*size, shift-1
	}
	return index{keys: make([]uint64, size), vals: make([]int32, size), shift: shift}
}

// slot returns where the probe for k starts (Fibonacci hashing).
func (t *index) slot(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> t.shift) }

// get returns the value of k.
func (t *index) get(k uint64) (int, bool) {
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch {
		case t.vals[i] == 0:
			return 0, false
		case t.keys[i] == k:
			return int(t.vals[i]) - 1, true
		}
	}
}

// put sets the value of k; the index must not be full (newIndex's n).
func (t *index) put(k uint64, v int) {
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		if t.vals[i] == 0 || t.keys[i] == k {
			t.keys[i], t.vals[i] = k, int32(v+1)
			return
		}
	}
}
