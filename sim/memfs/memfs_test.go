package memfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/prng"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t testing.TB, fs *FS, name string) vfs.File {
	t.Helper()
	f, err := fs.Create(name)
	must(t, err)
	return f
}

func mustWrite(t testing.TB, f vfs.File, off int64, p []byte) {
	t.Helper()
	n, err := f.WriteAt(p, off)
	if err != nil || n != len(p) {
		t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", len(p), off, n, err)
	}
}

func contents(t testing.TB, fs *FS, name string) []byte {
	t.Helper()
	b, err := fs.Bytes(name)
	must(t, err)
	return b
}

func exists(fs *FS, name string) bool {
	f, err := fs.Open(name)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func TestSyncedSurvivesUnsyncedLostClean(t *testing.T) {
	fs := New()
	must(t, fs.MkdirAll("d"))
	must(t, fs.SyncDir("."))
	f := mustCreate(t, fs, "d/a")
	must(t, fs.SyncDir("d"))
	mustWrite(t, f, 0, []byte("hello world"))
	must(t, f.Sync())
	mustWrite(t, f, 6, []byte("WORLD and more"))
	must(t, f.Truncate(20))
	if got := string(contents(t, fs, "d/a")); got != "hello WORLD and more" {
		t.Fatalf("current = %q", got)
	}
	if got, _ := fs.DurableBytes("d/a"); string(got) != "hello world" {
		t.Fatalf("durable = %q", got)
	}
	fs.CrashClean()
	if got := string(contents(t, fs, "d/a")); got != "hello world" {
		t.Fatalf("after crash = %q", got)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, vfs.ErrClosed) {
		t.Fatalf("old handle after crash: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, vfs.ErrClosed) {
		t.Fatalf("old handle Sync after crash: %v", err)
	}
}

func TestTruncateShrinkUndone(t *testing.T) {
	fs := New()
	f := mustCreate(t, fs, "a")
	must(t, fs.SyncDir("."))
	data := bytes.Repeat([]byte("0123456789"), 2000)
	mustWrite(t, f, 0, data)
	must(t, f.Sync())
	must(t, f.Truncate(5))
	mustWrite(t, f, 5, []byte("xyz"))
	must(t, f.Truncate(100))
	fs.CrashClean()
	if !bytes.Equal(contents(t, fs, "a"), data) {
		t.Fatal("truncations not undone")
	}
}

// history records, per byte, every value a crash may legitimately leave.
type history struct {
	durable []byte
	vals    []map[byte]bool // per position: values written by pending writes
}

// TestCrashOutcomes checks, over many seeds, that a random crash leaves only
// values some history of the file had, keeps every synced byte, and that
// each outcome (lose, keep, tear) occurs.
func TestCrashOutcomes(t *testing.T) {
	var sawLost, sawKept, sawTorn int
	for seed := uint64(1); seed <= 300; seed++ {
		r := prng.New(seed)
		fs := New()
		f := mustCreate(t, fs, "f")
		must(t, fs.SyncDir("."))
		// A synced base.
		base := make([]byte, int(r.Intn(3*SectorBytes)))
		for i := range base {
			base[i] = byte(1 + r.Intn(50))
		}
		mustWrite(t, f, 0, base)
		must(t, f.Sync())
		size := int64(len(base))
		written := map[int64]map[byte]bool{}
		maxEnd := size
		// Pending writes with distinct values (200+k).
		nw := 1 + r.Intn(6)
		for k := 0; k < nw; k++ {
			off := int64(r.Intn(int(size) + SectorBytes))
			p := bytes.Repeat([]byte{byte(200 + k)}, 1+r.Intn(2*SectorBytes))
			mustWrite(t, f, off, p)
			for i := range p {
				pos := off + int64(i)
				if written[pos] == nil {
					written[pos] = map[byte]bool{}
				}
				written[pos][p[i]] = true
			}
			maxEnd = max(maxEnd, off+int64(len(p)))
		}
		cur := contents(t, fs, "f")
		fs.Crash(prng.New(seed * 7919))
		got := contents(t, fs, "f")
		if int64(len(got)) < size || int64(len(got)) > maxEnd {
			t.Fatalf("seed %d: size %d outside [%d, %d]", seed, len(got), size, maxEnd)
		}
		lost, kept := 0, 0
		for pos, b := range got {
			var old byte
			if pos < len(base) {
				old = base[pos]
			}
			vals := written[int64(pos)]
			switch {
			case vals == nil && b != old:
				t.Fatalf("seed %d: untouched byte %d changed %d -> %d", seed, pos, old, b)
			case vals != nil && b != old && b != 0 && !vals[b]:
				t.Fatalf("seed %d: byte %d = %d, never written there", seed, pos, b)
			}
			if vals != nil {
				if b == cur[pos] {
					kept++
				} else {
					lost++
				}
			}
		}
		if lost > 0 && kept > 0 {
			sawTorn++
		} else if lost > 0 {
			sawLost++
		} else if kept > 0 {
			sawKept++
		}
		// After the crash everything is durable.
		fs.CrashClean()
		if !bytes.Equal(contents(t, fs, "f"), got) {
			t.Fatalf("seed %d: state after crash not durable", seed)
		}
	}
	if sawLost == 0 || sawKept == 0 || sawTorn == 0 {
		t.Fatalf("outcomes: lost-all %d kept-all %d mixed %d", sawLost, sawKept, sawTorn)
	}
}

// TestCrashSectorIsAVersion: a sector written twice ends as the old sector,
// the first write, or both writes (or torn versions of one step), never the
// second write without the first one when they overlap entirely.
func TestCrashSectorIsAVersion(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		fs := New()
		f := mustCreate(t, fs, "f")
		must(t, fs.SyncDir("."))
		mustWrite(t, f, 0, bytes.Repeat([]byte{1}, SectorBytes))
		must(t, f.Sync())
		mustWrite(t, f, 0, bytes.Repeat([]byte{2}, SectorBytes))
		mustWrite(t, f, 0, bytes.Repeat([]byte{3}, SectorBytes))
		fs.Crash(prng.New(seed))
		got := contents(t, fs, "f")
		// Version order 1 < 2 < 3 along the sector must not contain 3 next to 1
		// with no 2-step: simply check no byte went "back" to 1 while another
		// holds 3 unless the tear of the last write is on top of version 1,
		// which requires version 2 to have been lost entirely... Here: a
		// sector holds at most two distinct values.
		vals := map[byte]bool{}
		for _, b := range got {
			vals[b] = true
		}
		if len(vals) > 2 {
			t.Fatalf("seed %d: sector mixes %d versions", seed, len(vals))
		}
	}
}

func TestCrashDeterministic(t *testing.T) {
	run := func() [][]byte {
		fs := New()
		var out [][]byte
		r := prng.New(99)
		for i := 0; i < 5; i++ {
			name := fmt.Sprintf("f%d", i)
			f := mustCreate(t, fs, name)
			mustWrite(t, f, 0, bytes.Repeat([]byte{byte(i + 1)}, 3*SectorBytes+i))
			if i%2 == 0 {
				must(t, f.Sync())
			}
		}
		must(t, fs.SyncDir("."))
		for i := 0; i < 5; i++ {
			f, err := fs.Open(fmt.Sprintf("f%d", i))
			must(t, err)
			mustWrite(t, f, int64(i*100), bytes.Repeat([]byte{byte(i + 100)}, 2*SectorBytes))
		}
		fs.Crash(r)
		names, _ := fs.List(".")
		for _, n := range names {
			out = append(out, contents(t, fs, n))
		}
		return out
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatal("different file counts")
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("file %d differs between runs", i)
		}
	}
}

