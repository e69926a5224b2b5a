package queue

import (
	"fmt"
	"math"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// noTrunc marks "no truncation since the sync in flight was issued".
const noTrunc = math.MaxUint64

// replicaLog is the log as the replica issued it to storage: [start, end),
// durable below syncedEnd, with its epoch history, the sync in flight, and
// the most recent records kept in memory for followers and consumers.
type replicaLog struct {
	start, end   uint64
	syncedEnd    uint64
	epochs       []seam.EpochStart
	syncInFlight bool
	syncTarget   uint64
	// syncsIssued, syncsDone count the syncs issued and completed: a
	// follower that reseeded reports nothing until a sync issued after
	// the reseed completed (the reseed ran before it)
	syncsIssued, syncsDone uint64
	// retaining: a retention is in flight, issued to start; its
	// completion tells where the log starts (the base of the segment
	// holding it), which becomes the start
	retaining bool
	// asked: the highest start a retention asked for (the log may keep
	// more, a segment's worth): the next retention waits until enough
	// lies past it, not past the start the storage kept
	asked uint64
	// retainsStale: retentions a reseed came after while they were in
	// flight: their completions (the oldest ones to come, in order) say
	// nothing of the log any more (seed 23000001910: two reseeds, each
	// after a retention, and the second completion taken as current)
	retainsStale int
	truncLow     uint64 // lowest truncation since the sync in flight was issued

	// cache: records [cacheStart, end) kept in memory, a window on
	// cacheBuf that runs to its end (records leave at the front, come in
	// at the back; makeRoom moves the window back to the front).
	cache      []record.Record
	cacheBuf   []record.Record
	cacheStart uint64
	cacheBytes int64
	// bodies holds the cached records' bodies (bodies.go)
	bodies bodyArena
}

func (l *replicaLog) restore(st *seam.LogState) {
	l.start, l.end, l.syncedEnd = st.Start, st.End, st.End
	l.epochs = append(l.epochs[:0], st.Epochs...)
	l.cacheStart = st.End
}

// noteEpoch records that rec of epoch e sits at offset; it reports whether
// the epoch is new to the history.
func (l *replicaLog) noteEpoch(e, offset uint64) bool {
	n := len(l.epochs)
	if n > 0 && l.epochs[n-1].Epoch == e {
		return false
	}
	if n > 0 && l.epochs[n-1].Epoch > e {
		panic(fmt.Sprintf("queue: epoch %d after epoch %d in log", e, l.epochs[n-1].Epoch))
	}
	l.epochs = append(l.epochs, seam.EpochStart{Epoch: e, Offset: offset})
	return true
}

// appendCached appends rec at the end and keeps it in memory, its body
// copied, within cacheBytesMax; it returns the record as kept. step is the
// Step under way (seam.Out.Steps).
func (l *replicaLog) appendCached(rec record.Record, cacheBytesMax int64, step uint64) record.Record {
	if rec.Offset != l.end {
		panic(fmt.Sprintf("queue: append at %d, log end %d", rec.Offset, l.end))
	}
	l.end++
	if len(l.cache) == cap(l.cache) {
		l.makeRoom()
	}
	rec.Body = l.bodies.keep(rec.Offset, rec.Body, step)
	l.cache = append(l.cache, rec)
	l.cacheBytes += int64(len(rec.Body))
	if l.cacheBytes > cacheBytesMax && len(l.cache) > 1 {
		for l.cacheBytes > cacheBytesMax && len(l.cache) > 1 {
			l.dropCachedFront()
		}
		l.bodies.release(l.cacheStart, step)
	}
	return rec
}

// dropCachedFront lets the cache's oldest record go.
func (l *replicaLog) dropCachedFront() {
	l.cacheBytes -= int64(len(l.cache[0].Body))
	l.cache[0] = record.Record{}
	l.cache = l.cache[1:]
	l.cacheStart++
}

// makeRoom gives the cache room for one more record at its back: it moves
// the window to the front of cacheBuf when at least half of it is free
// there, else it moves it to a buffer twice as large. Appending to a
// window that drops records at its front would otherwise reallocate and
// copy it every few hundred records (5 MB a standard run). Nothing may
// hold a pointer into the cache across an append: storage effects carry
// copies (seam.Out.Record), sends encode at once.
func (l *replicaLog) makeRoom() {
	n := len(l.cache)
	head := cap(l.cacheBuf) - cap(l.cache) // the window's index in cacheBuf
	if cap(l.cacheBuf) > 0 && head >= n {
		copy(l.cacheBuf, l.cache)
		clear(l.cacheBuf[n : head+n]) // drop the moved records' old copies
		l.cache = l.cacheBuf[:n]
		return
	}
	buf := make([]record.Record, 2*max(n, 32))
	copy(buf, l.cache)
	l.cacheBuf, l.cache = buf, buf[:n]
}

// appendUncached extends the log by records a follower got from its owner
// (they stay in the message; the follower keeps no cache).
func (l *replicaLog) appendUncached(n int) { l.end += uint64(n) }

// cached returns the record at offset o if it is in memory.
func (l *replicaLog) cached(o uint64) *record.Record {
	if o < l.cacheStart || o >= l.cacheStart+uint64(len(l.cache)) {
		return nil
	}
	return &l.cache[o-l.cacheStart]
}

// truncate removes the records from o on; it reports false when there is
// nothing to remove.
func (l *replicaLog) truncate(o uint64) bool {
	if o >= l.end {
		return false
	}
	l.end = o
	l.syncedEnd = min(l.syncedEnd, o)
	l.truncLow = min(l.truncLow, o)
	for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].Offset >= o {
		l.epochs = l.epochs[:len(l.epochs)-1]
	}
	if o < l.cacheStart+uint64(len(l.cache)) {
		keep := int(max(o, l.cacheStart) - l.cacheStart)
		for i := keep; i < len(l.cache); i++ {
			l.cacheBytes -= int64(len(l.cache[i].Body))
			l.cache[i] = record.Record{}
		}
		l.cache = l.cache[:keep]
		if len(l.cache) == 0 {
			l.cacheStart = o
		}
	}
	return true
}

