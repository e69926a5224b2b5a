package check

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// fakeDisks is a set of durable disks holding v2 segment files, written by
// an encoder of the specification in this test (not io/seglog).
type fakeDisks map[core.NodeID]*fakeDisk

type fakeDisk struct {
	files      map[string][]byte
	unreadable map[string]bool // files holding a medium error (Media)
	gen        uint64
}

func (d *fakeDisk) HasUnreadable(name string) bool { return d.unreadable[name] }

func (d *fakeDisk) DurableList(dir string) ([]string, error) {
	var out []string
	for name := range d.files { //detguard:order-independent sorted below
		if strings.HasPrefix(name, dir+"/") {
			out = append(out, strings.TrimPrefix(name, dir+"/"))
		}
	}
	slices.Sort(out)
	return out, nil
}

func (d *fakeDisk) DurableDirGen(string) uint64 { d.gen++; return d.gen } // always list again

func (d *fakeDisk) ReadDurable(name string, p []byte, off int64) (int, error) {
	b, ok := d.files[name]
	if !ok {
		return 0, fmt.Errorf("no %s", name)
	}
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (fd fakeDisks) disk(n core.NodeID) Disk {
	if fd[n] == nil {
		fd[n] = &fakeDisk{files: map[string][]byte{}}
	}
	return fd[n]
}

const testSlots = 8

// write makes node's log of queue 1 hold exactly recs (one segment per
// testSlots records), as a v2 log would after a sync.
func (fd fakeDisks) write(n core.NodeID, recs ...record.Record) {
	d := fd.disk(n).(*fakeDisk)
	clear(d.files)
	for i := 0; i < len(recs) || i == 0; i += testSlots {
		seg := recs[i:min(i+testSlots, len(recs))]
		base := uint64(i)
		b := make([]byte, 32+32*testSlots)
		copy(b, "SLUICSEG")
		binary.LittleEndian.PutUint32(b[8:], 2)
		binary.LittleEndian.PutUint32(b[12:], testSlots)
		binary.LittleEndian.PutUint64(b[16:], base)
		binary.LittleEndian.PutUint32(b[24:], crc32.Checksum(b[:24], dCastagnoli))
		for j, r := range seg {
			fr := make([]byte, 25+len(r.Body))
			binary.LittleEndian.PutUint32(fr[0:], uint32(17+len(r.Body)))
			binary.LittleEndian.PutUint64(fr[8:], r.Epoch)
			binary.LittleEndian.PutUint64(fr[16:], r.Offset)
			fr[24] = byte(r.Kind)
			copy(fr[25:], r.Body)
			c := crc32.Update(0, dCastagnoli, fr[0:4])
			c = crc32.Update(c, dCastagnoli, fr[8:])
			binary.LittleEndian.PutUint32(fr[4:], c)
			s := b[32+32*j : 64+32*j]
			binary.LittleEndian.PutUint64(s[0:], r.Offset)
			binary.LittleEndian.PutUint64(s[8:], r.Epoch)
			binary.LittleEndian.PutUint32(s[16:], c)
			binary.LittleEndian.PutUint32(s[20:], uint32(17+len(r.Body)))
			s[24] = byte(r.Kind)
			binary.LittleEndian.PutUint32(s[28:], crc32.Checksum(s[:28], dCastagnoli))
			b = append(b, fr...)
		}
		d.files[fmt.Sprintf("q1/%020d.seg", base)] = b
	}
}

func pub(e, o, key uint64) record.Record {
	return record.Record{Epoch: e, Offset: o, Kind: record.KindPublish, Body: body(key)}
}

func body(key uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, key)
	return b
}

// A queue of 3 replicas, owner n1, W=2, and its disks.
func newChecker() (*Checker, fakeDisks) {
	fd := fakeDisks{}
	return New([]QueueSpec{{Queue: 1, Replicas: []core.NodeID{1, 2, 3}, Owner: 1, W: 2, Dir: "q1"}}, fd.disk), fd
}

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

