package check

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// published makes node's disk hold recs as generation gen of queue 1's
// log (q1/gen-G), and, when point, the durable pointer naming it.
func published(fd fakeDisks, n core.NodeID, gen uint64, point bool, recs ...record.Record) {
	fd.write(n, recs...)
	d := fd.disk(n).(*fakeDisk)
	moved := map[string][]byte{}
	for name, b := range d.files { //detguard:order-independent every file is moved
		moved[generationDir("q1", gen)+strings.TrimPrefix(name, "q1")] = b
	}
	d.files = moved
	if point {
		p := append([]byte(dGenMagic), make([]byte, 8)...)
		binary.LittleEndian.PutUint64(p[len(dGenMagic):], gen)
		d.files["q1/"+dGenName] = binary.LittleEndian.AppendUint32(p, crc32.Checksum(p, dCastagnoli))
	}
}

// A publish whose generation the durable pointer names and durably holds
// is the replica's truth from then on; one the pointer does not name, or
// whose records are not all durable, fails publish-durable.
func TestPublishDurable(t *testing.T) {
	epochs := []core.EpochStart{{Epoch: 5, Offset: 0}}
	c, fd := newChecker()
	published(fd, 2, 5, true, pub(5, 0, 7), pub(5, 1, 8))
	c.Published(1, 2, 1, 5, 0, 2, epochs)
	wantClean(t, c)
	if r := c.rep(2, 1); r.disk.dir != "q1/gen-5" || len(r.issued) != 2 || r.acked != 2 {
		t.Fatalf("after the publish the truth is %s with %d issued, %d acked", r.disk.dir, len(r.issued), r.acked)
	}
	c.Recovered(2, 2, 1, core.LogState{Group: 1, End: 2, Epochs: epochs, Generation: 5})
	wantClean(t, c)

	c, fd = newChecker()
	published(fd, 2, 5, true, pub(5, 0, 7)) // the second record never durable
	c.Published(1, 2, 1, 5, 0, 2, epochs)
	wantFailure(t, c, "publish-durable")

	c, fd = newChecker()
	published(fd, 2, 5, false, pub(5, 0, 7), pub(5, 1, 8)) // no pointer
	c.Published(1, 2, 1, 5, 0, 2, epochs)
	wantFailure(t, c, "publish-durable")

	c, fd = newChecker()
	published(fd, 2, 5, true, pub(5, 0, 7), pub(5, 1, 8))
	fd.disk(2).(*fakeDisk).files["q1/"+dGenName][3] ^= 1 // a pointer that does not check
	c.Published(1, 2, 1, 5, 0, 2, epochs)
	wantFailure(t, c, "publish-durable")
}

// A log that recovers another generation than its durable pointer names
// fails recovery-truth.
func TestRecoveredGenerationIsThePointers(t *testing.T) {
	c, fd := newChecker()
	published(fd, 2, 5, true, pub(5, 0, 7))
	c.Recovered(1, 2, 1, core.LogState{Group: 1, End: 1, Epochs: []core.EpochStart{{Epoch: 5, Offset: 0}}})
	wantFailure(t, c, "recovery-truth")
}
