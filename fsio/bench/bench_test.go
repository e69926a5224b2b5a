package bench

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/io/seglog"
)

var (
	recordSizes = []int{128, 1 << 10, 64 << 10}
	appenders   = []int{1, 16}
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// Both the raw baseline and the log reserve the same space up front, so the
// two pay the same file-system metadata costs.
const (
	segmentBytesMax  = 64 << 20
	preallocateBytes = 64 << 20
	batchRecordsMax  = 64 // group commit: at most this many records per sync
)

func benchDir(b *testing.B) string {
	b.Helper()
	if d := os.Getenv("SLUICE_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "sluice-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// ---- backends: what one commit (a batch of records, then a sync) does ----

type backend interface {
	// commit writes the bodies as records and makes them durable.
	commit(bodies [][]byte) error
	close() error
}

// raw is the baseline: frames (a 24-byte header: length, CRC-32C, epoch,
// offset; then the body) written with one pwrite per commit at the end of a
// preallocated file, then fdatasync. Nothing else: no segments, no checks.
type raw struct {
	f      *os.File
	fd     int
	off    int64
	offset uint64
	buf    []byte
}

const rawHeaderBytes = 24

func newRaw(b *testing.B, dir string) *raw {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "raw.log"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 1 /* KEEP_SIZE */, 0, preallocateBytes); err != nil && err != syscall.EOPNOTSUPP {
		b.Fatal(err)
	}
	return &raw{f: f, fd: int(f.Fd())}
}

func (r *raw) commit(bodies [][]byte) error {
	r.buf = r.buf[:0]
	for _, body := range bodies {
		var h [rawHeaderBytes]byte
		binary.LittleEndian.PutUint32(h[0:], uint32(len(body)))
		binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(body, castagnoli))
		binary.LittleEndian.PutUint64(h[8:], 1)
		binary.LittleEndian.PutUint64(h[16:], r.offset)
		r.buf = append(r.buf, h[:]...)
		r.buf = append(r.buf, body...)
		r.offset++
	}
	if _, err := r.f.WriteAt(r.buf, r.off); err != nil {
		return err
	}
	r.off += int64(len(r.buf))
	return syscall.Fdatasync(r.fd)
}

func (r *raw) close() error { return r.f.Close() }

// rawCopies is raw plus what any layout with a separate region of header
// copies must do: after the frames, a second pwrite of one 32-byte copy
// per record into a region at the front of the file (frames start after
// it, as in seglog's format v2 with 4096 slots), in the same fdatasync. It
// is the floor for seglog v2, whose frames and copies cannot share a write.
type rawCopies struct {
	raw
	copies []byte
	slot   int
}

const (
	rawCopySlots       = 4096
	rawCopyFramesStart = 32 + 32*rawCopySlots
)

func newRawCopies(b *testing.B, dir string) *rawCopies {
	r := &rawCopies{raw: *newRaw(b, dir)}
	r.off = rawCopyFramesStart
	return r
}

func (r *rawCopies) commit(bodies [][]byte) error {
	r.buf, r.copies = r.buf[:0], r.copies[:0]
	first := r.slot
	for _, body := range bodies {
		var h [rawHeaderBytes]byte
		binary.LittleEndian.PutUint32(h[0:], uint32(len(body)))
		binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(body, castagnoli))
		binary.LittleEndian.PutUint64(h[8:], 1)
		binary.LittleEndian.PutUint64(h[16:], r.offset)
		r.buf = append(r.buf, h[:]...)
		r.buf = append(r.buf, body...)
		var c [32]byte
		copy(c[:24], h[:])
		binary.LittleEndian.PutUint32(c[28:], crc32.Checksum(c[:28], castagnoli))
		r.copies = append(r.copies, c[:]...)
		r.offset++
		r.slot = (r.slot + 1) % rawCopySlots
	}
	if _, err := r.f.WriteAt(r.buf, r.off); err != nil {
		return err
	}
	r.off += int64(len(r.buf))
	if first+len(bodies) <= rawCopySlots { // (a wrapping batch skips its copies: rare, a baseline only)
		if _, err := r.f.WriteAt(r.copies, 32+32*int64(first)); err != nil {
			return err
		}
	}
	return syscall.Fdatasync(r.fd)
}