// written makes node's log hold recs both as issued (appended) and on disk
// (synced).
func written(c *Checker, fd fakeDisks, n core.NodeID, recs ...record.Record) {
	fd.write(n, recs...)
	r := c.rep(n, 1)
	if len(recs) > len(r.issued) {
		c.Appended(n, 1, recs[len(r.issued):])
	}
	c.SyncAcked(1, n, 1, uint64(len(recs)))
}

func TestDiskLogReadsAndSkipsDamage(t *testing.T) {
	fd := fakeDisks{}
	var recs []record.Record
	for o := uint64(0); o < 20; o++ {
		recs = append(recs, pub(1, o, 100+o))
	}
	fd.write(1, recs...)
	l := NewDiskLog("q1")
	l.Reparse(fd.disk(1))
	if l.Len() != 20 || l.Prefix() != 20 || l.At(13).Val != 113 {
		t.Fatalf("len=%d prefix=%d at13=%v", l.Len(), l.Prefix(), l.At(13))
	}
	// A flipped bit in the body of offset 3 (second frame after the slot
	// region of the first segment): that copy is gone, the rest is found
	// through the header copy.
	f := fd[1].files["q1/00000000000000000000.seg"]
	f[32+32*testSlots+41*3+30] ^= 1
	l.Reparse(fd.disk(1))
	if l.At(3).Intact() || !l.At(4).Intact() || l.Prefix() != 3 || l.Len() != 20 {
		t.Fatalf("after a flip: at3=%v at4=%v prefix=%d len=%d", l.At(3), l.At(4), l.Prefix(), l.Len())
	}
}

func TestConfirmBeforeWthSyncFails(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7)) // only the owner holds offset 0
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

func TestConfirmAfterWthSyncPasses(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 3, pub(1, 0, 7))
	c.ConfirmEmitted(10, 1, 0)
	wantClean(t, c)
}

func TestConfirmWithoutOwnerFails(t *testing.T) {
	c, fd := newChecker()
	c.Appended(1, 1, []record.Record{pub(1, 0, 7)})
	written(c, fd, 2, pub(1, 0, 7))
	written(c, fd, 3, pub(1, 0, 7))
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

// A different record at the same offset is not a copy, even with the same
// epoch (an owner that reused its epoch).
func TestConfirmCountsOnlyTheSameRecord(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 8))
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

// The old checker took the log's own word (its end after a sync): a log that
// acknowledges a sync it did not make passed. The disk says otherwise.
func TestSyncThatDidNotReachTheDiskFails(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7))
	c.Appended(2, 1, []record.Record{pub(1, 1, 8)}) // appended, never synced
	c.SyncAcked(5, 2, 1, 2)
	wantFailure(t, c, "sync-durable")
}

func TestTruncatedCopyDoesNotCount(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 7))
	fd.write(2)
	c.Truncated(2, 1, 0)
	c.ConfirmEmitted(10, 1, 0)
	wantFailure(t, c, "confirm-durable")
}

func TestRecoveredBelowAckedSyncFails(t *testing.T) {
	// No damage injected: a shorter recovered log is a lost synced record.
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	fd.write(2, pub(1, 0, 7))
	c.Recovered(5, 2, 1, core.LogState{Group: 1, End: 1, Epochs: []core.EpochStart{{Epoch: 1}}})
	wantFailure(t, c, "lost-synced")

	// Damage injected and reported: fine.
	c, fd = newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	c.Injected(2, 1)
	fd.write(2, pub(1, 0, 7))
	c.Recovered(5, 2, 1, core.LogState{Group: 1, End: 1, Epochs: []core.EpochStart{{Epoch: 1}}, Damage: "crc mismatch"})
	wantClean(t, c)

	// Damage injected, recovered as a clean shorter log: unreported loss.
	c, fd = newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	c.Injected(2, 1)
	fd.write(2, pub(1, 0, 7))
	c.Recovered(5, 2, 1, core.LogState{Group: 1, End: 1, Epochs: []core.EpochStart{{Epoch: 1}}})
	wantFailure(t, c, "loss-unreported")
}

