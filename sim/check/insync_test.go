package check

import (
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/record"
)

// isrWorld is a checker that follows an isr queue "q" (3 replicas, min
// in-sync 2) declared and placed on n1..n3 through applied metadata, with
// the disks of its replicas; the queue's id is the catalogue's first.
func isrWorld(t *testing.T) (*Checker, fakeDisks, core.QueueID, func(metadata.Command)) {
	t.Helper()
	fd := fakeDisks{}
	q := core.QueueID(metadata.FirstQueueID)
	c := New([]QueueSpec{{Queue: q, Replicas: []core.NodeID{1, 2, 3}, Owner: 1, W: 2, ISR: true, Dir: "q1"}}, fd.disk)
	index := uint64(0)
	apply := func(cmd metadata.Command) {
		index++
		c.MetaApplied(int64(index), 1, index, 1, cmd.Encode(nil), "")
	}
	var members metadata.Members
	for n := core.NodeID(1); n <= 3; n++ {
		apply(metadata.Command{Kind: metadata.RegisterBroker, Node: n, Process: 1, Storage: 1})
		members.M[members.N] = metadata.Member{Node: n, Process: 1, Storage: 1}
		members.N++
	}
	apply(metadata.Command{Kind: metadata.DeclareQueue, Queue: "q", Replicas: 3, Policy: core.ISR, MinInsync: 2})
	apply(metadata.Command{Kind: metadata.Assign, Queue: "q", Incarnation: index, Epoch: 1, Owner: 1, Members: members})
	if len(c.Failures()) != 0 {
		t.Fatalf("placing the queue: %v", c.Failures())
	}
	return c, fd, q, apply
}

func writtenQ(c *Checker, fd fakeDisks, q core.QueueID, n core.NodeID, recs ...record.Record) {
	fd.write(n, recs...)
	if r := c.rep(n, q); len(recs) > len(r.issued) {
		c.Appended(n, q, recs[len(r.issued):])
	}
	c.SyncAcked(1, n, q, uint64(len(recs)))
}

// An isr confirm with a member of the committed in-sync set lacking the
// record fails isr-confirm, though W = min in-sync copies hold it; once
// the set no longer names that member, the same confirm passes.
func TestISRConfirmNeedsTheWholeInSyncSet(t *testing.T) {
	c, fd, q, apply := isrWorld(t)
	writtenQ(c, fd, q, 1, pub(1, 0, 7))
	writtenQ(c, fd, q, 2, pub(1, 0, 7))
	c.ConfirmEmitted(10, q, 0)
	wantFailure(t, c, "isr-confirm")

	c, fd, q, apply = isrWorld(t)
	var set metadata.Nodes
	set.N = copy(set.ID[:], []core.NodeID{1, 2})
	apply(metadata.Command{Kind: metadata.SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: set})
	writtenQ(c, fd, q, 1, pub(1, 0, 7))
	writtenQ(c, fd, q, 2, pub(1, 0, 7))
	c.ConfirmEmitted(10, q, 0)
	wantClean(t, c)
	if h := c.InSyncHealth(20); h.Placed != 1 || h.UnderReplicated != 1 || h.UnderMinInSync != 0 || h.UnderReplicatedNs != 20-6 {
		t.Fatalf("health %+v: want 1 placed, 1 under-replicated since t=6 (entry 6)", h)
	}
}

