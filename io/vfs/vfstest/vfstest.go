// Package vfstest is the behavioural test suite of the io/vfs contract. Every
// vfs.FS implementation (sim/memfs, fsio) runs the same test functions:
//
//	func TestVFS(t *testing.T) { vfstest.Run(t, newFS) }
//
// Run covers what any implementation can show: creating, opening, reading
// (short reads and io.EOF), writing (positioned, extending, overwriting),
// truncation, size, preallocation, sorted listings, rename replacing its
// target, removal, directory sync, closed files and the error kinds.
//
// The durability rules (what a Sync makes durable, that a directory entry is
// durable only after SyncDir, that file data and directory entries are
// independent, rename ordering) can only be observed on a file system that
// can simulate a power loss. Run checks them when the FS returned by newFS
// implements Crasher; on fsio they are skipped (a real power loss cannot be
// caused from a test).
package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/io/vfs"
)

// Crasher is implemented by file systems that can simulate a power loss that
// keeps exactly the durable state: every synced write and truncation, every
// directory change made durable by SyncDir, and nothing else. Files open
// before the crash must not be used after it.
type Crasher interface {
	CrashClean()
}

// Run runs the whole suite. newFS returns a new, empty file system for each
// subtest.
func Run(t *testing.T, newFS func(t *testing.T) vfs.FS) {
	t.Helper()
	for _, tc := range basic {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newFS(t)) })
	}
	for _, tc := range durability {
		t.Run("durability/"+tc.name, func(t *testing.T) {
			fs := newFS(t)
			c, ok := fs.(Crasher)
			if !ok {
				t.Skipf("%T cannot simulate a power loss (no CrashClean)", fs)
			}
			tc.fn(t, fs, c)
		})
	}
}

type basicTest struct {
	name string
	fn   func(t *testing.T, fs vfs.FS)
}

type crashTest struct {
	name string
	fn   func(t *testing.T, fs vfs.FS, c Crasher)
}

var basic = []basicTest{
	{"CreateWriteRead", testCreateWriteRead},
	{"ShortReadEOF", testShortReadEOF},
	{"EmptyFile", testEmptyFile},
	{"WriteExtendsWithZeros", testWriteExtendsWithZeros},
	{"Overwrite", testOverwrite},
	{"LargeWriteAcrossSectors", testLargeWrite},
	{"Truncate", testTruncate},
	{"CreateTruncatesExisting", testCreateTruncatesExisting},
	{"OpenExisting", testOpenExisting},
	{"TwoHandlesSeeWrites", testTwoHandles},
	{"NotExist", testNotExist},
	{"ListSorted", testListSorted},
	{"MkdirAll", testMkdirAll},
	{"RenameReplaces", testRenameReplaces},
	{"RenameAcrossDirs", testRenameAcrossDirs},
	{"Remove", testRemove},
	{"SyncAndSyncDir", testSyncAndSyncDir},
	{"Preallocate", testPreallocate},
	{"Closed", testClosed},
}

var durability = []crashTest{
	{"SyncMakesWritesDurable", testCrashSync},
	{"UnsyncedWriteLost", testCrashUnsyncedWrite},
	{"CloseDoesNotSync", testCrashCloseNoSync},
	{"TruncateDurableAfterSync", testCrashTruncate},
	{"CreateNeedsSyncDir", testCrashCreateNeedsSyncDir},
	{"SyncDirDoesNotSyncData", testCrashSyncDirNoData},
	{"RenameNeedsSyncDir", testCrashRenameNeedsSyncDir},
	{"RenameDurableAfterSyncDir", testCrashRenameDurable},
	{"RemoveNeedsSyncDir", testCrashRemove},
	{"NestedDirDurable", testCrashNestedDir},
}

// ---- helpers ----

func create(t *testing.T, fs vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	return f
}

func open(t *testing.T, fs vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	return f
}

func write(t *testing.T, f vfs.File, off int64, s string) {
	t.Helper()
	n, err := f.WriteAt([]byte(s), off)
	if err != nil || n != len(s) {
		t.Fatalf("WriteAt(%d bytes, %d) = %d, %v", len(s), off, n, err)
	}
}

