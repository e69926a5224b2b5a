package fsio

// The durability calls behind a seglog.Log on fsio, counted at the system
// call. A SIGKILL test cannot tell a real fdatasync from a missing one (the
// page cache survives a kill), so this test watches the calls themselves:
// it replaces the fdatasync and fsyncDir variables with wrappers that record
// the OS path of every successful call, records every write, truncation and
// namespace change the log makes (through a vfs.FS wrapper), and after every
// acknowledged durability point (Open, Sync, TruncateFrom, DiscardDamage,
// MarkRepaired) checks that
//
//   - every file written or truncated since its last fdatasync was
//     fdatasync'd (a removed file needs nothing);
//   - every directory whose entries changed (a create, remove or rename in
//     it, or a directory made in it) was fsync'd after the change;
//   - after Sync and TruncateFrom, nothing more: each written file is
//     fdatasync'd exactly once and each changed directory fsync'd exactly
//     once, and nothing else is synced (a commit costs one fdatasync, plus
//     the directory's fsync when a segment was created or removed).
//
// The planted tests take one call away (the wrapper returns success without
// making the system call) and require the check to name what went missing.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/io/vfs"
)

// syncLedger is what the log changed and what was synced since the last
// check. Paths are OS paths.
type syncLedger struct {
	root  string
	phase string // what the workload is doing (for planted removals)

	dataDirty map[string]bool   // written or truncated since its last fdatasync
	dirDirty  map[string]string // entries changed since its last fsync: why
	written   map[string]bool   // written or truncated since the last check
	changed   map[string]bool   // directories changed since the last check
	datasyncs map[string]int    // fdatasync calls since the last check
	dirsyncs  map[string]int    // directory fsync calls since the last check

	// Planted removals: when one returns true the call is not made (and
	// not recorded), and the wrapper returns success.
	dropDatasync func(path string) bool
	dropDirsync  func(path string, why string) bool
	dropped      int

	namespaceSyncs int // checks at which a changed directory was fsync'd
}

func newSyncLedger(t *testing.T) (*syncLedger, *FS) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir()) // /proc/self/fd gives resolved paths
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	g := &syncLedger{root: fsys.Root()}
	g.reset()
	g.dataDirty, g.dirDirty = map[string]bool{}, map[string]string{}
	oldData, oldDir := fdatasync, fsyncDir
	fdatasync = func(fd int) error {
		p := fdPath(fd)
		if g.dropDatasync != nil && g.dropDatasync(p) {
			g.dropped++
			return nil
		}
		if err := oldData(fd); err != nil {
			return err
		}
		g.datasyncs[p]++
		delete(g.dataDirty, p)
		return nil
	}
	fsyncDir = func(fd int) error {
		p := fdPath(fd)
		if g.dropDirsync != nil && g.dropDirsync(p, g.dirDirty[p]) {
			g.dropped++
			return nil
		}
		if err := oldDir(fd); err != nil {
			return err
		}
		g.dirsyncs[p]++
		delete(g.dirDirty, p)
		return nil
	}
	t.Cleanup(func() { fdatasync, fsyncDir = oldData, oldDir })
	return g, fsys
}

func (g *syncLedger) reset() {
	g.written, g.changed = map[string]bool{}, map[string]bool{}
	g.datasyncs, g.dirsyncs = map[string]int{}, map[string]int{}
}

func fdPath(fd int) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return fmt.Sprintf("fd %d (%v)", fd, err)
	}
	return p
}

func (g *syncLedger) osPath(name string) string {
	return filepath.Join(g.root, filepath.FromSlash(name))
}

