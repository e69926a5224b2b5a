package seglog

// Tests of format v2's header copies: every damage the scan must report, a
// lost synced write (reverted to zeros or to the old contents) reported as
// damage and never as a clean end, unreadable ranges, and the zeroing of
// stale copies by TruncateFrom and DiscardDamage.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

const logDir = "q/log"

// writeRec is one WriteAt the log made: where, what, and what it overwrote.
type writeRec struct {
	name      string
	off       int64
	data, old []byte
}

// recFS is a memfs that records the writes made through it.
type recFS struct {
	*memfs.FS
	writes []writeRec
}

func (r *recFS) Create(name string) (vfs.File, error) {
	f, err := r.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return recFile{File: f, fs: r, name: name}, nil
}

func (r *recFS) Open(name string) (vfs.File, error) {
	f, err := r.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return recFile{File: f, fs: r, name: name}, nil
}

type recFile struct {
	vfs.File
	fs   *recFS
	name string
}

func (f recFile) WriteAt(p []byte, off int64) (int, error) {
	old := make([]byte, len(p)) // zeros past the end of the file
	f.File.ReadAt(old, off)
	n, err := f.File.WriteAt(p, off)
	if err == nil {
		f.fs.writes = append(f.fs.writes, writeRec{name: f.name, off: off, data: append([]byte(nil), p...), old: old})
	}
	return n, err
}