func syncFile(t *testing.T, f vfs.File) {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

func syncDir(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	if err := fs.SyncDir(dir); err != nil {
		t.Fatalf("SyncDir(%q): %v", dir, err)
	}
}

func closeFile(t *testing.T, f vfs.File) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func size(t *testing.T, f vfs.File) int64 {
	t.Helper()
	n, err := f.Size()
	if err != nil {
		t.Fatalf("Size: %v", err)
	}
	return n
}

// contents reads the whole file through ReadAt.
func contents(t *testing.T, f vfs.File) string {
	t.Helper()
	n := size(t, f)
	buf := make([]byte, n)
	if n == 0 {
		return ""
	}
	got, err := f.ReadAt(buf, 0)
	if got != int(n) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt(%d bytes, 0) = %d, %v", n, got, err)
	}
	return string(buf)
}

// fileContents opens name, reads it whole and closes it.
func fileContents(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f := open(t, fs, name)
	defer closeFile(t, f)
	return contents(t, f)
}

func wantContents(t *testing.T, fs vfs.FS, name, want string) {
	t.Helper()
	if got := fileContents(t, fs, name); got != want {
		t.Fatalf("contents of %q = %q, want %q", name, got, want)
	}
}

func wantNotExist(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("%s: error %v, want vfs.ErrNotExist", what, err)
	}
}

func wantMissing(t *testing.T, fs vfs.FS, name string) {
	t.Helper()
	f, err := fs.Open(name)
	if err == nil {
		f.Close()
		t.Fatalf("Open(%q) succeeded, want vfs.ErrNotExist", name)
	}
	wantNotExist(t, err, fmt.Sprintf("Open(%q)", name))
}

func list(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatalf("List(%q): %v", dir, err)
	}
	return names
}

func wantList(t *testing.T, fs vfs.FS, dir string, want ...string) {
	t.Helper()
	got := list(t, fs, dir)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List(%q) = %q, want %q", dir, got, want)
	}
}

// durableFile creates name with contents s, synced, with its entry synced.
func durableFile(t *testing.T, fs vfs.FS, dir, name, s string) {
	t.Helper()
	f := create(t, fs, name)
	write(t, f, 0, s)
	syncFile(t, f)
	closeFile(t, f)
	syncDir(t, fs, dir)
}

// ---- basic tests ----

func testCreateWriteRead(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	defer closeFile(t, f)
	write(t, f, 0, "hello, ")
	write(t, f, 7, "world")
	if n := size(t, f); n != 12 {
		t.Fatalf("Size = %d, want 12", n)
	}
	buf := make([]byte, 5)
	n, err := f.ReadAt(buf, 7)
	if err != nil && err != io.EOF || n != 5 || string(buf) != "world" {
		t.Fatalf("ReadAt(5, 7) = %d, %v, %q", n, err, buf[:n])
	}
	buf = make([]byte, 4)
	if n, err := f.ReadAt(buf, 2); err != nil || n != 4 || string(buf) != "llo," {
		t.Fatalf("ReadAt(4, 2) = %d, %v, %q; want 4, nil, \"llo,\"", n, err, buf[:n])
	}
	if got := contents(t, f); got != "hello, world" {
		t.Fatalf("contents = %q", got)
	}
}

func testShortReadEOF(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	defer closeFile(t, f)
	write(t, f, 0, "abcde")

	// A read that runs past the end returns what there is and io.EOF.
	buf := make([]byte, 10)
	n, err := f.ReadAt(buf, 2)
	if n != 3 || string(buf[:n]) != "cde" {
		t.Fatalf("ReadAt(10, 2) = %d, %q; want 3, \"cde\"", n, buf[:n])
	}
	if err != io.EOF {
		t.Fatalf("ReadAt(10, 2) error = %v, want io.EOF", err)
	}
	// A read at the end or beyond returns 0 and io.EOF.
	for _, off := range []int64{5, 6, 1 << 20} {
		n, err := f.ReadAt(buf, off)
		if n != 0 || err != io.EOF {
			t.Fatalf("ReadAt(10, %d) = %d, %v; want 0, io.EOF", off, n, err)
		}
	}
	// An exact read to the end returns n == len(p); its error is nil or io.EOF.
	buf = make([]byte, 5)
	n, err = f.ReadAt(buf, 0)
	if n != 5 || (err != nil && err != io.EOF) || string(buf) != "abcde" {
		t.Fatalf("ReadAt(5, 0) = %d, %v, %q", n, err, buf[:n])
	}
	// Reading into an empty buffer never fails inside the file.
	if n, err := f.ReadAt(nil, 1); n != 0 || err != nil {
		t.Fatalf("ReadAt(nil, 1) = %d, %v; want 0, nil", n, err)
	}
}