// A watermark that moves back below what was confirmed fails
// watermark-back (an isr queue's watermark over records nothing confirmed,
// its in-sync set below min_insync, may go back); one above what a member
// of the in-sync set holds fails watermark-durable.
func TestWatermarkCheckers(t *testing.T) {
	c, fd, q, _ := isrWorld(t)
	for n := core.NodeID(1); n <= 3; n++ {
		writtenQ(c, fd, q, n, pub(1, 0, 7), pub(1, 1, 8))
	}
	c.Watermark(10, q, 1, 7, 2)
	c.ConfirmEmitted(10, q, 0)
	c.ConfirmEmitted(10, q, 1)
	wantClean(t, c)
	c.Watermark(11, q, 1, 7, 1)
	wantFailure(t, c, "watermark-back")

	c, fd, q, _ = isrWorld(t)
	for n := core.NodeID(1); n <= 3; n++ {
		writtenQ(c, fd, q, n, pub(1, 0, 7), pub(1, 1, 8))
	}
	c.Watermark(10, q, 1, 7, 2)
	c.ConfirmEmitted(10, q, 0)
	c.Watermark(11, q, 1, 7, 1) // back over o=1, which nothing confirmed
	wantClean(t, c)

	c, fd, q, _ = isrWorld(t)
	writtenQ(c, fd, q, 1, pub(1, 0, 7), pub(1, 1, 8))
	writtenQ(c, fd, q, 2, pub(1, 0, 7), pub(1, 1, 8))
	writtenQ(c, fd, q, 3, pub(1, 0, 7))
	c.Watermark(10, q, 1, 7, 1)
	wantClean(t, c)
	c.Watermark(11, q, 1, 7, 2)
	wantFailure(t, c, "watermark-durable")

	// After a recovery moved the queue to n2, the old owner's late, lower
	// announcement is its own history's, not a step back of n2's; n2's
	// own step back is.
	c, fd, q, _ = isrWorld(t)
	for n := core.NodeID(1); n <= 3; n++ {
		writtenQ(c, fd, q, n, pub(1, 0, 7), pub(1, 1, 8))
	}
	c.Watermark(10, q, 1, 7, 1)
	c.Reassign(20, q, 2, 2, []core.NodeID{1, 2, 3}, 2)
	c.Watermark(21, q, 2, 4, 2)
	c.ConfirmEmitted(21, q, 1)
	c.Watermark(22, q, 1, 7, 1)
	wantClean(t, c)
	c.Watermark(23, q, 2, 4, 1)
	wantFailure(t, c, "watermark-back")
}

// A majority queue's watermark counted a member's report that an
// installation of a recovered history made stale (it dropped the unconfirmed
// suffix the report covered): no watermark-durable failure, since this
// queue's confirms do not follow its in-sync set (seed 19069). Without the
// installation, or for an isr queue (whose watermark is its confirm
// point), the same watermark fails.
func TestWatermarkOverAReportAnInstallationMadeStale(t *testing.T) {
	for _, tc := range []struct {
		isr, install bool
		want         string
	}{{false, true, ""}, {false, false, "watermark-durable"}, {true, true, "watermark-durable"}} {
		c, fd, q, _ := isrWorld(t)
		c.queues[q].spec.ISR = tc.isr
		for n := core.NodeID(1); n <= 3; n++ {
			writtenQ(c, fd, q, n, pub(1, 0, 7), pub(1, 1, 8))
		}
		c.Reported(5, 3, q, 2)
		c.Truncated(3, q, 1) // the installation's truncation
		if tc.install {
			c.Installed(6, 3, q)
		}
		c.Watermark(7, q, 1, 7, 2)
		if tc.want == "" {
			wantClean(t, c)
		} else {
			wantFailure(t, c, tc.want)
		}
	}
}

// A confirm from a node other than the owner, or from a second process of
// the owner under one placed assignment, fails one-owner.
func TestOneOwnerPerAssignment(t *testing.T) {
	c, _, q, _ := isrWorld(t)
	c.queues[q].spec.Placed = true
	c.ConfirmedBy(1, q, 1, 7)
	c.ConfirmedBy(2, q, 1, 7)
	wantClean(t, c)
	c.ConfirmedBy(3, q, 1, 8)
	wantFailure(t, c, "one-owner")

	c, _ = newChecker() // a static queue: owner n1, any of its processes
	c.ConfirmedBy(1, 1, 1, 1)
	c.ConfirmedBy(2, 1, 1, 2)
	wantClean(t, c)
	c.ConfirmedBy(3, 1, 2, 1)
	wantFailure(t, c, "one-owner")
}

// A record acked by one consumer stays settled when a stale copy reaches
// another consumer later and that consumer is lost before acking it (the
// regression stale-delivery-after-ack).
func TestAckedReceiptSettles(t *testing.T) {
	c, _ := newChecker()
	c.PublishStarted(7, 16)
	c.queues[1].confirmed[0] = 7
	c.DeliveryReceived(1, 1, 0, 15, body(7))
	c.AckSent(1, 0, 15)
	c.DeliveryReceived(2, 1, 0, 14, body(7)) // the old process's copy, late
	c.ConsumerLost(1, 14, []uint64{0})
	if n, why := c.UndeliveredFirst(1); n != 0 {
		t.Fatalf("an acked record counted as undelivered: %s", why)
	}
	// Without the ack, the loss counts.
	c, _ = newChecker()
	c.PublishStarted(7, 16)
	c.queues[1].confirmed[0] = 7
	c.DeliveryReceived(1, 1, 0, 15, body(7))
	c.DeliveryReceived(2, 1, 0, 14, body(7))
	c.ConsumerLost(1, 14, []uint64{0})
	if n, _ := c.UndeliveredFirst(1); n != 1 {
		t.Fatalf("a record whose last receipt was lost unacked counted %d undelivered, want 1", n)
	}
}
