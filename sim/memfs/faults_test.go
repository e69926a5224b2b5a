package memfs

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// fill returns n bytes of value b.
func fill(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

func durable(t testing.TB, fs *FS, name string) []byte {
	t.Helper()
	b, err := fs.DurableBytes(name)
	must(t, err)
	return b
}

// readDurableAll checks ReadDurable against want (the durable contents) at
// every offset and a few lengths, with ReadAt's semantics.
func readDurableAll(t *testing.T, fs *FS, name string, want []byte, what string) {
	t.Helper()
	size, err := fs.DurableSize(name)
	if err != nil || size != int64(len(want)) {
		t.Fatalf("%s: DurableSize = %d, %v; want %d", what, size, err, len(want))
	}
	step := max(1, len(want)/97)
	for off := 0; off <= len(want)+2; off += step {
		for _, n := range []int{0, 1, 7, SectorBytes + 3, len(want) + 5} {
			p := make([]byte, n)
			k, err := fs.ReadDurable(name, p, int64(off))
			wantK := max(0, min(n, len(want)-off))
			switch {
			case n == 0:
				if k != 0 || err != nil {
					t.Fatalf("%s: ReadDurable(0 bytes at %d) = %d, %v", what, off, k, err)
				}
				continue
			case k != wantK:
				t.Fatalf("%s: ReadDurable(%d at %d) = %d bytes, want %d", what, n, off, k, wantK)
			case wantK < n && err != io.EOF, wantK == n && err != nil:
				t.Fatalf("%s: ReadDurable(%d at %d) error %v", what, n, off, err)
			case k > 0 && !bytes.Equal(p[:k], want[off:off+k]):
				t.Fatalf("%s: ReadDurable(%d at %d) differs from the durable contents", what, n, off)
			}
		}
	}
}

// TestReadDurableMatchesDurableBytes drives files with random writes,
// truncations and syncs and compares ReadDurable with DurableBytes (which
// copies the whole file) after every step.
func TestReadDurableMatchesDurableBytes(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		r := prng.New(seed)
		fs := New()
		f := mustCreate(t, fs, "f")
		must(t, fs.SyncDir("."))
		for s := 0; s < 1+r.Intn(25); s++ {
			cur := contents(t, fs, "f")
			switch k := r.Intn(10); {
			case k < 6:
				p := make([]byte, 1+r.Intn(2*SectorBytes))
				for i := range p {
					p[i] = byte(1 + r.Intn(255))
				}
				mustWrite(t, f, int64(r.Intn(len(cur)+SectorBytes)), p)
			case k < 8:
				must(t, f.Truncate(int64(r.Intn(len(cur)+SectorBytes))))
			default:
				must(t, f.Sync())
			}
			readDurableAll(t, fs, "f", durable(t, fs, "f"), "random ops")
		}
	}
}

func TestReadDurableNamespace(t *testing.T) {
	fs := New()
	must(t, fs.MkdirAll("d"))
	must(t, fs.SyncDir("."))
	a := mustCreate(t, fs, "d/a")
	mustWrite(t, a, 0, []byte("synced"))
	must(t, a.Sync())
	must(t, fs.SyncDir("d"))
	mustCreate(t, fs, "d/b") // not durable
	must(t, fs.Rename("d/a", "d/c"))
	if _, err := fs.ReadDurable("d/b", make([]byte, 1), 0); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("ReadDurable of a name not durable: %v", err)
	}
	if _, err := fs.DurableSize("d/c"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("DurableSize of an unsynced rename: %v", err)
	}
	p := make([]byte, 10)
	if n, err := fs.ReadDurable("d/a", p, 0); n != 6 || err != io.EOF || string(p[:n]) != "synced" {
		t.Fatalf("ReadDurable(d/a) = %d, %v, %q", n, err, p[:n])
	}
	if n, err := fs.ReadDurable("d/a", p, 6); n != 0 || err != io.EOF {
		t.Fatalf("ReadDurable at the durable size = %d, %v", n, err)
	}
	names, err := fs.DurableList("d")
	if err != nil || !slices.Equal(names, []string{"a"}) {
		t.Fatalf("DurableList(d) = %v, %v", names, err)
	}
	must(t, fs.SyncDir("d"))
	names, _ = fs.DurableList("d")
	if !slices.Equal(names, []string{"b", "c"}) {
		t.Fatalf("DurableList(d) after SyncDir = %v", names)
	}
	if names, _ := fs.DurableList("."); !slices.Equal(names, []string{"d"}) {
		t.Fatalf("DurableList(.) = %v", names)
	}
	must(t, fs.MkdirAll("e"))
	if _, err := fs.DurableList("e"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("DurableList of a directory not durable: %v", err)
	}
}