func testEmptyFile(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "empty")
	defer closeFile(t, f)
	if n := size(t, f); n != 0 {
		t.Fatalf("Size = %d, want 0", n)
	}
	buf := make([]byte, 1)
	if n, err := f.ReadAt(buf, 0); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt on empty file = %d, %v; want 0, io.EOF", n, err)
	}
}

func testWriteExtendsWithZeros(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	defer closeFile(t, f)
	write(t, f, 10, "xy")
	if n := size(t, f); n != 12 {
		t.Fatalf("Size = %d, want 12", n)
	}
	want := string(make([]byte, 10)) + "xy"
	if got := contents(t, f); got != want {
		t.Fatalf("contents = %q, want %q", got, want)
	}
	// A hole far beyond a sector reads as zeros too.
	write(t, f, 3*4096+7, "z")
	buf := make([]byte, 3*4096+8)
	if n, err := f.ReadAt(buf, 0); n != len(buf) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if string(buf[10:12]) != "xy" || buf[len(buf)-1] != 'z' {
		t.Fatalf("written bytes lost")
	}
	for i, b := range buf[12 : len(buf)-1] {
		if b != 0 {
			t.Fatalf("byte %d of the hole = %d, want 0", 12+i, b)
		}
	}
}

func testOverwrite(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	defer closeFile(t, f)
	write(t, f, 0, "aaaaaaaa")
	write(t, f, 2, "BB")
	write(t, f, 6, "CCCC")
	if got := contents(t, f); got != "aaBBaaCCCC" {
		t.Fatalf("contents = %q, want %q", got, "aaBBaaCCCC")
	}
}

func testLargeWrite(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "big")
	defer closeFile(t, f)
	data := make([]byte, 5*4096+123)
	for i := range data {
		data[i] = byte(i*7 + i/4096)
	}
	if n, err := f.WriteAt(data, 100); err != nil || n != len(data) {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if n := size(t, f); n != int64(100+len(data)) {
		t.Fatalf("Size = %d, want %d", n, 100+len(data))
	}
	for _, r := range [][2]int{{0, len(data)}, {4000, 4200}, {4096, 8192}, {len(data) - 5, len(data)}} {
		buf := make([]byte, r[1]-r[0])
		n, err := f.ReadAt(buf, int64(100+r[0]))
		if n != len(buf) || (err != nil && err != io.EOF) || !bytes.Equal(buf, data[r[0]:r[1]]) {
			t.Fatalf("ReadAt [%d,%d) = %d, %v, equal=%v", r[0], r[1], n, err, bytes.Equal(buf, data[r[0]:r[1]]))
		}
	}
}

func testTruncate(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	defer closeFile(t, f)
	write(t, f, 0, "abcdefgh")
	if err := f.Truncate(3); err != nil {
		t.Fatalf("Truncate(3): %v", err)
	}
	if got := contents(t, f); got != "abc" {
		t.Fatalf("after Truncate(3): %q", got)
	}
	buf := make([]byte, 4)
	if n, err := f.ReadAt(buf, 2); n != 1 || err != io.EOF {
		t.Fatalf("ReadAt past truncation = %d, %v; want 1, io.EOF", n, err)
	}
	// Growing by truncation reads back zeros, not the old bytes.
	if err := f.Truncate(6); err != nil {
		t.Fatalf("Truncate(6): %v", err)
	}
	if got := contents(t, f); got != "abc\x00\x00\x00" {
		t.Fatalf("after Truncate(6): %q", got)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatalf("Truncate(0): %v", err)
	}
	if n := size(t, f); n != 0 {
		t.Fatalf("Size after Truncate(0) = %d", n)
	}
	write(t, f, 0, "z")
	if got := contents(t, f); got != "z" {
		t.Fatalf("after rewrite: %q", got)
	}
}

