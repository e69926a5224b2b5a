package check

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// A queue of 3 replicas, owner n1, W=2.
func newChecker() *Checker {
	return New([]QueueSpec{{Queue: 1, Replicas: []core.NodeID{1, 2, 3}, Owner: 1, W: 2}})
}

var e1 = []core.EpochStart{{Epoch: 1, Offset: 0}}

func wantFailure(t *testing.T, c *Checker, checker string) {
	t.Helper()
	for _, f := range c.Failures() {
		if f.Checker == checker {
			return
		}
	}
	t.Fatalf("want a %s failure, got %v", checker, c.Failures())
}

func wantClean(t *testing.T, c *Checker) {
	t.Helper()
	if len(c.Failures()) != 0 {
		t.Fatalf("want no failure, got %v", c.Failures())
	}
}

func TestConfirmBeforeWthSyncFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1) // only the owner holds offset 0
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

func TestConfirmAfterWthSyncPasses(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1)
	c.Durable(3, 1, 1, e1)
	c.ConfirmEmitted(10, 1, 0)
	wantClean(t, c)
}

func TestConfirmWithoutOwnerFails(t *testing.T) {
	c := newChecker()
	c.Durable(2, 1, 1, e1)
	c.Durable(3, 1, 1, e1)
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

func TestConfirmCountsOnlyMatchingEpochs(t *testing.T) {
	c := newChecker()
	c.Durable(1, 1, 1, []core.EpochStart{{Epoch: 2, Offset: 0}})
	c.Durable(2, 1, 1, e1) // a different record at offset 0
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

func TestTruncatedCopyDoesNotCount(t *testing.T) {
	c := newChecker()
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.Truncated(2, 1, 0)
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

func TestDeliverUnconfirmedFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	wantFailure(t, c, "deliver-confirmed")
}

func TestDeliverUnpublishedFails(t *testing.T) {
	c := newChecker()
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 99, false)
	wantFailure(t, c, "deliver-confirmed")
}

func TestDeliverOutOfOrderFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishStarted(8)
	c.Durable(1, 1, 2, e1)
	c.Durable(2, 1, 2, e1)
	c.DeliverEmitted(10, 1, 1, 8, false)
	c.DeliverEmitted(11, 1, 0, 7, false)
	wantFailure(t, c, "deliver-order")
}

func TestRedeliveryIsNotDisorder(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishStarted(8)
	c.Durable(1, 1, 2, e1)
	c.Durable(2, 1, 2, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.DeliverEmitted(11, 1, 1, 8, false)
	c.DeliverEmitted(12, 1, 0, 7, true)
	wantClean(t, c)
}

func TestFailedPublishDeliveredFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishEnded(5, 7, core.Failed, 1, 0)
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	wantFailure(t, c, "failed-delivered")

	c = newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.PublishEnded(11, 7, core.Failed, 1, 0)
	wantFailure(t, c, "failed-delivered")
}

func body(key uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, key)
	return b
}

func keyOf(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

type logs map[core.NodeID][]record.Record

func (l logs) read(n core.NodeID, q core.QueueID, o uint64) (record.Record, bool) {
	if o < uint64(len(l[n])) {
		return l[n][o], true
	}
	return record.Record{}, false
}

func drainedAll(core.QueueID) bool { return true }

func TestConfirmedLostFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishEnded(5, 7, core.Confirmed, 1, 0)
	l := logs{1: nil}
	c.Final(100, l.read, keyOf, func(core.QueueID) bool { return false })
	wantFailure(t, c, "confirmed-lost")
}

func TestReplicasDisagreeFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishEnded(5, 7, core.Confirmed, 1, 0)
	l := logs{
		1: {{Epoch: 1, Offset: 0, Kind: record.KindPublish, Body: body(7)}},
		2: {{Epoch: 1, Offset: 0, Kind: record.KindPublish, Body: body(8)}},
	}
	c.Final(100, l.read, keyOf, func(core.QueueID) bool { return false })
	wantFailure(t, c, "replicas-agree")
}

func TestNeverDeliveredFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishEnded(5, 7, core.Confirmed, 1, 0)
	l := logs{1: {{Epoch: 1, Offset: 0, Kind: record.KindPublish, Body: body(7)}}}
	c.Final(100, l.read, keyOf, drainedAll)
	wantFailure(t, c, "at-least-once")
}

func TestCleanHistoryPasses(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.ConfirmEmitted(9, 1, 0)
	c.PublishEnded(10, 7, core.Confirmed, 1, 0)
	c.DeliverEmitted(11, 1, 0, 7, false)
	rec := record.Record{Epoch: 1, Offset: 0, Kind: record.KindPublish, Body: body(7)}
	l := logs{1: {rec}, 2: {rec}}
	c.Final(100, l.read, keyOf, drainedAll)
	wantClean(t, c)
}

func TestLivenessReports(t *testing.T) {
	c := newChecker()
	c.Liveness(5, "2 publishes unresolved")
	wantFailure(t, c, "liveness")
	if !strings.Contains(c.Failures()[0].String(), "unresolved") {
		t.Fatal(c.Failures()[0])
	}
}

func TestRedeliveryAfterConfirmedAckFails(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.AckAppended(1, 1, 1, 1, 0) // the ack of offset 0 sits at offset 1
	c.Durable(1, 1, 2, e1)
	c.Durable(3, 1, 2, e1)
	c.DeliverEmitted(20, 1, 0, 7, true)
	wantFailure(t, c, "redeliver-acked")
}

func TestRedeliveryBeforeAckConfirmedPasses(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.AckAppended(1, 1, 1, 1, 0)
	c.Durable(1, 1, 2, e1) // only the owner holds the ack: not confirmed
	c.DeliverEmitted(20, 1, 0, 7, true)
	wantClean(t, c)
}

func TestUndeliveredCounts(t *testing.T) {
	c := newChecker()
	c.PublishStarted(7)
	c.PublishEnded(5, 7, core.Confirmed, 1, 0)
	if c.Undelivered(1) != 1 {
		t.Fatalf("undelivered = %d, want 1", c.Undelivered(1))
	}
	c.Durable(1, 1, 1, e1)
	c.Durable(2, 1, 1, e1)
	c.DeliverEmitted(10, 1, 0, 7, false)
	if c.Undelivered(1) != 0 {
		t.Fatalf("undelivered = %d, want 0", c.Undelivered(1))
	}
}

func TestCopyRewrittenAfterFaultLossIsTheTruth(t *testing.T) {
	c := newChecker()
	c.Durable(2, 1, 10, e1)
	// n2 lost its tail to corruption, then took epoch 2's records from 5 on
	// without a truncation: its copies of epoch 1 at 5.. are gone.
	c.Durable(2, 1, 6, []core.EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 5}})
	c.Durable(1, 1, 6, []core.EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 5}})
	c.ConfirmEmitted(10, 1, 5)
	wantClean(t, c)
	// A shorter report of the same records does not shrink the truth.
	c.Durable(2, 1, 3, e1)
	c.ConfirmEmitted(11, 1, 5)
	wantClean(t, c)
}

func TestConverged(t *testing.T) {
	c := newChecker()
	for _, n := range []core.NodeID{1, 2, 3} {
		c.Durable(n, 1, 4, e1)
	}
	if !c.Converged(1) {
		t.Fatal("equal logs reported apart")
	}
	c.Durable(3, 1, 5, []core.EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 4}})
	if c.Converged(1) {
		t.Fatal("a follower with a different suffix reported converged")
	}
}