// retain issues the deletion of the log's head below to (within the log):
// until the completion, nothing below to is read.
func (l *replicaLog) retain(to uint64) {
	if l.retaining || to <= max(l.start, l.asked) || to > l.end {
		panic(fmt.Sprintf("queue: retain to %d of log [%d, %d) (retaining %v)", to, l.start, l.end, l.retaining))
	}
	l.retaining = true
	l.start, l.asked = to, to
}

// retained takes a retention's completion: the log starts at start now,
// at most where it was asked to (the storage keeps whole segments). The
// records between are still held; a restart finds the log starting there,
// and a seal must say what a restart finds.
func (l *replicaLog) retained(start uint64, step uint64) {
	if l.retainsStale > 0 {
		l.retainsStale--
		return
	}
	if !l.retaining || start > l.start {
		panic(fmt.Sprintf("queue: a retention completed at %d, asked for %d (retaining %v)", start, l.start, l.retaining))
	}
	l.retaining = false
	l.start = start
	// Nothing below the start is read again (a follower that needs it is
	// reset), so the cache lets it go: held, it would keep the buffer
	// growing with the whole log's records and their bodies.
	for len(l.cache) > 0 && l.cacheStart < start {
		l.dropCachedFront()
	}
	l.bodies.release(l.cacheStart, step)
}

// needSync reports whether a sync should be issued now: unsynced records
// or a truncation exist and none is in flight.
func (l *replicaLog) needSync() bool {
	return !l.syncInFlight && (l.syncedEnd < l.end || l.truncLow != noTrunc)
}

// startSync marks a sync in flight and returns the end it covers.
func (l *replicaLog) startSync() uint64 {
	l.syncInFlight = true
	l.syncsIssued++
	l.syncTarget = l.end
	l.truncLow = noTrunc
	return l.end
}

// synced takes a sync completion covering the end off.
func (l *replicaLog) synced(off uint64) {
	if !l.syncInFlight || off != l.syncTarget {
		panic(fmt.Sprintf("queue: sync completion for %d, in flight %v target %d", off, l.syncInFlight, l.syncTarget))
	}
	l.syncInFlight = false
	l.syncsDone++
	l.syncedEnd = max(l.syncedEnd, min(l.syncTarget, l.truncLow))
	if l.syncedEnd > l.end {
		panic("queue: synced beyond log end")
	}
}
