package memfs

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/sluicemq/sluice/io/vfs"
)

// Bounds of the fault state kept per file.
const (
	// syncedWritesMax and syncedBytesMax bound the writes LoseSyncedWrite
	// can choose from: the newest writes of the last synced batch, at most
	// this many, whose overwritten bytes total at most syncedBytesMax.
	syncedWritesMax = 64
	syncedBytesMax  = 1 << 20
	// syncedOpsMax bounds the operations (writes and truncations) kept.
	syncedOpsMax = 2 * syncedWritesMax
	// unreadableRangesMax bounds the sticky unreadable ranges of a file.
	unreadableRangesMax = 16
)

// span is a byte range [lo, hi).
type span struct{ lo, hi int64 }

// durableSize is the size CrashClean would leave.
func (n *node) durableSize() int64 {
	if len(n.undo) > 0 {
		return n.undo[0].oldSize
	}
	return n.c.size
}

// ---- reading the durable state ----

// ReadDurable reads what CrashClean would leave under the durable entry
// name (the durable namespace and the synced contents), with ReadAt
// semantics: io.EOF at or after the durable size, a short read and io.EOF
// at its end. It copies only the bytes asked for. It fails with
// vfs.ErrNotExist when the entry is not durable, and with an error wrapping
// vfs.ErrIO when the bytes it would return overlap an unreadable range
// (SetUnreadable). It does not consult the Injector: it is the simulator's
// view of the media, not an operation of the file system.
func (fs *FS) ReadDurable(name string, p []byte, off int64) (int, error) {
	n, err := fs.lookupDurable("readdurable", name)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errNegOff
	}
	size := n.durableSize()
	if len(p) == 0 {
		return 0, nil
	}
	if off >= size {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), size-off))
	if len(n.unreadable) > 0 && n.unreadableIn(off, off+int64(k)) {
		return 0, unreadableErr("readdurable", name, off)
	}
	q := p[:k]
	m := n.c.read(q, off)
	clear(q[m:])
	// The oldest pending operation that saved a byte holds its durable
	// value (see durableByte): overlay the saved bytes newest first, so
	// that the oldest is written last.
	end := off + int64(k)
	for i := len(n.undo) - 1; i >= 0; i-- {
		u := &n.undo[i]
		lo, hi := max(u.off, off), min(u.off+u.savedN, end)
		if lo < hi {
			if old := savedOld(u, n.undoBuf, lo, hi); old != nil {
				copy(q[lo-off:hi-off], old)
			} else {
				clear(q[lo-off : hi-off])
			}
		}
	}
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// DurableSize returns the size of the file that the durable entry name
// refers to, as CrashClean would leave it; vfs.ErrNotExist when the entry
// is not durable.
func (fs *FS) DurableSize(name string) (int64, error) {
	n, err := fs.lookupDurable("durablesize", name)
	if err != nil {
		return 0, err
	}
	return n.durableSize(), nil
}

// HasUnreadable reports whether the file that the durable entry name
// refers to holds an unreadable range within its durable size (false
// when the entry is not durable): a medium error that no write has cured.
func (fs *FS) HasUnreadable(name string) bool {
	n, err := fs.lookupDurable("hasunreadable", name)
	return err == nil && n.unreadableIn(0, n.durableSize())
}

// DurableList returns the names durable in dir (files and directories),
// sorted; vfs.ErrNotExist when dir itself is not durable.
func (fs *FS) DurableList(dir string) ([]string, error) {
	dir, err := clean("durablelist", dir)
	if err != nil {
		return nil, err
	}
	ents, ok := fs.dur[dir]
	if !ok {
		return nil, notExist("durablelist", dir)
	}
	return slices.Sorted(maps.Keys(ents)), nil
}

// ---- sticky unreadable ranges ----

// ErrPending: SetUnreadable's range holds bytes of an operation not yet
// synced.
var ErrPending = errors.New("memfs: bytes of an unsynced operation")

func unreadableErr(op, name string, off int64) error {
	return fmt.Errorf("memfs: %s %s at %d: unreadable range: %w", op, name, off, vfs.ErrIO)
}

