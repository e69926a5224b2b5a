package metapebble

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/meta/metakv"
	"github.com/sluicemq/sluice/io/meta/metatest"
)

const memDir = "meta"

func TestSuiteDir(t *testing.T) {
	metatest.Run(t, func(t *testing.T) metatest.Harness {
		dir := t.TempDir()
		return metatest.Harness{Open: func() (meta.Store, error) { return Open(dir, Options{}) }}
	})
}

func TestSuiteMem(t *testing.T) {
	metatest.Run(t, func(t *testing.T) metatest.Harness {
		fs := vfs.NewMem()
		return metatest.Harness{Open: func() (meta.Store, error) { return Open(memDir, Options{FS: fs}) }}
	})
}

// crashMem runs stores on pebble's crashable in-memory file system, whose
// CrashClone keeps every synced byte and directory entry and, of what was
// not synced, a seeded share of 4 KiB blocks.
type crashMem struct {
	fs     *vfs.MemFS
	noSync bool
	gate   *syncGate
}

func (c *crashMem) open() (meta.Store, error) {
	c.gate = &syncGate{FS: c.fs}
	return Open(memDir, Options{FS: c.gate, noSync: c.noSync})
}

// ApplyUnsynced commits b with pebble.Sync while file syncs are ignored:
// pebble writes the batch to its log file and believes it synced, but the
// bytes are not durable, so a power loss keeps any subset of their blocks
// (a torn log tail, the case pebble's recovery must drop whole). A NoSync
// commit would leave the record in pebble's memory, where a power loss
// always loses it whole, and prove less.
func (c *crashMem) ApplyUnsynced(s meta.Store, b *meta.Batch) error {
	c.gate.ignore.Store(true)
	defer c.gate.ignore.Store(false)
	return s.(*Store).apply(b, pebble.Sync)
}

// syncGate is a file system whose files' syncs do nothing while ignore is
// set.
type syncGate struct {
	vfs.FS
	ignore atomic.Bool
}

type gatedFile struct {
	vfs.File
	g *syncGate
}

func (g *syncGate) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return gatedFile{File: f, g: g}, nil
}

func (g *syncGate) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return g.wrap(g.FS.Create(name, c))
}

func (g *syncGate) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return g.wrap(g.FS.OpenReadWrite(name, c, opts...))
}

func (g *syncGate) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return g.wrap(g.FS.ReuseForWrite(oldname, newname, c))
}

func (f gatedFile) Sync() error {
	if f.g.ignore.Load() {
		return nil
	}
	return f.File.Sync()
}

func (f gatedFile) SyncData() error {
	if f.g.ignore.Load() {
		return nil
	}
	return f.File.SyncData()
}

// PowerLoss replaces the file system by its crash clone: seed picks how
// much of the unsynced data survives (none, about half, all) and the
// random blocks kept. The old store keeps running on the old file system
// until the suite closes it; nothing it does reaches the clone.
func (c *crashMem) PowerLoss(seed uint64) error {
	cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: []int{0, 50, 100}[seed%3]}
	if cfg.UnsyncedDataPercent > 0 {
		cfg.RNG = rand.New(rand.NewPCG(seed, 0x5eed))
	}
	c.fs = c.fs.CrashClone(cfg)
	return nil
}

func crashHarness(c *crashMem) metatest.Harness {
	return metatest.Harness{Open: c.open, Crash: c}
}

// TestSuiteStrictMem is the suite, power-loss cases included, on the
// crashable in-memory file system.
func TestSuiteStrictMem(t *testing.T) {
	metatest.Run(t, func(t *testing.T) metatest.Harness {
		return crashHarness(&crashMem{fs: vfs.NewCrashableMem()})
	})
}

// TestPowerLossStrictMem applies synced batches, cuts the power at every
// point of a run with nothing but the synced state kept, and checks that
// every acknowledged batch is there.
func TestPowerLossStrictMem(t *testing.T) {
	c := &crashMem{fs: vfs.NewCrashableMem()}
	s, err := c.open()
	if err != nil {
		t.Fatal(err)
	}
	want := meta.State{}
	for i := uint64(1); i <= 30; i++ {
		b := &meta.Batch{
			Entries:   []meta.Entry{{Index: i, Term: 1, Data: make([]byte, 1000*i)}},
			HardState: &meta.HardState{Term: 1, Vote: 1, Commit: i - 1},
			Applied:   &meta.Applied{Index: i - 1, Data: []byte{byte(i)}},
		}
		if err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		want.Entries = append(want.Entries, b.Entries...)
		want.HardState, want.Applied = *b.HardState, *b.Applied
		if i%5 != 0 {
			continue
		}
		_ = c.PowerLoss(0) // exactly the synced state
		_ = s.Close()
		if s, err = c.open(); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load()
		if err != nil {
			t.Fatalf("after %d acknowledged batches and a power loss: %v", i, err)
		}
		if got.LastIndex() != i || got.HardState != want.HardState || got.Applied.Index != want.Applied.Index || len(got.Entries) != int(i) {
			t.Fatalf("after %d acknowledged batches and a power loss: last index %d, hard state %+v, applied %d",
				i, got.LastIndex(), got.HardState, got.Applied.Index)
		}
	}
	_ = s.Close()
}

// TestNoSyncIsCaught plants the bug of committing with pebble.NoSync and
// requires the suite's power-loss checks to catch it.
func TestNoSyncIsCaught(t *testing.T) {
	var acknowledged metatest.Case
	for _, cs := range metatest.Cases() {
		if cs.Name == "crash/acknowledged" {
			acknowledged = cs
		}
	}
	for _, c := range []metatest.Case{acknowledged, metatest.Random(1, true)} {
		if c.Run == nil {
			t.Fatal("no suite case crash/acknowledged")
		}
		name := c.Name
		err := c.Run(crashHarness(&crashMem{fs: vfs.NewCrashableMem(), noSync: true}))
		if err == nil {
			t.Fatalf("%s passed a store that commits with pebble.NoSync", name)
		}
		t.Logf("%s caught it: %v", name, err)
	}
}

// TestCorruptValueIsReported flips a byte of a stored value, written
// through pebble itself, and requires Load to report it.
func TestCorruptValueIsReported(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open(memDir, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	b := &meta.Batch{Entries: []meta.Entry{{Index: 1, Term: 1, Data: []byte("one")}, {Index: 2, Term: 1, Data: []byte("two")}}}
	if err := s.Apply(b); err != nil {
		t.Fatal(err)
	}
	k, v := metakv.EncodeEntry(&b.Entries[1])
	v[len(v)/2] ^= 0x10
	if err := s.db.Set(k, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	// A value under another entry's key fails too (the CRC covers the key).
	_, v1 := metakv.EncodeEntry(&b.Entries[0])
	for _, tc := range []struct{ key, value []byte }{{k, v}, {k, v1}} {
		if err := s.db.Set(tc.key, tc.value, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		_, err = s.Load()
		var ce *meta.CorruptError
		if !errors.As(err, &ce) || ce.Record != "entry 2" {
			t.Fatalf("Load of a corrupt entry: %v, want a *meta.CorruptError for entry 2", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, _ = Open(memDir, Options{FS: fs})
	defer s.Close()
	if err := s.Apply(&meta.Batch{Entries: []meta.Entry{{Index: 3, Term: 1}}}); !errors.Is(err, meta.ErrCorrupt) {
		t.Fatalf("Apply on a corrupt store: %v, want ErrCorrupt", err)
	}
}
