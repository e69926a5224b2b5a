package core

import (
	"testing"

	"github.com/sluicemq/sluice/core/seam"
)

// The parting point of a log and the source's history: where their epochs
// first differ, or the shorter one's end.
func TestPartingPoint(t *testing.T) {
	es := func(pairs ...uint64) []seam.EpochStart {
		var out []seam.EpochStart
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, seam.EpochStart{Epoch: pairs[i], Offset: pairs[i+1]})
		}
		return out
	}
	src := es(1, 0, 3, 10, 5, 20) // epochs 1 [0,10), 3 [10,20), 5 [20,30)
	cases := []struct {
		name   string
		epochs []seam.EpochStart
		end    uint64
		want   uint64
	}{
		{"empty", nil, 0, 0},
		{"a prefix", es(1, 0, 3, 10), 15, 15},
		{"the same", src, 30, 30},
		{"longer in the last epoch", src, 35, 30},
		{"a superseded suffix", es(1, 0, 3, 10, 4, 17), 25, 17},
		{"parts at the first epoch change", es(1, 0, 2, 10), 12, 10},
		{"parts at once", es(2, 0), 5, 0},
		{"an epoch starting later", es(1, 0, 3, 12), 20, 10},
	}
	for _, c := range cases {
		if got := partingPoint(c.epochs, c.end, src, 30, 0); got != c.want {
			t.Errorf("%s: parting point %d, want %d", c.name, got, c.want)
		}
	}
}