// SetUnreadable makes bytes [off, off+n) of the named file (its current
// name, else its durable one) unreadable, as a medium error would: every
// ReadAt and ReadDurable whose bytes overlap the range fails with an error
// wrapping vfs.ErrIO, until the bytes are rewritten. A WriteAt makes the
// bytes it covers readable again (at once, whether or not it is synced); a
// Truncate below the range drops what lies past the new size. The range
// survives crashes: it is the media. A file holds at most 16 ranges
// (overlapping or touching ranges merge); SetUnreadable refuses more. It
// also refuses a range that an operation not yet synced touches (a write,
// an extension or a cut of the file, ErrPending): those bytes are on their
// way to the media, and writing them rewrites (and so cures) the sector.
func (fs *FS) SetUnreadable(name string, off, n int64) error {
	nd, err := fs.lookupFault("setunreadable", name)
	if err != nil {
		return err
	}
	if off < 0 || n <= 0 || off > off+n {
		return fmt.Errorf("memfs: setunreadable %s: bad range [%d, %d+%d)", name, off, off, n)
	}
	for i := range nd.undo {
		if nd.undo[i].touches(off, off+n) {
			return fmt.Errorf("memfs: setunreadable %s [%d, %d): %w", name, off, off+n, ErrPending)
		}
	}
	lo, hi := off, off+n
	// Merge with the ranges it overlaps or touches; keep them sorted.
	i := 0
	for i < len(nd.unreadable) && nd.unreadable[i].hi < lo {
		i++
	}
	j := i
	for j < len(nd.unreadable) && nd.unreadable[j].lo <= hi {
		lo, hi = min(lo, nd.unreadable[j].lo), max(hi, nd.unreadable[j].hi)
		j++
	}
	if j == i && len(nd.unreadable) >= unreadableRangesMax {
		return fmt.Errorf("memfs: setunreadable %s: already %d unreadable ranges", name, unreadableRangesMax)
	}
	if nd.unreadable == nil {
		nd.unreadable = make([]span, 0, unreadableRangesMax)
	}
	nd.unreadable = slices.Replace(nd.unreadable, i, j, span{lo, hi})
	nd.noteChange(fs.nextStamp(), off, off+n)
	return nil
}

// unreadableIn reports whether [lo, hi) overlaps an unreadable range.
func (n *node) unreadableIn(lo, hi int64) bool {
	for _, s := range n.unreadable {
		if s.lo < hi && lo < s.hi {
			return true
		}
	}
	return false
}

// rewritten makes bytes [lo, hi) readable again. Splitting a range when the
// file already holds unreadableRangesMax ranges drops the smaller piece
// (it becomes readable): the bound holds, and the error is on the side of
// fewer faults.
func (n *node) rewritten(fs *FS, lo, hi int64) {
	for i := 0; i < len(n.unreadable); i++ {
		s := n.unreadable[i]
		if s.hi <= lo || hi <= s.lo {
			continue
		}
		// Readable again, at once, in the durable image too.
		n.noteChange(fs.nextStamp(), max(s.lo, lo), min(s.hi, hi))
		left, right := span{s.lo, lo}, span{hi, s.hi}
		switch {
		case left.lo < left.hi && right.lo < right.hi:
			if len(n.unreadable) < unreadableRangesMax {
				n.unreadable[i] = left
				n.unreadable = slices.Insert(n.unreadable, i+1, right)
				i++
			} else if left.hi-left.lo >= right.hi-right.lo {
				n.unreadable[i] = left
			} else {
				n.unreadable[i] = right
			}
		case left.lo < left.hi:
			n.unreadable[i] = left
		case right.lo < right.hi:
			n.unreadable[i] = right
		default:
			n.unreadable = slices.Delete(n.unreadable, i, i+1)
			i--
		}
	}
}

// ---- failed syncs that drop the dirty pages ----

// SetSyncFailureDropsPages makes a Sync that the Injector fails behave as
// Linux reports a failed fsync: the file's pending writes and truncations
// are settled as a power loss would settle that one file (each sector of
// each pending write lost, kept or torn, drawn from r), the file's current
// contents then show what the media holds (the dirty pages were dropped),
// and nothing of it stays pending, so a later Sync of the file succeeds
// (the error is reported once). Handles stay usable and the namespace is
// untouched. With r nil (the default) a failed Sync leaves the pending
// operations pending.
func (fs *FS) SetSyncFailureDropsPages(r Rand) { fs.syncFailRand = r }

// settle settles n's pending operations as a power loss of that one file.
func (fs *FS) settle(n *node, r Rand) {
	old := n.footprint()
	n.forgetSyncedTouchedByPending()
	n.notePending(fs.nextStamp())
	n.crash(r, fs.crashSector)
	fs.account(n, old)
}

// ---- lost writes ----

// syncDone makes every pending operation durable and keeps the newest of
// them for LoseSyncedWrite (the window: at most syncedOpsMax operations,
// of which at most syncedWritesMax writes whose overwritten bytes total at
// most syncedBytesMax; older ones are forgotten). It costs O(window): the
// batch's undo log and saved bytes become the remembered ones by a swap,
// and the previous remembered ones become the next undo log, so nothing is
// copied or allocated in the steady state. A batch that saved more than
// the undo log keeps (undoBufRetainMax) is cut down to its window's bytes.
// A Sync with nothing pending keeps the previous batch.
func (n *node) syncDone() {
	if len(n.undo) == 0 {
		return
	}
	k, writes, saved := len(n.undo), 0, int64(0)
	for k > 0 && len(n.undo)-k < syncedOpsMax {
		u := &n.undo[k-1]
		if !u.trunc {
			if writes == syncedWritesMax || saved+u.savedN > syncedBytesMax {
				break
			}
			writes++
			saved += u.savedN
		}
		k--
	}
	n.synced, n.undo = n.undo, n.synced[:0]
	n.syncedBuf, n.undoBuf = n.undoBuf, n.syncedBuf[:0]
	if cap(n.undoBuf) > undoBufRetainMax {
		n.undoBuf = nil
	}
	n.synced = n.synced[:copy(n.synced, n.synced[k:])]
	for i := range n.synced {
		if n.synced[i].trunc {
			n.synced[i].saved, n.synced[i].savedN, n.synced[i].zeros = 0, 0, false // only its range matters
		}
	}
	if cap(n.syncedBuf) > undoBufRetainMax {
		buf := make([]byte, 0, saved)
		for i := range n.synced {
			if u := &n.synced[i]; u.savedN > 0 && !u.zeros {
				b := n.syncedBuf[u.saved : u.saved+u.savedN]
				u.saved = int64(len(buf))
				buf = append(buf, b...)
			}
		}
		n.syncedBuf = buf
	}
}