// revert makes the media forget write w: its bytes read as zeros, or as
// what they were before it, durably (the size stays).
func revert(t *testing.T, fs *memfs.FS, w writeRec, zeros bool) {
	t.Helper()
	p := w.old
	if zeros {
		p = make([]byte, len(w.data))
	}
	f, err := fs.Open(w.name)
	must(t, err)
	_, err = f.WriteAt(p, w.off)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

// isSlotWrite tells a write of header copies (or a segment header) from a
// write of frames, in a log whose segments have slots slots.
func isSlotWrite(w writeRec, slots int) bool { return w.off < framesStart(slots) }

// firstOffset returns the offset of the first frame a frames write holds.
func firstOffset(w writeRec) uint64 { return binary.LittleEndian.Uint64(w.data[16:24]) }

func expectDamage(t *testing.T, fs vfs.FS, opts Options, wantOffset uint64, wantReason string) Recovery {
	t.Helper()
	l, r, err := Open(fs, logDir, opts)
	must(t, err)
	d := r.Damage
	if d == nil {
		t.Fatalf("no damage reported: recovered [%d, %d)", r.Start, r.End)
	}
	if d.Offset != wantOffset || r.End != wantOffset || !strings.Contains(d.Reason, wantReason) {
		t.Fatalf("damage %v (End %d), want offset %d: %q", d, r.End, wantOffset, wantReason)
	}
	must(t, l.Close())
	return r
}

// TestLostSyncedWriteIsDamage takes a synced log and makes the media lose
// one acknowledged write (reverted to zeros or to its old contents): the
// scan must report damage at the first record the write held, never a
// clean end.
func TestLostSyncedWriteIsDamage(t *testing.T) {
	opts := Options{SlotsPerSegment: 8, SegmentBytesMax: 4096}
	// build makes commits of 3 records of 150 bytes (a roll every 8
	// records) and returns the writes of each commit.
	build := func(t *testing.T, commits int) (*recFS, [][]writeRec) {
		fs := &recFS{FS: memfs.New()}
		l, _, err := Open(fs, logDir, opts)
		must(t, err)
		var per [][]writeRec
		for c := 0; c < commits; c++ {
			n := len(fs.writes)
			appendN(t, l, 1, 3, 150)
			must(t, l.Sync())
			per = append(per, fs.writes[n:])
		}
		return fs, per
	}
	for _, zeros := range []bool{true, false} {
		shape := map[bool]string{true: "zeros", false: "old"}[zeros]
		t.Run("last-frames/"+shape, func(t *testing.T) {
			fs, per := build(t, 2)
			last := per[1]
			if len(last) != 2 || isSlotWrite(last[0], 8) || !isSlotWrite(last[1], 8) {
				t.Fatalf("last commit's writes: %d, want frames then copies", len(last))
			}
			revert(t, fs.FS, last[0], zeros)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 3, "frame lost: header copy names offset 3")
		})
		t.Run("last-copies/"+shape, func(t *testing.T) {
			fs, per := build(t, 2)
			revert(t, fs.FS, per[1][1], zeros)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 3, "header copy missing for offset 3")
		})
		t.Run("middle-frames/"+shape, func(t *testing.T) {
			fs, per := build(t, 2)
			revert(t, fs.FS, per[0][0], zeros)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 0, "")
		})
		t.Run("middle-copies/"+shape, func(t *testing.T) {
			fs, per := build(t, 2)
			if !isSlotWrite(per[0][1], 8) {
				t.Fatalf("first commit's second write at %d", per[0][1].off)
			}
			revert(t, fs.FS, per[0][1], zeros)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 0, "header copy missing for offset 0")
		})
		t.Run("roll-new-segment-header/"+shape, func(t *testing.T) {
			fs, per := build(t, 3) // records 0..8: the 3rd commit rolls at 8
			var hw *writeRec
			for i, w := range per[2] {
				if w.off == 0 {
					hw = &per[2][i]
				}
			}
			if hw == nil || hw.name != logDir+"/"+segName(8) {
				t.Fatalf("no header write of the new segment in %v", per[2])
			}
			revert(t, fs.FS, *hw, zeros)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 8, "bad segment magic")
		})
		t.Run("roll-old-segment-frames/"+shape, func(t *testing.T) {
			fs, per := build(t, 3) // the 3rd commit ends segment 0 (records 6, 7)
			w := per[2][0]
			if w.name != logDir+"/"+segName(0) || isSlotWrite(w, 8) {
				t.Fatalf("3rd commit's first write %s at %d", w.name, w.off)
			}
			revert(t, fs.FS, w, zeros)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 6, "frame lost: header copy names offset 6")
		})
	}

	// Old contents that are not zeros: records 3.. of epoch 1 are cut and
	// rewritten in epoch 2; the media then loses the rewrite (and the cut),
	// so the epoch-1 frames (or copies) are back under epoch-2 copies (or
	// frames). v1 would have read the removed epoch-1 records as valid.
	for _, what := range []string{"frames", "copies"} {
		t.Run("rewrite-reverted-to-removed-records/"+what, func(t *testing.T) {
			fs := &recFS{FS: memfs.New()}
			l, _, err := Open(fs, logDir, opts)
			must(t, err)
			appendN(t, l, 1, 6, 150)
			must(t, l.Sync())
			before, err := fs.DurableBytes(logDir + "/" + segName(0))
			must(t, err)
			must(t, l.TruncateFrom(3))
			n := len(fs.writes)
			appendN(t, l, 2, 3, 150)
			must(t, l.Sync())
			rewrite := fs.writes[n:]
			if len(rewrite) != 2 {
				t.Fatalf("rewrite made %d writes", len(rewrite))
			}
			w := rewrite[0]
			if what == "copies" {
				w = rewrite[1]
			}
			w.old = before[w.off : w.off+int64(len(w.data))] // the epoch-1 bytes
			revert(t, fs.FS, w, false)
			fs.CrashClean()
			expectDamage(t, fs.FS, opts, 3, "header copy disagrees with frame at offset 3")
		})
	}
}

