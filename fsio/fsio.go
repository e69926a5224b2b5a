package fsio

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pingcap/failpoint"

	"github.com/sluicemq/sluice/io/vfs"
)

// fallocFlKeepSize is FALLOC_FL_KEEP_SIZE from <linux/falloc.h>.
const fallocFlKeepSize = 0x1

// The system calls that make data durable: fdatasync behind File.Sync,
// fsyncDir (fsync of a directory) behind FS.SyncDir. They are variables
// only so that a test of this package (synccount_test.go) can count them
// per path and plant the removal of one; nothing else assigns them, and
// they are read, never written, outside tests.
var (
	fdatasync = syscall.Fdatasync
	fsyncDir  = syscall.Fsync
)

// FS is a vfs.FS over the directory tree under a root directory. It holds no
// state besides the root and is safe for concurrent use.
type FS struct {
	root string
}

var _ vfs.FS = (*FS)(nil)

// New returns the file system rooted at dir, which must be an existing
// directory.
func New(dir string) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, mapErr("root", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, mapErr("root", abs, err)
	}
	if !st.IsDir() {
		return nil, &Error{Op: "root", Path: abs, Err: syscall.ENOTDIR}
	}
	return &FS{root: abs}, nil
}

// Root returns the absolute OS path of the root directory.
func (fs *FS) Root() string { return fs.root }

// path turns a vfs name into an OS path under the root. "" and "." name the
// root itself. Names that are absolute or climb out of the root are refused.
func (fs *FS) path(op, name string) (string, error) {
	if name == "" {
		name = "."
	}
	if !iofs.ValidPath(name) {
		return "", &Error{Op: op, Path: name, Err: iofs.ErrInvalid}
	}
	return filepath.Join(fs.root, filepath.FromSlash(name)), nil
}

// Create implements vfs.FS. It does not sync the directory.
func (fs *FS) Create(name string) (vfs.File, error) {
	p, err := fs.path("create", name)
	if err != nil {
		return nil, err
	}
	failpoint.Inject("beforeCreate", func(val failpoint.Value) {
		if err := act(val, "create", p); err != nil {
			failpoint.Return(nil, err)
		}
	})
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, mapErr("create", p, err)
	}
	failpoint.Inject("afterCreate", func(val failpoint.Value) {
		if err := act(val, "create", p); err != nil {
			f.Close()
			failpoint.Return(nil, err)
		}
	})
	return &File{f: f, path: p}, nil
}

// Open implements vfs.FS.
func (fs *FS) Open(name string) (vfs.File, error) {
	p, err := fs.path("open", name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return nil, mapErr("open", p, err)
	}
	return &File{f: f, path: p}, nil
}

// Remove implements vfs.FS. It does not sync the directory.
func (fs *FS) Remove(name string) error {
	p, err := fs.path("remove", name)
	if err != nil {
		return err
	}
	failpoint.Inject("beforeRemove", func(val failpoint.Value) {
		if err := act(val, "remove", p); err != nil {
			failpoint.Return(err)
		}
	})
	if err := os.Remove(p); err != nil {
		return mapErr("remove", p, err)
	}
	failpoint.Inject("afterRemove", func(val failpoint.Value) {
		if err := act(val, "remove", p); err != nil {
			failpoint.Return(err)
		}
	})
	return nil
}

// Rename implements vfs.FS with rename(2), which atomically replaces newName.
// It does not sync either directory.
func (fs *FS) Rename(oldName, newName string) error {
	op, err := fs.path("rename", oldName)
	if err != nil {
		return err
	}
	np, err := fs.path("rename", newName)
	if err != nil {
		return err
	}
	failpoint.Inject("beforeRename", func(val failpoint.Value) {
		if err := act(val, "rename", op); err != nil {
			failpoint.Return(err)
		}
	})
	if err := os.Rename(op, np); err != nil {
		return mapErr("rename", op+" -> "+np, err)
	}
	failpoint.Inject("afterRename", func(val failpoint.Value) {
		if err := act(val, "rename", op); err != nil {
			failpoint.Return(err)
		}
	})
	return nil
}

// MkdirAll implements vfs.FS. It does not sync any directory.
func (fs *FS) MkdirAll(dir string) error {
	p, err := fs.path("mkdir", dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return mapErr("mkdir", p, err)
	}
	return nil
}