func (g *syncLedger) rel(p string) string {
	r, err := filepath.Rel(g.root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func (g *syncLedger) wrote(p string) { g.dataDirty[p], g.written[p] = true, true }

func (g *syncLedger) dirChanged(dir, why string) {
	if !strings.Contains(g.dirDirty[dir], why) {
		g.dirDirty[dir] = strings.TrimPrefix(g.dirDirty[dir]+","+why, ",")
	}
	g.changed[dir] = true
}

// check returns what is missing (and, when exact, what is extra) at an
// acknowledged durability point, and starts the next interval.
func (g *syncLedger) check(what string, exact bool) []string {
	var problems []string
	for _, p := range slices.Sorted(mapKeys(g.dataDirty)) {
		problems = append(problems, fmt.Sprintf("%s: %s was written but not fdatasync'd", what, g.rel(p)))
	}
	for _, d := range slices.Sorted(mapKeys(g.dirDirty)) {
		problems = append(problems, fmt.Sprintf("%s: directory %s changed (%s) but was not fsync'd", what, g.rel(d), g.dirDirty[d]))
	}
	if exact {
		for _, p := range slices.Sorted(mapKeys(g.datasyncs)) {
			if n := g.datasyncs[p]; n != 1 || !g.written[p] {
				problems = append(problems, fmt.Sprintf("%s: %s fdatasync'd %d times, written since the last check: %t", what, g.rel(p), n, g.written[p]))
			}
		}
		for _, d := range slices.Sorted(mapKeys(g.dirsyncs)) {
			if n := g.dirsyncs[d]; n != 1 || !g.changed[d] {
				problems = append(problems, fmt.Sprintf("%s: directory %s fsync'd %d times, changed since the last check: %t", what, g.rel(d), n, g.changed[d]))
			}
		}
	}
	for d := range g.changed {
		if g.dirsyncs[d] > 0 {
			g.namespaceSyncs++
			break
		}
	}
	// What went missing is reported once, not at every later check.
	clear(g.dataDirty)
	clear(g.dirDirty)
	g.reset()
	return problems
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ledgerFS records, in the ledger, the changes the log makes through it.
type ledgerFS struct {
	fs *FS
	g  *syncLedger
}

var _ vfs.FS = ledgerFS{}

func (l ledgerFS) exists(name string) bool {
	_, err := os.Lstat(l.g.osPath(name))
	return err == nil
}

func (l ledgerFS) Create(name string) (vfs.File, error) {
	existed := l.exists(name)
	f, err := l.fs.Create(name)
	if err != nil {
		return nil, err
	}
	p := l.g.osPath(name)
	if existed {
		l.g.wrote(p) // truncated to empty
	} else {
		l.g.dirChanged(filepath.Dir(p), "create")
	}
	return ledgerFile{File: f, p: p, g: l.g}, nil
}

func (l ledgerFS) Open(name string) (vfs.File, error) {
	f, err := l.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return ledgerFile{File: f, p: l.g.osPath(name), g: l.g}, nil
}

func (l ledgerFS) Remove(name string) error {
	if err := l.fs.Remove(name); err != nil {
		return err
	}
	p := l.g.osPath(name)
	delete(l.g.dataDirty, p) // gone: its data needs no sync
	l.g.dirChanged(filepath.Dir(p), "remove")
	return nil
}

func (l ledgerFS) Rename(oldName, newName string) error {
	if err := l.fs.Rename(oldName, newName); err != nil {
		return err
	}
	op, np := l.g.osPath(oldName), l.g.osPath(newName)
	if l.g.dataDirty[op] {
		delete(l.g.dataDirty, op)
		l.g.wrote(np)
	}
	l.g.dirChanged(filepath.Dir(op), "rename")
	l.g.dirChanged(filepath.Dir(np), "rename")
	return nil
}

func (l ledgerFS) MkdirAll(dir string) error {
	var made []string
	for d := dir; d != "." && d != "" && !l.exists(d); d = filepath.Dir(d) {
		made = append(made, d)
	}
	if err := l.fs.MkdirAll(dir); err != nil {
		return err
	}
	for _, d := range made {
		l.g.dirChanged(filepath.Dir(l.g.osPath(d)), "mkdir")
	}
	return nil
}

func (l ledgerFS) List(dir string) ([]string, error) { return l.fs.List(dir) }
func (l ledgerFS) SyncDir(dir string) error          { return l.fs.SyncDir(dir) }

type ledgerFile struct {
	vfs.File
	p string
	g *syncLedger
}

func (f ledgerFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	if n > 0 {
		f.g.wrote(f.p)
	}
	return n, err
}

func (f ledgerFile) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.g.wrote(f.p)
	return nil
}

// driveLog runs a seglog.Log on fsio through appends and syncs (with
// segment rolls), truncations across segments and to a segment's start, a
// damaged tail discarded and the repair mark cleared, checking the ledger
// at every durability point. It returns every problem the checks found;
// it fails the test only when the log itself misbehaves.
func driveLog(t *testing.T, g *syncLedger, fsys *FS) []string {
	t.Helper()
	var problems []string
	check := func(what string, exact bool) { problems = append(problems, g.check(what, exact)...) }
	step := func(what string) { g.phase = what }
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	lfs := ledgerFS{fs: fsys, g: g}
	opts := seglog.Options{SegmentBytesMax: 8 << 10, PreallocateBytes: 8 << 10, SlotsPerSegment: 16}
	const dir = "q/log"
	l, _, err := seglog.Open(lfs, dir, opts)
	must("open a new log", err)
	check("open a new log", false)

	appendSome := func(i int) {
		t.Helper()
		n, size := 1+i%5, (i*397)%3000
		recs := make([]record.Record, n)
		for k := range recs {
			body := make([]byte, size)
			for j := range body {
				body[j] = byte(i + j)
			}
			recs[k] = record.Record{Epoch: 1, Offset: l.End() + uint64(k), Kind: record.KindPublish, Body: body}
		}
		must(fmt.Sprintf("append %d", i), l.Append(recs))
	}
	syncs := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			appendSome(i)
			if i%3 == 2 {
				continue // the next Sync covers two batches
			}
			step(fmt.Sprintf("sync %d", i))
			must(fmt.Sprintf("sync %d", i), l.Sync())
			check(fmt.Sprintf("sync %d", i), true)
		}
	}
	syncs(0, 40)
	segs := func() []string {
		names, err := fsys.List(dir)
		must("list", err)
		return slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, ".seg") })
	}
	if n := len(segs()); n < 4 {
		t.Fatalf("the workload made only %d segments", n)
	}

	// A truncation across segments: the point lies inside a segment that
	// is not the last, so later segments go and that one is cut.
	names := segs()
	var base uint64
	fmt.Sscanf(names[len(names)-3], "%d.seg", &base)
	step("truncate across segments")
	must("truncate across segments", l.TruncateFrom(base+1))
	check("truncate across segments", true)
	syncs(40, 60)

	// A truncation to a segment's first record: whole segments go, none is cut.
	names = segs()
	fmt.Sscanf(names[len(names)-2], "%d.seg", &base)
	step("truncate to a segment start")
	must("truncate to a segment start", l.TruncateFrom(base))
	check("truncate to a segment start", true)
	syncs(60, 70)
	must("close", l.Close())

	// A damaged tail (garbage past the last frame, made behind the log's
	// back), reported by Open and discarded.
	names = segs()
	last := filepath.Join(g.root, filepath.FromSlash(dir), names[len(names)-1])
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	must("open the last segment", err)
	_, err = f.Write([]byte("torn and not zero"))
	must("plant garbage", errors.Join(err, f.Close()))
	l, rec, err := seglog.Open(lfs, dir, opts)
	must("reopen", err)
	if rec.Damage == nil {
		t.Fatalf("planted garbage not reported: %+v", rec)
	}
	check("reopen a damaged log", false)
	step("discard damage")
	must("discard damage", l.DiscardDamage())
	check("discard damage", false)
	syncs(70, 80)
	must("mark repaired", l.MarkRepaired())
	check("mark repaired", false)
	must("close", l.Close())
	return problems
}