// TestCrashOfUnsyncedAppendsKeepsSyncedRecords: a power loss that loses,
// keeps or tears unsynced frames and copies independently may report
// damage where v1 saw a clean end, but never loses a synced record, and a
// clean crash recovers exactly the synced records with no damage.
func TestCrashOfUnsyncedAppendsKeepsSyncedRecords(t *testing.T) {
	seeds := []uint64{1, 2, 3, 0x5eed, 1796048849662106980}
	if s := os.Getenv("SLUICE_SEGLOG_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		must(t, err)
		seeds = []uint64{v}
	}
	for _, seed := range seeds {
		t.Logf("seed %d (rerun: SLUICE_SEGLOG_SEED=%d go test ./io/seglog -run %s)", seed, seed, t.Name())
		r := prng.New(seed)
		damaged := 0
		for round := 0; round < 60; round++ {
			fs := memfs.New()
			opts := Options{SlotsPerSegment: 1 + r.Intn(12), SegmentBytesMax: 2048 + int64(r.Intn(8192)), WriteBufferBytes: 600 + r.Intn(4000)}
			opts.ExtendBytes = []int64{0, 300, 4096}[r.Intn(3)] // zeros ahead of the frames, or none
			l, _, err := Open(fs, logDir, opts)
			must(t, err)
			var want []record.Record
			for c := 0; c < 1+r.Intn(6); c++ {
				want = append(want, appendN(t, l, 1, 1+r.Intn(5), r.Intn(900))...)
				must(t, l.Sync())
			}
			synced := len(want)
			want = append(want, appendN(t, l, 2, 1+r.Intn(12), r.Intn(900))...)
			clean := round%4 == 0
			if clean {
				fs.CrashClean()
			} else {
				fs.Crash(r)
			}
			l, rec, err := Open(fs, logDir, opts)
			if err != nil {
				t.Fatalf("seed %d round %d: Open: %v", seed, round, err)
			}
			if rec.End < uint64(synced) || rec.End > uint64(len(want)) {
				t.Fatalf("seed %d round %d: recovered End %d, synced %d, appended %d (damage %v)", seed, round, rec.End, synced, len(want), rec.Damage)
			}
			if clean && (rec.End != uint64(synced) || rec.Damage != nil) {
				t.Fatalf("seed %d round %d: clean crash recovered End %d (synced %d), damage %v", seed, round, rec.End, synced, rec.Damage)
			}
			sameRecords(t, readAll(t, l), want[:rec.End])
			if rec.Damage != nil {
				damaged++
				if rec.Damage.Offset != rec.End {
					t.Fatalf("seed %d round %d: damage %v, End %d", seed, round, rec.Damage, rec.End)
				}
				must(t, l.DiscardDamage())
				must(t, l.Close())
				// After the discard the log is clean, also after a crash.
				fs.CrashClean()
				l, rec2, err := Open(fs, logDir, opts)
				must(t, err)
				if rec2.Damage != nil || rec2.End != rec.End {
					t.Fatalf("seed %d round %d: after discard %+v", seed, round, rec2)
				}
				l.Close()
			}
		}
		if damaged == 0 {
			t.Fatalf("seed %d: no crash left damage; the test proves little", seed)
		}
	}
}

// plantedLog returns a synced log of n records (bodies of 100 bytes, epoch
// 1) in one segment with slots slots, closed.
func plantedLog(t *testing.T, slots, n int) (*memfs.FS, Options) {
	t.Helper()
	fs := memfs.New()
	opts := Options{SlotsPerSegment: slots}
	l, _ := open(t, fs, opts)
	appendN(t, l, 1, n, 100)
	must(t, l.Sync())
	must(t, l.Close())
	return fs, opts
}

