package queue

import (
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// TestLearnerNeverCountsUntilAdmitted: the owner streams to its queue's
// learner and takes its reports, but a confirm never counts it; it fixes a
// cut at the learner's first match and reports it caught up once it holds
// the cut; after its admission (the assignment names its process) it
// counts like any member.
func TestLearnerNeverCountsUntilAdmitted(t *testing.T) {
	cfg := seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 2, 3}, Processes: []uint64{1, 5, 6}, Owner: 1,
		Policy: seam.MajorityDurable, Leased: true, EpochBase: seam.EpochBase(1)}
	_, r, step, reply, publish := readyLearnerOwner(cfg)
	reply(2, 5, 1) // the epoch ready; n3's process 6 is lost
	// n3's broker is back with process 8, the queue's learner.
	if got := step(func() { r.SetLearner(3, 8) }); !has(got, "send to=3") {
		t.Fatalf("no probe to the learner: %v", got)
	}
	if _, _, ok := r.LearnerCaughtUp(); ok {
		t.Fatal("caught up before it answered")
	}
	publish(1)
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 2}) })
	if got := reply(3, 8, 2); has(got, "confirmed") {
		t.Fatalf("the learner's report confirmed: %v", got)
	}
	if n, p, ok := r.LearnerCaughtUp(); !ok || n != 3 || p != 8 {
		t.Fatalf("the learner holds the cut (2) yet is not caught up: %d %d %v", n, p, ok)
	}
	if got := reply(2, 5, 2); !has(got, "reply c=9 id=1 confirmed") {
		t.Fatalf("the member's report did not confirm: %v", got)
	}
	// Admitted: n3's member is process 8 now, and it counts.
	step(func() { r.SetMembers([]seam.NodeID{1, 2, 3}, []uint64{1, 5, 8}); r.SetLearner(0, 0) })
	if _, _, ok := r.LearnerCaughtUp(); ok {
		t.Fatal("a learner still, once admitted")
	}
	publish(2)
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 3}) })
	if got := reply(3, 8, 3); !has(got, "reply c=9 id=2 confirmed") {
		t.Fatalf("the admitted member's report did not confirm: %v", got)
	}
	if got := reply(3, 6, 3); len(got) != 0 && has(got, "confirmed") {
		t.Fatalf("the old process's report counted: %v", got)
	}
}

// TestNewCopyLearner: a queue left on two members of three streams to a
// learner on a third broker, which no replica list names, takes its
// reports but never counts them, and counts them once its admission adds
// it as a member (W stays 2); a learner that goes unadmitted loses its
// place.
func TestNewCopyLearner(t *testing.T) {
	cfg := seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 3}, Processes: []uint64{1, 6}, Owner: 1,
		Policy: seam.MajorityDurable, Leased: true, EpochBase: seam.EpochBase(2)}
	x, r, step, reply, publish := readyLearnerOwner(cfg)
	reply(3, 6, 1)
	refused := x.Refused
	reply(2, 9, 1)
	if x.Refused != refused+1 {
		t.Fatal("a report from a broker outside the replicas, no learner, was taken")
	}
	if got := step(func() { r.SetLearner(2, 9) }); !has(got, "send to=2") {
		t.Fatalf("no probe to the new copy's learner: %v", got)
	}
	publish(1)
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 2}) })
	refused = x.Refused
	if got := reply(2, 9, 2); has(got, "confirmed") || x.Refused != refused {
		t.Fatalf("the learner's report confirmed, or was refused: %v", got)
	}
	if n, p, ok := r.LearnerCaughtUp(); !ok || n != 2 || p != 9 {
		t.Fatalf("the learner holds the cut yet is not caught up: %d %d %v", n, p, ok)
	}
	// Not admitted yet: the members are still two.
	step(func() { r.SetMembers([]seam.NodeID{1, 3}, []uint64{1, 6}) })
	if _, _, ok := r.LearnerCaughtUp(); !ok {
		t.Fatal("the unchanged members dropped the learner")
	}
	// Admitted: three members, and n2's report confirms (W = 2 of 3).
	step(func() { r.SetMembers([]seam.NodeID{1, 2, 3}, []uint64{1, 9, 6}); r.SetLearner(0, 0) })
	if _, _, ok := r.LearnerCaughtUp(); ok {
		t.Fatal("a learner still, once admitted")
	}
	publish(2)
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 3}) })
	if got := reply(2, 9, 3); !has(got, "reply c=9 id=2 confirmed") {
		t.Fatalf("the admitted member's report did not confirm: %v", got)
	}

	// Another queue's learner that leaves unadmitted: its progress goes.
	x2, r2, step2, reply2, _ := readyLearnerOwner(cfg)
	step2(func() { r2.SetLearner(2, 9) })
	step2(func() { r2.SetLearner(0, 0) })
	refused = x2.Refused
	reply2(2, 9, 1)
	if x2.Refused != refused+1 {
		t.Fatal("a learner that left is still heard")
	}
}

