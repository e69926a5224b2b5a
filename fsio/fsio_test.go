package fsio_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/io/vfs/vfstest"
)

func newFS(t *testing.T) vfs.FS {
	t.Helper()
	fsys, err := fsio.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func TestVFS(t *testing.T) { vfstest.Run(t, newFS) }

func TestNewRefusesMissingAndFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := fsio.New(filepath.Join(dir, "nope")); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("New(missing) = %v, want ErrNotExist", err)
	}
	p := filepath.Join(dir, "file")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fsio.New(p); err == nil {
		t.Fatalf("New(regular file) succeeded")
	}
}

func TestErrorsKeepPathAndBothKinds(t *testing.T) {
	fsys := newFS(t).(*fsio.FS)
	_, err := fsys.Open("dir/missing.log")
	if !errors.Is(err, vfs.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("error %v does not match vfs.ErrNotExist, fs.ErrNotExist and ENOENT", err)
	}
	want := filepath.Join(fsys.Root(), "dir", "missing.log")
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	var fe *fsio.Error
	if !errors.As(err, &fe) || fe.Op != "open" {
		t.Fatalf("error %#v is not an *fsio.Error for open", err)
	}
}

func TestNamesStayUnderRoot(t *testing.T) {
	fsys := newFS(t)
	for _, name := range []string{"../x", "/etc/passwd", "a/../../x", "a//b", "./a"} {
		if _, err := fsys.Create(name); err == nil || !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Create(%q) = %v, want fs.ErrInvalid", name, err)
		}
	}
}

func TestRenameOverNonEmptyDirIsExist(t *testing.T) {
	fsys := newFS(t)
	for _, d := range []string{"a", "b/c"} {
		if err := fsys.MkdirAll(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsys.Rename("a", "b"); !errors.Is(err, vfs.ErrExist) {
		t.Fatalf("Rename onto non-empty dir = %v, want vfs.ErrExist", err)
	}
}

func TestPreallocateReservesBlocks(t *testing.T) {
	fsys := newFS(t).(*fsio.FS)
	f, err := fsys.Create("seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Preallocate(4 << 20); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(fsys.Root(), "seg"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 0 {
		t.Fatalf("size %d after Preallocate, want 0", st.Size)
	}
	// st.Blocks counts 512-byte units; a file system without fallocate
	// reports 0, which Preallocate allows.
	t.Logf("preallocated %d bytes on disk", st.Blocks*512)
}
