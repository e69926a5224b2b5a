package memfs

import (
	"fmt"
	"io"
	"math"

	"github.com/sluicemq/sluice/io/vfs"
)

var (
	errClosed  = fmt.Errorf("memfs: %w", vfs.ErrClosed)
	errNoSpace = fmt.Errorf("memfs: %w", vfs.ErrNoSpace)
	errNegOff  = fmt.Errorf("memfs: negative offset")
)

// undoBufRetainMax bounds the capacity of a file's undo buffer kept across
// syncs, so that one large burst does not pin memory forever.
const undoBufRetainMax = 4 << 20

// undoOp is one pending (unsynced) write or truncation of a file.
type undoOp struct {
	trunc   bool
	off     int64 // write: offset; truncate: the new size
	n       int64 // write: length
	oldSize int64 // file size before the operation
	saved   int64 // start of the saved bytes in undoBuf
	savedN  int64 // saved bytes: the old contents of [off, off+savedN)
	// zeros: those old contents were all zero, and none are kept in
	// undoBuf: a log writing into the zeros its file runs ahead with
	// (seglog's ExtendBytes) saves nothing. savedOld reads them.
	zeros bool
}

// File is an open file: a small handle on a file of an FS. It dies (returns
// vfs.ErrClosed) when closed or when the FS crashes.
type File struct {
	fs     *FS
	n      *node
	name   string
	gen    uint64
	closed bool
}

var _ vfs.File = (*File)(nil)

// Name returns the name the file was opened under.
func (f *File) Name() string { return f.name }

// live reports whether the handle may be used. A live handle keeps its
// file from being freed (node.opens), so its contents must be live too.
func (f *File) live() bool {
	if f.closed || f.gen != f.fs.gen {
		return false
	}
	f.n.c.mustLive()
	return true
}

