package memfs

import "fmt"

// Recycling the contents of files that nothing can reach.
//
// A run that deletes files (the segment log's retention removes old
// segments) would otherwise allocate every new file's chunks afresh while
// the deleted files' chunks lie unused until the whole FS is dropped. A
// file's contents can be handed to another file only once nothing can ever
// read them again, and "ever" includes a crash: a pending removal may be
// undone (the durable namespace brings the file back), a pending creation
// or rename may survive (a prefix of the journal is replayed), and an
// unlinked file stays usable through the handles open on it (POSIX) until
// they are closed or a crash kills them.
//
// So each file node counts what can reach it:
//
//   - links: names in the current namespace (cur);
//   - durLinks: names in the durable namespace (dur), kept by setDur, the
//     only writer of dur's file entries;
//   - jrefs: pending journal operations naming it (as the file or as a
//     rename's replaced target), kept by logOp and unref;
//   - opens: handles of the current generation not closed (newFile,
//     File.Close; a crash kills them all).
//
// release frees a file when all four are zero; it is called wherever one
// of them drops: setDur (a durable name replaced or removed), unref (a
// journal operation made durable by SyncDir), File.Close, and a crash,
// which kills every handle, empties the journal and rebuilds cur from dur,
// so that it frees every file left without a durable name (crashSweep).
// Remove and Rename never free: the operation they journal names the file.
//
// Nothing else holds a file's chunks: undo and synced buffers hold copies,
// the fault state (unreadable ranges, changes, the crash and tear scratch)
// holds ranges, durLookup is cleared when its file is freed, dead handles
// check their generation before touching their node, and every exported
// reader (Bytes, DurableBytes, ReadDurable) copies. A freed node is marked
// (content.freed) and every use of its contents panics.

// testFreeEarly, when set (by tests only), is called by Remove after it
// journals the removal: a planted bug that frees too early.
var testFreeEarly func(fs *FS, n *node)

// logOp appends a pending directory operation, counting the files it names.
func (fs *FS) logOp(op dirOp) {
	for _, n := range [2]*node{op.n, op.replaced} {
		if n != nil && !n.isDir {
			n.c.mustLive()
			n.jrefs++
		}
	}
	fs.journal = append(fs.journal, op)
}

// unref drops the references of an operation that left the journal (made
// durable by SyncDir); a file that nothing else reaches is freed.
func (fs *FS) unref(op *dirOp) {
	for _, n := range [2]*node{op.n, op.replaced} {
		if n != nil && !n.isDir {
			n.jrefs--
			if n.jrefs < 0 {
				panic("memfs: negative journal reference count")
			}
			fs.release(n)
		}
	}
}

// release frees n if nothing can reach it any longer. It is called when
// one of n's references was dropped, so n must not have been freed: a
// reference to a freed file is a bug, loud here.
func (fs *FS) release(n *node) {
	if n.isDir {
		return
	}
	n.c.mustLive()
	if n.links > 0 || n.durLinks > 0 || n.jrefs > 0 || n.opens > 0 {
		return
	}
	fs.free(n)
}

// free gives n's chunks back to the slab and marks it freed. With
// noRecycle it does nothing: n stays as it is, unreachable.
func (fs *FS) free(n *node) {
	if fs.noRecycle {
		return
	}
	if n.links < 0 || n.durLinks < 0 || n.jrefs < 0 || n.opens < 0 {
		panic(fmt.Sprintf("memfs: freeing file %d with counts %d %d %d %d", n.id, n.links, n.durLinks, n.jrefs, n.opens))
	}
	if fs.files[n.reg] != n {
		panic("memfs: freeing a file that is not registered")
	}
	last := fs.files[len(fs.files)-1]
	fs.files[n.reg], last.reg = last, n.reg
	fs.files[len(fs.files)-1] = nil
	fs.files = fs.files[:len(fs.files)-1]
	if len(fs.spares) < sparesMax {
		sp := spare{
			chunks: n.c.chunks[:0], undo: n.undo[:0], synced: n.synced[:0],
			undoBuf: n.undoBuf[:0], syncedBuf: n.syncedBuf[:0],
			unreadable: n.unreadable[:0], changes: n.changes[:0],
		}
		if cap(sp.undoBuf) > undoBufRetainMax { // as syncDone bounds it
			sp.undoBuf = nil
		}
		if cap(sp.syncedBuf) > undoBufRetainMax {
			sp.syncedBuf = nil
		}
		fs.spares = append(fs.spares, sp)
	}
	n.c.release()
	n.undo, n.undoBuf, n.synced, n.syncedBuf = nil, nil, nil, nil
	n.unreadable, n.changes = nil, nil
	if fs.durLookup.n == n {
		fs.durLookup = durLookup{}
	}
	fs.stats.FilesFreed++
}

// spare is the bookkeeping memory of a freed file (its chunk table, undo
// and synced logs and buffers, unreadable ranges, change log), all empty,
// for the next file created: a file's own slices, never shared, so the
// freed file lets go of them (free sets its fields to nil).
type spare struct {
	chunks             []*chunk
	undo, synced       []undoOp
	undoBuf, syncedBuf []byte
	unreadable         []span
	changes            []durChange
}

// sparesMax bounds the spares kept: a run that frees many files at once
// (a crash) need not keep all their buffers.
const sparesMax = 8

// newNode returns a new file node, registered, with a spare's memory if
// there is one.
func (fs *FS) newNode() *node {
	n := &node{id: fs.nodeNext, c: content{slab: &fs.slab}, reg: len(fs.files)}
	fs.nodeNext++
	fs.files = append(fs.files, n)
	if k := len(fs.spares); k > 0 {
		sp := fs.spares[k-1]
		fs.spares[k-1] = spare{}
		fs.spares = fs.spares[:k-1]
		n.c.chunks, n.undo, n.synced = sp.chunks, sp.undo, sp.synced
		n.undoBuf, n.syncedBuf = sp.undoBuf, sp.syncedBuf
		n.unreadable, n.changes = sp.unreadable, sp.changes
	}
	return n
}

// crashSweep runs at the end of a crash, once cur has been rebuilt from
// dur and the journal emptied: every handle is dead and no operation is
// pending, so a file is reachable exactly when it has a durable name. It
// checks the counts (links must equal durLinks) and frees the others.
func (fs *FS) crashSweep() {
	for i := 0; i < len(fs.files); {
		n := fs.files[i]
		n.opens, n.jrefs = 0, 0
		if n.durLinks == 0 {
			n.links = 0 // a name it had in cur is gone with cur
		}
		if n.links != n.durLinks {
			panic(fmt.Sprintf("memfs: file %d has %d names after a crash, %d durable", n.id, n.links, n.durLinks))
		}
		before := len(fs.files)
		fs.release(n)
		if len(fs.files) == before { // kept (or noRecycle)
			i++
		}
	}
}
