package seglog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// body returns a deterministic body of n bytes for offset off.
func body(off uint64, n int) []byte {
	b := make([]byte, n)
	x := off*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func rec(epoch, off uint64, n int) record.Record {
	return record.Record{Epoch: epoch, Offset: off, Kind: record.KindPublish, Body: body(off, n)}
}

func open(t testing.TB, fs vfs.FS, opts Options) (*Log, Recovery) {
	t.Helper()
	l, r, err := Open(fs, "q/log", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func appendN(t testing.TB, l *Log, epoch uint64, n, bodyLen int) []record.Record {
	t.Helper()
	var recs []record.Record
	for i := 0; i < n; i++ {
		recs = append(recs, rec(epoch, l.End()+uint64(i), bodyLen))
	}
	must(t, l.Append(recs))
	return recs
}

func readAll(t testing.TB, l *Log) []record.Record {
	t.Helper()
	var out []record.Record
	for off := l.Start(); off < l.End(); {
		rs, err := l.Read(off, 7, 10000)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(rs) == 0 {
			t.Fatalf("Read(%d) returned nothing below End %d", off, l.End())
		}
		out = append(out, rs...)
		off += uint64(len(rs))
	}
	return out
}

func sameRecords(t testing.TB, got, want []record.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Epoch != w.Epoch || g.Offset != w.Offset || g.Kind != w.Kind || !bytes.Equal(g.Body, w.Body) {
			t.Fatalf("record %d = %v, want %v", i, g, w)
		}
	}
}

func TestNewLogAppendReadReopen(t *testing.T) {
	fs := memfs.New()
	l, r := open(t, fs, Options{})
	if r.Damage != nil || r.Start != 0 || r.End != 0 {
		t.Fatalf("new log recovery %+v", r)
	}
	want := appendN(t, l, 1, 10, 100)
	want = append(want, appendN(t, l, 3, 5, 0)...)
	sameRecords(t, readAll(t, l), want) // unsynced records are readable
	must(t, l.Sync())
	must(t, l.Close())

	fs.CrashClean()
	l, r = open(t, fs, Options{})
	if r.Damage != nil || r.End != 15 {
		t.Fatalf("recovery %+v", r)
	}
	wantEpochs := []EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 3, Offset: 10}}
	if fmt.Sprint(r.Epochs) != fmt.Sprint(wantEpochs) || fmt.Sprint(l.Epochs()) != fmt.Sprint(wantEpochs) {
		t.Fatalf("epochs %v / %v, want %v", r.Epochs, l.Epochs(), wantEpochs)
	}
	sameRecords(t, readAll(t, l), want)
	if r.Bytes != int64(10*frameBytes(100)+5*frameBytes(0)) {
		t.Fatalf("recovery bytes %d", r.Bytes)
	}
}

func TestUnsyncedLostOnCleanCrash(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	want := appendN(t, l, 1, 3, 10)
	must(t, l.Sync())
	appendN(t, l, 1, 3, 10)
	fs.CrashClean()
	l, r := open(t, fs, Options{})
	if r.Damage != nil {
		t.Fatalf("damage %v", r.Damage)
	}
	sameRecords(t, readAll(t, l), want)
}

func TestAppendValidation(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 5, 2, 1)
	cases := []struct {
		r    record.Record
		want error
	}{
		{rec(5, 4, 1), ErrOffset},
		{rec(4, 3, 1), ErrEpoch},
		{record.Record{Epoch: 5, Offset: 3, Kind: 9}, ErrKind},
		{record.Record{Epoch: 5, Offset: 3, Kind: record.KindPublish, Body: make([]byte, record.BodyBytesMax+1)}, ErrTooLarge},
	}
	for _, c := range cases {
		if err := l.Append([]record.Record{rec(5, 2, 1), c.r}); !errors.Is(err, c.want) {
			t.Fatalf("Append(%v) = %v, want %v", c.r, err, c.want)
		}
	}
	if l.End() != 2 {
		t.Fatalf("a refused batch was partly appended: End %d", l.End())
	}
	// The biggest record is fine.
	must(t, l.Append([]record.Record{{Epoch: 5, Offset: 2, Kind: record.KindPublish, Body: body(2, record.BodyBytesMax)}}))
	must(t, l.Sync())
	rs, err := l.Read(2, 1, 1)
	must(t, err)
	if len(rs) != 1 || !bytes.Equal(rs[0].Body, body(2, record.BodyBytesMax)) {
		t.Fatal("big record read back wrong")
	}
}