// List implements vfs.FS: the names in dir, sorted.
func (fs *FS) List(dir string) ([]string, error) {
	p, err := fs.path("list", dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p) // sorted by name
	if err != nil {
		return nil, mapErr("list", p, err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// SyncDir implements vfs.FS: open the directory and fsync it.
func (fs *FS) SyncDir(dir string) error {
	p, err := fs.path("syncdir", dir)
	if err != nil {
		return err
	}
	failpoint.Inject("beforeSyncDir", func(val failpoint.Value) {
		if err := act(val, "syncdir", p); err != nil {
			failpoint.Return(err)
		}
	})
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return mapErr("syncdir", p, err)
	}
	err = ignoringEINTR(func() error { return fsyncDir(fd) })
	cerr := syscall.Close(fd)
	if err != nil {
		return syncErr("syncdir", p, err)
	}
	if cerr != nil {
		return syncErr("syncdir", p, cerr)
	}
	failpoint.Inject("afterSyncDir", func(val failpoint.Value) {
		if err := act(val, "syncdir", p); err != nil {
			failpoint.Return(err)
		}
	})
	return nil
}

// File is a vfs.File over an *os.File. Like every vfs.File it is not safe for
// concurrent use, except that ReadAt and WriteAt of disjoint ranges may run
// concurrently with each other (they are pread and pwrite).
type File struct {
	f      *os.File
	path   string
	closed atomic.Bool
}

var _ vfs.File = (*File)(nil)

// ReadAt implements vfs.File with pread. A read that reaches the end of the
// file returns the bytes read and io.EOF (unwrapped).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, mapErr("read", f.path, err)
	}
	return n, err
}

// WriteAt implements vfs.File with pwrite.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	failpoint.Inject("beforeWrite", func(val failpoint.Value) {
		if err := act(val, "write", f.path); err != nil {
			failpoint.Return(0, err)
		}
	})
	failpoint.Inject("midWrite", func(val failpoint.Value) {
		if s, ok := val.(string); ok && len(p) > 1 {
			n := partLen(s, len(p))
			if _, err := f.f.WriteAt(p[:n], off); err != nil {
				failpoint.Return(0, mapErr("write", f.path, err))
			}
			if err := act(val, "write", f.path); err != nil {
				failpoint.Return(n, err)
			}
		}
	})
	n, err := f.f.WriteAt(p, off)
	if err != nil {
		return n, mapErr("write", f.path, err)
	}
	failpoint.Inject("afterWrite", func(val failpoint.Value) {
		if err := act(val, "write", f.path); err != nil {
			failpoint.Return(n, err)
		}
	})
	return n, nil
}

// Sync implements vfs.File with fdatasync(2). Any failure is reported as
// vfs.ErrIO unless it is a lack of space (vfs.ErrNoSpace) or a closed file.
func (f *File) Sync() error {
	failpoint.Inject("beforeSync", func(val failpoint.Value) {
		if err := act(val, "sync", f.path); err != nil {
			failpoint.Return(err)
		}
	})
	if err := f.control("sync", func(fd int) error {
		return ignoringEINTR(func() error { return fdatasync(fd) })
	}); err != nil {
		return err
	}
	failpoint.Inject("afterSync", func(val failpoint.Value) {
		if err := act(val, "sync", f.path); err != nil {
			failpoint.Return(err)
		}
	})
	return nil
}

// Truncate implements vfs.File with ftruncate(2).
func (f *File) Truncate(size int64) error {
	failpoint.Inject("beforeTruncate", func(val failpoint.Value) {
		if err := act(val, "truncate", f.path); err != nil {
			failpoint.Return(err)
		}
	})
	if err := f.f.Truncate(size); err != nil {
		return mapErr("truncate", f.path, err)
	}
	failpoint.Inject("afterTruncate", func(val failpoint.Value) {
		if err := act(val, "truncate", f.path); err != nil {
			failpoint.Return(err)
		}
	})
	return nil
}

// Size implements vfs.File with fstat(2).
func (f *File) Size() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, mapErr("stat", f.path, err)
	}
	return st.Size(), nil
}

// Preallocate implements vfs.File with fallocate(2) and FALLOC_FL_KEEP_SIZE.
// It does nothing where the file system does not support fallocate.
func (f *File) Preallocate(size int64) error {
	if size <= 0 {
		return nil
	}
	err := f.control("preallocate", func(fd int) error {
		err := ignoringEINTR(func() error { return syscall.Fallocate(fd, fallocFlKeepSize, 0, size) })
		if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
			return nil
		}
		return err
	})
	return err
}

// Close implements vfs.File. It does not sync.
func (f *File) Close() error {
	f.closed.Store(true)
	if err := f.f.Close(); err != nil {
		return mapErr("close", f.path, err)
	}
	return nil
}

// Name returns the file's OS path.
func (f *File) Name() string { return f.path }

