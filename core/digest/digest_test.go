package digest

import (
	"testing"

	"lukechampine.com/blake3"
)

// Hasher's digest must be BLAKE3's for any input, however it is cut
// into writes: every length around the chunk (1 KiB) and block (16 KiB)
// boundaries and a few long ones, in random write sizes, with Sum asked
// between writes too.
func TestHasherIsBLAKE3(t *testing.T) {
	data := make([]byte, 300<<10)
	x := uint64(1)
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	var lengths []int
	for _, b := range []int{0, 1024, 2048, 16 << 10, 32 << 10, 48 << 10, 64 << 10, 256 << 10} {
		for d := -2; d <= 2; d++ {
			if b+d >= 0 {
				lengths = append(lengths, b+d)
			}
		}
	}
	lengths = append(lengths, 7, 1000, 5000, 100000, 257<<10, 300<<10)
	// Every count of whole chunks before the last in a block's tail, at
	// the first block and past a few (Sum compresses them as subtrees).
	for j := 0; j < 16; j++ {
		lengths = append(lengths, j<<10+1, 3*16<<10+j<<10+1, 3*16<<10+j<<10+1023)
	}
	for _, n := range lengths {
		want := blake3.Sum256(data[:n])
		for split := 0; split < 4; split++ {
			var h Hasher
			for off := 0; off < n; {
				k := n - off
				switch split {
				case 1:
					k = min(k, 1+int(x%3000))
				case 2:
					k = min(k, 1+int(x%40000))
				case 3:
					k = min(k, 16<<10)
				}
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				h.Write(data[off : off+k])
				off += k
				if split == 1 && off < n {
					if got, part := h.Sum(), blake3.Sum256(data[:off]); got != part {
						t.Fatalf("len %d: Sum after %d bytes differs", n, off)
					}
				}
			}
			if got := h.Sum(); got != want {
				t.Fatalf("len %d split %d: digest differs from BLAKE3", n, split)
			}
		}
		// Sum256 takes a shorter way for one chunk or less.
		if got := Sum256(data[:n]); got != want {
			t.Fatalf("len %d: Sum256 differs from BLAKE3", n)
		}
	}
}