func TestSegmentRollingAndReadsAcrossSegments(t *testing.T) {
	fs := memfs.New()
	opts := Options{SegmentBytesMax: 4096, WriteBufferBytes: 1000, IndexIntervalBytes: 512}
	l, _ := open(t, fs, opts)
	var want []record.Record
	for i := 0; i < 40; i++ {
		want = append(want, appendN(t, l, uint64(1+i/10), 3, 50+i*13)...)
		if i%7 == 0 {
			must(t, l.Sync())
		}
	}
	must(t, l.Sync())
	names, err := fs.List("q/log")
	must(t, err)
	if len(names) < 5 {
		t.Fatalf("only %d segments: %v", len(names), names)
	}
	sameRecords(t, readAll(t, l), want)
	// Reads from every offset, with tight limits.
	for off := uint64(0); off < l.End(); off++ {
		rs, err := l.Read(off, 3, 1)
		must(t, err)
		if len(rs) != 1 { // bytesMax 1: exactly one record
			t.Fatalf("Read(%d, 3, 1) = %d records", off, len(rs))
		}
		sameRecords(t, rs, want[off:off+1])
		rs, err = l.Read(off, 1000, 1<<20)
		must(t, err)
		sameRecords(t, rs, want[off:])
	}
	if rs, err := l.Read(l.End(), 1, 1); err != nil || len(rs) != 0 {
		t.Fatalf("Read(End) = %v, %v", rs, err)
	}
	if _, err := l.Read(l.End()+1, 1, 1); !errors.Is(err, ErrRange) {
		t.Fatalf("Read past End: %v", err)
	}
	must(t, l.Close())
	l, r := open(t, fs, opts)
	if r.Damage != nil {
		t.Fatal(r.Damage)
	}
	sameRecords(t, readAll(t, l), want)
	if len(r.Epochs) != 4 {
		t.Fatalf("epochs %v", r.Epochs)
	}
}

func TestTruncateAcrossSegments(t *testing.T) {
	fs := memfs.New()
	opts := Options{SegmentBytesMax: 2000}
	l, _ := open(t, fs, opts)
	want := appendN(t, l, 1, 30, 300)
	want = append(want, appendN(t, l, 2, 30, 300)...)
	must(t, l.Sync())
	for _, from := range []uint64{50, 45, 44, 20, 1} {
		must(t, l.TruncateFrom(from))
		want = want[:from]
		sameRecords(t, readAll(t, l), want)
		fs.CrashClean() // TruncateFrom is durable when it returns
		l, _ = open(t, fs, opts)
		sameRecords(t, readAll(t, l), want)
		if l.End() != from {
			t.Fatalf("End %d after truncation from %d", l.End(), from)
		}
	}
	if got := fmt.Sprint(l.Epochs()); got != "[{1 0}]" {
		t.Fatalf("epochs %s", got)
	}
	must(t, l.TruncateFrom(0))
	if l.End() != 0 || len(l.Epochs()) != 0 {
		t.Fatalf("after truncating all: End %d epochs %v", l.End(), l.Epochs())
	}
	want = appendN(t, l, 7, 3, 5)
	must(t, l.Sync())
	fs.CrashClean()
	l, _ = open(t, fs, opts)
	sameRecords(t, readAll(t, l), want)
	if err := l.TruncateFrom(4); !errors.Is(err, ErrRange) {
		t.Fatalf("TruncateFrom past End: %v", err)
	}
}

// framePos returns the position of offset off's frame in a single-segment
// log (default slots) whose records have bodies of n bytes each.
func framePos(off uint64, n int) int64 {
	return framesStart(SlotsPerSegmentDefault) + int64(off)*int64(frameBytes(n))
}