// A crash that keeps a prefix of the directory journal changes the durable
// namespace: DurableGen must change with it, and a durable read after a
// rename made durable by the crash must find the file under its new name
// (readers cache by DurableGen).
func TestCrashKeepingTheJournalChangesDurableGen(t *testing.T) {
	fs := New()
	a := mustCreate(t, fs, "a")
	mustWrite(t, a, 0, []byte("x"))
	must(t, a.Sync())
	must(t, fs.SyncDir("."))
	p := make([]byte, 1)
	if _, err := fs.ReadDurable("a", p, 0); err != nil {
		t.Fatal(err)
	}
	must(t, fs.Rename("a", "b"))
	gen := fs.DurableGen()
	fs.Crash(keepAll{})
	if fs.DurableGen() == gen {
		t.Fatal("DurableGen unchanged by a crash that kept the rename")
	}
	if _, err := fs.ReadDurable("a", p, 0); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("ReadDurable of the old name after the kept rename: %v", err)
	}
	if n, err := fs.ReadDurable("b", p, 0); n != 1 || string(p) != "x" {
		t.Fatalf("ReadDurable(b) = %d, %v", n, err)
	}
}

// DurableDirGen changes with a directory's durable entries and with
// nothing else: a rename across directories made durable (by a sync of
// the target, or a crash that kept it) changes both directories', a change
// in another directory neither (the checkers list a log's directory again
// only when its own generation moved).
func TestDurableDirGenFollowsItsDirectory(t *testing.T) {
	fs := New()
	must(t, fs.MkdirAll("d"))
	must(t, fs.MkdirAll("e"))
	must(t, fs.SyncDir("."))
	mustCreate(t, fs, "d/a")
	d0, e0 := fs.DurableDirGen("d"), fs.DurableDirGen("e")
	must(t, fs.SyncDir("d"))
	d1 := fs.DurableDirGen("d")
	if d1 == d0 || fs.DurableDirGen("e") != e0 {
		t.Fatalf("create made durable in d: d %d -> %d, e %d -> %d", d0, d1, e0, fs.DurableDirGen("e"))
	}
	mustCreate(t, fs, "e/b")
	must(t, fs.SyncDir("e"))
	if fs.DurableDirGen("d") != d1 {
		t.Fatal("a change in e moved d's generation")
	}
	must(t, fs.Rename("d/a", "e/c"))
	d2, e2 := fs.DurableDirGen("d"), fs.DurableDirGen("e")
	fs.Crash(keepAll{})
	if fs.DurableDirGen("d") == d2 || fs.DurableDirGen("e") == e2 {
		t.Fatalf("a crash that kept a rename from d to e: d %d -> %d, e %d -> %d", d2, fs.DurableDirGen("d"), e2, fs.DurableDirGen("e"))
	}
}

// keepAll keeps every pending operation through a crash.
type keepAll struct{}

func (keepAll) Intn(n int) int { return n - 1 }

// ---- lost writes ----

// lossFixture: "a" holds 100 bytes of 'A' synced, then a batch of 'B' over
// [50, 150) synced.
func lossFixture(t *testing.T) (*FS, vfs.File) {
	fs := New()
	f := mustCreate(t, fs, "a")
	must(t, fs.SyncDir("."))
	mustWrite(t, f, 0, fill(100, 'A'))
	must(t, f.Sync())
	mustWrite(t, f, 50, fill(100, 'B'))
	must(t, f.Sync())
	return fs, f
}

