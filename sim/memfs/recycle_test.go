package memfs

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// verifyRefs recounts every file's references from the namespaces and the
// journal and panics if a count differs, or if a reachable file was freed
// or is not registered. opens is checked against wantOpens when it is not
// nil (the handles a test holds, per node); with it nil, a file with
// open handles counts as reachable. It costs a walk of everything;
// the tests call it after every operation.
func (fs *FS) verifyRefs(wantOpens map[*node]int) {
	links, durLinks, jrefs := map[*node]int{}, map[*node]int{}, map[*node]int{}
	for _, ents := range fs.cur {
		for _, n := range ents {
			if !n.isDir {
				links[n]++
			}
		}
	}
	for _, ents := range fs.dur {
		for _, n := range ents {
			if !n.isDir {
				durLinks[n]++
			}
		}
	}
	for i := range fs.journal {
		for _, n := range [2]*node{fs.journal[i].n, fs.journal[i].replaced} {
			if n != nil && !n.isDir {
				jrefs[n]++
			}
		}
	}
	reachable := map[*node]bool{}
	for _, m := range []map[*node]int{links, durLinks, jrefs, wantOpens} {
		for n := range m {
			reachable[n] = true
		}
	}
	chunks := map[*chunk]bool{}
	for i, n := range fs.files {
		if n.reg != i || n.c.freed {
			panic(fmt.Sprintf("memfs: file %d registered at %d (reg %d, freed %v)", n.id, i, n.reg, n.c.freed))
		}
		if n.links != links[n] || n.durLinks != durLinks[n] || n.jrefs != jrefs[n] {
			panic(fmt.Sprintf("memfs: file %d counts %d %d %d, recounted %d %d %d",
				n.id, n.links, n.durLinks, n.jrefs, links[n], durLinks[n], jrefs[n]))
		}
		if wantOpens != nil && n.opens != wantOpens[n] {
			panic(fmt.Sprintf("memfs: file %d has %d open handles, %d recounted", n.id, n.opens, wantOpens[n]))
		}
		if !fs.noRecycle && !reachable[n] && !(wantOpens == nil && n.opens > 0) {
			panic(fmt.Sprintf("memfs: file %d is unreachable and not freed", n.id))
		}
		delete(reachable, n)
		for _, ch := range n.c.chunks {
			if ch != nil {
				if chunks[ch] {
					panic(fmt.Sprintf("memfs: a chunk of file %d is held twice", n.id))
				}
				chunks[ch] = true
			}
		}
	}
	for n := range reachable {
		panic(fmt.Sprintf("memfs: reachable file %d is not registered (freed %v)", n.id, n.c.freed))
	}
	for _, ch := range fs.slab.recycled {
		if chunks[ch] {
			panic("memfs: a recycled chunk is still held by a file")
		}
		chunks[ch] = true
	}
}

// twin drives two file systems with the same operations: a, which frees
// unreachable files and reuses their chunks, and ref, which never frees
// (noRecycle: the behaviour recycling must not change). Each has its own
// Rand for crashes and failed syncs, seeded alike, so that both draw the
// same values; the driver draws from its own.
type twin struct {
	a, ref   *FS
	ra, rref *prng.Rand
	ha, href []*File // handles opened, the same index in both
	failSync bool    // the injectors fail the next Sync
	failAny  bool    // the injectors fail the next operation (any kind)
	verify   bool    // check a's reference counts after every step
	freed    int64   // files a freed, summed over runs (for the callers)
	reused   int64   // chunks a reused, summed over runs
}

// twinWeights weighs the operations of twin.run (its cases, by number):
// mostly file operations, so that files live long enough to be written,
// and a crash one step in about 13.
var twinWeights = [20]int{2, 1, 3, 5, 5, 1, 3, 3, 2, 2, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1}

var twinWeightSum = func() (s int) {
	for _, w := range twinWeights {
		s += w
	}
	return s
}()

var (
	twinDirs  = []string{".", "d", "e", "d/f"}
	twinNames = []string{"a", "b", "c", "d/x", "d/y", "e/z", "d/f/w"}
)

func newTwin(seed uint64, verify bool) *twin {
	tw := &twin{a: New(), ref: New(), ra: prng.New(seed ^ 0x5eed), rref: prng.New(seed ^ 0x5eed), verify: verify}
	tw.ref.noRecycle, tw.ref.slab.noReuse = true, true
	for _, fs := range []*FS{tw.a, tw.ref} {
		fs.SetInjector(InjectorFunc(func(a Access) error {
			if tw.failAny || (a.Op == OpSync && tw.failSync) {
				return fmt.Errorf("injected: %w", vfs.ErrIO)
			}
			return nil
		}))
	}
	return tw
}