func TestRecoveredRecordNotOnDiskFails(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7))
	c.Recovered(5, 2, 1, core.LogState{Group: 1, End: 2, Epochs: []core.EpochStart{{Epoch: 1}}})
	wantFailure(t, c, "recovery-truth")
}

func TestDeliverUnconfirmedFails(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	c.DeliverEmitted(10, 1, 0, 7, false)
	wantFailure(t, c, "deliver-confirmed")
}

func TestDeliverUnpublishedFails(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 1, pub(1, 0, 99))
	written(c, fd, 2, pub(1, 0, 99))
	c.DeliverEmitted(10, 1, 0, 99, false)
	wantFailure(t, c, "deliver-confirmed")
}

func TestDeliveredBodyMustBeThePublishedOne(t *testing.T) {
	c, _ := newChecker()
	c.PublishStarted(7, 16)
	b := body(7)
	b[12] = 1 // one bit off in the body
	c.DeliveryReceived(10, 1, 0, 5, b)
	wantFailure(t, c, "deliver-confirmed")
}

func TestDeliverOutOfOrderFails(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	c.PublishStarted(8, 16)
	written(c, fd, 1, pub(1, 0, 7), pub(1, 1, 8))
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	c.DeliverEmitted(10, 1, 1, 8, false)
	c.DeliverEmitted(11, 1, 0, 7, false)
	wantFailure(t, c, "deliver-order")
}

func TestRedeliveryIsNotDisorder(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	c.PublishStarted(8, 16)
	written(c, fd, 1, pub(1, 0, 7), pub(1, 1, 8))
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.DeliverEmitted(11, 1, 1, 8, false)
	c.DeliverEmitted(12, 1, 0, 7, true)
	wantClean(t, c)
}

func TestFailedPublishDeliveredFails(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	c.PublishEnded(5, 7, core.Failed, 1, 0)
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 7))
	c.DeliverEmitted(10, 1, 0, 7, false)
	wantFailure(t, c, "failed-delivered")

	c, fd = newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 7))
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.PublishEnded(11, 7, core.Failed, 1, 0)
	wantFailure(t, c, "failed-delivered")
}

func drainedAll(core.QueueID) bool  { return true }
func drainedNone(core.QueueID) bool { return false }

// The old checker read the owner's log only: a confirmed record missing
// there was "lost" even when followers held it. Lost means no replica
// holds an intact copy; an owner that lacks it has not converged.
func TestConfirmedLostOnlyWhenNoReplicaHoldsIt(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	c.PublishEnded(5, 7, core.Confirmed, 1, 0)
	c.Final(100, drainedNone)
	wantFailure(t, c, "confirmed-lost")

	c, fd = newChecker()
	c.PublishStarted(7, 16)
	c.PublishEnded(5, 7, core.Confirmed, 1, 0)
	fd.write(2, pub(1, 0, 7))
	c.Final(100, drainedNone)
	for _, f := range c.Failures() {
		if f.Checker == "confirmed-lost" {
			t.Fatalf("a record n2 holds was reported lost: %v", f)
		}
	}
	wantFailure(t, c, "converged")
	if !strings.Contains(c.Failures()[0].Detail, "n2") {
		t.Fatalf("the failure must name the replica that holds the record: %v", c.Failures()[0])
	}
}

func TestReplicasDisagreeFails(t *testing.T) {
	c, fd := newChecker()
	fd.write(1, pub(1, 0, 7))
	fd.write(2, pub(1, 0, 8))
	fd.write(3, pub(1, 0, 7))
	c.Final(100, drainedNone)
	wantFailure(t, c, "converged")
}

// Starved followers: the old checker compared only offsets both held.
func TestFollowerShortOfOwnerFails(t *testing.T) {
	c, fd := newChecker()
	fd.write(1, pub(1, 0, 7), pub(1, 1, 8))
	fd.write(2, pub(1, 0, 7), pub(1, 1, 8))
	fd.write(3, pub(1, 0, 7))
	for _, n := range []core.NodeID{1, 2, 3} {
		c.DiskChanged(n)
	}
	if ok, _ := c.Converged(1); ok {
		t.Fatal("a follower short of the owner's end reported converged")
	}
	c.Final(100, drainedNone)
	wantFailure(t, c, "converged")
}