func TestLoseSyncedWriteShapes(t *testing.T) {
	oldShape := append(fill(100, 'A'), make([]byte, 50)...)
	zeroShape := append(fill(50, 'A'), make([]byte, 100)...)
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		fs, f := lossFixture(t)
		off, n, ok := fs.LoseSyncedWrite("a", prng.New(seed))
		if !ok || off != 50 || n != 100 {
			t.Fatalf("seed %d: LoseSyncedWrite = %d, %d, %t", seed, off, n, ok)
		}
		got := durable(t, fs, "a")
		switch {
		case bytes.Equal(got, oldShape):
			seen["old"] = true
		case bytes.Equal(got, zeroShape):
			seen["zeros"] = true
		default:
			t.Fatalf("seed %d: durable contents after the loss: %q", seed, got)
		}
		// The page cache is dropped: reads see the media.
		if !bytes.Equal(contents(t, fs, "a"), got) {
			t.Fatalf("seed %d: current contents differ from the media", seed)
		}
		p := make([]byte, 150)
		if _, err := f.ReadAt(p, 0); err != nil || !bytes.Equal(p, got) {
			t.Fatalf("seed %d: ReadAt after the loss: %v", seed, err)
		}
		fs.CrashClean()
		if !bytes.Equal(contents(t, fs, "a"), got) {
			t.Fatalf("seed %d: the loss did not survive a crash", seed)
		}
		if _, _, ok := fs.LoseSyncedWrite("a", prng.New(seed)); ok {
			t.Fatalf("seed %d: a write was lost twice", seed)
		}
	}
	if !seen["old"] || !seen["zeros"] {
		t.Fatalf("shapes seen %v, want both", seen)
	}
}

func TestLoseSyncedWriteRefusals(t *testing.T) {
	r := prng.New(7)
	fs := New()
	f := mustCreate(t, fs, "a")
	if _, _, ok := fs.LoseSyncedWrite("a", r); ok {
		t.Fatal("lost a write never synced")
	}
	if _, _, ok := fs.LoseSyncedWrite("missing", r); ok {
		t.Fatal("lost a write of a missing file")
	}
	mustWrite(t, f, 0, fill(10, 'x'))
	if _, _, ok := fs.LoseSyncedWrite("a", r); ok {
		t.Fatal("lost a pending write")
	}

	// A pending write over the synced one blocks it; nothing changes.
	fs, f = lossFixture(t)
	mustWrite(t, f, 140, fill(20, 'C'))
	before, cur := durable(t, fs, "a"), contents(t, fs, "a")
	for seed := uint64(1); seed <= 10; seed++ {
		if _, _, ok := fs.LoseSyncedWrite("a", prng.New(seed)); ok {
			t.Fatal("lost a synced write under a pending one")
		}
	}
	if !bytes.Equal(durable(t, fs, "a"), before) || !bytes.Equal(contents(t, fs, "a"), cur) {
		t.Fatal("a refused loss changed the file")
	}
	// A pending truncation into it blocks it too.
	fs, f = lossFixture(t)
	must(t, f.Truncate(120))
	if _, _, ok := fs.LoseSyncedWrite("a", prng.New(1)); ok {
		t.Fatal("lost a synced write under a pending truncation")
	}
	// A later write of the same batch over it blocks it; the later one can
	// be lost.
	fs = New()
	f = mustCreate(t, fs, "a")
	mustWrite(t, f, 0, fill(100, 'A'))
	mustWrite(t, f, 10, fill(10, 'B'))
	must(t, f.Sync())
	lost := 0
	for seed := uint64(1); seed <= 20; seed++ {
		g := New()
		h := mustCreate(t, g, "a")
		mustWrite(t, h, 0, fill(100, 'A'))
		mustWrite(t, h, 10, fill(10, 'B'))
		must(t, h.Sync())
		if off, n, ok := g.LoseSyncedWrite("a", prng.New(seed)); ok {
			lost++
			if off != 10 || n != 10 {
				t.Fatalf("seed %d: lost [%d, +%d), under a later write of its batch", seed, off, n)
			}
		}
	}
	if lost == 0 {
		t.Fatal("the later write was never lost")
	}
}