func TestDirectoryCrash(t *testing.T) {
	var sawCreateKept, sawCreateLost, sawRenameKept, sawRenameLost int
	for seed := uint64(1); seed <= 200; seed++ {
		fs := New()
		must(t, fs.MkdirAll("q"))
		must(t, fs.SyncDir("."))
		f := mustCreate(t, fs, "q/old")
		mustWrite(t, f, 0, []byte("old"))
		must(t, f.Sync())
		must(t, fs.SyncDir("q"))
		g := mustCreate(t, fs, "q/tmp")
		mustWrite(t, g, 0, []byte("new"))
		must(t, g.Sync())
		must(t, fs.Rename("q/tmp", "q/old"))
		h := mustCreate(t, fs, "q/late")
		must(t, h.Sync())
		must(t, fs.Remove("q/late"))
		fs.Crash(prng.New(seed))

		old := string(contents(t, fs, "q/old"))
		switch {
		case old == "new" && !exists(fs, "q/tmp"):
			sawRenameKept++
		case old == "old":
			sawRenameLost++
			// tmp may or may not exist (its create may be undone), never both names for one file
			if exists(fs, "q/tmp") && string(contents(t, fs, "q/tmp")) != "new" {
				t.Fatalf("seed %d: tmp has wrong contents", seed)
			}
		default:
			t.Fatalf("seed %d: q/old = %q, tmp exists %v", seed, old, exists(fs, "q/tmp"))
		}
		if exists(fs, "q/late") {
			sawCreateKept++
		} else {
			sawCreateLost++
		}
		names, err := fs.List("q")
		must(t, err)
		if !slices.IsSorted(names) {
			t.Fatal("List not sorted")
		}
	}
	if sawCreateKept == 0 || sawCreateLost == 0 || sawRenameKept == 0 || sawRenameLost == 0 {
		t.Fatalf("outcomes: create kept %d lost %d; rename kept %d lost %d",
			sawCreateKept, sawCreateLost, sawRenameKept, sawRenameLost)
	}
}