func TestCorruptDurableByteReportsDamage(t *testing.T) {
	for _, where := range []struct {
		name   string
		delta  int64
		reason string
	}{
		{"length", 0, "crc mismatch"}, // length 517 -> 519: CRC over it fails
		{"crc", 5, "crc mismatch"},
		{"epoch", 8, "crc mismatch"},
		{"body", 40, "crc mismatch"},
		{"length-high", 3, "out of bounds"},
	} {
		t.Run(where.name, func(t *testing.T) {
			fs := memfs.New()
			l, _ := open(t, fs, Options{})
			want := appendN(t, l, 1, 10, 500)
			must(t, l.Sync())
			must(t, l.Close())
			pos := framePos(6, 500)
			mask := byte(1)
			if where.name == "length" {
				mask = 2
			}
			if where.name == "length-high" {
				mask = 0x40
			}
			must(t, fs.CorruptMask("q/log/"+segName(0), pos+where.delta, mask))
			l, r := open(t, fs, Options{})
			d := r.Damage
			if d == nil || d.Offset != 6 || d.Pos != pos || d.Segment != segName(0) || !strings.Contains(d.Reason, where.reason) {
				t.Fatalf("damage %+v, want offset 6 at %d: %s", d, pos, where.reason)
			}
			if r.End != 6 || l.End() != 6 {
				t.Fatalf("End %d / %d", r.End, l.End())
			}
			sameRecords(t, readAll(t, l), want[:6])
			if err := l.Append([]record.Record{rec(1, 6, 1)}); !errors.Is(err, ErrDamaged) {
				t.Fatalf("Append on damaged log: %v", err)
			}
			if err := l.TruncateFrom(3); !errors.Is(err, ErrDamaged) {
				t.Fatalf("TruncateFrom on damaged log: %v", err)
			}
			must(t, l.DiscardDamage())
			appendN(t, l, 2, 1, 7)
			must(t, l.Sync())
			fs.CrashClean()
			l, r = open(t, fs, Options{})
			if r.Damage != nil || r.End != 7 {
				t.Fatalf("after discard: %+v", r)
			}
		})
	}
}

// writeRaw appends raw bytes to the segment file at its end, synced.
func writeRaw(t *testing.T, fs *memfs.FS, name string, p []byte) int64 {
	t.Helper()
	f, err := fs.Open(name)
	must(t, err)
	size, err := f.Size()
	must(t, err)
	_, err = f.WriteAt(p, size)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	return size
}

func TestOversizedHeaderRefused(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 1, 3, 10)
	must(t, l.Sync())
	must(t, l.Close())
	var h [frameBytesMin + 64]byte
	binary.LittleEndian.PutUint32(h[0:4], framePayloadMax+1) // one byte too long
	pos := writeRaw(t, fs, "q/log/"+segName(0), h[:])
	_, r := open(t, fs, Options{})
	if r.Damage == nil || r.Damage.Pos != pos || r.Damage.Offset != 3 || !strings.Contains(r.Damage.Reason, "out of bounds") {
		t.Fatalf("damage %+v", r.Damage)
	}
}

func TestZeroTailIsCleanEnd(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	want := appendN(t, l, 1, 3, 10)
	must(t, l.Sync())
	must(t, l.Close())
	writeRaw(t, fs, "q/log/"+segName(0), make([]byte, 10000))
	l, r := open(t, fs, Options{})
	if r.Damage != nil {
		t.Fatalf("zero tail reported as %v", r.Damage)
	}
	// Appends overwrite the zeros.
	want = append(want, appendN(t, l, 1, 2, 20)...)
	must(t, l.Sync())
	must(t, l.Close())
	l, r = open(t, fs, Options{})
	if r.Damage != nil {
		t.Fatal(r.Damage)
	}
	sameRecords(t, readAll(t, l), want)

	// A zero tail with a non-zero byte after it is damage.
	must(t, l.Close())
	writeRaw(t, fs, "q/log/"+segName(0), []byte{1})
	_, r = open(t, fs, Options{})
	if r.Damage == nil || r.Damage.Offset != 5 {
		t.Fatalf("damage %+v", r.Damage)
	}
}

