package world

import (
	"testing"

	"github.com/sluicemq/sluice/core/bugs"
)

// The canary: plant a protocol bug (a follower reports records durable
// before its sync completes) and demand that the default swarm catches it
// within 2,000 seeds. It proves the faults and checkers can fail.
func TestCanaryIsCaught(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		p := Draw(seed)
		p.DurationMs = 2000
		p.Bugs = bugs.AckBeforeSync
		r, err := Run(seed, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Failed > 0 {
			t.Logf("canary caught at seed %d by %s", seed, r.Failures[0])
			return
		}
	}
	t.Fatal("the planted ack-before-sync bug survived 2,000 seeds of the swarm")
}