func TestMkdirNeedsParentSync(t *testing.T) {
	fs := New()
	must(t, fs.MkdirAll("a/b"))
	f := mustCreate(t, fs, "a/b/f")
	must(t, f.Sync())
	must(t, fs.SyncDir("a/b")) // depends on the mkdirs of a and a/b: they commit too
	fs.CrashClean()
	if !exists(fs, "a/b/f") {
		t.Fatal("a/b/f lost although its directory was synced")
	}

	fs = New()
	must(t, fs.MkdirAll("x/y"))
	fs.CrashClean()
	if _, err := fs.List("x"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("unsynced directory survived: %v", err)
	}
}

type failSyncs struct{ on bool }

func (f *failSyncs) Inject(a Access) error {
	if f.on && a.Op == OpSync {
		return fmt.Errorf("injected: %w", vfs.ErrIO)
	}
	return nil
}

func TestInjectedSyncFailureKeepsDataPending(t *testing.T) {
	fs := New()
	f := mustCreate(t, fs, "a")
	must(t, fs.SyncDir("."))
	mustWrite(t, f, 0, []byte("durable"))
	must(t, f.Sync())
	inj := &failSyncs{on: true}
	fs.SetInjector(inj)
	mustWrite(t, f, 7, []byte("+pending"))
	if err := f.Sync(); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("Sync = %v, want ErrIO", err)
	}
	if got := string(contents(t, fs, "a")); got != "durable+pending" {
		t.Fatalf("reads must see the write: %q", got)
	}
	fs.SetInjector(nil)
	fs.CrashClean()
	if got := string(contents(t, fs, "a")); got != "durable" {
		t.Fatalf("after crash %q", got)
	}
}

func TestInjectorSeesAccesses(t *testing.T) {
	fs := New()
	var seen []string
	fs.SetInjector(InjectorFunc(func(a Access) error {
		seen = append(seen, fmt.Sprintf("%v %s %d %d", a.Op, a.Name, a.Off, a.Len))
		if a.Op == OpRead && a.Off == 13 {
			return fmt.Errorf("bad sector: %w", vfs.ErrIO)
		}
		return nil
	}))
	f := mustCreate(t, fs, "a")
	mustWrite(t, f, 0, make([]byte, 20))
	if _, err := f.ReadAt(make([]byte, 2), 13); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("read error not injected: %v", err)
	}
	want := []string{"create a 0 0", "write a 0 20", "read a 13 2"}
	if !slices.Equal(seen, want) {
		t.Fatalf("accesses %q, want %q", seen, want)
	}
}

func TestCapacity(t *testing.T) {
	fs := New()
	fs.SetCapacity(10000)
	f := mustCreate(t, fs, "a")
	mustWrite(t, f, 0, make([]byte, 6000))
	if _, err := f.WriteAt(make([]byte, 5000), 6000); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("write past capacity: %v", err)
	}
	if n, _ := f.Size(); n != 6000 {
		t.Fatalf("failed write changed the size to %d", n)
	}
	mustWrite(t, f, 0, make([]byte, 6000)) // overwrite needs no space
	if fs.Usage() != 6000 {
		t.Fatalf("usage %d", fs.Usage())
	}
	g := mustCreate(t, fs, "b")
	if err := g.Preallocate(5000); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("preallocate past capacity: %v", err)
	}
	must(t, g.Preallocate(4000))
	if fs.Usage() != 10000 {
		t.Fatalf("usage %d", fs.Usage())
	}
	must(t, fs.Remove("a"))
	if fs.Usage() != 4000 {
		t.Fatalf("usage after remove %d", fs.Usage())
	}
	must(t, f.Truncate(0))
	if fs.Usage() != 4000 {
		t.Fatalf("usage after truncating a removed file %d", fs.Usage())
	}
}