// TestLoseSyncedWriteOnlyLastBatchBounded: only the last synced batch is
// remembered, and only its newest 64 writes.
func TestLoseSyncedWriteOnlyLastBatchBounded(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		fs := New()
		f := mustCreate(t, fs, "a")
		mustWrite(t, f, 0, fill(1000, 'x'))
		must(t, f.Sync()) // an older batch
		for i := 0; i < 100; i++ {
			mustWrite(t, f, int64(2000+10*i), fill(5, byte(i))) // 100 separate writes
		}
		must(t, f.Sync())
		must(t, f.Sync()) // nothing pending: the batch stays remembered
		off, n, ok := fs.LoseSyncedWrite("a", prng.New(seed))
		if !ok || n != 5 || off < 2000+10*36 {
			t.Fatalf("seed %d: lost [%d, +%d) ok %t; want one of the newest 64 writes", seed, off, n, ok)
		}
	}
}

// TestLoseSyncedWriteAcrossCrash: a remembered write survives a crash that
// left it alone, and is forgotten when a settled pending write touched it.
func TestLoseSyncedWriteAcrossCrash(t *testing.T) {
	fs, f := lossFixture(t)
	mustWrite(t, f, 500, fill(10, 'P')) // pending, elsewhere
	fs.Crash(prng.New(3))
	if off, _, ok := fs.LoseSyncedWrite("a", prng.New(1)); !ok || off != 50 {
		t.Fatalf("after a crash: off %d ok %t", off, ok)
	}
	fs, f = lossFixture(t)
	mustWrite(t, f, 60, fill(10, 'P')) // pending, over it
	fs.Crash(prng.New(3))
	if _, _, ok := fs.LoseSyncedWrite("a", prng.New(1)); ok {
		t.Fatal("a write under a settled pending one was lost")
	}
}

// ---- failed syncs that drop the pages ----

func TestSyncFailureDropsPages(t *testing.T) {
	outcomes := map[string]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		fs := New()
		f := mustCreate(t, fs, "a")
		must(t, fs.SyncDir("."))
		mustWrite(t, f, 0, fill(3*SectorBytes, 'A'))
		must(t, f.Sync())
		inj := &failSyncs{on: true}
		fs.SetInjector(inj)
		fs.SetSyncFailureDropsPages(prng.New(seed))
		mustWrite(t, f, 100, fill(2*SectorBytes, 'B'))
		mustWrite(t, f, 3*SectorBytes, fill(SectorBytes, 'C')) // grows the file
		if err := f.Sync(); !errors.Is(err, vfs.ErrIO) {
			t.Fatalf("seed %d: Sync = %v", seed, err)
		}
		// Nothing pending: the current contents are the media's.
		cur := contents(t, fs, "a")
		if !bytes.Equal(cur, durable(t, fs, "a")) {
			t.Fatalf("seed %d: pending operations remain after the failed Sync", seed)
		}
		for i, b := range cur {
			if b != 'A' && b != 'B' && b != 'C' && b != 0 {
				t.Fatalf("seed %d: byte %d = %q", seed, i, b)
			}
		}
		outcomes[string(cur[100:101])+string(cur[SectorBytes+1:SectorBytes+2])+string(rune(len(cur)/SectorBytes))] = true
		inj.on = false
		if err := f.Sync(); err != nil { // the error was reported once
			t.Fatalf("seed %d: second Sync = %v", seed, err)
		}
		mustWrite(t, f, 0, []byte("handle still usable"))
		must(t, f.Sync())
		// Deterministic: the same seed settles the same way.
		g := New()
		h := mustCreate(t, g, "a")
		must(t, g.SyncDir("."))
		mustWrite(t, h, 0, fill(3*SectorBytes, 'A'))
		must(t, h.Sync())
		g.SetInjector(&failSyncs{on: true})
		g.SetSyncFailureDropsPages(prng.New(seed))
		mustWrite(t, h, 100, fill(2*SectorBytes, 'B'))
		mustWrite(t, h, 3*SectorBytes, fill(SectorBytes, 'C'))
		h.Sync()
		if !bytes.Equal(contents(t, g, "a"), cur) {
			t.Fatalf("seed %d: the same seed settled differently", seed)
		}
	}
	if len(outcomes) < 3 {
		t.Fatalf("only %d outcomes over 40 seeds: %v", len(outcomes), outcomes)
	}
}

