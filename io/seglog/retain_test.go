package seglog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

var retainOpts = Options{SegmentBytesMax: 2048, SlotsPerSegment: 16}

// segmentedLog writes 60 records in three epochs over several segments,
// synced.
func segmentedLog(t *testing.T, fs *memfs.FS) (*Log, []record.Record) {
	t.Helper()
	l, _ := open(t, fs, retainOpts)
	var want []record.Record
	for e := uint64(1); e <= 3; e++ {
		want = append(want, appendN(t, l, e, 20, 40)...)
	}
	must(t, l.Sync())
	if len(l.segs) < 4 {
		t.Fatalf("only %d segments", len(l.segs))
	}
	return l, want
}

func segmentFiles(t *testing.T, fs *memfs.FS) []string {
	t.Helper()
	names, err := fs.List("q/log")
	must(t, err)
	return slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, ".seg") })
}

func TestRetainDeletesWholeSegmentsDurably(t *testing.T) {
	fs := memfs.New()
	l, want := segmentedLog(t, fs)
	epochs := l.Epochs()
	segsBefore := len(segmentFiles(t, fs))

	// Within the first segment: nothing whole lies below.
	if s, err := l.Retain(3); err != nil || s != 0 {
		t.Fatalf("retain within the first segment: %d, %v", s, err)
	}
	start, err := l.Retain(33)
	must(t, err)
	if start == 0 || start > 33 || start != l.Start() {
		t.Fatalf("retain to 33: start %d, log start %d", start, l.Start())
	}
	if n := len(segmentFiles(t, fs)); n >= segsBefore {
		t.Fatalf("%d segment files after retention, %d before", n, segsBefore)
	}
	if _, err := l.Read(start-1, 1, 1<<20); !errors.Is(err, ErrRange) {
		t.Fatalf("a read below the start: %v", err)
	}
	if err := l.TruncateFrom(start - 1); !errors.Is(err, ErrRange) {
		t.Fatalf("a truncation below the start: %v", err)
	}
	sameRecords(t, readAll(t, l), want[start:])
	if !slices.Equal(l.Epochs(), epochs) {
		t.Fatalf("history %v after retention, %v before", l.Epochs(), epochs)
	}
	// Lower than the start: nothing.
	if s, err := l.Retain(2); err != nil || s != start {
		t.Fatalf("retain below the start: %d, %v", s, err)
	}
	// Past the end: a reset's business.
	if _, err := l.Retain(61); !errors.Is(err, ErrRange) {
		t.Fatalf("retain past the end: %v", err)
	}

	// Durable: a crash keeps the start, the records and the history
	// (the entries below the start come from START).
	fs.CrashClean()
	l, r := open(t, fs, retainOpts)
	if r.Start != start || r.End != 60 || r.Damage != nil || !slices.Equal(r.Epochs, epochs) {
		t.Fatalf("reopened: [%d, %d) epochs %v damage %v; want start %d epochs %v", r.Start, r.End, r.Epochs, r.Damage, start, epochs)
	}
	sameRecords(t, readAll(t, l), want[start:])
	// Appends and truncations go on as before.
	more := appendN(t, l, 4, 5, 40)
	must(t, l.Sync())
	must(t, l.TruncateFrom(start))
	if l.End() != start {
		t.Fatalf("truncated to the start: end %d", l.End())
	}
	_ = more
}

// An interrupted retention: START is durable and any prefix of the
// removals took effect. Open removes what lies below the start.
func TestRetainInterruptedByCrash(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		fs := memfs.New()
		l, want := segmentedLog(t, fs)
		epochs := l.Epochs()
		i := l.findSeg(45)
		start := l.segs[i].base
		must(t, l.writeStart(start, l.epochsBelow(start)))
		for j := 0; j < i; j++ {
			must(t, fs.Remove("q/log/"+l.segs[j].name)) // not synced
		}
		fs.Crash(prng.New(seed))
		l, r := open(t, fs, retainOpts)
		if r.Start != start || r.End != 60 || r.Damage != nil || !slices.Equal(r.Epochs, epochs) {
			t.Fatalf("seed %d: reopened [%d, %d) epochs %v damage %v, want start %d", seed, r.Start, r.End, r.Epochs, r.Damage, start)
		}
		sameRecords(t, readAll(t, l), want[start:])
		for _, n := range segmentFiles(t, fs) {
			if base, _, _ := parseSegName(n); base < start {
				t.Fatalf("seed %d: segment %s below the start %d left", seed, n, start)
			}
		}
	}
}