// wantOpens counts a's live handles per file, from the handles themselves.
func (tw *twin) wantOpens() map[*node]int {
	m := map[*node]int{}
	for _, h := range tw.ha {
		if !h.closed && h.gen == tw.a.gen {
			m[h.n]++
		}
	}
	return m
}

// observe describes everything a user or a checker can see of fs: the
// current namespace and contents, the durable namespace, sizes, bytes
// (ReadDurable and DurableBytes), change logs, usage, stats.
func observe(fs *FS) string {
	var b strings.Builder
	for _, d := range twinDirs {
		names, err := fs.List(d)
		fmt.Fprintf(&b, "ls %s %v %v\n", d, names, err)
		for _, nm := range names {
			name := path.Join(d, nm)
			c, err := fs.Bytes(name)
			fmt.Fprintf(&b, "  %s %d %x %v\n", name, len(c), sum(c), err)
		}
		names, err = fs.DurableList(d)
		fmt.Fprintf(&b, "dls %s %v %v\n", d, names, err)
		for _, nm := range names {
			name := path.Join(d, nm)
			size, err := fs.DurableSize(name)
			fmt.Fprintf(&b, "  size %s %d %v\n", name, size, err)
			p := make([]byte, size+3)
			k, err := fs.ReadDurable(name, p, 0)
			fmt.Fprintf(&b, "  read %d %x %v\n", k, sum(p[:k]), err)
			db, err := fs.DurableBytes(name)
			fmt.Fprintf(&b, "  bytes %d %x %v\n", len(db), sum(db), err)
			id, err := fs.DurableChanges(name, 0, func(lo, hi int64) { fmt.Fprintf(&b, " [%d,%d)", lo, hi) })
			fmt.Fprintf(&b, "  id %d %v\n", id, err)
		}
	}
	st := fs.Stats()
	st.FilesFreed, st.ChunksAllocated, st.ChunksReused = 0, 0, 0
	fmt.Fprintf(&b, "usage %d gen %d stamp %d stats %+v\n", fs.Usage(), fs.DurableGen(), fs.DurableStamp(), st)
	return b.String()
}

// sum stands for a file's bytes in observe.
func sum(p []byte) uint32 { return crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)) }

// keep records the handle an open or create of fs returned (with its
// twin's at the same index) and renders its outcome.
func (tw *twin) keep(fs *FS, f vfs.File, err error) string {
	if err == nil {
		if fs == tw.a {
			tw.ha = append(tw.ha, f.(*File))
		} else {
			tw.href = append(tw.href, f.(*File))
		}
	}
	return fmt.Sprint(err)
}

// cleanImage is what CrashClean must leave: the durable names and bytes.
func cleanImage(fs *FS) string { return image(fs.DurableList, fs.DurableBytes) }

// currentImage is the current namespace and contents, in cleanImage's form.
func currentImage(fs *FS) string { return image(fs.List, fs.Bytes) }

// image lists the twins' directories with list and their files' contents
// with read.
func image(list func(string) ([]string, error), read func(string) ([]byte, error)) string {
	var b strings.Builder
	for _, d := range twinDirs {
		names, err := list(d)
		fmt.Fprintf(&b, "%s %v %v\n", d, names, err != nil)
		for _, nm := range names {
			if c, err := read(path.Join(d, nm)); err == nil {
				fmt.Fprintf(&b, "  %s %x\n", nm, c)
			}
		}
	}
	return b.String()
}