// ---- unreadable ranges ----

// TestUnreadableRefusesBytesUnderWay: a range that an unsynced write or
// truncation touches cannot be made unreadable (that operation, reaching
// the media, rewrites it); once synced it can.
func TestUnreadableRefusesBytesUnderWay(t *testing.T) {
	fs := New()
	f := syncedFile(t, fs, 8192)
	must(t, f.Truncate(16384)) // zeros ahead, not yet synced
	mustWrite(t, f, 8192, fill(100, 'B'))
	for _, r := range [][2]int64{{8192, 4096}, {12288, 4096}, {8000, 200}} {
		if err := fs.SetUnreadable("a", r[0], r[1]); !errors.Is(err, ErrPending) {
			t.Fatalf("SetUnreadable [%d,+%d) with an operation under way: %v", r[0], r[1], err)
		}
	}
	must(t, fs.SetUnreadable("a", 4096, 4096)) // untouched durable bytes
	must(t, f.Sync())
	must(t, fs.SetUnreadable("a", 12288, 4096))
	p := make([]byte, 10)
	if _, err := f.ReadAt(p, 12300); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("synced zeros made unreadable: %v", err)
	}
}

// TestWriteOverZeros: a write over zeros (a file extended ahead of its
// data) keeps no copy of them, yet the durable image, a corruption of it
// and every crash see them as a write over any bytes would.
func TestWriteOverZeros(t *testing.T) {
	for seed := uint64(0); seed <= 40; seed++ {
		fs := New()
		f := syncedFile(t, fs, 8192)
		must(t, f.Truncate(16384))
		must(t, f.Sync())
		mustWrite(t, f, 8192, fill(100, 'B')) // over zeros: nothing saved
		mustWrite(t, f, 100, fill(50, 'C'))   // over data: its bytes saved
		nd, err := fs.lookupFile("test", "a")
		must(t, err)
		if u := nd.undo; len(u) != 2 || !u[0].zeros || u[1].zeros {
			t.Fatalf("pending operations %+v: want the first over zeros, the second not", u)
		}
		want := append(fill(8192, 'A'), make([]byte, 8192)...)
		if seed%2 == 1 {
			must(t, fs.Corrupt("a", 8200)) // a durable zero under the pending write
			want[8200] = 1
		}
		if got := durable(t, fs, "a"); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: durable image differs at %d", seed, firstDiff(got, want))
		}
		rd := make([]byte, len(want))
		if _, err := fs.ReadDurable("a", rd, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rd, want) {
			t.Fatalf("seed %d: ReadDurable differs at %d", seed, firstDiff(rd, want))
		}
		if seed == 0 {
			fs.CrashClean()
		} else {
			fs.Crash(prng.New(seed))
		}
		f, _ = fs.Open("a")
		got := make([]byte, 16384)
		if _, err := f.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			old, written := want[i], want[i]
			switch {
			case i >= 8192 && i < 8292:
				written = 'B'
			case i >= 100 && i < 150:
				written = 'C'
			}
			if got[i] != old && got[i] != written {
				t.Fatalf("seed %d: byte %d after the crash = %d, want the old %d or the written %d", seed, i, got[i], old, written)
			}
			if seed == 0 && got[i] != old {
				t.Fatalf("clean crash: byte %d = %d, want the durable %d", i, got[i], old)
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// syncedFile creates file "a" of n bytes 'A', synced, its entry too.
func syncedFile(t *testing.T, fs *FS, n int) vfs.File {
	f := mustCreate(t, fs, "a")
	must(t, fs.SyncDir("."))
	mustWrite(t, f, 0, fill(n, 'A'))
	must(t, f.Sync())
	return f
}

func TestUnreadableRange(t *testing.T) {
	fs := New()
	f := syncedFile(t, fs, 1000)
	if fs.HasUnreadable("a") {
		t.Fatal("HasUnreadable before any range was set")
	}
	must(t, fs.SetUnreadable("a", 100, 50))
	if !fs.HasUnreadable("a") || fs.HasUnreadable("missing") {
		t.Fatalf("HasUnreadable: a %v, missing %v", fs.HasUnreadable("a"), fs.HasUnreadable("missing"))
	}
	p := make([]byte, 10)
	if _, err := f.ReadAt(p, 95); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("read overlapping the range: %v", err)
	}
	if _, err := f.ReadAt(p, 90); err != nil {
		t.Fatalf("read just before the range: %v", err)
	}
	if _, err := f.ReadAt(p, 150); err != nil {
		t.Fatalf("read just after the range: %v", err)
	}
	if _, err := fs.ReadDurable("a", p, 140); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("ReadDurable overlapping the range: %v", err)
	}
	// It is the media: it survives crashes.
	fs.Crash(prng.New(1))
	f, _ = fs.Open("a")
	if _, err := f.ReadAt(p, 120); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("after a crash: %v", err)
	}
	// A write makes the bytes it covers readable (synced or not).
	mustWrite(t, f, 110, fill(10, 'B'))
	if _, err := f.ReadAt(p, 110); err != nil {
		t.Fatalf("rewritten bytes: %v", err)
	}
	if _, err := f.ReadAt(p[:1], 105); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("bytes before the rewrite: %v", err)
	}
	if _, err := f.ReadAt(p[:1], 125); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("bytes after the rewrite: %v", err)
	}
	// A truncation below drops what lies past the new size.
	must(t, f.Truncate(115))
	must(t, f.Truncate(1000))
	if _, err := f.ReadAt(p, 130); err != nil {
		t.Fatalf("after truncating below the range: %v", err)
	}
	if _, err := f.ReadAt(p[:1], 105); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("below the truncation: %v", err)
	}
	must(t, f.Sync())
	if !fs.HasUnreadable("a") {
		t.Fatal("HasUnreadable lost the range below the truncation")
	}
	mustWrite(t, f, 100, fill(10, 'C'))
	must(t, f.Sync())
	if fs.HasUnreadable("a") {
		t.Fatal("HasUnreadable after every unreadable byte was rewritten")
	}
	// Bounds: 16 ranges; touching ones merge.
	g := mustCreate(t, fs, "b")
	for i := int64(0); i < unreadableRangesMax; i++ {
		must(t, fs.SetUnreadable("b", 100*i, 10))
	}
	if err := fs.SetUnreadable("b", 5000, 1); err == nil {
		t.Fatal("a 17th range was accepted")
	}
	must(t, fs.SetUnreadable("b", 10, 90)) // touches [0,10) and [100,110): merges
	must(t, fs.SetUnreadable("b", 5000, 1))
	mustWrite(t, g, 0, fill(6000, 'x'))
	if _, err := g.ReadAt(p, 0); err != nil {
		t.Fatalf("after rewriting everything: %v", err)
	}
	if err := fs.SetUnreadable("b", -1, 5); err == nil {
		t.Fatal("a negative offset was accepted")
	}
	if err := fs.SetUnreadable("missing", 0, 5); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestUnreadableSplitKeepsTheBound: writes that split ranges never take a