// overwrite writes p at off of the first segment, durably.
func overwrite(t *testing.T, fs *memfs.FS, off int64, p []byte) {
	t.Helper()
	f, err := fs.Open(logDir + "/" + segName(0))
	must(t, err)
	_, err = f.WriteAt(p, off)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

func fpos(slots int, off uint64) int64 {
	return framesStart(slots) + int64(off)*int64(frameBytes(100))
}

// TestPlantedHeaderCopyDamage plants each kind of damage the scan must
// name, checks the report, discards it, and checks that the log is then
// clean and usable, with no stale copy left.
func TestPlantedHeaderCopyDamage(t *testing.T) {
	const slots, n = 16, 6
	goodSlot := func(fs *memfs.FS, off uint64) []byte {
		b, _ := fs.DurableBytes(logDir + "/" + segName(0))
		return append([]byte(nil), b[slotPos(int(off)):slotPos(int(off))+slotBytes]...)
	}
	cases := []struct {
		name   string
		plant  func(t *testing.T, fs *memfs.FS)
		offset uint64
		reason string
	}{
		{"frame lost", func(t *testing.T, fs *memfs.FS) {
			overwrite(t, fs, fpos(slots, 5), make([]byte, frameBytes(100)))
		}, 5, "frame lost: header copy names offset 5"},
		{"copy missing", func(t *testing.T, fs *memfs.FS) {
			overwrite(t, fs, slotPos(4), make([]byte, slotBytes))
		}, 4, "header copy missing for offset 4"},
		{"copy disagrees", func(t *testing.T, fs *memfs.FS) {
			s := goodSlot(fs, 3)
			s[8]++ // epoch 2
			binary.LittleEndian.PutUint32(s[28:], crc32.Checksum(s[:28], castagnoli))
			overwrite(t, fs, slotPos(3), s)
		}, 3, "header copy disagrees with frame at offset 3"},
		{"copy corrupt", func(t *testing.T, fs *memfs.FS) {
			must(t, fs.Corrupt(logDir+"/"+segName(0), slotPos(2)+9))
		}, 2, "header copy corrupt at slot 2"},
		{"copy corrupt after the last frame", func(t *testing.T, fs *memfs.FS) {
			overwrite(t, fs, slotPos(n), []byte{1})
		}, n, "header copy corrupt at slot 6"},
		{"stray copy", func(t *testing.T, fs *memfs.FS) {
			s := goodSlot(fs, 1)
			overwrite(t, fs, slotPos(11), s)
		}, n, "stray header copy at slot 11 beyond the last frame"},
		{"frame crc", func(t *testing.T, fs *memfs.FS) {
			must(t, fs.Corrupt(logDir+"/"+segName(0), fpos(slots, 1)+40))
		}, 1, "crc mismatch"},
		{"segment version 1", func(t *testing.T, fs *memfs.FS) {
			var h [segHeaderBytes]byte
			copy(h[:], segMagic)
			binary.LittleEndian.PutUint32(h[8:], 1)
			binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
			overwrite(t, fs, 0, h[:])
		}, 0, "unsupported segment version 1"},
		{"segment slots 0", func(t *testing.T, fs *memfs.FS) {
			var h [segHeaderBytes]byte
			putSegHeader(h[:], 0, 1)
			binary.LittleEndian.PutUint32(h[12:], 0)
			binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
			overwrite(t, fs, 0, h[:])
		}, 0, "segment header slots 0 out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, opts := plantedLog(t, slots, n)
			c.plant(t, fs)
			expectDamage(t, fs, opts, c.offset, c.reason)
			l, _, err := Open(fs, logDir, opts)
			must(t, err)
			must(t, l.DiscardDamage())
			fs.CrashClean() // DiscardDamage is durable when it returns
			l, r := open(t, fs, opts)
			if r.Damage != nil || r.End != c.offset {
				t.Fatalf("after discard: %+v damage %v", r, r.Damage)
			}
			b, err := fs.DurableBytes(logDir + "/" + segName(0))
			must(t, err)
			for i := int(c.offset); i < slots && slotPos(i+1) <= int64(len(b)); i++ {
				if s := b[slotPos(i):slotPos(i+1)]; !slotZero(s) {
					t.Fatalf("slot %d not zeroed by the discard: %x", i, s)
				}
			}
			appendN(t, l, 2, 3, 100)
			must(t, l.Sync())
			fs.CrashClean()
			_, r = open(t, fs, opts)
			if r.Damage != nil || r.End != c.offset+3 {
				t.Fatalf("after appending again: %+v damage %v", r, r.Damage)
			}
		})
	}
}

// TestFullSegmentFollowedByFrame: a segment holding slots frames closes;
// a frame after them is damage.
func TestFullSegmentFollowedByFrame(t *testing.T) {
	fs, opts := plantedLog(t, 4, 6) // segments [0,4) and [4,6)
	f, err := fs.Open(logDir + "/" + segName(0))
	must(t, err)
	size, err := f.Size()
	must(t, err)
	must(t, f.Close())
	if size != fpos(4, 4) {
		t.Fatalf("first segment is %d bytes, want 4 frames (%d)", size, fpos(4, 4))
	}
	overwrite(t, fs, size, []byte("more"))
	expectDamage(t, fs, opts, 4, "frame beyond the segment's 4 header-copy slots")
}