func TestTornHeaderAndGapSegments(t *testing.T) {
	fs := memfs.New()
	opts := Options{SegmentBytesMax: 1000}
	l, _ := open(t, fs, opts)
	want := appendN(t, l, 1, 20, 100)
	must(t, l.Sync())
	must(t, l.Close())
	names, _ := fs.List("q/log")
	if len(names) < 3 {
		t.Fatalf("segments %v", names)
	}
	// Remove the middle segment: the next one does not continue the log.
	must(t, fs.Remove("q/log/"+names[1]))
	l, r := open(t, fs, opts)
	d := r.Damage
	if d == nil || d.Segment != names[2] || d.Pos != 0 || !strings.Contains(d.Reason, "continues at") {
		t.Fatalf("damage %+v", d)
	}
	end := r.End
	sameRecords(t, readAll(t, l), want[:end])
	must(t, l.DiscardDamage())
	if got, _ := fs.List("q/log"); len(got) != 2 || got[1] != unrepairedName {
		t.Fatalf("segments after discard: %v, want one segment and the unrepaired mark", got)
	}
	// A new segment file with a torn header.
	must(t, l.Close())
	f, err := fs.Create("q/log/" + segName(end))
	must(t, err)
	_, err = f.WriteAt([]byte("SLUIC"), 0)
	must(t, err)
	must(t, f.Sync())
	must(t, fs.SyncDir("q/log"))
	l, r = open(t, fs, opts)
	if r.Damage == nil || r.Damage.Reason != "torn segment header" || r.Damage.Offset != end {
		t.Fatalf("damage %+v", r.Damage)
	}
	must(t, l.DiscardDamage())
	appendN(t, l, 2, 30, 100)
	must(t, l.Sync())
	must(t, l.Close())
	_, r = open(t, fs, opts)
	if r.Damage != nil || r.End != end+30 {
		t.Fatalf("recovery %+v", r)
	}
}

func TestFirstSegmentHeaderDamage(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 1, 2, 1)
	must(t, l.Sync())
	must(t, l.Close())
	must(t, fs.Corrupt("q/log/"+segName(0), 3))
	l, r := open(t, fs, Options{})
	if r.Damage == nil || r.Damage.Pos != 0 || r.End != 0 || r.Damage.Reason != "bad segment magic" {
		t.Fatalf("recovery %+v damage %+v", r, r.Damage)
	}
	must(t, l.DiscardDamage())
	want := appendN(t, l, 1, 2, 1)
	must(t, l.Sync())
	fs.CrashClean()
	l, r = open(t, fs, Options{})
	if r.Damage != nil {
		t.Fatal(r.Damage)
	}
	sameRecords(t, readAll(t, l), want)
}

func TestFailedAfterInjectedSyncFailure(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 1, 2, 1)
	must(t, l.Sync())
	fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error {
		if a.Op == memfs.OpSync {
			return fmt.Errorf("injected: %w", vfs.ErrIO)
		}
		return nil
	}))
	appendN(t, l, 1, 2, 1)
	err := l.Sync()
	if !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("Sync = %v", err)
	}
	fs.SetInjector(nil)
	if err := l.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync after failure = %v (no retry-and-pretend)", err)
	}
	if err := l.Append([]record.Record{rec(1, 4, 1)}); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after failure = %v", err)
	}
	if _, err := l.Read(0, 1, 1); !errors.Is(err, ErrFailed) {
		t.Fatalf("Read after failure = %v", err)
	}
	if err := l.TruncateFrom(0); !errors.Is(err, ErrFailed) {
		t.Fatalf("TruncateFrom after failure = %v", err)
	}
}

func TestFailedAfterWriteError(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{WriteBufferBytes: 100})
	fs.SetCapacity(fs.Usage() + 300)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		err = l.Append([]record.Record{rec(1, l.End(), 50)})
	}
	if !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("Append past capacity = %v", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync after failure = %v", err)
	}
}

func TestReadErrorDoesNotFail(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	want := appendN(t, l, 1, 3, 10)
	must(t, l.Sync())
	must(t, l.Close())
	l, _ = open(t, fs, Options{})
	fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error {
		if a.Op == memfs.OpRead {
			return fmt.Errorf("injected: %w", vfs.ErrIO)
		}
		return nil
	}))
	if _, err := l.Read(0, 10, 1000); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("Read = %v", err)
	}
	fs.SetInjector(nil)
	sameRecords(t, readAll(t, l), want)
}