func testCreateTruncatesExisting(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	write(t, f, 0, "old contents")
	closeFile(t, f)
	f = create(t, fs, "a")
	defer closeFile(t, f)
	if n := size(t, f); n != 0 {
		t.Fatalf("Size after re-Create = %d, want 0", n)
	}
	wantList(t, fs, ".", "a")
}

func testOpenExisting(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	write(t, f, 0, "keep")
	closeFile(t, f)
	f = open(t, fs, "a")
	defer closeFile(t, f)
	if got := contents(t, f); got != "keep" {
		t.Fatalf("contents after reopen = %q", got)
	}
	// Open is read-write.
	write(t, f, 4, "!")
	if got := contents(t, f); got != "keep!" {
		t.Fatalf("contents after write = %q", got)
	}
}

func testTwoHandles(t *testing.T, fs vfs.FS) {
	a := create(t, fs, "a")
	defer closeFile(t, a)
	b := open(t, fs, "a")
	defer closeFile(t, b)
	write(t, a, 0, "from a")
	if got := contents(t, b); got != "from a" {
		t.Fatalf("second handle reads %q", got)
	}
	write(t, b, 0, "FROM")
	if got := contents(t, a); got != "FROM a" {
		t.Fatalf("first handle reads %q", got)
	}
}

func testNotExist(t *testing.T, fs vfs.FS) {
	_, err := fs.Open("missing")
	wantNotExist(t, err, "Open(missing)")
	_, err = fs.Open("nodir/missing")
	wantNotExist(t, err, "Open(nodir/missing)")
	_, err = fs.Create("nodir/a")
	wantNotExist(t, err, "Create(nodir/a)")
	wantNotExist(t, fs.Remove("missing"), "Remove(missing)")
	wantNotExist(t, fs.Rename("missing", "b"), "Rename(missing, b)")
	_, err = fs.List("nodir")
	wantNotExist(t, err, "List(nodir)")
	wantNotExist(t, fs.SyncDir("nodir"), "SyncDir(nodir)")
	// Sentinel kinds are distinct.
	if errors.Is(err, vfs.ErrExist) || errors.Is(err, vfs.ErrIO) || errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("not-exist error %v also matches another kind", err)
	}
}

func testListSorted(t *testing.T, fs vfs.FS) {
	wantList(t, fs, ".")
	for _, name := range []string{"b", "c", "a", "a10", "a2", "B"} {
		closeFile(t, create(t, fs, name))
	}
	if err := fs.MkdirAll("d"); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	closeFile(t, create(t, fs, "d/z"))
	closeFile(t, create(t, fs, "d/y"))
	wantList(t, fs, ".", "B", "a", "a10", "a2", "b", "c", "d")
	wantList(t, fs, "d", "y", "z")
	got := list(t, fs, ".")
	if !slices.IsSorted(got) {
		t.Fatalf("List not sorted: %q", got)
	}
}

func testMkdirAll(t *testing.T, fs vfs.FS) {
	if err := fs.MkdirAll("x/y/z"); err != nil {
		t.Fatalf("MkdirAll(x/y/z): %v", err)
	}
	if err := fs.MkdirAll("x/y/z"); err != nil {
		t.Fatalf("MkdirAll again: %v", err)
	}
	if err := fs.MkdirAll("x"); err != nil {
		t.Fatalf("MkdirAll(x): %v", err)
	}
	wantList(t, fs, "x", "y")
	wantList(t, fs, "x/y", "z")
	wantList(t, fs, "x/y/z")
	f := create(t, fs, "x/y/z/f")
	write(t, f, 0, "deep")
	closeFile(t, f)
	wantContents(t, fs, "x/y/z/f", "deep")
	syncDir(t, fs, "x/y/z")
	syncDir(t, fs, "x/y")
}