// run drives the twins with steps random operations; it returns the first
// difference between them (or a broken model expectation), or the panic
// that stopped it, as an error.
func (tw *twin) run(seed uint64, steps int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		st := tw.a.Stats()
		tw.freed += st.FilesFreed
		tw.reused += st.ChunksReused
	}()
	r := prng.New(seed)
	same := func(step int, what string, fa, fref func(fs *FS) string) error {
		ga, gref := fa(tw.a), fref(tw.ref)
		if ga != gref {
			return fmt.Errorf("seed %d step %d (%s): recycling differs from the reference:\n%s\nreference:\n%s", seed, step, what, ga, gref)
		}
		return nil
	}
	both := func(step int, what string, f func(fs *FS) string) error { return same(step, what, f, f) }
	handle := func(fs *FS, i int) *File {
		if fs == tw.a {
			return tw.ha[i]
		}
		return tw.href[i]
	}
	for step := 0; step < steps; step++ {
		name := twinNames[r.Intn(len(twinNames))]
		name2 := twinNames[r.Intn(len(twinNames))]
		dir := twinDirs[r.Intn(len(twinDirs))]
		hi := -1
		if len(tw.ha) > 0 {
			hi = r.Intn(len(tw.ha))
		}
		tw.failSync = r.Intn(4) == 0
		tw.failAny = r.Intn(30) == 0
		off := r.Int63n(3 * SectorBytes)
		p := make([]byte, 1+r.Intn(3*SectorBytes))
		for i := range p {
			p[i] = byte(1 + r.Intn(255))
		}
		size := r.Int63n(4 * SectorBytes)
		k := 0
		for w := r.Intn(twinWeightSum); w >= twinWeights[k]; k++ {
			w -= twinWeights[k]
		}
		if k == 1 && r.Intn(2) == 0 {
			tw.a.SetSyncFailureDropsPages(tw.ra)
			tw.ref.SetSyncFailureDropsPages(tw.rref)
		} else if k == 1 {
			tw.a.SetSyncFailureDropsPages(nil)
			tw.ref.SetSyncFailureDropsPages(nil)
		}
		if hi < 0 && k >= 2 && k <= 8 {
			k = 0
		}
		var what string
		var op func(fs *FS) string
		switch k {
		case 0, 1:
			what = "create " + name
			op = func(fs *FS) string { f, err := fs.Create(name); return tw.keep(fs, f, err) }
		case 2:
			what = "open " + name
			op = func(fs *FS) string { f, err := fs.Open(name); return tw.keep(fs, f, err) }
		case 3, 4:
			what = "write"
			op = func(fs *FS) string {
				n, err := handle(fs, hi).WriteAt(p, off)
				return fmt.Sprint(n, err)
			}
		case 5:
			what = "truncate"
			op = func(fs *FS) string { return fmt.Sprint(handle(fs, hi).Truncate(size)) }
		case 6:
			what = "sync"
			op = func(fs *FS) string { return fmt.Sprint(handle(fs, hi).Sync()) }
		case 7:
			what = "close"
			op = func(fs *FS) string { return fmt.Sprint(handle(fs, hi).Close()) }
		case 8:
			what = "read/size/preallocate"
			op = func(fs *FS) string {
				h := handle(fs, hi)
				q := make([]byte, len(p))
				n, err := h.ReadAt(q, off)
				sz, serr := h.Size()
				return fmt.Sprint(n, err, q[:n], sz, serr, h.Preallocate(size))
			}
		case 9, 10:
			what = "remove " + name
			op = func(fs *FS) string { return fmt.Sprint(fs.Remove(name)) }
		case 11:
			what = "rename " + name + " " + name2
			op = func(fs *FS) string { return fmt.Sprint(fs.Rename(name, name2)) }
		case 12, 13:
			what = "syncdir " + dir
			op = func(fs *FS) string { return fmt.Sprint(fs.SyncDir(dir)) }
		case 14:
			what = "mkdirall " + dir
			op = func(fs *FS) string { return fmt.Sprint(fs.MkdirAll(dir)) }
		case 15:
			what = "crash"
			op = func(fs *FS) string {
				if fs == tw.a {
					fs.Crash(tw.ra)
				} else {
					fs.Crash(tw.rref)
				}
				return ""
			}
		case 16:
			what = "crash-tear-synced"
			op = func(fs *FS) string {
				if fs == tw.a {
					return fmt.Sprint(fs.CrashTearSynced(tw.ra))
				}
				return fmt.Sprint(fs.CrashTearSynced(tw.rref))
			}
		case 17:
			what = "crash-clean"
			tw.failAny = false
			want := cleanImage(tw.a)
			op = func(fs *FS) string {
				fs.CrashClean()
				if got := currentImage(fs); got != want {
					return "CrashClean left\n" + got + "want\n" + want
				}
				return ""
			}
		case 18:
			what = "lose-synced-write " + name
			op = func(fs *FS) string {
				rr := tw.ra
				if fs == tw.ref {
					rr = tw.rref
				}
				o, n, ok := fs.LoseSyncedWrite(name, rr)
				return fmt.Sprint(o, n, ok)
			}
		default:
			what = "corrupt/unreadable " + name
			op = func(fs *FS) string {
				return fmt.Sprint(fs.CorruptMask(name, off, 0x41), fs.SetUnreadable(name, size, 1+off))
			}
		}
		if err := both(step, what, op); err != nil {
			return err
		}
		tw.failSync, tw.failAny = false, false
		if tw.verify {
			tw.a.verifyRefs(tw.wantOpens())
		}
		if err := both(step, what+": state", observe); err != nil {
			return err
		}
	}
	return nil
}