// Deliveries count when a live consumer receives them, and a consumer lost
// before its ack must see the record redelivered.
func TestAtLeastOnceByReceipt(t *testing.T) {
	setup := func() (*Checker, fakeDisks) {
		c, fd := newChecker()
		c.PublishStarted(7, 16)
		c.PublishEnded(5, 7, core.Confirmed, 1, 0)
		for _, n := range []core.NodeID{1, 2, 3} {
			fd.write(n, pub(1, 0, 7))
		}
		return c, fd
	}
	// Emitted to a connection that was closed: never received.
	c, _ := setup()
	c.DeliverEmitted(10, 1, 0, 7, false)
	c.Final(100, drainedAll)
	wantFailure(t, c, "at-least-once")

	// Received, then the consumer died before acking: no redelivery.
	c, _ = setup()
	c.DeliveryReceived(10, 1, 0, 5, body(7))
	c.ConsumerLost(1, 5, []uint64{0})
	if c.Undelivered(1) != 1 {
		t.Fatalf("a lost delivery must count as undelivered, got %d", c.Undelivered(1))
	}
	c.Final(100, drainedAll)
	wantFailure(t, c, "at-least-once")

	// Received again by another consumer: fine.
	c, _ = setup()
	c.DeliveryReceived(10, 1, 0, 5, body(7))
	c.ConsumerLost(1, 5, []uint64{0})
	c.DeliveryReceived(20, 1, 0, 6, body(7))
	c.Final(100, drainedAll)
	wantClean(t, c)

	// Acked before the loss: fine.
	c, _ = setup()
	c.DeliveryReceived(10, 1, 0, 5, body(7))
	c.AckSent(1, 0, 5)
	c.ConsumerLost(1, 5, []uint64{0})
	c.Final(100, drainedAll)
	wantClean(t, c)
}

func TestLivenessReports(t *testing.T) {
	c, _ := newChecker()
	c.Liveness(5, "2 publishes unresolved")
	wantFailure(t, c, "liveness")
	if !strings.Contains(c.Failures()[0].String(), "unresolved") {
		t.Fatal(c.Failures()[0])
	}
}

func ack(e, o, acked uint64) record.Record {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, acked)
	return record.Record{Epoch: e, Offset: o, Kind: record.KindAck, Body: b}
}

func TestRedeliveryAfterConfirmedAckFails(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 7))
	c.DeliverEmitted(10, 1, 0, 7, false)
	a := ack(1, 1, 0) // the ack of offset 0 sits at offset 1
	c.AckAppended(1, 1, 1, IdentOf(&a), 0)
	written(c, fd, 1, pub(1, 0, 7), a)
	written(c, fd, 3, pub(1, 0, 7), a)
	c.DeliverEmitted(20, 1, 0, 7, true)
	wantFailure(t, c, "redeliver-acked")
}

func TestRedeliveryBeforeAckConfirmedPasses(t *testing.T) {
	c := ackedOnTheOwnerOnly()
	c.DeliverEmitted(20, 1, 0, 7, true)
	wantClean(t, c)
}

// ackedOnTheOwnerOnly returns a checker whose queue 1 confirmed a publish
// at offset 0 on n1 and n2 and delivered it, and whose owner n1 alone
// holds the ack of it (short of W = 2).
func ackedOnTheOwnerOnly() *Checker {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 7))
	c.DeliverEmitted(10, 1, 0, 7, false)
	a := ack(1, 1, 0)
	c.AckAppended(1, 1, 1, IdentOf(&a), 0)
	written(c, fd, 1, pub(1, 0, 7), a)
	return c
}

func TestCleanHistoryPasses(t *testing.T) {
	c, fd := newChecker()
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	written(c, fd, 2, pub(1, 0, 7))
	c.ConfirmEmitted(9, 1, 0)
	c.PublishEnded(10, 7, core.Confirmed, 1, 0)
	c.DeliverEmitted(11, 1, 0, 7, false)
	c.DeliveryReceived(12, 1, 0, 5, body(7))
	written(c, fd, 3, pub(1, 0, 7))
	c.Final(100, drainedAll)
	wantClean(t, c)
}