func TestReadDetectsCorruptionAfterOpen(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 1, 10, 100)
	must(t, l.Sync())
	must(t, l.Close())
	l, _ = open(t, fs, Options{})
	must(t, fs.Corrupt("q/log/"+segName(0), framePos(4, 100)+50))
	rs, err := l.Read(2, 10, 1<<20)
	if !errors.Is(err, ErrCorrupt) || len(rs) != 2 {
		t.Fatalf("Read = %d records, %v", len(rs), err)
	}
}

// TestGroupCommit: one Sync, one file sync and two writes (the frames, then
// their header copies), whatever the number of appends.
func TestGroupCommit(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	before := fs.Stats()
	for i := 0; i < 100; i++ {
		appendN(t, l, 1, 1, 100)
	}
	must(t, l.Sync())
	must(t, l.Sync()) // nothing new: no file sync
	st := fs.Stats()
	if st.Syncs-before.Syncs != 1 || st.SyncDirs != before.SyncDirs || st.Writes-before.Writes != 2 {
		t.Fatalf("syncs %d syncdirs %d writes %d", st.Syncs-before.Syncs, st.SyncDirs-before.SyncDirs, st.Writes-before.Writes)
	}
	// The same after a reopen.
	must(t, l.Close())
	l, _ = open(t, fs, Options{})
	before = fs.Stats()
	for i := 0; i < 100; i++ {
		appendN(t, l, 1, 1, 100)
	}
	must(t, l.Sync())
	st = fs.Stats()
	if st.Syncs-before.Syncs != 1 || st.SyncDirs != before.SyncDirs || st.Writes-before.Writes != 2 {
		t.Fatalf("after reopen: syncs %d syncdirs %d writes %d", st.Syncs-before.Syncs, st.SyncDirs-before.SyncDirs, st.Writes-before.Writes)
	}
}

func TestCrashTornTailIsDamageNeverARecord(t *testing.T) {
	sawDamage := 0
	for seed := uint64(1); seed <= 100; seed++ {
		fs := memfs.New()
		opts := Options{SegmentBytesMax: 16 << 10, WriteBufferBytes: 5000}
		l, _ := open(t, fs, opts)
		want := appendN(t, l, 1, 5, 3000)
		must(t, l.Sync())
		want = append(want, appendN(t, l, 2, 10, 3000)...)
		fs.Crash(prng.New(seed))
		l, r := open(t, fs, opts)
		if r.End < 5 || r.End > 15 {
			t.Fatalf("seed %d: recovered End %d", seed, r.End)
		}
		sameRecords(t, readAll(t, l), want[:r.End])
		if r.Damage != nil {
			sawDamage++
			if r.Damage.Offset != r.End {
				t.Fatalf("seed %d: damage offset %d, End %d", seed, r.Damage.Offset, r.End)
			}
		}
	}
	if sawDamage == 0 {
		t.Fatal("no crash produced a torn tail")
	}
}

func TestPreallocatedSegments(t *testing.T) {
	fs := memfs.New()
	opts := Options{SegmentBytesMax: 8192, PreallocateBytes: 8192 + 4096}
	l, _ := open(t, fs, opts)
	want := appendN(t, l, 1, 40, 1000)
	must(t, l.Sync())
	if fs.Usage() < 5*(8192+4096) {
		t.Fatalf("usage %d: preallocation not made", fs.Usage())
	}
	must(t, l.Close())
	l, r := open(t, fs, opts)
	if r.Damage != nil {
		t.Fatal(r.Damage)
	}
	sameRecords(t, readAll(t, l), want)
}