// file past the bound.
func TestUnreadableSplitKeepsTheBound(t *testing.T) {
	fs := New()
	f := mustCreate(t, fs, "a")
	must(t, fs.SetUnreadable("a", 0, 100000))
	for i := int64(1); i < 100; i++ {
		mustWrite(t, f, 1000*i, []byte{1})
		if n := len(f.(*File).n.unreadable); n > unreadableRangesMax {
			t.Fatalf("%d ranges", n)
		}
	}
}

// ---- torn sectors that damage synced bytes ----

func TestCrashTearSynced(t *testing.T) {
	seen := 0
	for seed := uint64(1); seed <= 30; seed++ {
		fs := New()
		f := mustCreate(t, fs, "a")
		must(t, fs.SyncDir("."))
		mustWrite(t, f, 0, fill(2*SectorBytes, 'S'))
		must(t, f.Sync())
		mustWrite(t, f, 100, fill(100, 'P')) // shares sector 0 with synced bytes
		damaged := fs.CrashTearSynced(prng.New(seed))
		if damaged != SectorBytes-100 {
			t.Fatalf("seed %d: damaged %d bytes, want %d", seed, damaged, SectorBytes-100)
		}
		got := contents(t, fs, "a")
		if len(got) != 2*SectorBytes {
			t.Fatalf("seed %d: size %d", seed, len(got))
		}
		stillS := 0 // garbage may hit 'S' by chance (1 in 255), not often
		for i := 0; i < SectorBytes; i++ {
			if got[i] == 0 {
				t.Fatalf("seed %d: byte %d of the torn sector is zero", seed, i)
			}
			if (i < 100 || i >= 200) && got[i] == 'S' {
				stillS++
			}
		}
		if stillS > 100 {
			t.Fatalf("seed %d: %d synced bytes of the torn sector kept their value", seed, stillS)
		}
		if !bytes.Equal(got[SectorBytes:], fill(SectorBytes, 'S')) {
			t.Fatalf("seed %d: the next sector changed", seed)
		}
		if got[150] == 'P' || got[150] == 'S' {
			seen++
		}
	}
	if seen == 0 {
		t.Fatal("the write's own bytes were always garbage")
	}
}

