package linear

import "testing"

// index must answer as a map would, for keys of any spread (offsets are
// dense, publish keys are not).
func TestIndexIsAMap(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 5000} {
		for _, spread := range []uint64{1, 3, 1 << 40, 0x9E3779B97F4A7C15} {
			ix, m := newIndex(n), map[uint64]int{}
			for i := 0; i < n; i++ {
				k := uint64(i) * spread
				if i%3 == 0 {
					k = uint64(i/3) * spread // a key put again
				}
				ix.put(k, i)
				m[k] = i
			}
			for i := 0; i < 2*n+2; i++ {
				k := uint64(i) * spread
				v, ok := ix.get(k)
				w, wok := m[k]
				if ok != wok || v != w {
					t.Fatalf("n=%d spread=%d: get(%d) = %d, %v; want %d, %v", n, spread, k, v, ok, w, wok)
				}
			}
		}
	}
}