func TestInjectedDamageRepaired(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	c.Injected(2, 1)
	if d := c.Damaged(1); len(d) != 1 || d[0] != 2 {
		t.Fatalf("damaged = %v", d)
	}
	fd.write(2, pub(1, 0, 7))
	c.Recovered(5, 2, 1, core.LogState{Group: 1, End: 1, Epochs: []core.EpochStart{{Epoch: 1}}, Damage: "crc"})
	c.Discarded(2, 1, 1)
	if len(c.Damaged(1)) != 1 {
		t.Fatal("a copy shorter than before is not repaired")
	}
	written(c, fd, 2, pub(1, 0, 7), pub(2, 1, 9))
	if len(c.Damaged(1)) != 0 {
		t.Fatalf("a copy whole again is repaired, got %v", c.Damaged(1))
	}
}

// sealFile is a seal receipt in io/seglog's format, by this test's own
// encoder: magic, payload length, payload, CRC32C.
func sealFile(payload string) []byte {
	b := append([]byte("SLUICSEAL1"), binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))...)
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, dCastagnoli))
}

// A damaged seal receipt makes the copy a damaged witness however whole its
// records are: the budget counts it until a receipt that checks replaces
// it (seed 9302, where a flipped byte in one replica's SEAL was counted
// repaired at once, and a second copy was damaged beside it).
func TestDamagedSealReceiptIsDamage(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	bad := sealFile("receipt")
	bad[12] ^= 1
	fd.disk(2).(*fakeDisk).files["q1/SEAL"] = bad
	c.Injected(2, 1)
	c.SyncAcked(2, 2, 1, 2)
	if d := c.Damaged(1); len(d) != 1 || d[0] != 2 {
		t.Fatalf("a copy whose seal receipt does not check is repaired: damaged = %v", d)
	}
	fd.disk(2).(*fakeDisk).files["q1/SEAL"] = sealFile("receipt")
	c.SyncAcked(3, 2, 1, 2)
	if d := c.Damaged(1); len(d) != 0 {
		t.Fatalf("a copy with whole records and a receipt that checks stays damaged: %v", d)
	}
}

// An unreadable range past a copy's last frame (in the zeros a segment
// runs ahead with) spoils no frame the parser follows, but the copy's scan
// cannot read through it to prove its end: it stays damage until the
// medium reads whole again (swarm seed 7800014354, where the copy was
// counted repaired once it held as many frames as when struck, and the
// budget let the queue's other two copies be lost).
func TestUnreadablePastTheLastFrameIsDamage(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	d := fd.disk(2).(*fakeDisk)
	d.unreadable = map[string]bool{fmt.Sprintf("q1/%020d.seg", 0): true}
	c.Injected(2, 1)
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8), pub(1, 2, 9))
	if dm := c.Damaged(1); len(dm) != 1 || dm[0] != 2 {
		t.Fatalf("a copy whose segment still holds an unreadable range is repaired: damaged = %v", dm)
	}
	clear(d.unreadable)
	c.SyncAcked(3, 2, 1, 3)
	if dm := c.Damaged(1); len(dm) != 0 {
		t.Fatalf("a copy whole and readable again stays damaged: %v", dm)
	}
}