// TestTruncateZeroesCopies: TruncateFrom leaves no copy of a removed frame;
// one interrupted between the truncation and the zeroing (a kill: the page
// cache keeps the truncation) leaves damage, never records.
func TestTruncateZeroesCopies(t *testing.T) {
	fs, opts := plantedLog(t, 16, 10)
	l, _ := open(t, fs, opts)
	must(t, l.TruncateFrom(4))
	b, err := fs.DurableBytes(logDir + "/" + segName(0))
	must(t, err)
	for i := 4; i < 16; i++ {
		if !slotZero(b[slotPos(i) : slotPos(i)+slotBytes]) {
			t.Fatalf("slot %d of a removed frame survives the truncation", i)
		}
	}
	// The interrupted truncation: the zeroing write fails.
	fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error {
		if a.Op == memfs.OpWrite && a.Off < framesStart(16) {
			return fmt.Errorf("injected: %w", vfs.ErrIO)
		}
		return nil
	}))
	if err := l.TruncateFrom(2); !errors.Is(err, ErrFailed) {
		t.Fatalf("TruncateFrom with a failing zeroing write: %v", err)
	}
	fs.SetInjector(nil)
	expectDamage(t, fs, opts, 2, "frame lost: header copy names offset 2")
}

// unreadableFrom makes every read of the first segment that overlaps
// [lo, hi) fail with vfs.ErrIO.
func unreadableFrom(fs *memfs.FS, lo, hi int64) {
	fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error {
		if a.Op == memfs.OpRead && strings.HasSuffix(a.Name, segName(0)) && a.Off < hi && a.Off+int64(a.Len) > lo {
			return fmt.Errorf("injected: %w", vfs.ErrIO)
		}
		return nil
	}))
}

// TestUnreadableRangeIsDamage: a read error while scanning is damage at the
// frame (or slot) it covers, not an Open failure, and a read ahead that
// fails does not move the damage to an earlier frame.
func TestUnreadableRangeIsDamage(t *testing.T) {
	const slots, n = 16, 10
	t.Run("frame", func(t *testing.T) {
		fs, opts := plantedLog(t, slots, n)
		unreadableFrom(fs, fpos(slots, 7)+30, fpos(slots, 7)+31)
		r := expectDamage(t, fs, opts, 7, "unreadable: frame at byte")
		if r.Damage.Pos != fpos(slots, 7) {
			t.Fatalf("damage at byte %d, want %d", r.Damage.Pos, fpos(slots, 7))
		}
		l, _, err := Open(fs, logDir, opts)
		must(t, err)
		must(t, l.DiscardDamage())
		fs.SetInjector(nil)
		l.Close()
		_, r = open(t, fs, opts)
		if r.Damage != nil || r.End != 7 {
			t.Fatalf("after discard: %+v", r)
		}
	})
	t.Run("copy", func(t *testing.T) {
		fs, opts := plantedLog(t, slots, n)
		unreadableFrom(fs, slotPos(5)+3, slotPos(5)+4)
		expectDamage(t, fs, opts, 5, "unreadable: header copy at slot 5")
	})
	t.Run("header", func(t *testing.T) {
		fs, opts := plantedLog(t, slots, n)
		unreadableFrom(fs, 8, 9)
		expectDamage(t, fs, opts, 0, "unreadable: segment header")
	})
	t.Run("list fails Open", func(t *testing.T) {
		fs, opts := plantedLog(t, slots, n)
		fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error {
			if a.Op == memfs.OpList {
				return fmt.Errorf("injected: %w", vfs.ErrIO)
			}
			return nil
		}))
		if _, _, err := Open(fs, logDir, opts); !errors.Is(err, vfs.ErrIO) {
			t.Fatalf("Open with a failing List: %v", err)
		}
	})
}

