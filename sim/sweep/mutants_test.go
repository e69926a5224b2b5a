package sweep

import (
	"testing"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/world"
)

// Each checker the simulator gained is shown catching a planted bug that the
// checkers before it missed (0 of 200 seeds each, measured when they were
// added): the disk's own truth catches a log that skips syncs or forgets the
// directory after a segment roll; deliveries counted on receipt catch a
// broker that never redelivers a lost consumer's records; convergence
// catches followers starved of records.
func TestNewCheckersCatchPlantedBugs(t *testing.T) {
	cases := []struct {
		bug      bugs.Set
		checkers []string // any of these
	}{
		{bugs.SyncSkip, []string{"sync-durable"}},
		{bugs.NoDirSyncOnRoll, []string{"sync-durable"}},
		{bugs.NoRedeliver, []string{"at-least-once", "liveness"}},
		{bugs.StarveFollowers, []string{"converged", "liveness"}},
	}
	for _, c := range cases {
		t.Run(c.bug.String(), func(t *testing.T) {
			r, found := FirstFailure(1, 200, 2, func(s uint64) world.Profile {
				p := world.Draw(s)
				p.Bugs = c.bug
				return p
			})
			if !found {
				t.Fatalf("%s not caught within 200 seeds", c.bug)
			}
			for _, f := range r.Failures {
				for _, want := range c.checkers {
					if f.Checker == want {
						t.Logf("%s caught at seed %d: %s", c.bug, r.Seed, f)
						return
					}
				}
			}
			t.Fatalf("%s caught at seed %d, but not by %v: %v", c.bug, r.Seed, c.checkers, r.Failures)
		})
	}
}

func TestMedian(t *testing.T) {
	if Median([]uint64{5, 1, 9}) != 5 || Median([]uint64{4, 1, 9, 2}) != 2 || Median(nil) != 0 {
		t.Fatal("median is wrong")
	}
}