// control runs fn on the file descriptor, holding the file open for the
// duration, and maps its error. Sync failures other than a lack of space or
// a closed file are reported as vfs.ErrIO.
func (f *File) control(op string, fn func(fd int) error) error {
	if f.closed.Load() {
		return &Error{Op: op, Path: f.path, Kind: vfs.ErrClosed, Err: os.ErrClosed}
	}
	rc, err := f.f.SyscallConn()
	if err != nil {
		return mapErr(op, f.path, err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return mapErr(op, f.path, err)
	}
	if ferr != nil {
		if op == "sync" {
			return syncErr(op, f.path, ferr)
		}
		return mapErr(op, f.path, ferr)
	}
	return nil
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != syscall.EINTR {
			return err
		}
	}
}

// Error is an fsio error: the operation, the OS path, the vfs kind (nil when
// the OS error has none) and the OS error.
type Error struct {
	Op   string
	Path string
	Kind error // one of the vfs sentinel errors, or nil
	Err  error // the OS error (a syscall.Errno where there is one)
}

func (e *Error) Error() string {
	return "fsio: " + e.Op + " " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the vfs kind and the OS error, so that errors.Is matches
// either (vfs.ErrNotExist and fs.ErrNotExist, say).
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// mapErr classifies an OS error into a vfs kind and wraps it with op and path.
func mapErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	// Keep the innermost OS error; the path is ours.
	inner := err
	var pe *os.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe):
		inner = pe.Err
	case errors.As(err, &le):
		inner = le.Err
	case errors.As(err, &se):
		inner = se.Err
	}
	return &Error{Op: op, Path: path, Kind: kindOf(inner), Err: inner}
}

// syncErr is mapErr for a failed sync: an unclassified failure is an I/O
// error, since the data's state is unknown either way (vfs rule 4).
func syncErr(op, path string, err error) error {
	e := mapErr(op, path, err).(*Error)
	if e.Kind == nil {
		e.Kind = vfs.ErrIO
	}
	return e
}

func kindOf(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return vfs.ErrNotExist
		case syscall.EEXIST, syscall.ENOTEMPTY:
			return vfs.ErrExist
		case syscall.ENOSPC, syscall.EDQUOT:
			return vfs.ErrNoSpace
		case syscall.EIO:
			return vfs.ErrIO
		}
		return nil
	}
	switch {
	case errors.Is(err, os.ErrClosed):
		return vfs.ErrClosed
	case errors.Is(err, os.ErrNotExist):
		return vfs.ErrNotExist
	case errors.Is(err, os.ErrExist):
		return vfs.ErrExist
	}
	return nil
}

// act carries out a failpoint's action (see the package documentation). It
// returns nil for an inactive or unknown value.
func act(val failpoint.Value, op, path string) error {
	s, ok := val.(string)
	if !ok {
		return nil
	}
	what, _, _ := strings.Cut(s, ":")
	switch what {
	case "kill":
		killSelf()
	case "eio":
		return &Error{Op: op, Path: path, Kind: vfs.ErrIO, Err: fmt.Errorf("failpoint: %w", syscall.EIO)}
	case "enospc":
		return &Error{Op: op, Path: path, Kind: vfs.ErrNoSpace, Err: fmt.Errorf("failpoint: %w", syscall.ENOSPC)}
	}
	return nil
}

// partLen is how many of n bytes midWrite writes for action s: the N of
// "kill:N" (at most n-1, at least 1), or half.
func partLen(s string, n int) int {
	part := n / 2
	if _, num, ok := strings.Cut(s, ":"); ok {
		var v int
		if _, err := fmt.Sscanf(num, "%d", &v); err == nil {
			part = v
		}
	}
	return max(1, min(part, n-1))
}

// killSelf sends SIGKILL to this process and waits for it to land: nothing
// after a failpoint's kill runs, as with a real kill.
func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	for {
		time.Sleep(time.Second)
	}
}

// pkgPath is this package's import path, the prefix of its failpoint names.
const pkgPath = "github.com/sluicemq/sluice/fsio"

// FailpointName returns the full name of one of this package's failpoints,
// as failpoint.Enable and GO_FAILPOINTS want it.
func FailpointName(short string) string { return pkgPath + "/" + short }

// FailpointsCompiled reports whether this build of the package was rewritten
// by failpoint-ctl, so that its failpoints can fire. In an ordinary build it
// returns false.
func FailpointsCompiled() bool {
	name := FailpointName("probe")
	if err := failpoint.Enable(name, "return(true)"); err != nil {
		return false
	}
	defer failpoint.Disable(name)
	on := false
	failpoint.Inject("probe", func() { on = true })
	return on
}
