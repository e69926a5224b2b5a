package fsio_test

import (
	"errors"
	"os"
	"testing"

	"github.com/pingcap/failpoint"

	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/io/vfs"
)

// needFailpoints skips the test in an ordinary build, where the failpoint
// markers are empty. fsio/failpoint-test.sh sets SLUICE_REQUIRE_FAILPOINTS so
// that a build that lost its rewrite fails instead of skipping.
func needFailpoints(t *testing.T) {
	t.Helper()
	if fsio.FailpointsCompiled() {
		return
	}
	if os.Getenv("SLUICE_REQUIRE_FAILPOINTS") != "" {
		t.Fatal("failpoints are not compiled in, but SLUICE_REQUIRE_FAILPOINTS is set")
	}
	t.Skip("failpoints not compiled in; run fsio/failpoint-test.sh")
}

func enable(t *testing.T, name, terms string) {
	t.Helper()
	full := fsio.FailpointName(name)
	if err := failpoint.Enable(full, terms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = failpoint.Disable(full) })
}

func contentsOf(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && n > 0 {
		t.Fatal(err)
	}
	return string(buf)
}

func TestFailpointWrite(t *testing.T) {
	needFailpoints(t)
	fsys := newFS(t)
	f, err := fsys.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	enable(t, "beforeWrite", `1*off->return("eio")`)
	if _, err := f.WriteAt([]byte("one"), 0); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if n, err := f.WriteAt([]byte("two"), 3); n != 0 || !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("beforeWrite eio: %d, %v", n, err)
	}
	if got := contentsOf(t, fsys, "a"); got != "one" {
		t.Fatalf("beforeWrite wrote: %q", got)
	}
	failpoint.Disable(fsio.FailpointName("beforeWrite"))

	enable(t, "afterWrite", `return("enospc")`)
	if n, err := f.WriteAt([]byte("two"), 3); n != 3 || !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("afterWrite enospc: %d, %v", n, err)
	}
	if got := contentsOf(t, fsys, "a"); got != "onetwo" {
		t.Fatalf("afterWrite did not write: %q", got)
	}
}

func TestFailpointMidWrite(t *testing.T) {
	needFailpoints(t)
	fsys := newFS(t)
	f, err := fsys.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	enable(t, "midWrite", `1*return("eio:3")->return("eio")`)
	n, err := f.WriteAt([]byte("abcdefgh"), 0)
	if n != 3 || !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("midWrite eio:3 = %d, %v", n, err)
	}
	if got := contentsOf(t, fsys, "a"); got != "abc" {
		t.Fatalf("midWrite eio:3 left %q", got)
	}
	n, err = f.WriteAt([]byte("ABCDEFGH"), 0) // default: half
	if n != 4 || !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("midWrite eio = %d, %v", n, err)
	}
	if got := contentsOf(t, fsys, "a"); got != "ABCD" {
		t.Fatalf("midWrite eio left %q", got)
	}
}

func TestFailpointSync(t *testing.T) {
	needFailpoints(t)
	fsys := newFS(t)
	f, err := fsys.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enable(t, "beforeSync", `1*return("eio")->1*return("enospc")`)
	if err := f.Sync(); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("beforeSync eio: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("beforeSync enospc: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("third sync: %v", err)
	}
	enable(t, "afterSync", `return("eio")`)
	if err := f.Sync(); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("afterSync eio: %v", err)
	}
}

func TestFailpointRenameAndDir(t *testing.T) {
	needFailpoints(t)
	fsys := newFS(t)
	for _, n := range []string{"a", "b"} {
		f, err := fsys.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte(n), 0)
		f.Close()
	}
	enable(t, "beforeRename", `1*return("eio")`)
	if err := fsys.Rename("a", "b"); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("beforeRename: %v", err)
	}
	if got := contentsOf(t, fsys, "b"); got != "b" {
		t.Fatalf("beforeRename renamed anyway: b = %q", got)
	}
	enable(t, "afterRename", `1*return("eio")`)
	if err := fsys.Rename("a", "b"); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("afterRename: %v", err)
	}
	if got := contentsOf(t, fsys, "b"); got != "a" {
		t.Fatalf("afterRename did not rename: b = %q", got)
	}
	enable(t, "beforeSyncDir", `1*return("eio")`)
	if err := fsys.SyncDir("."); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("beforeSyncDir: %v", err)
	}
	enable(t, "afterSyncDir", `1*return("eio")`)
	if err := fsys.SyncDir("."); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("afterSyncDir: %v", err)
	}
	if err := fsys.SyncDir("."); err != nil {
		t.Fatalf("SyncDir after the failpoints: %v", err)
	}
	enable(t, "beforeCreate", `1*return("enospc")`)
	if _, err := fsys.Create("c"); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("beforeCreate: %v", err)
	}
	enable(t, "beforeRemove", `1*return("eio")`)
	if err := fsys.Remove("b"); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("beforeRemove: %v", err)
	}
	enable(t, "beforeTruncate", `1*return("eio")`)
	f, err := fsys.Open("b")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(0); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("beforeTruncate: %v", err)
	}
}
