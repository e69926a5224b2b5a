package queue

import (
	"testing"

	"github.com/sluicemq/sluice/core/seam"
)

// TestLeasedOwnerServesOnItsLease: a placed queue's owner admits, confirms
// and delivers only while its node's lease holds; what waited goes on when
// the lease is renewed.
func TestLeasedOwnerServesOnItsLease(t *testing.T) {
	x, r, step := leasedOwner(seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1}, Owner: 1, Policy: seam.LeaderDurable, Leased: true, EpochBase: seam.EpochBase(1)})
	sync := func(end uint64) []string {
		return step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: end}) })
	}
	publish := func(id uint64) []string {
		return step(func() { r.OnPublish(9, &seam.Request{Kind: seam.ReqPublish, Queue: 7, ID: id, Body: []byte("x")}) })
	}
	sync(1) // the epoch record
	x.NowNs = 1e9
	if got := publish(1); !has(got, "failed") || !has(got, "epoch not ready") {
		t.Fatalf("a publish with no lease: %v", got)
	}
	step(func() { r.SetLease(3e9) })
	if got := publish(2); !has(got, "storage append") {
		t.Fatalf("a publish on a lease: %v", got)
	}
	x.NowNs = 4e9 // the lease lapsed before the sync completed
	if got := sync(2); has(got, "confirmed") {
		t.Fatalf("confirmed without a lease: %v", got)
	}
	if got := step(func() { r.SetLease(6e9) }); !has(got, "reply c=9 id=2 confirmed") {
		t.Fatalf("the renewal did not confirm what waited: %v", got)
	}
}

// TestPlacedOwnerCountsOnlyItsMembers: a placed queue's owner counts a
// follower's durable report only from the process its assignment names; a
// newer process of the follower's broker (restarted, or a learner) is no
// member, and its reports never confirm.
func TestPlacedOwnerCountsOnlyItsMembers(t *testing.T) {
	cfg := seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 2, 3}, Processes: []uint64{1, 5, 6}, Owner: 1,
		Policy: seam.MajorityDurable, Leased: true, EpochBase: seam.EpochBase(1)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	x, r, step := leasedOwner(cfg)
	reply := func(from seam.NodeID, process, end uint64) []string {
		return step(func() {
			r.OnMessage(from, AppendMsg(nil, &Msg{Kind: MsgAppendReply, Epoch: r.epoch, Process: process, Ok: true, End: end}))
		})
	}
	x.NowNs = 1e9
	step(func() { r.SetLease(10e9) })
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 1}) }) // the epoch record
	reply(2, 5, 1)                                                                                         // the epoch record on a member: the epoch is ready
	step(func() { r.OnPublish(9, &seam.Request{Kind: seam.ReqPublish, Queue: 7, ID: 1, Body: []byte("x")}) })
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 2}) })
	if got := reply(2, 8, 2); has(got, "confirmed") {
		t.Fatalf("a report of n2's process 8, no member (its assignment names 5), confirmed: %v", got)
	}
	if got := reply(3, 6, 2); !has(got, "reply c=9 id=1 confirmed") {
		t.Fatalf("a member's report did not confirm: %v", got)
	}
	if err := (seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 2}, Processes: []uint64{1}, Owner: 1, Policy: seam.LeaderDurable}).Validate(); err == nil {
		t.Fatal("a config with fewer processes than replicas validates")
	}
}

// leasedOwner starts the owner (node 1, process 1) of queue cfg on an
// empty log; step runs f and returns the effects' lines, the invariants
// checked.
func leasedOwner(cfg seam.QueueConfig) (*Ctx, *Replica, func(f func()) []string) {
	x := &Ctx{Node: 1, Process: 1, Lim: seam.Limits{}.WithDefaults(), Out: &seam.Out{}}
	r := New(x, cfg)
	r.Restore(&seam.LogState{Group: seam.QueueGroup(cfg.Queue)})
	r.Begin()
	step := func(f func()) []string {
		x.Out.Reset()
		f()
		r.Invariants()
		var lines []string
		for i := range x.Out.Effects {
			lines = append(lines, x.Out.Effects[i].String())
		}
		return lines
	}
	return x, r, step
}
