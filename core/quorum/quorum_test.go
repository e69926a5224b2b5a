package quorum

import "testing"

func TestConfirmedEnd(t *testing.T) {
	cases := []struct {
		name      string
		owner     uint64
		followers []uint64
		need      int
		want      uint64
		ok        bool
	}{
		{"W=1: the owner alone", 7, nil, 0, 7, true},
		{"W=2 of 3: the best follower", 7, []uint64{3, 5}, 1, 5, true},
		{"W=2 of 3: the owner is behind", 4, []uint64{3, 5}, 1, 4, true},
		{"W=3 of 3: the slowest follower", 9, []uint64{8, 6}, 2, 6, true},
		{"W=3 of 5: second best", 9, []uint64{1, 8, 6, 2}, 2, 6, true},
		{"too few reports", 9, []uint64{8}, 2, 0, false},
		{"no report at all", 9, nil, 1, 0, false},
		{"ties", 5, []uint64{5, 5, 5}, 3, 5, true},
	}
	for _, c := range cases {
		in := append([]uint64(nil), c.followers...)
		got, ok := ConfirmedEnd(c.owner, c.followers, c.need, make([]uint64, 0, 4))
		if got != c.want || ok != c.ok {
			t.Errorf("%s: ConfirmedEnd = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
		for i := range in {
			if in[i] != c.followers[i] {
				t.Fatalf("%s: followers changed", c.name)
			}
		}
	}
}

func TestRecoveryThreshold(t *testing.T) {
	cases := []struct{ e, w, r int }{
		{3, 2, 2}, {3, 3, 1}, {3, 1, 3}, {5, 3, 3}, {5, 5, 1}, {1, 1, 1}, {3, 4, 0}, {3, 0, 0},
	}
	for _, c := range cases {
		if got := RecoveryThreshold(c.e, c.w); got != c.r {
			t.Errorf("R(E=%d, W=%d) = %d, want %d", c.e, c.w, got, c.r)
		}
		if c.r > 0 && !Intersect(c.e, c.w, c.r) {
			t.Errorf("E=%d W=%d R=%d must intersect", c.e, c.w, c.r)
		}
		if c.r > 1 && Intersect(c.e, c.w, c.r-1) {
			t.Errorf("E=%d W=%d R=%d must not intersect: R is the least", c.e, c.w, c.r-1)
		}
	}
}

func TestWitnesses(t *testing.T) {
	eligible := []uint32{1, 2, 3}
	cases := []struct {
		reports []uint32
		want    int
	}{
		{nil, 0},
		{[]uint32{1}, 1},
		{[]uint32{1, 1, 1}, 1},          // retries count once
		{[]uint32{1, 4, 2}, 2},          // not eligible: n4
		{[]uint32{3, 2, 1, 2, 3, 9}, 3}, // all three, once each
	}
	for _, c := range cases {
		if got := Witnesses(eligible, c.reports); got != c.want {
			t.Errorf("witnesses of %v = %d, want %d", c.reports, got, c.want)
		}
	}
}