func testRenameReplaces(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "new.tmp")
	write(t, f, 0, "new")
	closeFile(t, f)
	f = create(t, fs, "target")
	write(t, f, 0, "old target")
	closeFile(t, f)
	if err := fs.Rename("new.tmp", "target"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	wantContents(t, fs, "target", "new")
	wantMissing(t, fs, "new.tmp")
	wantList(t, fs, ".", "target")
	// Renaming onto a free name.
	if err := fs.Rename("target", "moved"); err != nil {
		t.Fatalf("Rename to free name: %v", err)
	}
	wantList(t, fs, ".", "moved")
	wantContents(t, fs, "moved", "new")
}

func testRenameAcrossDirs(t *testing.T, fs vfs.FS) {
	for _, d := range []string{"d1", "d2"} {
		if err := fs.MkdirAll(d); err != nil {
			t.Fatalf("MkdirAll(%s): %v", d, err)
		}
	}
	f := create(t, fs, "d1/f")
	write(t, f, 0, "travels")
	closeFile(t, f)
	if err := fs.Rename("d1/f", "d2/g"); err != nil {
		t.Fatalf("Rename across dirs: %v", err)
	}
	wantList(t, fs, "d1")
	wantList(t, fs, "d2", "g")
	wantContents(t, fs, "d2/g", "travels")
	syncDir(t, fs, "d1")
	syncDir(t, fs, "d2")
}

func testRemove(t *testing.T, fs vfs.FS) {
	closeFile(t, create(t, fs, "a"))
	closeFile(t, create(t, fs, "b"))
	if err := fs.Remove("a"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	wantList(t, fs, ".", "b")
	wantMissing(t, fs, "a")
	wantNotExist(t, fs.Remove("a"), "second Remove(a)")
	// A removed name can be created again, empty.
	f := create(t, fs, "a")
	defer closeFile(t, f)
	if n := size(t, f); n != 0 {
		t.Fatalf("re-created file has size %d", n)
	}
}

func testSyncAndSyncDir(t *testing.T, fs vfs.FS) {
	if err := fs.MkdirAll("d"); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	f := create(t, fs, "d/a")
	write(t, f, 0, "x")
	syncFile(t, f)
	syncFile(t, f) // a second sync with nothing new is fine
	if err := f.Truncate(0); err != nil {
		t.Fatalf("Truncate: %v", err)
	}
	syncFile(t, f)
	closeFile(t, f)
	syncDir(t, fs, "d")
	syncDir(t, fs, ".")
	syncDir(t, fs, "")
}

func testPreallocate(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	defer closeFile(t, f)
	write(t, f, 0, "abc")
	if err := f.Preallocate(1 << 20); err != nil {
		t.Fatalf("Preallocate: %v", err)
	}
	if n := size(t, f); n != 3 {
		t.Fatalf("Size after Preallocate = %d, want 3", n)
	}
	buf := make([]byte, 8)
	if n, err := f.ReadAt(buf, 0); n != 3 || err != io.EOF {
		t.Fatalf("ReadAt after Preallocate = %d, %v; want 3, io.EOF", n, err)
	}
	write(t, f, 3, "def")
	syncFile(t, f)
	if got := contents(t, f); got != "abcdef" {
		t.Fatalf("contents = %q", got)
	}
}

func testClosed(t *testing.T, fs vfs.FS) {
	f := create(t, fs, "a")
	write(t, f, 0, "abc")
	closeFile(t, f)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, vfs.ErrClosed) {
			t.Fatalf("%s on a closed file: %v, want vfs.ErrClosed", what, err)
		}
	}
	_, err := f.ReadAt(make([]byte, 1), 0)
	check("ReadAt", err)
	_, err = f.WriteAt([]byte("x"), 0)
	check("WriteAt", err)
	check("Sync", f.Sync())
	check("Truncate", f.Truncate(0))
	_, err = f.Size()
	check("Size", err)
	// The file itself is untouched.
	wantContents(t, fs, "a", "abc")
}

// ---- durability tests (power loss simulated with CrashClean) ----

func testCrashSync(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "a", "")
	f := open(t, fs, "a")
	write(t, f, 0, "synced")
	syncFile(t, f)
	write(t, f, 6, "+lost")
	c.CrashClean()
	wantContents(t, fs, "a", "synced")
}

func testCrashUnsyncedWrite(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "a", "0123456789")
	f := open(t, fs, "a")
	write(t, f, 2, "XX")  // overwrite, unsynced
	write(t, f, 10, "YY") // extension, unsynced
	c.CrashClean()
	wantContents(t, fs, "a", "0123456789")
}

