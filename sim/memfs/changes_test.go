package memfs

import (
	"errors"
	"testing"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// durImage is a file's durable image as a reader of the durable state sees
// it: the bytes, and which of them are unreadable.
type durImage struct {
	file       uint64
	data       []byte
	unreadable []bool
}

func imageOf(t *testing.T, fs *FS, name string) (durImage, bool) {
	t.Helper()
	n, err := fs.lookupDurable("test", name)
	if err != nil {
		return durImage{}, false
	}
	img := durImage{file: n.id, data: n.durableContents()}
	img.unreadable = make([]bool, len(img.data))
	for i := range img.data {
		img.unreadable[i] = n.unreadableIn(int64(i), int64(i)+1)
	}
	return img, true
}

// Every change to a file's durable image (its bytes, their readability,
// its size) must lie in a range DurableChanges names for the stamp before
// it: random writes, truncations, syncs, failed syncs that drop the pages,
// crashes (plain and tearing synced bytes), bit flips, lost writes and
// unreadable ranges, checked byte by byte after each operation.
func TestDurableChangesCoverEveryChange(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		r := prng.New(seed)
		fs := New()
		fs.SetSyncFailureDropsPages(r)
		failSync := false
		fs.SetInjector(InjectorFunc(func(a Access) error {
			if a.Op == OpSync && failSync {
				failSync = false
				return vfs.ErrIO
			}
			return nil
		}))
		const name = "f"
		f, err := fs.Create(name)
		must(t, err)
		must(t, f.Sync())
		must(t, fs.SyncDir("."))
		for step := 0; step < 300; step++ {
			before, ok := imageOf(t, fs, name)
			if !ok {
				t.Fatalf("seed %d: the file is not durable", seed)
			}
			stamp := fs.DurableStamp()
			if r.Intn(4) != 0 {
				// Mostly from an empty log, so that what the operation
				// notes is all that is reported: ranges kept from earlier
				// ones, widened by merges, would cover for a missing note.
				fs.lookupOrNil(name).changes = nil
			}
			what := ""
			switch k := r.Intn(12); {
			case k < 4:
				what = "write"
				off := r.Int63n(3 * SectorBytes)
				p := make([]byte, 1+r.Intn(SectorBytes))
				for i := range p {
					p[i] = byte(1 + r.Intn(255))
				}
				if _, err := f.WriteAt(p, off); err != nil {
					f, err = fs.Open(name) // dead after a crash
					must(t, err)
				}
			case k == 4:
				what = "truncate"
				if err := f.Truncate(r.Int63n(3 * SectorBytes)); err != nil {
					f, err = fs.Open(name)
					must(t, err)
				}
			case k == 5 || k == 6:
				what = "sync"
				failSync = r.Intn(4) == 0
				if err := f.Sync(); err != nil && !errors.Is(err, vfs.ErrIO) {
					f, err = fs.Open(name)
					must(t, err)
				}
				failSync = false
			case k == 7:
				what = "crash"
				if r.Intn(2) == 0 {
					fs.Crash(r)
				} else {
					fs.CrashTearSynced(r)
				}
				f, err = fs.Open(name)
				must(t, err)
			case k == 8:
				what = "corrupt"
				if sz := int64(len(before.data)); sz > 0 {
					must(t, fs.CorruptMask(name, r.Int63n(sz), byte(1+r.Intn(255))))
				}
			case k == 9:
				what = "lose"
				fs.LoseSyncedWrite(name, r)
			case k == 10:
				what = "unreadable"
				fs.SetUnreadable(name, r.Int63n(3*SectorBytes), 1+r.Int63n(SectorBytes))
			default:
				what = "crash-clean"
				fs.CrashClean()
				f, err = fs.Open(name)
				must(t, err)
			}
			after, _ := imageOf(t, fs, name)
			var spans []span
			file, err := fs.DurableChanges(name, stamp, func(lo, hi int64) { spans = append(spans, span{lo, hi}) })
			must(t, err)
			if file != before.file || after.file != file {
				t.Fatalf("seed %d step %d: the file changed identity", seed, step)
			}
			covered := func(i int) bool {
				for _, s := range spans {
					if int64(i) >= s.lo && int64(i) < s.hi {
						return true
					}
				}
				return false
			}
			for i := 0; i < max(len(before.data), len(after.data)); i++ {
				changed := (i < len(before.data)) != (i < len(after.data)) ||
					(i < len(before.data) && (before.data[i] != after.data[i] || before.unreadable[i] != after.unreadable[i]))
				if changed && !covered(i) {
					t.Fatalf("seed %d step %d (%s): durable byte %d changed, not in the changes reported %v", seed, step, what, i, spans)
				}
			}
			if len(fs.lookupOrNil(name).changes) > changesMax {
				t.Fatalf("seed %d step %d: %d change ranges kept", seed, step, len(fs.lookupOrNil(name).changes))
			}
		}
	}
}

// lookupOrNil returns the durable file under name, or nil.
func (fs *FS) lookupOrNil(name string) *node {
	n, _ := fs.lookupDurable("test", name)
	return n
}