// TestSlotsOption: a segment closes at SlotsPerSegment frames; Open refuses
// more slots than the format holds; a reopened log keeps each segment's own
// slot count from its header.
func TestSlotsOption(t *testing.T) {
	if _, _, err := Open(memfs.New(), logDir, Options{SlotsPerSegment: SlotsPerSegmentMax + 1}); err == nil {
		t.Fatal("Open accepted too many slots")
	}
	fs := memfs.New()
	l, _ := open(t, fs, Options{SlotsPerSegment: 3})
	want := appendN(t, l, 1, 7, 10)
	must(t, l.Sync())
	must(t, l.Close())
	names, err := fs.List(logDir)
	must(t, err)
	if fmt.Sprint(names) != fmt.Sprint([]string{segName(0), segName(3), segName(6)}) {
		t.Fatalf("segments %v", names)
	}
	// Reopened with other options: the active segment keeps 3 slots.
	l, r := open(t, fs, Options{SlotsPerSegment: 5})
	if r.Damage != nil {
		t.Fatal(r.Damage)
	}
	want = append(want, appendN(t, l, 1, 8, 10)...)
	must(t, l.Sync())
	names, _ = fs.List(logDir)
	if fmt.Sprint(names) != fmt.Sprint([]string{segName(0), segName(3), segName(6), segName(9), segName(14)}) {
		t.Fatalf("segments %v", names)
	}
	sameRecords(t, readAll(t, l), want)
}

// TestMemfsLostSyncedWriteIsDamage: whatever write of the last synced batch
// of a segment file memfs makes the media lose (LoseSyncedWrite, to zeros
// or to the old contents), the next Open reports damage, never a clean
// end, and never serves a record that was not appended.
func TestMemfsLostSyncedWriteIsDamage(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	lost := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := prng.New(seed)
		fs := memfs.New()
		opts := Options{SlotsPerSegment: 1 + r.Intn(10), SegmentBytesMax: 1024 + int64(r.Intn(6000))}
		opts.ExtendBytes = []int64{0, 300, 4096}[r.Intn(3)] // zeros ahead of the frames, or none
		l, _, err := Open(fs, logDir, opts)
		must(t, err)
		var want []record.Record
		for c := 0; c < 1+r.Intn(12); c++ {
			want = append(want, appendN(t, l, 1, 1+r.Intn(4), r.Intn(700))...)
			if r.Intn(5) == 0 && len(want) > 0 {
				from := uint64(r.Intn(len(want)))
				must(t, l.TruncateFrom(from))
				want = want[:from]
			}
			must(t, l.Sync())
		}
		names, err := fs.List(logDir)
		must(t, err)
		ok := false
		for i := len(names) - 1; i >= 0 && !ok; i-- {
			if strings.HasSuffix(names[i], ".seg") {
				name := logDir + "/" + names[i]
				before, err := fs.DurableBytes(name)
				must(t, err)
				_, _, ok = fs.LoseSyncedWrite(name, r)
				if after, _ := fs.DurableBytes(name); ok && bytes.Equal(before, after) {
					// A write of zeros (TruncateFrom's zeroing of
					// copies) lost as zeros: nothing was lost.
					ok = false
					break
				}
			}
		}
		if !ok {
			continue
		}
		lost++
		fs.CrashClean()
		l, rec, err := Open(fs, logDir, opts)
		if err != nil {
			t.Fatalf("seed %d: Open: %v", seed, err)
		}
		if rec.Damage == nil {
			t.Fatalf("seed %d: a lost synced write left a clean log of %d records (%d synced)", seed, rec.End, len(want))
		}
		if rec.End > uint64(len(want)) || rec.Damage.Offset != rec.End {
			t.Fatalf("seed %d: End %d of %d, damage %v", seed, rec.End, len(want), rec.Damage)
		}
		sameRecords(t, readAll(t, l), want[:rec.End])
	}
	if lost < seeds/2 {
		t.Fatalf("only %d of %d seeds lost a write", lost, seeds)
	}
}