func testCrashCloseNoSync(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "a", "base")
	f := open(t, fs, "a")
	write(t, f, 4, "+closed")
	closeFile(t, f)
	c.CrashClean()
	wantContents(t, fs, "a", "base")
}

func testCrashTruncate(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "a", "abcdef")
	durableFile(t, fs, ".", "b", "abcdef")
	fa := open(t, fs, "a")
	if err := fa.Truncate(2); err != nil {
		t.Fatalf("Truncate: %v", err)
	}
	fb := open(t, fs, "b")
	if err := fb.Truncate(2); err != nil {
		t.Fatalf("Truncate: %v", err)
	}
	syncFile(t, fb)
	c.CrashClean()
	wantContents(t, fs, "a", "abcdef") // truncation not synced
	wantContents(t, fs, "b", "ab")
}

func testCrashCreateNeedsSyncDir(t *testing.T, fs vfs.FS, c Crasher) {
	if err := fs.MkdirAll("other"); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	syncDir(t, fs, ".")
	f := create(t, fs, "other/nodirsync")
	write(t, f, 0, "data")
	syncFile(t, f) // the data is synced but not the name: "other" is never synced
	closeFile(t, f)
	g := create(t, fs, "dirsynced")
	write(t, g, 0, "data")
	syncFile(t, g)
	closeFile(t, g)
	syncDir(t, fs, ".")        // syncs "." only, not "other"
	h := create(t, fs, "late") // created after the SyncDir
	closeFile(t, h)
	c.CrashClean()
	wantMissing(t, fs, "other/nodirsync")
	wantMissing(t, fs, "late")
	wantContents(t, fs, "dirsynced", "data")
	wantList(t, fs, ".", "dirsynced", "other")
	wantList(t, fs, "other")
}

func testCrashSyncDirNoData(t *testing.T, fs vfs.FS, c Crasher) {
	f := create(t, fs, "a")
	write(t, f, 0, "unsynced data")
	closeFile(t, f)
	syncDir(t, fs, ".") // the name is durable, its data is not
	c.CrashClean()
	wantContents(t, fs, "a", "")
}

func testCrashRenameNeedsSyncDir(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "target", "old")
	f := create(t, fs, "target.tmp")
	write(t, f, 0, "new")
	syncFile(t, f)
	closeFile(t, f)
	syncDir(t, fs, ".") // target.tmp is durable under its own name
	if err := fs.Rename("target.tmp", "target"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	wantContents(t, fs, "target", "new")
	c.CrashClean()
	// The rename was not made durable: it is undone, whole.
	wantContents(t, fs, "target", "old")
	wantContents(t, fs, "target.tmp", "new")
}

func testCrashRenameDurable(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "target", "old")
	durableFile(t, fs, ".", "target.tmp", "new")
	if err := fs.Rename("target.tmp", "target"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	syncDir(t, fs, ".")
	c.CrashClean()
	wantContents(t, fs, "target", "new")
	wantMissing(t, fs, "target.tmp")
	wantList(t, fs, ".", "target")
}

func testCrashRemove(t *testing.T, fs vfs.FS, c Crasher) {
	durableFile(t, fs, ".", "kept", "k")
	durableFile(t, fs, ".", "gone", "g")
	if err := fs.Remove("kept"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := fs.Remove("gone"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	syncDir(t, fs, ".")
	durableFile(t, fs, ".", "other", "o")
	if err := fs.Remove("other"); err != nil { // removal not synced
		t.Fatalf("Remove: %v", err)
	}
	c.CrashClean()
	wantMissing(t, fs, "kept")
	wantMissing(t, fs, "gone")
	wantContents(t, fs, "other", "o")
}

func testCrashNestedDir(t *testing.T, fs vfs.FS, c Crasher) {
	if err := fs.MkdirAll("q/seg"); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	syncDir(t, fs, ".")
	syncDir(t, fs, "q")
	durableFile(t, fs, "q/seg", "q/seg/000", "records")
	c.CrashClean()
	wantList(t, fs, "q/seg", "000")
	wantContents(t, fs, "q/seg/000", "records")
}
