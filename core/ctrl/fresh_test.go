package ctrl

import (
	"testing"

	"github.com/sluicemq/sluice/core/metadata"
)

// freshAnswer runs c until n answered fresh read token, or fails.
func freshAnswer(t *testing.T, c *cluster, n *simNode, token uint64) Effect {
	t.Helper()
	for range 400 {
		for _, e := range n.fresh {
			if e.Seq == token {
				return e
			}
		}
		c.run(50, 0)
	}
	t.Fatalf("n%d never answered fresh read %d", n.id, token)
	return Effect{}
}

// TestFreshRead: a follower's fresh read is answered only once it applied
// everything the leader had committed when the read was asked, even a
// command the follower had not yet heard of; with no quorum, the read is
// answered unknown after FreshReadTimeoutNs, and never committed.
func TestFreshRead(t *testing.T) {
	c := newCluster(t, 3, sparse3, false)
	c.run(2000, 0)
	l := c.leader()
	if l == nil {
		t.Fatal("no leader")
	}
	var f *simNode
	for _, n := range c.nodes {
		if n != l {
			f = n
			break
		}
	}
	// Commit a setting at the leader while f hears nothing of it: f's
	// messages are held back until the read is asked.
	c.step(l, Input{Kind: InPropose, Msg: setCmd("replica.lag_time_max_ms", 777)})
	for range 200 {
		if l.g.Metadata().Setting(metadata.ReplicaLagTimeMaxMs) == 777 {
			break
		}
		c.tick()
		for i := 0; i < len(c.net); {
			if c.net[i].to == f.id {
				i++
				continue
			}
			c.deliver(i)
		}
		for _, n := range c.nodes {
			for n != f && len(n.pend) > 0 {
				c.complete(n)
			}
		}
	}
	committed := l.g.AppliedIndex()
	if l.g.Metadata().Setting(metadata.ReplicaLagTimeMaxMs) != 777 || f.g.Metadata().Setting(metadata.ReplicaLagTimeMaxMs) == 777 {
		t.Fatal("the setting did not commit at the leader alone")
	}
	c.step(f, Input{Kind: InFreshRead, Seq: 41})
	e := freshAnswer(t, c, f, 41)
	if e.Result != Committed || e.Index < committed || f.g.Metadata().Setting(metadata.ReplicaLagTimeMaxMs) != 777 {
		t.Fatalf("fresh read: %s; the leader had committed %d; the follower's setting %d", e, committed, f.g.Metadata().Setting(metadata.ReplicaLagTimeMaxMs))
	}

	// No quorum: two of three down. The survivor's read is unknown.
	var survivor *simNode
	for _, n := range c.nodes {
		if n != f {
			c.crash(n)
		} else {
			survivor = n
		}
	}
	c.step(survivor, Input{Kind: InFreshRead, Seq: 42})
	start := c.nowNs
	e = freshAnswer(t, c, survivor, 42)
	if e.Result != Unknown || c.nowNs-start < FreshReadTimeoutNs {
		t.Fatalf("fresh read without a quorum: %s after %dns", e, c.nowNs-start)
	}
	c.done()
}

// TestFreshReadAskedBeforeALeader: raft drops a read index asked while no
// leader is known, silently; the group asks again every FreshReadRetryNs,
// so the read is answered committed soon after a leader is elected, not
// only when the caller's FreshReadTimeoutNs runs out. (Without the re-ask
// the answer is Unknown after FreshReadTimeoutNs: the seal of a recovery
// that started as the cluster did waited ten seconds for it.)
func TestFreshReadAskedBeforeALeader(t *testing.T) {
	c := newCluster(t, 3, sparse3, false)
	n := c.nodes[1]
	c.step(n, Input{Kind: InFreshRead, Seq: 7})
	start := c.nowNs
	e := freshAnswer(t, c, n, 7)
	if e.Result != Committed || c.nowNs-start >= FreshReadTimeoutNs/2 {
		t.Fatalf("a fresh read asked before any leader: %s after %dms", e, (c.nowNs-start)/1e6)
	}
	c.done()
}
