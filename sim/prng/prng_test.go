package prng

import "testing"

func TestSameSeedSameStream(t *testing.T) {
	a, b := New(42), New(42)
	for i := 0; i < 1000; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatalf("streams of one seed differ at draw %d", i)
		}
	}
}

func TestDeriveSeparatesComponents(t *testing.T) {
	if Derive(1, "net") == Derive(1, "disk") {
		t.Fatal("two components derived the same sub-seed")
	}
	if Derive(1, "net") != Derive(1, "net") {
		t.Fatal("derive is not a function of its inputs")
	}
}

func TestIntnBounds(t *testing.T) {
	r := New(7)
	seen := make([]int, 5)
	for i := 0; i < 10000; i++ {
		v := r.Intn(5)
		if v < 0 || v >= 5 {
			t.Fatalf("Intn(5) = %d", v)
		}
		seen[v]++
	}
	for v, n := range seen {
		if n < 1500 {
			t.Fatalf("value %d drawn %d times of 10000: not uniform", v, n)
		}
	}
}

// The first outputs of seed 0 are pinned: a change here changes every
// recorded trace hash and saved regression.
func TestPinnedStream(t *testing.T) {
	r := New(0)
	got := [3]uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	want := [3]uint64{0x99ec5f36cb75f2b4, 0xbf6e1f784956452a, 0x1a5f849d4933e6e0}
	if got != want {
		t.Fatalf("got %v want %v", got, want)
	}
}