func TestSyncCallsCoverEveryAcknowledgedWrite(t *testing.T) {
	g, fsys := newSyncLedger(t)
	if problems := driveLog(t, g, fsys); len(problems) > 0 {
		t.Fatalf("durability calls missing or extra:\n%s", strings.Join(problems, "\n"))
	}
	if g.namespaceSyncs < 5 {
		t.Fatalf("only %d checks saw a segment created or removed: the workload proves too little", g.namespaceSyncs)
	}
}

// TestSyncCountDetectsARemovedCall plants the removal of one fdatasync or
// one directory fsync at a time and requires the check to report it.
func TestSyncCountDetectsARemovedCall(t *testing.T) {
	isSeg := func(p string, base int) bool {
		return filepath.Base(p) == fmt.Sprintf("%020d.seg", base)
	}
	type plant struct {
		name string
		set  func(g *syncLedger)
		want string // a substring of the expected report
	}
	nth := func(n int, match func(string) bool) func(string) bool {
		seen := 0
		return func(p string) bool {
			if !match(p) {
				return false
			}
			seen++
			return seen == n
		}
	}
	isLogDir := func(p string) bool { return strings.HasSuffix(p, "/q/log") }
	plants := []plant{
		{"commit: the active segment's fdatasync", func(g *syncLedger) {
			g.dropDatasync = nth(4, func(p string) bool { return isSeg(p, 0) })
		}, "00000000000000000000.seg was written but not fdatasync'd"},
		{"roll: the new segment's fdatasync", func(g *syncLedger) {
			g.dropDatasync = nth(1, func(p string) bool { return strings.HasSuffix(p, ".seg") && !isSeg(p, 0) })
		}, ".seg was written but not fdatasync'd"},
		{"roll: the old segment's fdatasync", func(g *syncLedger) {
			done := false
			g.dropDatasync = func(p string) bool {
				// p written in the same interval as a later segment: the
				// sync that rolled from p to the next.
				rolled := false
				for q := range g.written {
					rolled = rolled || (strings.HasSuffix(q, ".seg") && q > p)
				}
				if !done && g.phase != "" && strings.HasPrefix(g.phase, "sync") && rolled {
					done = true
					return true
				}
				return false
			}
		}, ".seg was written but not fdatasync'd"},
		{"truncation: the cut segment's fdatasync", func(g *syncLedger) {
			g.dropDatasync = func(p string) bool { return g.phase == "truncate across segments" }
		}, "truncate across segments: q/log/"},
		{"discard: the cut segment's fdatasync", func(g *syncLedger) {
			g.dropDatasync = func(p string) bool { return g.phase == "discard damage" && strings.HasSuffix(p, ".seg") }
		}, "discard damage: q/log/"},
		{"roll: the directory's fsync", func(g *syncLedger) {
			seen := 0
			g.dropDirsync = func(p, why string) bool {
				if isLogDir(p) && why == "create" {
					seen++
					return seen == 2 // the first is the new log's
				}
				return false
			}
		}, "directory q/log changed (create) but was not fsync'd"},
		{"truncation: the directory's fsync after a remove", func(g *syncLedger) {
			done := false
			g.dropDirsync = func(p, why string) bool {
				if !done && isLogDir(p) && strings.Contains(why, "remove") {
					done = true
					return true
				}
				return false
			}
		}, "directory q/log changed (remove) but was not fsync'd"},
		{"new log: the parent directory's fsync after MkdirAll", func(g *syncLedger) {
			done := false
			g.dropDirsync = func(p, why string) bool {
				if !done && strings.HasSuffix(p, "/q") && why == "mkdir" {
					done = true
					return true
				}
				return false
			}
		}, "directory q changed (mkdir) but was not fsync'd"},
	}
	for _, pl := range plants {
		t.Run(pl.name, func(t *testing.T) {
			g, fsys := newSyncLedger(t)
			pl.set(g)
			problems := driveLog(t, g, fsys)
			if g.dropped != 1 {
				t.Fatalf("the planted removal fired %d times, want 1", g.dropped)
			}
			for _, p := range problems {
				if strings.Contains(p, pl.want) {
					t.Logf("reported: %s", p)
					return
				}
			}
			t.Fatalf("a removed call went unreported (want %q); reports:\n%s", pl.want, strings.Join(problems, "\n"))
		})
	}
}
