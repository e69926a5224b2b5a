package memfs

import (
	"io"
	"maps"
	"slices"
)

// TEMPORARY (replaced by the storage branch's ReadDurable/DurableList).

// DurableList returns the sorted names durable in dir.
func (fs *FS) DurableList(dir string) ([]string, error) {
	dir, err := clean("list", dir)
	if err != nil {
		return nil, err
	}
	ents, ok := fs.dur[dir]
	if !ok {
		return nil, notExist("list", dir)
	}
	return slices.Sorted(maps.Keys(ents)), nil
}

// ReadDurable reads durable contents.
func (fs *FS) ReadDurable(name string, p []byte, off int64) (int, error) {
	nd, err := fs.lookupDurable("readdurable", name)
	if err != nil {
		return 0, err
	}
	b := nd.data
	if len(nd.undo) > 0 {
		b = nd.durableContents()
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

// LoseSyncedWrite is a TEMPORARY stub.
func (fs *FS) LoseSyncedWrite(name string, r Rand) (off, n int64, ok bool) { return 0, 0, false }

// SetUnreadable is a TEMPORARY stub.
func (fs *FS) SetUnreadable(name string, off, n int64) error { return notExist("unreadable", name) }

// CrashTearSynced is a TEMPORARY stub.
func (fs *FS) CrashTearSynced(r Rand) int64 { fs.Crash(r); return 0 }

// SetSyncFailureDropsPages is a TEMPORARY stub.
func (fs *FS) SetSyncFailureDropsPages(r Rand) {}