// logBackend is the segment log on fsio: one Append of the batch, one Sync.
type logBackend struct {
	l    *seglog.Log
	recs []record.Record
}

func newLog(b *testing.B, dir string) *logBackend {
	b.Helper()
	fsys, err := fsio.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	l, _, err := seglog.Open(fsys, "log", seglog.Options{SegmentBytesMax: segmentBytesMax, PreallocateBytes: preallocateBytes})
	if err != nil {
		b.Fatal(err)
	}
	return &logBackend{l: l}
}

func (lb *logBackend) commit(bodies [][]byte) error {
	lb.recs = lb.recs[:0]
	end := lb.l.End()
	for i, body := range bodies {
		lb.recs = append(lb.recs, record.Record{Epoch: 1, Offset: end + uint64(i), Kind: record.KindPublish, Body: body})
	}
	if err := lb.l.Append(lb.recs); err != nil {
		return err
	}
	return lb.l.Sync()
}

func (lb *logBackend) close() error { return lb.l.Close() }

// ---- group commit: appenders submit a record and wait for its batch's sync ----

type request struct {
	body []byte
	done chan error
}

type groupCommit struct {
	in      chan *request
	be      backend
	wg      sync.WaitGroup
	batches int
	records int
}

func startGroupCommit(be backend) *groupCommit {
	g := &groupCommit{in: make(chan *request, batchRecordsMax), be: be}
	g.wg.Add(1)
	go g.run()
	return g
}

func (g *groupCommit) run() {
	defer g.wg.Done()
	batch := make([]*request, 0, batchRecordsMax)
	bodies := make([][]byte, 0, batchRecordsMax)
	for {
		r, ok := <-g.in
		if !ok {
			return
		}
		batch = append(batch[:0], r)
	drain: // take whatever else is already waiting, up to the limit
		for len(batch) < batchRecordsMax {
			select {
			case r, ok := <-g.in:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		bodies = bodies[:0]
		for _, r := range batch {
			bodies = append(bodies, r.body)
		}
		err := g.be.commit(bodies)
		g.batches++
		g.records += len(batch)
		for _, r := range batch {
			r.done <- err
		}
	}
}

func (g *groupCommit) stop() { close(g.in); g.wg.Wait() }

// ---- the measurement ----

// run appends b.N records of size bytes through be, from n appenders, and
// reports records/s and the p50/p99 latency of one record's commit (from
// submit to its sync returning). With group == false each record is its own
// write+sync, serialized under a lock (the per-record baseline); otherwise
// the records go through a group commit.
func run(b *testing.B, be backend, size, n int, group bool) {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 31)
	}
	lat := make([]time.Duration, b.N)
	var g *groupCommit
	if group {
		g = startGroupCommit(be)
	}
	var mu sync.Mutex
	one := [][]byte{body}
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for a := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			for i := a; i < b.N; i += n {
				t0 := time.Now()
				var err error
				if group {
					g.in <- &request{body: body, done: done}
					err = <-done
				} else {
					mu.Lock()
					err = be.commit(one)
					mu.Unlock()
				}
				lat[i] = time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if group {
		g.stop()
		b.ReportMetric(float64(g.records)/float64(max(1, g.batches)), "recs/batch")
	}
	if err := be.close(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
	b.SetBytes(int64(size))
}

// BenchmarkAppendSync measures, for each record size and appender count, the
// raw per-record baseline, the raw group commit and the segment log (behind
// the same group commit when there is more than one appender), in one run;
// with one appender also raw-copies, the raw floor of a format with a
// separate header-copy region (seglog's v2).
func BenchmarkAppendSync(b *testing.B) {
	for _, size := range recordSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			for _, n := range appenders {
				b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
					b.Run("raw", func(b *testing.B) {
						run(b, newRaw(b, benchDir(b)), size, n, false)
					})
					if n == 1 {
						b.Run("raw-copies", func(b *testing.B) {
							run(b, newRawCopies(b, benchDir(b)), size, n, false)
						})
						b.Run("seglog", func(b *testing.B) {
							run(b, newLog(b, benchDir(b)), size, n, false)
						})
						return
					}
					b.Run("raw-group", func(b *testing.B) {
						run(b, newRaw(b, benchDir(b)), size, n, true)
					})
					b.Run("seglog-group", func(b *testing.B) {
						run(b, newLog(b, benchDir(b)), size, n, true)
					})
				})
			}
		})
	}
}