// A byte flipped past a segment's last frame damages no record, yet the
// copy's own scan reports its log damaged (it cannot tell the garbage from
// a torn frame): the copy counts as damaged for the fault budget, repaired
// or not, until the byte is zero again or frames cover it.
func TestFlipPastTheLastFrameIsDamage(t *testing.T) {
	c, fd := newChecker()
	recs := []record.Record{pub(1, 0, 7), pub(1, 1, 8)}
	garbage := func() int64 {
		fd.write(2, recs...)
		d := fd.disk(2).(*fakeDisk)
		name := fmt.Sprintf("q1/%020d.seg", 0)
		off := int64(len(d.files[name])) + 100
		d.files[name] = append(d.files[name], make([]byte, 200)...)
		d.files[name][off] = 0x10
		return off
	}
	written(c, fd, 2, recs...)
	off := garbage()
	c.Injected(2, 1)
	c.FlippedAt(2, 1, fmt.Sprintf("q1/%020d.seg", 0), off)
	c.SyncAcked(2, 2, 1, 2) // (the disk is read again: whole, the flip past its frames)
	if dm := c.Damaged(1); len(dm) != 1 || dm[0] != 2 {
		t.Fatalf("a copy with a flipped byte past its last frame counts as whole: damaged = %v", dm)
	}
	written(c, fd, 2, recs...) // rewritten, the flipped byte zero again
	if dm := c.Damaged(1); len(dm) != 0 {
		t.Fatalf("a copy whole, its flipped byte zero again, stays damaged: %v", dm)
	}
}

// Records a damaged copy writes after its damage lie past it in the log:
// the copy is not whole again until it holds them too (seed 14235, where a
// copy counted as repaired at the length it had when struck, and a second
// copy was damaged while the first still lacked later records).
func TestInjectedDamageCoversLaterWrites(t *testing.T) {
	c, fd := newChecker()
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8))
	c.Injected(2, 1) // struck at length 2
	// The copy goes on writing offsets 2 and 3 past the damage; its disk
	// never holds them whole, and its recovery ends the log at 2.
	c.Appended(2, 1, []record.Record{pub(1, 2, 9), pub(1, 3, 10)})
	c.Recovered(5, 2, 1, core.LogState{Group: 1, End: 2, Epochs: []core.EpochStart{{Epoch: 1}}, Damage: "crc"})
	c.Discarded(2, 1, 2)
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8), pub(2, 2, 11))
	if len(c.Damaged(1)) != 1 {
		t.Fatal("a copy shorter than what it wrote after the damage counts as repaired")
	}
	written(c, fd, 2, pub(1, 0, 7), pub(1, 1, 8), pub(2, 2, 11), pub(2, 3, 12))
	if len(c.Damaged(1)) != 0 {
		t.Fatalf("a copy whole again is repaired, got %v", c.Damaged(1))
	}
}

// What the checker's parser makes of damage: records behind a damaged
// frame, a damaged header copy or a damaged segment header stay visible,
// and the disk is not called whole until the damage is rewritten.
func TestDiskLogDamage(t *testing.T) {
	var recs []record.Record
	for o := uint64(0); o < 6; o++ {
		recs = append(recs, pub(1, o, 100+o))
	}
	name := "q1/00000000000000000000.seg"
	frameAt := func(i int) int { return 32 + 32*testSlots + 41*i } // 16-byte bodies: 41-byte frames
	for _, tc := range []struct {
		what    string
		flip    func(f []byte)
		missing int // offset with no intact copy, or -1
	}{
		{"frame length", func(f []byte) { f[frameAt(2)+1] ^= 0x40 }, 2},
		{"frame body", func(f []byte) { f[frameAt(4)+30] ^= 1 }, 4},
		{"header copy", func(f []byte) { f[32+32*3+5] ^= 1 }, -1},
		{"segment header", func(f []byte) { f[3] ^= 1 }, -1},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fd := fakeDisks{}
			fd.write(1, recs...)
			l := NewDiskLog("q1")
			l.Reparse(fd.disk(1)) // seen whole once
			if l.Damaged() || l.Len() != 6 {
				t.Fatalf("a whole log: damaged=%v len=%d", l.Damaged(), l.Len())
			}
			tc.flip(fd[1].files[name])
			l.Reparse(fd.disk(1))
			if !l.Damaged() {
				t.Fatalf("damage to the %s went unseen (%s)", tc.what, l.Note())
			}
			for o := uint64(0); o < 6; o++ {
				if got := l.At(o).Intact(); got != (int(o) != tc.missing) {
					t.Fatalf("after damage to the %s: offset %d intact=%v (%s)", tc.what, o, got, l.Note())
				}
			}
		})
	}
}