// ReadAt implements vfs.File.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if !f.live() {
		return 0, errClosed
	}
	if off < 0 {
		return 0, errNegOff
	}
	if f.fs.inj != nil {
		if err := f.fs.inj.Inject(Access{Op: OpRead, Name: f.name, Off: off, Len: len(p)}); err != nil {
			return 0, err
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	size := f.n.c.size
	if off >= size {
		return 0, io.EOF
	}
	if len(f.n.unreadable) > 0 && f.n.unreadableIn(off, min(off+int64(len(p)), size)) {
		return 0, unreadableErr("read", f.name, off)
	}
	k := f.n.c.read(p, off)
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// WriteAt implements vfs.File.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if !f.live() {
		return 0, errClosed
	}
	if off < 0 {
		return 0, errNegOff
	}
	fs := f.fs
	if fs.inj != nil {
		if err := fs.inj.Inject(Access{Op: OpWrite, Name: f.name, Off: off, Len: len(p)}); err != nil {
			return 0, err
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := f.n
	size := n.c.size
	end := off + int64(len(p))
	if len(n.unreadable) > 0 {
		n.rewritten(fs, off, end) // new bytes on the media read fine
	}
	if end > size {
		old := n.footprint()
		if err := fs.reserve(n, max(end, n.prealloc)); err != nil {
			return 0, errNoSpace
		}
		n.logWrite(off, int64(len(p)))
		n.c.setSize(end) // a gap [size, off) reads as zeros
		fs.account(n, old)
	} else {
		n.logWrite(off, int64(len(p)))
	}
	n.c.write(p, off)
	fs.stats.Writes++
	fs.stats.WriteBytes += int64(len(p))
	return len(p), nil
}

// Sync implements vfs.File. It is O(1) (see syncDone): the undo log
// becomes the batch LoseSyncedWrite chooses from.
func (f *File) Sync() error {
	if !f.live() {
		return errClosed
	}
	fs := f.fs
	if fs.inj != nil {
		if err := fs.inj.Inject(Access{Op: OpSync, Name: f.name}); err != nil {
			if fs.syncFailRand != nil {
				// As Linux does: the dirty pages are dropped, the error
				// is reported once, and the file holds whatever reached
				// the media.
				fs.settle(f.n, fs.syncFailRand)
			}
			// Else the pending operations stay pending: unknown state.
			return err
		}
	}
	if len(f.n.undo) > 0 {
		f.n.notePending(fs.nextStamp())
	}
	f.n.syncDone()
	fs.stats.Syncs++
	return nil
}

// Truncate implements vfs.File.
func (f *File) Truncate(size int64) error {
	if !f.live() {
		return errClosed
	}
	if size < 0 {
		return errNegOff
	}
	fs := f.fs
	if fs.inj != nil {
		if err := fs.inj.Inject(Access{Op: OpTruncate, Name: f.name, Off: size}); err != nil {
			return err
		}
	}
	n := f.n
	if size > n.c.size {
		if err := fs.reserve(n, max(size, n.prealloc)); err != nil {
			return errNoSpace
		}
	}
	n.truncate(fs, size)
	fs.stats.Truncates++
	return nil
}

// Size implements vfs.File.
func (f *File) Size() (int64, error) {
	if !f.live() {
		return 0, errClosed
	}
	if f.fs.inj != nil {
		if err := f.fs.inj.Inject(Access{Op: OpSize, Name: f.name}); err != nil {
			return 0, err
		}
	}
	return f.n.c.size, nil
}

// Preallocate implements vfs.File: it reserves space (counted by Usage and
// checked against the capacity) without changing the size. The reservation
// survives crashes.
func (f *File) Preallocate(size int64) error {
	if !f.live() {
		return errClosed
	}
	fs := f.fs
	if fs.inj != nil {
		if err := fs.inj.Inject(Access{Op: OpPreallocate, Name: f.name, Off: size}); err != nil {
			return err
		}
	}
	n := f.n
	if size <= n.prealloc {
		return nil
	}
	old := n.footprint()
	if err := fs.reserve(n, max(size, n.c.size)); err != nil {
		return errNoSpace
	}
	n.prealloc = size
	fs.account(n, old)
	return nil
}

// Close implements vfs.File. It does not sync.
func (f *File) Close() error {
	if !f.live() {
		return errClosed
	}
	f.closed = true
	f.n.opens--
	f.fs.release(f.n) // an unlinked file lives until its last handle closes
	return nil
}

// ---- node contents ----

// setSize sets the size; growth reads as zeros.
func (n *node) setSize(size int64) { n.c.setSize(size) }

// logWrite records the pending write of n bytes at off, before it is made.
func (n *node) logWrite(off, ln int64) {
	size := n.c.size
	if k := len(n.undo); k > 0 {
		u := &n.undo[k-1]
		// A write continuing the previous one past the end of the file
		// extends it: the merged operation restores the same bytes.
		if !u.trunc && off == u.off+u.n && off >= size {
			u.n += ln
			return
		}
	}
	savedN := min(off+ln, size) - off
	if savedN < 0 {
		savedN = 0
	}
	n.undo = append(n.undo, n.save(undoOp{off: off, n: ln, oldSize: size, savedN: savedN}))
}

// save keeps the old contents of [u.off, u.off+u.savedN) for u, or notes
// that they are all zero.
func (n *node) save(u undoOp) undoOp {
	u.saved = int64(len(n.undoBuf))
	if u.savedN > 0 {
		if n.c.allZero(u.off, u.off+u.savedN) {
			u.zeros = true
		} else {
			n.undoBuf = n.c.appendRange(n.undoBuf, u.off, u.off+u.savedN)
		}
	}
	return u
}

// savedOld returns the old contents u saved of [lo, hi), within
// [u.off, u.off+u.savedN), from buf (undoBuf, or syncedBuf for a synced
// operation): nil when they are zeros.
func savedOld(u *undoOp, buf []byte, lo, hi int64) []byte {
	if u.zeros {
		return nil
	}
	s := u.saved + lo - u.off
	return buf[s : s+hi-lo]
}

// truncate sets the size as a pending operation.
func (n *node) truncate(fs *FS, size int64) {
	cur := n.c.size
	if size == cur {
		return
	}
	old := n.footprint()
	savedN := max(cur-size, 0)
	n.undo = append(n.undo, n.save(undoOp{trunc: true, off: size, oldSize: cur, savedN: savedN}))
	n.setSize(size)
	if size < cur && len(n.unreadable) > 0 {
		n.rewritten(fs, size, math.MaxInt64) // the bytes past the new size are gone
	}
	fs.account(n, old)
}

// durableByte returns the location holding the durable byte at off, or nil
// if off is past the durable size.
func (n *node) durableByte(off int64) *byte {
	durSize := n.c.size
	if len(n.undo) > 0 {
		durSize = n.undo[0].oldSize
	}
	if off < 0 || off >= durSize {
		return nil
	}
	// The oldest pending operation that saved the byte holds its durable
	// value; no pending operation can touch it before without saving it.
	for i := range n.undo {
		u := &n.undo[i]
		if off >= u.off && off < u.off+u.savedN {
			if u.zeros { // the caller may change the byte: keep them now
				u.saved, u.zeros = int64(len(n.undoBuf)), false
				n.undoBuf = append(n.undoBuf, make([]byte, u.savedN)...)
			}
			return &n.undoBuf[u.saved+off-u.off]
		}
	}
	return n.c.bytePtr(off)
}

// durableContents returns what the file holds once every pending operation
// is undone.
func (n *node) durableContents() []byte {
	tmp := &node{c: n.c.clone(), undo: n.undo, undoBuf: n.undoBuf}
	tmp.crash(nil, nil)
	return tmp.c.bytes()
}