// BenchmarkThreeLogs is a replicated queue's disk one publish at a time,
// on one host: three segment logs (an owner's and two followers') each
// appending one record and syncing it, all three at once, b.N times each.
// "grow" is the log whose segment files grow with their frames; "extend"
// runs its files ahead of the frames with zeros (seglog.Options.ExtendBytes,
// as the daemon's logs do), so that no fdatasync commits a size change. It
// reports the p50 and p99 of one Append and Sync, and syncs/s per log.
//
//	go test -run '^$' -bench ThreeLogs -benchtime 3000x ./fsio/bench
func BenchmarkThreeLogs(b *testing.B) {
	for _, size := range []int{128, 1 << 10} {
		for _, v := range []struct {
			name        string
			extendBytes int64
		}{{"grow", 0}, {"extend", 256 << 10}} {
			b.Run(fmt.Sprintf("size=%d/%s", size, v.name), func(b *testing.B) {
				body := make([]byte, size)
				var logs [3]*seglog.Log
				for i := range logs {
					fsys, err := fsio.New(benchDir(b))
					if err != nil {
						b.Fatal(err)
					}
					if logs[i], _, err = seglog.Open(fsys, "log", seglog.Options{ExtendBytes: v.extendBytes}); err != nil {
						b.Fatal(err)
					}
				}
				lat := make([]time.Duration, 0, 3*b.N)
				var mu sync.Mutex
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for _, l := range logs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						mine := make([]time.Duration, 0, b.N)
						recs := []record.Record{{Epoch: 1, Kind: record.KindPublish, Body: body}}
						for range b.N {
							t0 := time.Now()
							recs[0].Offset = l.End()
							if err := l.Append(recs); err != nil {
								b.Error(err)
								return
							}
							if err := l.Sync(); err != nil {
								b.Error(err)
								return
							}
							mine = append(mine, time.Since(t0))
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				for _, l := range logs {
					if err := l.Close(); err != nil {
						b.Fatal(err)
					}
				}
				if len(lat) == 0 {
					return
				}
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "syncs/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
			})
		}
	}
}

// BenchmarkRecovery measures seglog.Open's scan of a log of 1 KiB records:
// 128 MiB by default, 1 GiB with SLUICE_BENCH_BIG=1. The log is written
// once, outside the timer; the scans read it from the page cache (a warm
// restart), which measures the scan's CPU cost, not the disk's read speed.
func BenchmarkRecovery(b *testing.B) {
	total := int64(128 << 20)
	if os.Getenv("SLUICE_BENCH_BIG") != "" {
		total = 1 << 30
	}
	dir := benchDir(b)
	fsys, err := fsio.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	opts := seglog.Options{SegmentBytesMax: segmentBytesMax}
	l, _, err := seglog.Open(fsys, "log", opts)
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 1<<10)
	for i := range body {
		body[i] = byte(i * 7)
	}
	batch := make([]record.Record, 256)
	for written := int64(0); written < total; written += int64(len(batch) * len(body)) {
		end := l.End()
		for i := range batch {
			batch[i] = record.Record{Epoch: 1, Offset: end + uint64(i), Kind: record.KindPublish, Body: body}
		}
		if err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	want := l.End()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var scanned int64
	for b.Loop() {
		l, rec, err := seglog.Open(fsys, "log", opts)
		if err != nil {
			b.Fatal(err)
		}
		if rec.End != want || rec.Damage != nil {
			b.Fatalf("recovered [%d,%d) damage %v, want end %d", rec.Start, rec.End, rec.Damage, want)
		}
		scanned = rec.Bytes
		l.Close()
	}
	b.SetBytes(scanned)
}