// A reset past the end (a reseed): the log is empty at the new start with
// the given history, durably, even when interrupted.
func TestRetainResetBeyondEnd(t *testing.T) {
	fs := memfs.New()
	l, _ := segmentedLog(t, fs)
	below := []EpochStart{{Epoch: 2, Offset: 0}, {Epoch: 5, Offset: 70}}
	if err := l.Reset(100, []EpochStart{{Epoch: 5, Offset: 100}}); err == nil {
		t.Fatal("a history entry at the start accepted")
	}
	if err := l.Reset(100, []EpochStart{{Epoch: 5, Offset: 0}, {Epoch: 2, Offset: 70}}); err == nil {
		t.Fatal("a history out of order accepted")
	}
	must(t, l.Reset(100, below))
	if l.Start() != 100 || l.End() != 100 || !slices.Equal(l.Epochs(), below) {
		t.Fatalf("reset: [%d, %d) epochs %v", l.Start(), l.End(), l.Epochs())
	}
	if n := len(segmentFiles(t, fs)); n != 1 {
		t.Fatalf("%d segment files after a reset", n)
	}
	if err := l.Append([]record.Record{rec(4, 100, 10)}); err == nil {
		t.Fatal("an append below the history's last epoch accepted")
	}
	recs := appendN(t, l, 6, 3, 10)
	must(t, l.Sync())
	fs.CrashClean()
	l, r := open(t, fs, retainOpts)
	if r.Start != 100 || r.End != 103 || len(r.Epochs) != 3 || r.Epochs[2] != (EpochStart{Epoch: 6, Offset: 100}) {
		t.Fatalf("reopened after a reset: [%d, %d) epochs %v", r.Start, r.End, r.Epochs)
	}
	sameRecords(t, readAll(t, l), recs)

	// Below the log's own start too.
	must(t, l.Reset(50, below[:1]))
	must(t, l.Close())
	fs.CrashClean()
	if _, r = open(t, fs, retainOpts); r.Start != 50 || r.End != 50 || len(r.Epochs) != 1 {
		t.Fatalf("reset below the start: [%d, %d) epochs %v", r.Start, r.End, r.Epochs)
	}

	// Interrupted: after the records went and START was written, before
	// the first segment was made; or after some of the removals only (a
	// shorter log from the old start: a truncation's crash).
	fs = memfs.New()
	l, _ = segmentedLog(t, fs)
	must(t, l.writeStart(200, below))
	fs.CrashClean()
	l, r = open(t, fs, retainOpts)
	if r.Start != 200 || r.End != 200 || !slices.Equal(r.Epochs, below) || len(segmentFiles(t, fs)) != 1 {
		t.Fatalf("an interrupted reset: [%d, %d) epochs %v files %v", r.Start, r.End, r.Epochs, segmentFiles(t, fs))
	}
	appendN(t, l, 6, 2, 10)
	must(t, l.Sync())
	for seed := uint64(1); seed <= 20; seed++ {
		fs = memfs.New()
		l, want := segmentedLog(t, fs)
		for j := len(l.segs) - 1; j >= 2; j-- {
			must(t, fs.Remove("q/log/"+l.segs[j].name)) // not synced
		}
		fs.Crash(prng.New(seed))
		l, r = open(t, fs, retainOpts)
		if r.Start != 0 || r.Damage != nil || r.End < l.segs[0].end {
			t.Fatalf("seed %d: a reset interrupted in its removals: [%d, %d) damage %v", seed, r.Start, r.End, r.Damage)
		}
		sameRecords(t, readAll(t, l), want[:r.End])
	}
}

// A START that does not check, or segments that do not begin at it,
// fail Open: the log is not opened on a guess.
func TestStartDamageFailsOpen(t *testing.T) {
	fs := memfs.New()
	l, _ := segmentedLog(t, fs)
	start, err := l.Retain(45)
	must(t, err)
	must(t, l.Close())
	f, err := fs.Open("q/log/" + startName)
	must(t, err)
	b := make([]byte, 12)
	_, err = f.ReadAt(b, 0)
	must(t, err)
	b[11] ^= 1 // a byte of the start offset
	_, err = f.WriteAt(b, 0)
	must(t, err)
	must(t, f.Sync())
	if _, _, err := Open(fs, "q/log", retainOpts); !errors.Is(err, ErrStart) {
		t.Fatalf("a damaged START opened: %v", err)
	}
	b[11] ^= 1
	_, err = f.WriteAt(b, 0)
	must(t, err)
	must(t, f.Sync())
	if _, r, err := Open(fs, "q/log", retainOpts); err != nil || r.Start != start {
		t.Fatalf("the mended START: %+v, %v", r, err)
	}
	// The first segment at the start gone: a hole below the records.
	must(t, fs.Remove("q/log/"+segName(start)))
	must(t, fs.SyncDir("q/log"))
	if _, _, err := Open(fs, "q/log", retainOpts); !errors.Is(err, ErrStart) {
		t.Fatalf("a log whose first segment is past its start opened: %v", err)
	}
}
