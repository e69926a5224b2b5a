package check

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// retain makes node's log of queue 1 start at start, as a retention
// leaves it: a START file (this test's own encoder of io/seglog's
// retain.go format, no history below), the segments below it gone.
func (fd fakeDisks) retain(n uint64, start uint64) {
	d := fd.disk(core.NodeID(n)).(*fakeDisk)
	b := []byte(dStartMagic)
	b = binary.LittleEndian.AppendUint64(b, start)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, dCastagnoli))
	d.files["q1/START"] = b
	for base := uint64(0); base < start; base += testSlots {
		delete(d.files, fmt.Sprintf("q1/%020d.seg", base))
	}
}

// A retention that passes only settled publishes is clean, and the
// end-of-run checks leave the deleted ones out; one that passes a publish
// no consumer acked fails retention-settled.
func TestRetentionPassingUnsettledFails(t *testing.T) {
	c, fd := newChecker()
	var recs []record.Record
	for o := uint64(0); o < 24; o++ {
		c.PublishStarted(100+o, 16)
		recs = append(recs, pub(1, o, 100+o))
	}
	for n := uint64(1); n <= 3; n++ {
		written(c, fd, core.NodeID(n), recs...)
	}
	for o := uint64(0); o < 24; o++ {
		c.ConfirmEmitted(10, 1, o)
		c.PublishEnded(10, 100+o, core.Confirmed, 1, o)
		c.DeliveryReceived(11, 1, o, 5, body(100+o))
		if o < 8 {
			c.AckSent(1, o, 5)
		}
	}
	for n := uint64(1); n <= 3; n++ {
		fd.retain(n, 8)
		if !c.Retained(12, 11, core.NodeID(n), 1) {
			t.Fatalf("n%d: the durable start did not move", n)
		}
	}
	c.Final(20, func(core.QueueID) bool { return true })
	wantClean(t, c)
	if got := c.rep(1, 1).disk.Start(); got != 8 {
		t.Fatalf("the checker reads the durable start as %d", got)
	}

	fd.retain(1, 16)
	c.Retained(13, 12, 1, 1)
	wantFailure(t, c, "retention-settled")
}

// An owner's retention past what a follower it heard from lately lacks
// fails retention-held; a follower silent for the window protects nothing.
func TestRetentionPastAHeardFollowerFails(t *testing.T) {
	for _, heardAgoNs := range []int64{2e9, 9e9} {
		c, fd := newChecker()
		c.SetHeard(func(q core.QueueID, n core.NodeID) int64 {
			if n == 3 {
				return 10e9 - heardAgoNs
			}
			return -1
		}, 5e9)
		var recs []record.Record
		for o := uint64(0); o < 24; o++ {
			c.PublishStarted(100+o, 16)
			recs = append(recs, pub(1, o, 100+o))
		}
		written(c, fd, 1, recs...)
		written(c, fd, 2, recs...)
		written(c, fd, 3, recs[:10]...) // n3 holds [0, 10) only
		for o := uint64(0); o < 24; o++ {
			c.DeliveryReceived(9e9, 1, o, 5, body(100+o))
			c.AckSent(1, o, 5)
		}
		fd.retain(1, 16)
		c.Retained(10e9, 10e9, 1, 1)
		if heardAgoNs < 4e9 {
			wantFailure(t, c, "retention-held")
		} else {
			wantClean(t, c)
		}
	}
}