// Recycling must not change anything anyone can observe: random
// operations on a few files in a few directories (creations, writes,
// truncations, syncs that fail, closes, removals, renames over files,
// directory syncs, every kind of crash, lost writes, bit flips, unreadable
// ranges), on an FS that frees unreachable files and on one that never
// frees, give the same results and the same state after every step, and
// CrashClean leaves exactly the durable image before it. The reference
// counts are recounted from scratch after every step, and the files must
// actually be freed and their chunks reused.
func TestRecyclingIsInvisible(t *testing.T) {
	var freed, reused int64
	for seed := uint64(1); seed <= 150; seed++ {
		tw := newTwin(seed, true)
		if err := tw.run(seed, 400); err != nil {
			t.Fatal(err)
		}
		freed += tw.freed
		reused += tw.reused
	}
	if freed < 1000 || reused < 1000 {
		t.Fatalf("%d files freed, %d chunks reused: the test does not exercise recycling", freed, reused)
	}
	t.Logf("%d files freed, %d chunks reused", freed, reused)
}

// plantEarlyFree makes Remove free the file at once, before the removal is
// durable and while handles may be open on it: the bug the reference
// counts exist to prevent. guarded: free as FS.free does (the node is
// marked, its uses panic); else the silent kind of use after free: the
// chunks go back to the slab while the file still uses them. It returns
// a func that removes the bug and a counter of the frees it made.
func plantEarlyFree(guarded bool) (undo func(), fired *int) {
	fired = new(int)
	testFreeEarly = func(fs *FS, n *node) {
		if fs.noRecycle {
			return // the reference stays right
		}
		*fired++
		if guarded {
			fs.free(n)
			return
		}
		for _, ch := range n.c.chunks {
			fs.slab.give(ch)
		}
	}
	return func() { testFreeEarly = nil }, fired
}

// mustPanicFreed runs f and checks that it panics with the use-after-free
// guard's message.
func mustPanicFreed(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		p := recover()
		if p == nil || !strings.Contains(fmt.Sprint(p), "freed") {
			t.Fatalf("%s: recover() = %v, want the freed-file guard's panic", what, p)
		}
	}()
	f()
	t.Fatalf("%s: no panic", what)
}

