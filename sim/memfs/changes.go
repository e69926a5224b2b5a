package memfs

import "math"

// Where the durable state changed, for readers that read it again.
//
// The checkers read every durable frame again after a crash or an injected
// fault (either may have changed bytes read before), which made a restart
// cost a read of the whole log. Each file keeps a short log of where its
// durable image (the bytes ReadDurable returns, their readability, the
// durable size) changed, stamped from a counter of the FS, so that a
// reader can ask what changed since it last read and read only that.
//
// Every operation that changes the durable image notes the range: a
// successful Sync (each pending operation's range becomes durable), a
// crash and a failed Sync that drops the pages (each pending operation's
// range, whatever the crash kept), a torn sector, Corrupt, LoseSyncedWrite,
// SetUnreadable, and a write or truncation that makes an unreadable range
// readable (at once, as ReadDurable sees it). Ranges are widened, never
// narrowed: a file keeps at most changesMax of them, merging the closest
// two (a merge keeps the newer stamp), so an answer may name more than
// changed, never less. Which file a durable name refers to is a separate
// matter: DurableChanges names the file, and the reader compares.

// changesMax bounds the change ranges kept per file. Appends and their
// header copies each extend one range, so a segment being written keeps
// two.
const changesMax = 16

// durChange says that durable bytes [lo, hi) changed at stamp.
type durChange struct {
	stamp  uint64
	lo, hi int64
}

// DurableStamp returns the FS's change stamp: every change to durable
// bytes noted after this call has a larger stamp (see DurableChanges).
func (fs *FS) DurableStamp() uint64 { return fs.stamp }

// DurableChanges calls f (when not nil) with each range of the file under
// the durable entry name whose durable bytes, their readability or the
// durable size there may have changed after stamp since (a value of
// DurableStamp), and returns the file's identity: a number that another
// file under the name would not have. Ranges may overlap and may be wider
// than what changed; a range may reach past the durable size. It fails with
// vfs.ErrNotExist when the entry is not durable.
func (fs *FS) DurableChanges(name string, since uint64, f func(lo, hi int64)) (file uint64, err error) {
	n, err := fs.lookupDurable("durablechanges", name)
	if err != nil {
		return 0, err
	}
	if f != nil {
		for _, c := range n.changes {
			if c.stamp > since {
				f(c.lo, c.hi)
			}
		}
	}
	return n.id, nil
}

// DurableFiles calls f with each file durable in dir (its subdirectories
// left out) and the file's identity, as DurableChanges returns it, in no
// particular order: the caller must not let the order matter. A reader
// that lists a large directory again after each change of it learns in
// one pass which names are new and which refer to another file now. It
// fails with vfs.ErrNotExist when dir is not durable.
func (fs *FS) DurableFiles(dir string, f func(name string, file uint64)) error {
	dir, err := clean("durablefiles", dir)
	if err != nil {
		return err
	}
	ents, ok := fs.dur[dir]
	if !ok {
		return notExist("durablefiles", dir)
	}
	for name, n := range ents { //detguard:order-independent the contract leaves the order to no one: callers sort what they keep
		if !n.isDir {
			n.c.mustLive() // a durable name refers to it
			f(name, n.id)
		}
	}
	return nil
}

// nextStamp returns a new stamp for the changes of one operation.
func (fs *FS) nextStamp() uint64 {
	fs.stamp++
	return fs.stamp
}

// noteChange records that durable bytes [lo, hi) of n changed at stamp s.
func (n *node) noteChange(s uint64, lo, hi int64) {
	if lo >= hi {
		return
	}
	// Merge with every range it overlaps or touches; keep them sorted by lo.
	i := 0
	for i < len(n.changes) && n.changes[i].hi < lo {
		i++
	}
	j := i
	for j < len(n.changes) && n.changes[j].lo <= hi {
		lo, hi = min(lo, n.changes[j].lo), max(hi, n.changes[j].hi)
		j++
	}
	c := durChange{stamp: s, lo: lo, hi: hi}
	if j > i {
		n.changes[i] = c
		n.changes = append(n.changes[:i+1], n.changes[j:]...)
		return
	}
	if n.changes == nil {
		n.changes = make([]durChange, 0, changesMax)
	}
	n.changes = append(n.changes, durChange{})
	copy(n.changes[i+1:], n.changes[i:])
	n.changes[i] = c
	if len(n.changes) > changesMax {
		// Merge the two neighbours with the smallest gap between them.
		k, gap := 0, int64(math.MaxInt64)
		for m := 0; m+1 < len(n.changes); m++ {
			if g := n.changes[m+1].lo - n.changes[m].hi; g < gap {
				k, gap = m, g
			}
		}
		a, b := n.changes[k], n.changes[k+1]
		n.changes[k] = durChange{stamp: max(a.stamp, b.stamp), lo: a.lo, hi: b.hi}
		n.changes = append(n.changes[:k+1], n.changes[k+2:]...)
	}
}

// opRange is the range of the file an operation changes: a write its bytes
// and any gap it opened past the old size, a truncation the bytes between
// the old and the new size.
func (u *undoOp) opRange() (lo, hi int64) {
	if u.trunc {
		return min(u.off, u.oldSize), max(u.off, u.oldSize)
	}
	return min(u.off, u.oldSize), u.off + u.n
}

// notePending records that the ranges of n's pending operations change in
// the durable image at stamp s (they become durable, or a crash settles
// them).
func (n *node) notePending(s uint64) {
	for i := range n.undo {
		lo, hi := n.undo[i].opRange()
		n.noteChange(s, lo, hi)
	}
}