// readyLearnerOwner is a leased owner of queue 7 whose epoch record is
// durable, with a follower's Ok report (reply) and a client's publish
// (publish) as steps.
func readyLearnerOwner(cfg seam.QueueConfig) (*Ctx, *Replica, func(func()) []string, func(seam.NodeID, uint64, uint64) []string, func(uint64)) {
	x, r, step := leasedOwner(cfg)
	reply := func(from seam.NodeID, process, end uint64) []string {
		return step(func() {
			r.OnMessage(from, AppendMsg(nil, &Msg{Kind: MsgAppendReply, Epoch: r.epoch, Process: process, Ok: true, End: end}))
		})
	}
	publish := func(id uint64) {
		step(func() { r.OnPublish(9, &seam.Request{Kind: seam.ReqPublish, Queue: 7, ID: id, Body: []byte("x")}) })
	}
	x.NowNs = 1e9
	step(func() { r.SetLease(10e9) })
	step(func() { r.OnStorage(&seam.StorageDone{Op: seam.OpSync, Group: seam.QueueGroup(7), Offset: 1}) })
	return x, r, step, reply, publish
}

// TestRetainsStaleAcrossReseeds: a follower reseeded while retentions are
// in flight takes their completions, however many, for stale ones, and
// the next retention it asks completes as its own (seed 23000001910).
func TestRetainsStaleAcrossReseeds(t *testing.T) {
	x := &Ctx{Node: 2, Process: 1, Lim: seam.Limits{}.WithDefaults(), Out: &seam.Out{}}
	r := New(x, seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1, 2}, Owner: 1, Policy: seam.MajorityDurable})
	r.Restore(&seam.LogState{Group: seam.QueueGroup(7), End: 100, Epochs: []seam.EpochStart{{Epoch: 1, Offset: 0}}})
	r.Begin()
	var ops []seam.StorageOp
	recv := func(m Msg) {
		x.Out.Reset()
		m.Kind, m.Epoch, m.Process = MsgAppend, 1, 1
		r.OnMessage(1, AppendMsg(nil, &m))
		r.Invariants()
		for _, e := range x.Out.Effects {
			if e.Kind == seam.EfStorage {
				ops = append(ops, e.Op)
			}
		}
	}
	done := func(op seam.StorageOp, o uint64) {
		x.Out.Reset()
		r.OnStorage(&seam.StorageDone{Op: op, Group: seam.QueueGroup(7), Offset: o})
		r.Invariants()
	}
	below := []seam.EpochStart{{Epoch: 1, Offset: 0}}
	recv(Msg{Prev: 100, PrevEpoch: 1, Start: 50})                              // retain to 50
	recv(Msg{Prev: 300, PrevEpoch: 1, Start: 300, Reset: true, Epochs: below}) // reseed at 300
	var recs []record.Record
	for o := uint64(300); o < 310; o++ {
		recs = append(recs, record.Record{Epoch: 1, Offset: o, Kind: record.KindPublish, Body: []byte("x")})
	}
	recv(Msg{Prev: 300, PrevEpoch: 1, Start: 305, Records: recs})              // retain to 305
	recv(Msg{Prev: 500, PrevEpoch: 1, Start: 500, Reset: true, Epochs: below}) // reseed at 500
	retains, reseeds := 0, 0
	for _, op := range ops {
		switch op {
		case seam.OpRetain:
			retains++
		case seam.OpReseed:
			reseeds++
		}
	}
	if retains != 2 || reseeds != 2 {
		t.Fatalf("storage ops %v: want two retentions and two reseeds", ops)
	}
	done(seam.OpRetain, 0)   // the first, stale
	done(seam.OpRetain, 256) // the second, stale too: no panic
	if start, end, _, _ := r.Retained(); start != 500 || end != 500 {
		t.Fatalf("the log after the stale completions: [%d, %d), want [500, 500)", start, end)
	}
}