// A file freed too early (when Remove journals its removal, before the
// removal is durable, with a handle open) must be caught: by the guard
// when it is marked freed (the handle's next use, the crash that brings
// the name back, the directory sync that makes the removal durable), and
// by the comparison with the reference when it is not (its chunks, reused
// by another file, change its bytes).
func TestEarlyFreeIsCaught(t *testing.T) {
	setup := func() (*FS, vfs.File) {
		fs := New()
		f := mustCreate(t, fs, "a")
		mustWrite(t, f, 0, fill(2*SectorBytes, 'A'))
		must(t, f.Sync())
		must(t, fs.SyncDir("."))
		return fs, f
	}
	t.Run("guard", func(t *testing.T) {
		undo, fired := plantEarlyFree(true)
		defer undo()
		fs, f := setup()
		must(t, fs.Remove("a"))
		mustPanicFreed(t, "read through a handle open on the removed file", func() { f.ReadAt(make([]byte, 1), 0) })
		fs, f = setup()
		f.Close()
		must(t, fs.Remove("a"))
		mustPanicFreed(t, "a crash that brings the name back", fs.CrashClean)
		fs, f = setup()
		f.Close()
		must(t, fs.Remove("a"))
		mustPanicFreed(t, "the directory sync that makes the removal durable", func() { fs.SyncDir(".") })
		// Random runs: every run in which the bug fired and the file was
		// touched again fails; count them.
		ran, caught := earlyFreeRuns(fired, func(seed uint64, err error) {
			if !strings.Contains(err.Error(), "panic") || !strings.Contains(err.Error(), "freed") {
				t.Fatalf("seed %d: caught, but not by the guard: %v", seed, err)
			}
		})
		if ran == 0 || caught < ran*9/10 {
			t.Fatalf("the early free fired in %d runs, the guard caught %d", ran, caught)
		}
		t.Logf("the early free fired in %d runs, the guard caught %d", ran, caught)
	})
	t.Run("reference", func(t *testing.T) {
		undo, fired := plantEarlyFree(false)
		defer undo()
		// The removed file's chunks go to the next file created; the
		// removal is lost by the crash and the file comes back with the
		// other file's bytes.
		tw := newTwin(0, false)
		for _, fs := range []*FS{tw.a, tw.ref} {
			f := mustCreate(t, fs, "a")
			mustWrite(t, f, 0, fill(2*SectorBytes, 'A'))
			must(t, f.Sync())
			must(t, f.Close())
			must(t, fs.SyncDir("."))
			must(t, fs.Remove("a"))
			g := mustCreate(t, fs, "b")
			mustWrite(t, g, 0, fill(SectorBytes, 'B'))
			fs.CrashClean()
		}
		if observe(tw.a) == observe(tw.ref) {
			t.Fatal("the early free went unnoticed by the comparison with the reference")
		}
		if c := contents(t, tw.a, "a"); !bytes.Contains(c, []byte("B")) || !bytes.Equal(contents(t, tw.ref, "a"), fill(2*SectorBytes, 'A')) {
			t.Fatal("file a does not hold b's bytes after the early free")
		}
		ran, caught := earlyFreeRuns(fired, func(seed uint64, err error) {
			if strings.Contains(err.Error(), "panic") {
				t.Fatalf("seed %d: caught by a panic, want the comparison: %v", seed, err)
			}
		})
		if ran == 0 || caught < ran/2 {
			t.Fatalf("the early free fired in %d runs, the comparison caught %d", ran, caught)
		}
		t.Logf("the early free fired in %d runs, the comparison caught %d", ran, caught)
	})
}

// earlyFreeRuns runs 100 random twin runs with the planted early free:
// ran counts those in which it fired, caught those that failed (each
// failure handed to check).
func earlyFreeRuns(fired *int, check func(seed uint64, err error)) (ran, caught int) {
	for seed := uint64(1); seed <= 100; seed++ {
		*fired = 0
		err := newTwin(seed, false).run(seed, 400)
		if *fired > 0 {
			ran++
			if err != nil {
				check(seed, err)
				caught++
			}
		}
	}
	return ran, caught
}

// A segment log's pattern: create a segment, fill it by appends, sync it
// and its directory, remove the oldest once a few are kept, and crash now
// and then. Only the segments alive at once may cost fresh chunks; every
// other segment reuses the chunks of the removed ones.
func TestChunksAreReused(t *testing.T) {
	const (
		segBytes = 100 << 10
		live     = 3
		rounds   = 300
	)
	fs := New()
	r := prng.New(1)
	var f vfs.File
	for i := 0; i < rounds; i++ {
		if f != nil {
			f.Close() // dead after a crash: ErrClosed
		}
		f = mustCreate(t, fs, fmt.Sprintf("s%03d", i))
		for off := 0; off < segBytes; off += 1024 {
			mustWrite(t, f, int64(off), fill(1024, byte(i%255+1))) // (zeros cost no chunk)
		}
		must(t, f.Sync())
		must(t, fs.SyncDir("."))
		if i >= live {
			must(t, fs.Remove(fmt.Sprintf("s%03d", i-live)))
			must(t, fs.SyncDir("."))
		}
		if i%50 == 49 {
			fs.Crash(r) // nothing pending: nothing lost
		}
		fs.verifyRefs(nil)
	}
	st := fs.Stats()
	perFile := int64(chunksFor(segBytes))
	if bound := (live+1)*perFile + slabChunks; st.ChunksAllocated > bound {
		t.Fatalf("%d chunks allocated for %d files of %d chunks, at most %d alive at once: want at most %d",
			st.ChunksAllocated, rounds, perFile, live+1, bound)
	}
	if st.FilesFreed != rounds-live || st.ChunksReused < (rounds-live-1)*perFile {
		t.Fatalf("%d files freed, %d chunks reused; want %d freed, at least %d reused",
			st.FilesFreed, st.ChunksReused, rounds-live, (rounds-live-1)*perFile)
	}
	for i := rounds - live; i < rounds; i++ {
		if c := contents(t, fs, fmt.Sprintf("s%03d", i)); !bytes.Equal(c, fill(segBytes, byte(i%255+1))) {
			t.Fatalf("segment %d does not hold its bytes", i)
		}
	}
	t.Logf("%+v", st)
}