// touches reports whether operation u changes any byte of [lo, hi), or the
// size within it.
func (u *undoOp) touches(lo, hi int64) bool {
	a, b := u.off, u.off+u.n
	if u.trunc {
		a, b = min(u.off, u.oldSize), max(u.off, u.oldSize)
	}
	return a < hi && lo < b
}

// forgetSyncedTouchedByPending forgets the remembered writes that a pending
// operation touches: once the pending operations are settled (a crash, a
// failed Sync that drops the pages) the media under them may have changed.
func (n *node) forgetSyncedTouchedByPending() {
	n.forgetSyncedTouching(func(lo, hi int64) bool {
		for i := range n.undo {
			if n.undo[i].touches(lo, hi) {
				return true
			}
		}
		return false
	})
}

// forgetSyncedTouching forgets the remembered writes whose range hit
// reports.
func (n *node) forgetSyncedTouching(hit func(lo, hi int64) bool) {
	n.synced = slices.DeleteFunc(n.synced, func(u undoOp) bool {
		return !u.trunc && hit(u.off, u.off+u.n)
	})
}

// LoseSyncedWrite makes the media lose one write that the most recent
// successful Sync of the named file (its current name, else its durable
// one) made durable, as a device that acknowledged a write and never
// stored it: r picks the write among the remembered ones (the newest
// writes of that Sync's batch, at most 64 whose overwritten bytes total at
// most 1 MiB; older ones are forgotten; consecutive writes that extended
// the file contiguously count as one) and the shape: the bytes it
// overwrote come back (bytes it wrote past the file's size at the time
// read as zeros), or the whole range reads as zeros. The size stays. Both
// the durable and the current contents change (the page cache is dropped
// for the range). It returns the range and ok; ok is false, and nothing
// changes, when there is no remembered write, or when a later operation
// touches the chosen write's range: a later write or truncation of the same
// synced batch, or a pending one. A lost write is forgotten; a crash, or a
// failed Sync that drops the pages, forgets the writes that a pending
// operation touched, and CrashTearSynced those in the sector it damages.
func (fs *FS) LoseSyncedWrite(name string, r Rand) (off, n int64, ok bool) {
	nd, err := fs.lookupFault("losesyncedwrite", name)
	if err != nil {
		return 0, 0, false
	}
	writes := 0
	for i := range nd.synced {
		if !nd.synced[i].trunc {
			writes++
		}
	}
	if writes == 0 {
		return 0, 0, false
	}
	pick, zeros := r.Intn(writes), r.Intn(2) == 1
	i := 0
	for ; ; i++ {
		if !nd.synced[i].trunc {
			if pick == 0 {
				break
			}
			pick--
		}
	}
	u := nd.synced[i]
	lo, hi := u.off, u.off+u.n
	for j := i + 1; j < len(nd.synced); j++ {
		if nd.synced[j].touches(lo, hi) {
			return 0, 0, false
		}
	}
	for j := range nd.undo {
		if nd.undo[j].touches(lo, hi) {
			return 0, 0, false
		}
	}
	// Nothing after the write touched its range, so the range holds the
	// write's bytes in the current contents, which are also the durable
	// ones there (no pending operation saved them).
	end := min(hi, nd.c.size)
	if lo < end {
		m := int64(0)
		if !zeros && !u.zeros {
			m = min(end-lo, u.savedN)
			nd.c.write(savedOld(&u, nd.syncedBuf, lo, lo+m), lo)
		}
		nd.c.zero(lo+m, end)
	}
	nd.synced = slices.Delete(nd.synced, i, i+1)
	nd.noteChange(fs.nextStamp(), lo, hi)
	return lo, hi - lo, true
}

// lookupFault finds a file for a fault primitive: by its current name, else
// by its durable one.
func (fs *FS) lookupFault(op, name string) (*node, error) {
	name, err := clean(op, name)
	if err != nil {
		return nil, err
	}
	if n, err := fs.lookupFile(op, name); err == nil {
		return n, nil
	}
	return fs.lookupDurable(op, name)
}
