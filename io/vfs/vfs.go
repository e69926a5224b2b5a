package vfs

import "errors"

// Error kinds. Implementations wrap these so that errors.Is works.
var (
	// ErrNotExist: the named file or directory does not exist.
	ErrNotExist = errors.New("vfs: file does not exist")
	// ErrExist: the name is already taken where a new one was required.
	ErrExist = errors.New("vfs: file exists")
	// ErrNoSpace: the device has no room for the write (disk full).
	ErrNoSpace = errors.New("vfs: no space left on device")
	// ErrIO: the device failed the operation (read error, failed sync).
	ErrIO = errors.New("vfs: input/output error")
	// ErrClosed: the file was closed.
	ErrClosed = errors.New("vfs: file closed")
)

// FS is a file system with explicit durability semantics (see the package
// documentation).
type FS interface {
	// Create creates the named file empty, truncating it if it exists, and
	// opens it for reading and writing. The new directory entry is durable
	// only after SyncDir of its directory.
	Create(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	// Remove deletes a file. Durable after SyncDir of its directory.
	Remove(name string) error
	// Rename atomically renames oldName to newName, replacing newName if it
	// exists. Durable after SyncDir of the directory (both directories if
	// they differ).
	Rename(oldName, newName string) error
	// MkdirAll creates a directory and its parents. New directories are
	// durable after SyncDir of their parents.
	MkdirAll(dir string) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
}

// File is an open file. Its methods are not safe for concurrent use unless
// an implementation says otherwise.
type File interface {
	// ReadAt reads len(p) bytes at off. Like io.ReaderAt it returns a non-nil
	// error when n < len(p); reading past the end returns io.EOF.
	ReadAt(p []byte, off int64) (n int, err error)
	// WriteAt writes p at off, extending the file if needed. Not durable
	// until Sync.
	WriteAt(p []byte, off int64) (n int, err error)
	// Sync makes every completed WriteAt and Truncate on this file durable
	// (fdatasync on Linux). See rule 4 for a failure.
	Sync() error
	// Truncate sets the file's size. Not durable until Sync.
	Truncate(size int64) error
	// Size returns the file's current size, including unsynced writes.
	Size() (int64, error)
	// Preallocate reserves space for the file up to size bytes without
	// changing its reported Size, where the platform supports it; otherwise
	// it does nothing. It may return ErrNoSpace.
	Preallocate(size int64) error
	// Close releases the file. It does not sync.
	Close() error
}