// A file is freed exactly when the last thing that can reach it lets go:
// a durable removal and the last handle's Close, in either order; a crash
// that kills the handles; never a removal a crash may undo.
func TestFreedWhenUnreachable(t *testing.T) {
	freed := func(fs *FS, want int64, what string) {
		t.Helper()
		fs.verifyRefs(nil)
		if got := fs.Stats().FilesFreed; got != want {
			t.Fatalf("%s: %d files freed, want %d", what, got, want)
		}
	}
	newFile := func(fs *FS, name string) vfs.File {
		f := mustCreate(t, fs, name)
		mustWrite(t, f, 0, fill(3*SectorBytes, 'x'))
		must(t, f.Sync())
		return f
	}
	fs := New()
	f := newFile(fs, "a")
	must(t, fs.Remove("a"))
	freed(fs, 0, "created and removed, nothing durable, open")
	must(t, f.Close())
	freed(fs, 0, "closed: the removal is pending, and so is the creation")
	must(t, fs.SyncDir("."))
	freed(fs, 1, "the creation and the removal are durable")

	f = newFile(fs, "b")
	must(t, fs.SyncDir("."))
	must(t, fs.Remove("b"))
	must(t, fs.SyncDir("."))
	freed(fs, 1, "removed durably, still open")
	g, err := fs.Open("b")
	if err == nil || g != nil {
		t.Fatal("the removed name opens")
	}
	mustWrite(t, f, 3*SectorBytes, fill(10, 'y')) // an unlinked file stays usable
	if c := make([]byte, 4); func() error { _, err := f.ReadAt(c, 0); return err }() != nil || string(c) != "xxxx" {
		t.Fatal("an unlinked open file does not read back")
	}
	must(t, f.Close())
	freed(fs, 2, "the last handle closed")

	f = newFile(fs, "c")
	must(t, fs.SyncDir("."))
	must(t, fs.Remove("c"))
	must(t, f.Close())
	freed(fs, 2, "closed, the removal pending")
	fs.CrashClean()
	freed(fs, 2, "a crash undid the removal")
	if c := contents(t, fs, "c"); !bytes.Equal(c, fill(3*SectorBytes, 'x')) {
		t.Fatal("the file a crash brought back lost its bytes")
	}

	f = newFile(fs, "d")
	must(t, fs.SyncDir("."))
	must(t, fs.Remove("d"))
	must(t, fs.SyncDir("."))
	freed(fs, 2, "removed durably, open")
	fs.CrashClean()
	freed(fs, 3, "the crash killed the handle")
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, vfs.ErrClosed) {
		t.Fatalf("a handle from before the crash reads: %v", err)
	}
	if f.Close() == nil {
		t.Fatal("a dead handle closes")
	}

	// Renamed over: the replaced file goes once the rename is durable.
	f = newFile(fs, "e")
	g = newFile(fs, "e2")
	must(t, f.Close())
	must(t, g.Close())
	must(t, fs.SyncDir("."))
	must(t, fs.Rename("e2", "e"))
	freed(fs, 3, "renamed over, pending")
	must(t, fs.SyncDir("."))
	freed(fs, 4, "renamed over, durable")

	// A created file that a crash forgets.
	f = newFile(fs, "g")
	freed(fs, 4, "created, pending")
	fs.CrashClean()
	freed(fs, 5, "the crash forgot the creation")
}

// Zeros written where a file reads as zeros cost no chunk (a simulated
// body is a key and zeros), and read back as written; zeros written over
// bytes that are not zero overwrite them.
func TestZerosCostNoChunk(t *testing.T) {
	fs := New()
	f := mustCreate(t, fs, "z")
	mustWrite(t, f, 0, make([]byte, 64<<10))
	mustWrite(t, f, 70000, []byte("key"))
	must(t, f.Sync())
	if st := fs.Stats(); st.ChunksAllocated > slabChunks {
		t.Fatalf("%d chunks allocated for 64 KiB of zeros and one sector of bytes", st.ChunksAllocated)
	}
	mustWrite(t, f, 70000, make([]byte, 3))
	want := make([]byte, 70003)
	if c := contents(t, fs, "z"); !bytes.Equal(c, want) {
		t.Fatalf("contents after zeros over bytes: %d bytes, not all zero", len(c))
	}
}
