package sweep

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/core/bugs"

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
	}, Done: func(o Outcome) bool {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		got = append(got, o.Result.Seed)
		return true
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

func short(uint64) world.Profile {
	p := world.Standard()
	p.DurationMs = 200
	return p
}

// Done returning false stops the sweep right there (--fail-fast): the seeds
// reported are the same whatever the parallelism.
func TestDoneFalseStopsInSeedOrder(t *testing.T) {
	for _, par := range []int{1, 3} {
		var got []uint64
		sum := Run(Job{First: 1, Count: 40, Parallel: par, Profile: short, Done: func(o Outcome) bool {
			got = append(got, o.Seed)
			return o.Seed != 5
		}})
		if len(got) != 5 || got[4] != 5 || sum.Reported != 5 || !sum.Stopped {
			t.Fatalf("parallel %d: reported %v (%+v), want seeds 1..5 and a stop", par, got, sum)
		}
	}
}

// A seed over its wall-clock bound is reported as timed out: an error of
// the run, with no verdict.
func TestSeedTimeout(t *testing.T) {
	var got []Outcome
	Run(Job{First: 1, Count: 2, Parallel: 2, SeedTimeout: time.Nanosecond, Profile: func(uint64) world.Profile {
		p := world.Standard()
		p.DurationMs = 5000
		p.Bugs = bugs.SyncSkip // it would fail, had it the time
		return p
	}, Done: func(o Outcome) bool { got = append(got, o); return true }})
	if len(got) != 2 {
		t.Fatalf("got %d outcomes, want 2", len(got))
	}
	for _, o := range got {
		if o.Err != ErrTimedOut || o.Result.Failed != 0 {
			t.Fatalf("seed %d: err %v, %d failures; want ErrTimedOut and no verdict", o.Seed, o.Err, o.Result.Failed)
		}
	}
}

// A closed Stop ends the sweep: seeds already reported stay reported,
// and Run returns.
func TestStopEndsTheSweep(t *testing.T) {
	stop := make(chan struct{})
	n := 0
	sum := Run(Job{First: 1, Count: 1000, Parallel: 2, Profile: short, Stop: stop, Done: func(o Outcome) bool {
		n++
		if n == 3 {
			close(stop)
		}
		return true
	}})
	if !sum.Stopped || sum.Reported < 3 || sum.Reported > 3+8 || uint64(n) != sum.Reported {
		t.Fatalf("stopped=%v reported=%d done=%d, want a stop shortly after 3", sum.Stopped, sum.Reported, n)
	}
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"1/3x", "3/3", "1", "/3", "1/0", "-1/3", "1/ 3", "a/b", "1/2/3"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted it", bad)
		}
	}
	if k, n, err := ParseShard("3/8"); err != nil || k != 3 || n != 8 {
		t.Fatalf("ParseShard(3/8) = %d, %d, %v", k, n, err)
	}
}
