package check

import (
	"fmt"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// rereadRun drives one log on a memfs disk through random appends, syncs,
// truncations, crashes (plain and tearing synced bytes), bit flips, lost
// writes, unreadable ranges and recoveries (io/seglog writes the bytes),
// and feeds two DiskLogs the calls the Checker makes: one reading again
// incrementally through disk's change log, one reading everything. It
// returns the first step where their views differ ("" when they never do)
// and how many frames the incremental reading did not read again.
func rereadRun(seed uint64, disk func(*memfs.FS) Disk) (string, int) {
	r := prng.New(seed)
	fs := memfs.New()
	d := disk(fs)
	opts := seglog.Options{SlotsPerSegment: 4 + r.Intn(28), SegmentBytesMax: 2048 + int64(r.Intn(8192))}
	const dir = "q1"
	inc, full := NewDiskLog(dir), NewDiskLog(dir)
	full.fullRereads = true
	var log *seglog.Log
	end, epoch := uint64(0), uint64(1)
	open := func() {
		l, rec, err := seglog.Open(fs, dir, opts)
		if err != nil {
			panic(err)
		}
		log, end = l, rec.End
		// As Checker.Recovered: what the log reports recovered is the truth
		// to keep, the disk is read again.
		inc.Cut(rec.End)
		full.Cut(rec.End)
		if rec.Damage != nil && r.Intn(2) == 0 {
			if err := log.DiscardDamage(); err != nil {
				panic(err)
			}
		}
	}
	open()
	for step := 0; step < 400; step++ {
		what := ""
		reread := true
		switch k := r.Intn(20); {
		case k < 8:
			what = "append"
			var recs []record.Record
			for n := 1 + r.Intn(4); n > 0; n-- {
				body := make([]byte, 8+r.Intn(300))
				for i := range body {
					body[i] = byte(r.Intn(256))
				}
				recs = append(recs, record.Record{Epoch: epoch, Offset: end, Kind: record.KindPublish, Body: body})
				end++
			}
			if log.Append(recs) != nil {
				end -= uint64(len(recs)) // damaged, not yet discarded
			}
			reread = false
		case k < 12:
			what = "sync"
			log.Sync()
			inc.Resume(d)
			full.Resume(d)
			reread = false
		case k == 12:
			what = "truncate"
			if end > 0 {
				to := uint64(r.Int63n(int64(end)))
				if log.TruncateFrom(to) == nil {
					end = to
					epoch++
					inc.Cut(to)
					full.Cut(to)
				}
			}
		case k == 13 || k == 14:
			what = "crash"
			if r.Intn(3) == 0 {
				fs.CrashTearSynced(r)
			} else {
				fs.Crash(r)
			}
			inc.Reparse(d)
			full.Reparse(d)
			if s := compareDiskLogs(inc, full); s != "" {
				return fmt.Sprintf("step %d (%s): %s", step, what, s), inc.skipped
			}
			what = "recovery"
			open()
		case k == 15:
			what = "corrupt"
			if names, err := fs.DurableList(dir); err == nil && len(names) > 0 {
				name := dir + "/" + names[r.Intn(len(names))]
				if sz, err := fs.DurableSize(name); err == nil && sz > 0 {
					fs.CorruptMask(name, r.Int63n(sz), byte(1+r.Intn(255)))
					if b, ok := d.(*blindDisk); ok {
						b.hide = fs.DurableStamp() // the planted bug
					}
				}
			}
		case k == 16:
			what = "lost-write"
			if names, err := fs.DurableList(dir); err == nil && len(names) > 0 {
				fs.LoseSyncedWrite(dir+"/"+names[r.Intn(len(names))], r)
			}
		case k == 17:
			what = "unreadable"
			if names, err := fs.DurableList(dir); err == nil && len(names) > 0 {
				name := dir + "/" + names[r.Intn(len(names))]
				if sz, err := fs.DurableSize(name); err == nil && sz > 0 {
					fs.SetUnreadable(name, r.Int63n(sz), 1+r.Int63n(64))
				}
			}
		default:
			what = "reread" // nothing changed
		}
		if reread {
			inc.Reparse(d)
			full.Reparse(d)
		}
		if s := compareDiskLogs(inc, full); s != "" {
			return fmt.Sprintf("step %d (%s): %s", step, what, s), inc.skipped
		}
	}
	return "", inc.skipped
}

// Reading a disk again through its change log must give what reading
// everything gives, whatever happened to the disk.
func TestIncrementalRereadIsFull(t *testing.T) {
	seeds := uint64(300)
	if testing.Short() {
		seeds = 60
	}
	skipped := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		s, n := rereadRun(seed, func(fs *memfs.FS) Disk { return fs })
		if s != "" {
			t.Fatalf("seed %d: %s", seed, s)
		}
		skipped += n
	}
	// And the incremental reading did skip what had not changed.
	t.Logf("%d frames not read again", skipped)
	if skipped < 1000 {
		t.Fatalf("only %d frames were not read again", skipped)
	}
}

// blindDisk is a memfs disk whose change log misses bit flips: the
// planted bug. It never reports a change stamped at or before the last
// flip rereadRun made (hide), so that flip, and what came before it, go
// unreported.
type blindDisk struct {
	*memfs.FS
	hide uint64
}

func (d *blindDisk) DurableChanges(name string, since uint64, f func(lo, hi int64)) (uint64, error) {
	return d.FS.DurableChanges(name, max(since, d.hide), f)
}

// The comparison has teeth: with a change log that misses the bit flips,
// some run's incremental reading differs from the full one, so
// TestIncrementalRereadIsFull would catch a change log that misses a
// change.
func TestIncrementalRereadMissesWhatTheChangeLogMisses(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		if s, _ := rereadRun(seed, func(fs *memfs.FS) Disk { return &blindDisk{FS: fs} }); s != "" {
			t.Logf("caught at seed %d: %s", seed, s)
			return
		}
	}
	t.Fatal("a change log blind to bit flips went unnoticed in 300 runs")
}