// TestExtendedSegments: with ExtendBytes a segment's file runs ahead of its
// frames by zeros, so that most appends change no file size; a rolled
// segment is cut back to its frames; a reopened log reads the zero tail as
// its clean end and goes on writing inside it.
func TestExtendedSegments(t *testing.T) {
	fs := memfs.New()
	const slots, bodyBytes, step = 16, 500, 8 << 10
	opts := Options{SegmentBytesMax: 1 << 20, SlotsPerSegment: slots, ExtendBytes: step}
	sizes := func() map[string]int64 {
		names, err := fs.List("q/log")
		must(t, err)
		m := map[string]int64{}
		for _, n := range names {
			if strings.HasSuffix(n, ".seg") {
				f, err := fs.Open("q/log/" + n)
				must(t, err)
				m[n], err = f.Size()
				must(t, err)
				must(t, f.Close())
			}
		}
		return m
	}
	framesEnd := func(frames int) int64 { return framesStart(slots) + int64(frames*frameBytes(bodyBytes)) }
	l, _ := open(t, fs, opts)
	var want []record.Record
	truncates := fs.Stats().Truncates
	const appends = 3*slots + 5 // three full segments and part of a fourth
	for i := 0; i < appends; i++ {
		want = append(want, appendN(t, l, 1, 1, bodyBytes)...)
		must(t, l.Sync())
	}
	// Extensions: one per step of frames (about 16 appends) and the first
	// of each segment, not one per append; trims: one per roll.
	if n := fs.Stats().Truncates - truncates; n > appends/4 {
		t.Fatalf("%d truncations for %d appends: the file grows with its frames", n, appends)
	}
	got := sizes()
	if len(got) != 4 {
		t.Fatalf("segments %v, want 4", got)
	}
	for _, base := range []uint64{0, slots, 2 * slots} {
		if got[segName(base)] != framesEnd(slots) {
			t.Fatalf("rolled segment %s: %d bytes, its frames end at %d", segName(base), got[segName(base)], framesEnd(slots))
		}
	}
	active := segName(3 * slots)
	if size := got[active]; size <= framesEnd(5) || size > framesEnd(5)+step {
		t.Fatalf("active segment: %d bytes, frames end at %d: not extended ahead by at most %d", size, framesEnd(5), step)
	}
	must(t, l.Close())
	l, r := open(t, fs, opts)
	if r.Damage != nil || r.End != appends {
		t.Fatalf("reopened: end %d, damage %v", r.End, r.Damage)
	}
	before := sizes()[active]
	want = append(want, appendN(t, l, 1, 1, bodyBytes)...)
	must(t, l.Sync())
	if after := sizes()[active]; after != before {
		t.Fatalf("an append inside the zero tail changed the file from %d to %d bytes", before, after)
	}
	sameRecords(t, readAll(t, l), want)
	// A power loss at any moment keeps every synced record.
	for seed := uint64(1); seed <= 50; seed++ {
		appendN(t, l, 1, 3, bodyBytes)
		fs.Crash(prng.New(seed))
		var r Recovery
		l, r = open(t, fs, opts)
		if r.End < uint64(len(want)) {
			t.Fatalf("seed %d: recovered %d records, %d were synced (damage %v)", seed, r.End, len(want), r.Damage)
		}
		if r.Damage != nil {
			must(t, l.DiscardDamage())
		}
		must(t, l.TruncateFrom(uint64(len(want))))
		want = append(want, appendN(t, l, 1, 1, bodyBytes)...)
		must(t, l.Sync())
	}
	sameRecords(t, readAll(t, l), want)
}

func TestAppendSyncAllocationFree(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{SegmentBytesMax: 1 << 40})
	recs := make([]record.Record, 8)
	for i := range recs {
		recs[i] = rec(1, 0, 200)
	}
	step := func() {
		for i := range recs {
			recs[i].Offset = l.End() + uint64(i)
		}
		if err := l.Append(recs); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20000; i++ { // grow the file, index and buffers
		step()
	}
	allocs := testing.AllocsPerRun(1000, step)
	if allocs > 0.05 {
		t.Fatalf("%.3f allocations per Append+Sync", allocs)
	}
}

