package queue

import (
	"testing"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// TestSealFreezesFollower: a sealed follower takes no more appends from
// its owner, of any epoch, and its retained bounds stay; it still answers
// reads. The planted seal-unfrozen keeps appending.
func TestSealFreezesFollower(t *testing.T) {
	for _, planted := range []bugs.Set{0, bugs.SealUnfrozen} {
		x := &Ctx{Node: 2, Process: 1, Lim: seam.Limits{}.WithDefaults(), Bugs: planted, Out: &seam.Out{}}
		cfg := seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 2, 3}, Owner: 1, Policy: seam.MajorityDurable}
		r := New(x, cfg)
		r.Restore(&seam.LogState{Group: seam.QueueGroup(7)})
		r.Begin()
		appendFrom := func(epoch, prev uint64, n int) (appended bool) {
			m := Msg{Kind: MsgAppend, Epoch: epoch, Process: 1, Prev: prev, PrevEpoch: 0}
			if prev > 0 {
				m.PrevEpoch = 1
			}
			for i := range n {
				m.Records = append(m.Records, record.Record{Epoch: epoch, Offset: prev + uint64(i), Kind: record.KindPublish, Body: []byte("x")})
			}
			x.Out.Reset()
			r.OnMessage(1, AppendMsg(nil, &m))
			r.Invariants()
			for _, e := range x.Out.Effects {
				if e.Kind == seam.EfStorage && e.Op == seam.OpAppend {
					return true
				}
			}
			return false
		}
		if !appendFrom(1, 0, 3) {
			t.Fatal("the follower did not append before its seal")
		}
		r.Seal("sealed for epoch 2")
		start, end, lastEpoch, damaged := r.Retained()
		if !r.Fenced() || start != 0 || end != 3 || lastEpoch != 1 || damaged {
			t.Fatalf("sealed: fenced=%v retained [%d,%d) last epoch %d damaged=%v, want fenced [0,3) 1 false", r.Fenced(), start, end, lastEpoch, damaged)
		}
		for _, epoch := range []uint64{1, 5} {
			if appended := appendFrom(epoch, 3, 2); appended != (planted != 0) {
				t.Fatalf("bugs=%v: an append of epoch %d after the seal: appended=%v", planted, epoch, appended)
			}
		}
		if _, end, _, _ := r.Retained(); planted == 0 && end != 3 {
			t.Fatalf("the sealed log's end moved to %d", end)
		}
	}
}

// TestFenceCancelsConsumers: fencing an owner ends its subscriptions, each
// consumer told (EfCancel, as AMQP's basic.cancel): a consumer left
// subscribed to a fenced group would wait for ever (the soak's stranded
// consumer). A follower has none to tell.
func TestFenceCancelsConsumers(t *testing.T) {
	x := &Ctx{Node: 1, Process: 1, Lim: seam.Limits{}.WithDefaults(), Out: &seam.Out{}}
	cfg := seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 2, 3}, Owner: 1, Policy: seam.MajorityDurable}
	r := New(x, cfg)
	r.Restore(&seam.LogState{Group: seam.QueueGroup(7)})
	r.Begin()
	for _, c := range []seam.ClientID{5, 9} {
		r.OnSubscribe(c, &seam.Request{Kind: seam.ReqSubscribe, Queue: 7, ID: uint64(c), Prefetch: 4})
	}
	x.Out.Reset()
	r.Fence("pending transition to epoch 2")
	r.Invariants()
	var cancelled []seam.ClientID
	for _, e := range x.Out.Effects {
		if e.Kind == seam.EfCancel {
			if e.Queue != 7 || e.Reason != "fenced: pending transition to epoch 2" {
				t.Fatalf("cancel %s: want queue 7 and the fence's reason", e.String())
			}
			cancelled = append(cancelled, e.Client)
		}
	}
	if len(cancelled) != 2 || cancelled[0] != 5 || cancelled[1] != 9 {
		t.Fatalf("cancelled %v, want both consumers [5 9]", cancelled)
	}
	x.Out.Reset()
	r.Fence("again")
	r.OnSubscribe(11, &seam.Request{Kind: seam.ReqSubscribe, Queue: 7, ID: 11, Prefetch: 4})
	for _, e := range x.Out.Effects {
		if e.Kind == seam.EfCancel {
			t.Fatalf("a second fence cancelled again: %s", e.String())
		}
		if e.Kind == seam.EfReply && e.Outcome == seam.Confirmed {
			t.Fatal("a fenced owner took a subscription")
		}
	}
}
