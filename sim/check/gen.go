package check

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strconv"

	"github.com/sluicemq/sluice/core"
)

// Generations (io/seglog's gen.go). A log's directory holds its first
// generation's segments, and a recovery's installation may publish a
// later one, in the subdirectory gen-G, by the pointer file GEN: magic
// "SLUICGEN01", the generation u64 little endian, CRC32C u32 of what
// precedes it. The checkers read the durable pointer themselves to know
// which directory is a replica's truth: a process's claims about its
// generation are judged, never taken.
const (
	dGenName  = "GEN"
	dGenMagic = "SLUICGEN01"
	dGenBytes = len(dGenMagic) + 8 + 4
)

// durableGeneration returns the generation the durable pointer of the log
// in dir names (0 without one), or ok false when a pointer is there and
// does not check.
func durableGeneration(d Disk, dir string) (gen uint64, ok bool) {
	names, err := d.DurableList(dir)
	if err != nil || !slices.Contains(names, dGenName) {
		return 0, true
	}
	b := make([]byte, dGenBytes+1) // one byte more: a longer file does not check
	if n, _ := d.ReadDurable(dir+"/"+dGenName, b, 0); n != dGenBytes {
		return 0, false
	}
	b = b[:dGenBytes]
	if string(b[:len(dGenMagic)]) != dGenMagic ||
		crc32.Checksum(b[:dGenBytes-4], dCastagnoli) != binary.LittleEndian.Uint32(b[dGenBytes-4:]) {
		return 0, false
	}
	gen = binary.LittleEndian.Uint64(b[len(dGenMagic):])
	return gen, gen != 0
}

// generationDir is the directory of generation gen of the log in dir.
func generationDir(dir string, gen uint64) string {
	if gen == 0 {
		return dir
	}
	return dir + "/gen-" + strconv.FormatUint(gen, 10)
}

// followGeneration points r's truth at the generation its disk's durable
// pointer names, and reports the generation (ok false: the pointer does
// not check, and the truth stays where it was).
func (c *Checker) followGeneration(qt *queueTruth, r *replicaTruth) (uint64, bool) {
	d := c.diskOf(qt.spec.Queue, r.node)
	gen, ok := durableGeneration(d, qt.spec.Dir)
	if !ok {
		return 0, false
	}
	if dir := generationDir(qt.spec.Dir, gen); r.disk.dir != dir {
		r.disk = c.newDiskLog(qt, dir)
		r.disk.Reparse(d)
	}
	return gen, true
}

// Published judges, as node's publish of its stage of q as generation gen
// completes (a recovery's installation), that the disk's durable pointer
// names gen and that the generation durably holds the records [start,
// end) with the epochs the stage was issued (publish-durable); the
// replica's truth is that generation from now on: a publish is a
// truncation of its log to nothing and a durable copy of what the stage
// holds.
func (c *Checker) Published(atNs int64, node core.NodeID, q core.QueueID, gen, start, end uint64, epochs []core.EpochStart) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	r := qt.replica(node)
	if r == nil {
		return
	}
	got, ok := c.followGeneration(qt, r)
	if !ok || got != gen {
		c.fail("publish-durable", atNs, "n%d q=%d: the publish of generation %d completed, but the durable pointer names generation %d (checks: %v)",
			node, q, gen, got, ok)
		return
	}
	r.disk.Reparse(c.diskOf(q, node))
	var cur epochCursor
	for o := start; o < end; o++ {
		if id, e := r.disk.At(o), cur.at(epochs, o); !id.Intact() || id.Epoch != e {
			c.fail("publish-durable", atNs, "n%d q=%d: generation %d was published holding [%d,%d), but its disk durably holds %s at o=%d (epoch %d issued)%s",
				node, q, gen, start, end, id, o, e, noteOf(r.disk))
			end = o
			break
		}
	}
	qt.dropSeen(0, r.idx)
	r.sameTable()
	r.issued = r.disk.appendRefs(r.issued[:0], end)
	for o, ref := range r.issued {
		qt.addSeenRef(uint64(o), ref, r.idx)
	}
	r.acked, r.verified = end, end
	if r.injected {
		// The damage struck another generation: the copy is whole again
		// once this one is undamaged (noteRepair).
		r.damageEnd = end
	}
	c.noteRepair(qt, r)
}