// TestCrashTearSyncedWithoutCandidate is an ordinary Crash, draw for draw.
func TestCrashTearSyncedWithoutCandidate(t *testing.T) {
	build := func() *FS {
		fs := New()
		f := mustCreate(t, fs, "a")
		must(t, fs.SyncDir("."))
		mustWrite(t, f, 0, fill(SectorBytes, 'S'))
		must(t, f.Sync())
		mustWrite(t, f, SectorBytes, fill(3*SectorBytes, 'P')) // fresh sectors only
		mustCreate(t, fs, "b")                                 // a directory change too
		return fs
	}
	for seed := uint64(1); seed <= 20; seed++ {
		a, b := build(), build()
		if d := a.CrashTearSynced(prng.New(seed)); d != 0 {
			t.Fatalf("seed %d: damaged %d", seed, d)
		}
		b.Crash(prng.New(seed))
		if !bytes.Equal(contents(t, a, "a"), contents(t, b, "a")) || exists(a, "b") != exists(b, "b") {
			t.Fatalf("seed %d: CrashTearSynced without a candidate differs from Crash", seed)
		}
	}
}

// TestCrashTearSyncedPicksAmongCandidates: the last sector of a write, and
// writes in several files, are candidates too.
func TestCrashTearSyncedPicksAmongCandidates(t *testing.T) {
	hit := map[string]bool{}
	for seed := uint64(1); seed <= 60; seed++ {
		fs := New()
		for _, name := range []string{"a", "b"} {
			f := mustCreate(t, fs, name)
			mustWrite(t, f, 0, fill(2*SectorBytes, 'S'))
			must(t, f.Sync())
		}
		must(t, fs.SyncDir("."))
		fa, _ := fs.Open("a")
		mustWrite(t, fa, 0, fill(SectorBytes+10, 'P')) // last sector shares with synced bytes
		fb, _ := fs.Open("b")
		mustWrite(t, fb, SectorBytes+20, fill(30, 'P')) // first (and last) sector
		damaged := fs.CrashTearSynced(prng.New(seed))
		switch damaged {
		case SectorBytes - 10:
			hit["a"] = true
		case SectorBytes - 30:
			hit["b"] = true
		default:
			t.Fatalf("seed %d: damaged %d", seed, damaged)
		}
	}
	if !hit["a"] || !hit["b"] {
		t.Fatalf("victims %v, want both files", hit)
	}
}

// BenchmarkWriteSyncLostWriteMemory is BenchmarkWriteSync with overwrites,
// so that every Sync remembers saved bytes for LoseSyncedWrite.
func BenchmarkWriteSyncOverwrite(b *testing.B) {
	fs := New()
	f, err := fs.Create("a")
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, 512)
	if _, err := f.WriteAt(make([]byte, 1<<20), 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	off := int64(0)
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(p, off); err != nil {
			b.Fatal(err)
		}
		off = (off + 4096) % (1 << 20)
		if i%8 == 7 {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