func BenchmarkAppendSync(b *testing.B) {
	for _, bs := range []struct{ batch, bodyBytes int }{{1, 100}, {16, 100}, {16, 1000}, {4, 16 << 10}} {
		b.Run(fmt.Sprintf("batch=%d/body=%d", bs.batch, bs.bodyBytes), func(b *testing.B) {
			var fs *memfs.FS
			var l *Log
			fresh := func() {
				fs = memfs.New()
				var err error
				if l, _, err = Open(fs, "log", Options{SegmentBytesMax: 4 << 20}); err != nil {
					b.Fatal(err)
				}
			}
			fresh()
			recs := make([]record.Record, bs.batch)
			bodyb := body(0, bs.bodyBytes)
			for i := range recs {
				recs[i] = record.Record{Epoch: 1, Kind: record.KindPublish, Body: bodyb}
			}
			b.SetBytes(int64(bs.batch * bs.bodyBytes))
			b.ReportAllocs()
			for b.Loop() {
				for i := range recs {
					recs[i].Offset = l.End() + uint64(i)
				}
				if err := l.Append(recs); err != nil {
					b.Fatal(err)
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
				if fs.Usage() > 64<<20 { // bound the memory: start again
					b.StopTimer()
					fresh()
					b.StartTimer()
				}
			}
		})
	}
}

func BenchmarkRecoveryScan(b *testing.B) {
	for _, bodyBytes := range []int{100, 1000, 16 << 10} {
		b.Run(fmt.Sprintf("body=%d", bodyBytes), func(b *testing.B) {
			fs := memfs.New()
			l, _, err := Open(fs, "log", Options{})
			if err != nil {
				b.Fatal(err)
			}
			bodyb := body(0, bodyBytes)
			var recs []record.Record
			for total := 0; total < 256<<20; total += frameBytes(bodyBytes) {
				recs = append(recs[:0], record.Record{Epoch: 1, Offset: l.End(), Kind: record.KindPublish, Body: bodyb})
				if err := l.Append(recs); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			l.Close()
			var bytes int64
			b.ReportAllocs()
			for b.Loop() {
				l, r, err := Open(fs, "log", Options{})
				if err != nil || r.Damage != nil {
					b.Fatal(err, r.Damage)
				}
				bytes = r.Bytes
				l.Close()
			}
			b.SetBytes(bytes)
		})
	}
}

// A discarded tail stays known across restarts until MarkRepaired.
func TestUnrepairedMarkSurvivesRestart(t *testing.T) {
	fs := memfs.New()
	l, _, err := Open(fs, "q", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 4; i++ {
		if err := l.Append([]record.Record{{Epoch: 1, Offset: i, Kind: record.KindPublish, Body: []byte("body")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	names, _ := fs.List("q")
	durable, _ := fs.DurableBytes("q/" + names[0])
	if err := fs.Corrupt("q/"+names[0], int64(len(durable)-2)); err != nil {
		t.Fatal(err)
	}
	l, rec, err := Open(fs, "q", Options{})
	if err != nil || rec.Damage == nil {
		t.Fatalf("want damage, got %v %v", rec.Damage, err)
	}
	if err := l.DiscardDamage(); err != nil {
		t.Fatal(err)
	}
	fs.CrashClean()
	l, rec, err = Open(fs, "q", Options{})
	if err != nil || rec.Damage != nil || !rec.Unrepaired || !l.Unrepaired() {
		t.Fatalf("after a crash the discarded tail must still be known: %+v %v", rec, err)
	}
	if err := l.MarkRepaired(); err != nil {
		t.Fatal(err)
	}
	fs.CrashClean()
	_, rec, err = Open(fs, "q", Options{})
	if err != nil || rec.Unrepaired {
		t.Fatalf("MarkRepaired did not last: %+v %v", rec, err)
	}
}

// A scrub's Verify reads the file afresh: damage that struck the media
// after a read filled the read window (a flipped bit, a lost write) is met
// by the next Verify, not hidden by the window's copy of the old bytes.
// (Swarm seed 845: a lost write on a follower that had just verified its
// log was never found, and the replicas never converged.)
func TestVerifyReadsTheFileAfresh(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 1, 8, 100)
	must(t, l.Sync())
	if n, err := l.Verify(0, 100, 1<<20); err != nil || n != 8 {
		t.Fatalf("Verify before the damage: %d, %v", n, err)
	}
	names, _ := fs.List("q/log")
	var seg string
	for _, n := range names {
		if strings.HasSuffix(n, ".seg") {
			seg = "q/log/" + n
		}
	}
	size, _ := fs.DurableSize(seg)
	must(t, fs.CorruptMask(seg, size-10, 0x40)) // inside the last frame's body
	if _, err := l.Verify(0, 100, 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify after a bit flip in the last frame: %v, want ErrCorrupt", err)
	}
}

// TestReadLentIsRead: ReadLent returns what Read does, from every offset
// and under tight limits, across segments; the memory it lends is reused
// by the next lent read (no allocation once warm), and what a lent read
// returned is what the log held, until the next one.
func TestReadLentIsRead(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{SegmentBytesMax: 4096, WriteBufferBytes: 1000, IndexIntervalBytes: 512})
	var want []record.Record
	for i := 0; i < 40; i++ {
		want = append(want, appendN(t, l, uint64(1+i/10), 3, 50+i*13)...)
	}
	must(t, l.Sync())
	for off := uint64(0); off < l.End(); off++ {
		for _, lim := range [][2]int{{3, 1}, {5, 300}, {1000, 1 << 20}} {
			got, err := l.ReadLent(off, lim[0], lim[1])
			must(t, err)
			rs, err := l.Read(off, lim[0], lim[1])
			must(t, err)
			sameRecords(t, got, rs)
		}
	}
	read := func() {
		if _, err := l.ReadLent(7, 50, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if allocs := testing.AllocsPerRun(100, read); allocs > 0 {
		t.Fatalf("%.1f allocations per warm lent read", allocs)
	}
}

// TestBuffersServeTheNextLog: a released log's buffers serve the next log
// opened with the same Buffers: the next process's logs read and write as
// before (two of them at once on one Buffers, interleaved), reopening
// allocates less than with no Buffers, and a released log refuses work.
func TestBuffersServeTheNextLog(t *testing.T) {
	fs := memfs.New()
	opts := Options{SegmentBytesMax: 4096, WriteBufferBytes: 1000, IndexIntervalBytes: 512}
	var want []record.Record
	l, _ := open(t, fs, opts)
	for i := 0; i < 30; i++ {
		want = append(want, appendN(t, l, 1, 3, 40+i*11)...)
	}
	must(t, l.Sync())
	must(t, l.Close())

	var bufs Buffers
	withBufs := opts
	withBufs.Buffers = &bufs
	cycle := func(o Options) {
		l, _, err := Open(fs, "q/log", o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.ReadLent(5, 40, 1<<20); err != nil {
			t.Fatal(err)
		}
		l.Release()
	}
	cycle(withBufs) // warms the Buffers
	pooled := testing.AllocsPerRun(20, func() { cycle(withBufs) })
	plain := testing.AllocsPerRun(20, func() { cycle(opts) })
	if pooled >= plain {
		t.Fatalf("reopening allocates %.0f times with Buffers, %.0f without", pooled, plain)
	}

	a, _ := open(t, fs, withBufs)
	other := memfs.New()
	b, _, err := Open(other, "q/log", withBufs)
	must(t, err)
	var wantB []record.Record
	for i := 0; i < 20; i++ {
		want = append(want, appendN(t, a, 2, 2, 30+i*7)...)
		wantB = append(wantB, appendN(t, b, 1, 2, 25+i*5)...)
		if i%5 == 0 {
			must(t, a.Sync())
			must(t, b.Sync())
		}
	}
	sameRecords(t, readAll(t, a), want)
	sameRecords(t, readAll(t, b), wantB)
	a.Release()
	if err := a.Append(wantB[:1]); err == nil {
		t.Fatal("a released log took an append")
	}
	sameRecords(t, readAll(t, b), wantB) // the other log's buffers untouched
}

// TestVerifyFramesRunOut: a segment whose frames end before the records
// it holds (its bytes are not what was written: a flipped length, say, so
// that frames of other lengths fill it) is reported as corrupt, never read
// past its last segment.
func TestVerifyFramesRunOut(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	appendN(t, l, 1, 8, 100)
	must(t, l.Sync())
	seg := l.segs[len(l.segs)-1]
	pos, err := l.locate(seg, 4)
	must(t, err)
	// As if the frames of 0..3 filled the segment: the walk meets its end
	// with records 4..7 still to come.
	seg.size = pos
	n, err := l.Verify(0, 100, 1<<20)
	if !errors.Is(err, ErrCorrupt) || n != 4 {
		t.Fatalf("Verify of a segment whose frames ran out: %d, %v; want the 4 before, ErrCorrupt", n, err)
	}
}