// A confirm without its durable copies names the replicas that hold the
// record, the follower that reported it durable early with the trace line
// of its report, and the trace line where the confirm was seen.
func TestConfirmFailureNamesTheEvidence(t *testing.T) {
	c, fd := newChecker()
	line := uint64(0)
	c.SetLines(func() uint64 { return line })
	c.PublishStarted(7, 16)
	written(c, fd, 1, pub(1, 0, 7))
	c.Appended(2, 1, []record.Record{pub(1, 0, 7)}) // n2 wrote it, never synced
	line = 40
	c.Reported(2_000_000_000, 2, 1, 1) // and said it was durable
	line = 57
	c.ConfirmEmitted(2_288_518_965, 1, 0)
	wantFailure(t, c, "confirm-durable")
	got := c.Failures()[0].String()
	for _, want := range []string{
		"confirm-durable at t=2.288518965s (trace line 57)",
		"held by n1",
		"n2 reported end=1 durable at t=2.000000000s (trace line 40) without a durable copy",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("failure %q lacks %q", got, want)
		}
	}
}

// A sync that did not reach the disk names the replica, the trace line and
// the replicas that do hold the record.
func TestSyncFailureNamesTheEvidence(t *testing.T) {
	c, fd := newChecker()
	c.SetLines(func() uint64 { return 12 })
	written(c, fd, 2, pub(1, 0, 7))
	c.Appended(1, 1, []record.Record{pub(1, 0, 7)})
	c.SyncAcked(5, 1, 1, 1) // n1's disk holds nothing
	wantFailure(t, c, "sync-durable")
	got := c.Failures()[0].String()
	for _, want := range []string{"(trace line 12)", "n1's completion is the next trace line", "hold the record durably: n2"} {
		if !strings.Contains(got, want) {
			t.Fatalf("failure %q lacks %q", got, want)
		}
	}
}

// An ack held only by the owner was never confirmed under its W, and a
// recovery may drop it: after the queue is reassigned with a smaller W
// (one member), a redelivery of the record it acked is at-least-once, not
// a redelivery of an acked record. (redeliver-acked judged the old ack
// by the new W and flagged it: swarm seed 4117.)
func TestRedeliveryAfterAckUnderOldWPasses(t *testing.T) {
	c := ackedOnTheOwnerOnly()
	c.Reassign(15, 1, 2, 1, []core.NodeID{1}, 1)
	c.DeliverEmitted(20, 1, 0, 7, true)
	wantClean(t, c)
}

// A learner's copy counts once it is admitted (Admitted): what a sync
// acknowledgement verified on its disk while it was away counts then, even
// where injected damage struck it since (as for a member's copy, the fault
// budget answers for that loss), and a confirm counting it holds; a copy
// it never synced does not count (seed 15726).
func TestAdmittedCountsWhatItSynced(t *testing.T) {
	for _, synced := range []bool{true, false} {
		c, fd := newChecker()
		away := true
		c.SetAway(func(q core.QueueID, n core.NodeID) bool { return n == 2 && away })
		c.PublishStarted(7, 16)
		written(c, fd, 1, pub(1, 0, 7))
		if synced {
			written(c, fd, 2, pub(1, 0, 7)) // synced as a learner: not counted yet
		} else {
			fd.write(2, pub(1, 0, 7))
			c.Appended(2, 1, []record.Record{pub(1, 0, 7)})
		}
		if n, _, _ := c.queue(1).holders(0, c.rep(1, 1).issuedAt(0)); n != 1 {
			t.Fatalf("synced=%v: %d holders before the admission, want the owner alone", synced, n)
		}
		fd[2].files["q1/00000000000000000000.seg"][32+32*testSlots+30] ^= 1 // its body, after the sync
		c.Injected(2, 1)
		away = false
		c.Admitted(1, 2)
		c.ConfirmEmitted(2_000_000_000, 1, 0)
		if synced {
			wantClean(t, c)
		} else {
			wantFailure(t, c, "confirm-durable")
		}
	}
}
