package clustertest

import (
	"slices"
	"strings"
	"syscall"
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

// TestReplacementPausedMidRecovery: four brokers; the one holding no copy
// of q0 is paused (SIGSTOP), then q0's owner is killed. The recovery
// proposes the paused broker as the replacement, which cannot install: the
// queue activates once the owner and W installed (the paused broker a
// member that has yet to catch up), serves while it is still paused, and
// is back on three members in sync once it resumes; every confirmed
// message is delivered. (A proposed member gone before the activation is
// left out of it, and comes back as a new copy: the simulator's
// activate-short row.)
func TestReplacementPausedMidRecovery(t *testing.T) {
	c, pubs, qs, victim, owned := loadedCluster(t, 4)
	var spare int
	for _, b := range c.brokers {
		if !slices.Contains(members(qs, "q0"), b.id) {
			spare = b.id
		}
	}
	if leader := c.leader(victim); spare == 0 || spare == leader {
		t.Fatalf("setup: the broker outside q0's members (n%d) is none, or leads the metadata group (n%d)", spare, leader)
	}
	var seqs []int
	for _, p := range pubs {
		seqs = append(seqs, p.lastSeq())
	}
	c.signal(spare, syscall.SIGSTOP)
	killedAt := time.Now()
	c.kill(victim)
	t.Logf("n%d paused (no copy of q0), n%d (owner of %v) killed", spare, victim, owned)
	for i, p := range pubs {
		if slices.Contains(owned, p.queue) {
			first := p.waitSentAfter(t, seqs[i], 20, 30*time.Second)
			t.Logf("%s: first confirm %v after the kill, n%d still paused", p.queue, first.Sub(killedAt).Round(time.Millisecond), spare)
		}
	}
	other := c.runningOther(victim, spare)
	line := describeLine(c.describe(other), "q0")
	t.Logf("q0 while n%d is paused: %s", spare, line)
	if strings.Contains(line, " fenced") {
		t.Fatalf("q0 still fenced with its replacement paused: %s", line)
	}
	c.signal(spare, syscall.SIGCONT)
	full := c.settleFull(other, owned, 3, 60*time.Second)
	t.Logf("%v back on 3 members in sync %v after the kill: %s", owned, time.Since(killedAt).Round(time.Millisecond), describeLine(c.describe(other), "q0"))
	if !slices.Contains(members(full, "q0"), spare) {
		t.Errorf("q0 back on %v, want its copy on the resumed n%d", members(full, "q0"), spare)
	}
	stopPublishers(pubs)
	confirmed, nacked, unknown, missing := verify(t, c, pubs)
	t.Logf("in all: %d confirmed, %d of them not delivered; %d nacked; %d unknown outcomes", confirmed, missing, nacked, unknown)
}
