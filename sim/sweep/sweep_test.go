package sweep

import (
	"testing"

	"github.com/sluicemq/sluice/sim/world"
)

func TestShardsAreDisjointAndCover(t *testing.T) {
	for _, total := range []uint64{0, 1, 7, 100, 20000} {
		for _, n := range []int{1, 2, 3, 8} {
			next := uint64(10)
			for k := 0; k < n; k++ {
				first, count := Shard(10, total, k, n)
				if first != next {
					t.Fatalf("total %d n %d: shard %d starts at %d, want %d", total, n, k, first, next)
				}
				next = first + count
			}
			if next != 10+total {
				t.Fatalf("total %d n %d: shards end at %d, want %d", total, n, next, 10+total)
			}
		}
	}
}

func TestResultsArriveInSeedOrder(t *testing.T) {
	var got []uint64
	Run(Job{First: 3, Count: 6, Parallel: 3, Profile: func(uint64) world.Profile {
		p := world.Standard()
		p.DurationMs = 200
		return p
	}, Done: func(r world.Result, err error) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Seed)
	}})
	for i, s := range got {
		if s != uint64(3+i) {
			t.Fatalf("results out of order: %v", got)
		}
	}
	if len(got) != 6 {
		t.Fatalf("got %d results, want 6", len(got))
	}
}
