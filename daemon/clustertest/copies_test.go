package clustertest

import (
	"slices"
	"testing"
	"time"
)

// TestFourthBrokerTakesTheCopy: four brokers, three queues of three
// replicas under confirmed load; SIGKILL the owner of q0 and never restart
// it. The queues it owned serve again and are back on three members in
// sync within 60 s, the third copy on a broker that held none of their
// copies before, and every confirmed message is delivered.
func TestFourthBrokerTakesTheCopy(t *testing.T) {
	c, pubs, qs, victim, owned := loadedCluster(t, 4)
	t.Logf("killing n%d, the owner of %v, for good", victim, owned)
	var seqs []int
	for _, p := range pubs {
		seqs = append(seqs, p.lastSeq())
	}
	killedAt := time.Now()
	c.kill(victim)
	for i, p := range pubs {
		if slices.Contains(owned, p.queue) {
			p.waitSentAfter(t, seqs[i], 50, 60*time.Second)
		}
	}
	other := c.runningOther(victim)
	full := c.settleFull(other, owned, 3, 60*time.Second)
	t.Logf("%v back on 3 members in sync %v after the kill", owned, time.Since(killedAt).Round(time.Millisecond))
	for _, q := range owned {
		ms := members(full, q)
		if slices.Contains(ms, victim) {
			t.Errorf("%s: %+v still names the killed n%d", q, full[q], victim)
		}
		var added []int
		for _, m := range ms {
			if !slices.Contains(members(qs, q), m) {
				added = append(added, m)
			}
		}
		if len(added) != 1 {
			t.Errorf("%s: members %v, before the kill %v: want exactly one new broker holding a copy", q, ms, members(qs, q))
		}
		t.Logf("%s: members %v (before %v), epoch %s", q, ms, members(qs, q), full[q].epoch)
	}
	stopPublishers(pubs)
	confirmed, nacked, unknown, missing := verify(t, c, pubs)
	t.Logf("in all: %d confirmed, %d of them not delivered; %d nacked; %d unknown outcomes", confirmed, missing, nacked, unknown)
}