func TestCorrupt(t *testing.T) {
	fs := New()
	f := mustCreate(t, fs, "a")
	must(t, fs.SyncDir("."))
	mustWrite(t, f, 0, []byte("abcdef"))
	must(t, f.Sync())
	mustWrite(t, f, 2, []byte("XY")) // pending overwrite of c, d
	must(t, fs.Corrupt("a", 0))
	must(t, fs.Corrupt("a", 2))
	if got := string(contents(t, fs, "a")); got != "`bXYef" {
		t.Fatalf("current %q", got)
	}
	if got, _ := fs.DurableBytes("a"); string(got) != "`bbdef" {
		t.Fatalf("durable %q", got)
	}
	if err := fs.Corrupt("a", 6); err == nil {
		t.Fatal("corrupting past the durable size succeeded")
	}
	fs.CrashClean()
	if got := string(contents(t, fs, "a")); got != "`bbdef" {
		t.Fatalf("after crash %q", got)
	}
}

func TestReadSemantics(t *testing.T) {
	fs := New()
	f := mustCreate(t, fs, "a")
	mustWrite(t, f, 3, []byte("xy"))
	buf := make([]byte, 10)
	n, err := f.ReadAt(buf, 0)
	if n != 5 || err != io.EOF || !bytes.Equal(buf[:5], []byte{0, 0, 0, 'x', 'y'}) {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf[:n])
	}
	if _, err := fs.Open("missing"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("Open missing: %v", err)
	}
	must(t, f.Close())
	if err := f.Close(); !errors.Is(err, vfs.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func BenchmarkWriteSync(b *testing.B) {
	fs := New()
	f, err := fs.Create("a")
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, 512)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	off := int64(0)
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(p, off); err != nil {
			b.Fatal(err)
		}
		off += int64(len(p))
		if off > 64<<20 {
			off = 0
		}
		if i%8 == 7 {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestRandomOpsAgainstSnapshots drives one file with random writes,
// truncations and syncs. After every step DurableBytes must equal the
// contents at the last Sync; after a random Crash every byte must hold a
// value that position had at some point since the last Sync (or zero), the
// size must be one the file had (or between), and positions no pending
// operation touched must be unchanged.
func TestRandomOpsAgainstSnapshots(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		r := prng.New(seed)
		fs := New()
		f := mustCreate(t, fs, "f")
		must(t, fs.SyncDir("."))
		var snaps [][]byte // contents after each operation since the last Sync; snaps[0] is durable
		snaps = append(snaps, nil)
		steps := 1 + r.Intn(30)
		for s := 0; s < steps; s++ {
			cur := contents(t, fs, "f")
			switch k := r.Intn(10); {
			case k < 6:
				off := int64(r.Intn(len(cur) + 2*SectorBytes))
				p := make([]byte, 1+r.Intn(3*SectorBytes))
				for i := range p {
					p[i] = byte(1 + r.Intn(255))
				}
				mustWrite(t, f, off, p)
			case k < 8:
				must(t, f.Truncate(int64(r.Intn(len(cur)+SectorBytes))))
			default:
				must(t, f.Sync())
				snaps = snaps[:0]
			}
			snaps = append(snaps, contents(t, fs, "f"))
			if d, err := fs.DurableBytes("f"); err != nil || !bytes.Equal(d, snaps[0]) {
				t.Fatalf("seed %d step %d: DurableBytes differs from the last synced contents", seed, s)
			}
		}
		fs.Crash(prng.New(seed ^ 0xabcdef))
		got := contents(t, fs, "f")
		minSize, maxSize := len(snaps[0]), len(snaps[0])
		for _, sn := range snaps {
			minSize, maxSize = min(minSize, len(sn)), max(maxSize, len(sn))
		}
		if len(got) < minSize || len(got) > maxSize {
			t.Fatalf("seed %d: size %d outside [%d, %d]", seed, len(got), minSize, maxSize)
		}
		for p, b := range got {
			ok, stable := b == 0, p < len(snaps[0])
			for _, sn := range snaps {
				if p < len(sn) && sn[p] == b {
					ok = true
				}
				if stable && (p >= len(sn) || sn[p] != snaps[0][p]) {
					stable = false
				}
			}
			if !ok {
				t.Fatalf("seed %d: byte %d = %d, a value it never had", seed, p, b)
			}
			if stable && b != snaps[0][p] {
				t.Fatalf("seed %d: untouched byte %d changed", seed, p)
			}
		}
	}
}
