package core

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// fencedState returns metadata with queue "q" (replicas n1, n2) fenced by
// a transition to epoch 2 proposing n1 and n3, and the next index.
func fencedState(t *testing.T) (metadata.State, uint64) {
	t.Helper()
	var md metadata.State
	index := uint64(0)
	do := func(c metadata.Command) {
		index++
		if _, err := md.Apply(index, &c); err != nil {
			t.Fatalf("%s: %v", c.String(), err)
		}
	}
	for n := seam.NodeID(1); n <= 3; n++ {
		do(metadata.Command{Kind: metadata.RegisterBroker, Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)})
	}
	do(metadata.Command{Kind: metadata.DeclareQueue, Queue: "q", Replicas: 2, Policy: seam.MajorityDurable, MinInsync: 1})
	var ms metadata.Members
	ms.N = 2
	ms.M[0], ms.M[1] = metadata.Member{Node: 1, Process: 11, Storage: 21}, metadata.Member{Node: 2, Process: 12, Storage: 22}
	do(metadata.Command{Kind: metadata.Assign, Queue: "q", Incarnation: 4, Epoch: 1, Owner: 1, Members: ms})
	do(metadata.Command{Kind: metadata.BrokerDown, Node: 2, Process: 12})
	q, _ := md.Queue("q")
	var proposed metadata.Nodes
	proposed.N = copy(proposed.ID[:], []seam.NodeID{1, 3})
	do(metadata.Command{Kind: metadata.Transition, Queue: "q", Incarnation: 4, Epoch: 1, Proposed: proposed, Digest: metadata.TransitionDigest(&q, &proposed)})
	return md, index + 1
}

// An attempt set aside with its backoff grown to the longest is tried at
// once when the operator's RetryRecovery applies (its count on the
// pending transition changed), with its backoff back to the shortest; a
// retry counted before it was set aside, or metadata without a new one,
// changes nothing.
func TestRetryRecoveryEndsTheBackoff(t *testing.T) {
	md, index := fencedState(t)
	q, _ := md.Queue("q")
	n := New(Config{Node: 1, Process: 11, Storage: 21})
	n.x.NowNs = 100e9
	n.recoveryRetries = []recoveryRetry{{queue: q.ID, digest: recovery.Digest(q.Assignment.Pending.Digest),
		notNs: n.x.NowNs + recoveryBackoffMaxNs, backoffNs: recoveryBackoffMaxNs, firstNs: 1e9}}
	n.recoveryRetryAsked(&md)
	if !n.recoveryWaits(&q) || n.recoveryRetries[0].backoffNs != recoveryBackoffMaxNs {
		t.Fatalf("no retry asked, yet the backoff ended: %+v", n.recoveryRetries[0])
	}
	retry := metadata.Command{Kind: metadata.RetryRecovery, Queue: "q", Incarnation: q.Incarnation, Epoch: q.Assignment.Pending.Epoch}
	if _, err := md.Apply(index, &retry); err != nil {
		t.Fatal(err)
	}
	n.x.NowNs += 1e9
	n.recoveryRetryAsked(&md)
	q, _ = md.Queue("q")
	if n.recoveryWaits(&q) {
		t.Fatalf("after the retry applied, the attempt still waits until %d ns (now %d)", n.recoveryRetries[0].notNs, n.x.NowNs)
	}
	if r := n.recoveryRetries[0]; r.backoffNs != recoveryBackoffMinNs || r.retries != 1 {
		t.Fatalf("after the retry: %+v, want the shortest backoff and the count seen", r)
	}
	if fx := n.out.Effects; len(fx) != 1 || !strings.Contains(fx[0].Reason, "retried at once") {
		t.Fatalf("effects %v, want one note of the retry", fx)
	}
	// Set aside again: the same count retries nothing.
	n.recoveryRetries[0].notNs = n.x.NowNs + recoveryBackoffMaxNs
	n.recoveryRetryAsked(&md)
	if !n.recoveryWaits(&q) {
		t.Fatal("a retry already taken ended the next backoff too")
	}
}

// A retry met by a running attempt (not blocked) has every replica it
// still waits for asked again now, its backoff back to the shortest; one
// it already counted changes nothing.
func TestRetryRecoveryAsksARunningAttemptAgain(t *testing.T) {
	md, index := fencedState(t)
	q, _ := md.Queue("q")
	n := New(Config{Node: 1, Process: 11, Storage: 21})
	n.x.NowNs = 100e9
	late := n.x.NowNs + recoveryBackoffMaxNs
	w := &recoveryWork{t: recovery.Transition{Queue: q.ID, Incarnation: q.Incarnation, Epoch: q.Assignment.Pending.Epoch, Digest: recovery.Digest(q.Assignment.Pending.Digest)},
		name: "q", asks: []recoveryAsk{{node: 1, sealed: true, nextNs: late, backoffNs: recoveryBackoffMaxNs}, {node: 2, nextNs: late, backoffNs: recoveryBackoffMaxNs}}}
	n.recoveries = []*recoveryWork{w}
	n.recoveryRetryAsked(&md)
	if w.asks[1].nextNs != late {
		t.Fatal("no retry asked, yet the ask's backoff ended")
	}
	retry := metadata.Command{Kind: metadata.RetryRecovery, Queue: "q", Incarnation: q.Incarnation, Epoch: q.Assignment.Pending.Epoch}
	if _, err := md.Apply(index, &retry); err != nil {
		t.Fatal(err)
	}
	n.recoveryRetryAsked(&md)
	if a := w.asks[1]; a.nextNs != n.x.NowNs || a.backoffNs != recoveryBackoffMinNs || w.retries != 1 {
		t.Fatalf("after the retry: the unsealed ask %+v, retries seen %d", a, w.retries)
	}
	if a := w.asks[0]; a.nextNs != late {
		t.Fatalf("the sealed replica's ask changed: %+v", a)
	}
	w.asks[1].nextNs = late
	n.recoveryRetryAsked(&md)
	if w.asks[1].nextNs != late {
		t.Fatal("a retry already acted on asked again")
	}
}
