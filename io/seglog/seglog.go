package seglog

import (
	"errors"
	"fmt"
	"path"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/vfs"
)

// Errors returned by the log.
var (
	// ErrFailed: an earlier Sync (or write) failed; the log refuses all
	// further work. The owner of the log treats that replica's log as lost.
	ErrFailed = errors.New("seglog: log failed after an I/O error")
	// ErrDamaged: Open found a torn or corrupt record; appends and truncations
	// are refused until the caller explicitly calls DiscardDamage.
	ErrDamaged = errors.New("seglog: damaged tail not yet discarded")
	// ErrOffset: an appended record's offset is not the log's next offset.
	ErrOffset = errors.New("seglog: record offset is not the log end")
	// ErrRange: a read or truncation names an offset outside [Start, End].
	ErrRange = errors.New("seglog: offset out of range")
	// ErrTooLarge: a record exceeds the frame limit.
	ErrTooLarge = errors.New("seglog: record too large")
	// ErrEpoch: an appended record's epoch is below the epoch of the log's
	// last record.
	ErrEpoch = errors.New("seglog: record epoch below the log's last epoch")
	// ErrKind: an appended record's kind is not a known record.Kind.
	ErrKind = errors.New("seglog: unknown record kind")
	// ErrCorrupt: Read met a frame that fails validation (bit rot after
	// Open). The log stays usable; the caller decides.
	ErrCorrupt = errors.New("seglog: corrupt frame")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("seglog: log closed")
)

// Defaults of Options.
const (
	SegmentBytesMaxDefault    = 64 << 20
	WriteBufferBytesDefault   = 1 << 20
	IndexIntervalBytesDefault = 4 << 10
	SlotsPerSegmentDefault    = 4096
	openFilesMax              = 8 // open handles on inactive, synced segments
	readChunkBytes            = 64 << 10
	scanChunkBytes            = 2 << 20
	// slotBufSlotsMax bounds the header copies buffered before a write
	// (the buffer is written when full, like the frame buffer).
	slotBufSlotsMax = 1024
	// scanSlotChunk bounds one read of a segment's header-copy region
	// during the recovery scan: one read for every segment of up to this
	// many slots (1 MiB), more reads of this size beyond.
	scanSlotChunk = 32768
)

// Options tune a log. Zero values take defaults.
type Options struct {
	// SegmentBytesMax: a new segment starts once the current one reaches
	// this size (its header and header-copy region included). Default 64
	// MiB.
	SegmentBytesMax int64
	// SlotsPerSegment: the number of header-copy slots of a new segment,
	// which is also the most frames it holds (a new segment starts when
	// the current one is full). Each slot takes 32 bytes at the start of
	// the segment file. Default 4096; at most SlotsPerSegmentMax (Open
	// refuses more).
	SlotsPerSegment int
	// Bugs plants storage bugs (bugs.SyncSkip, NoDirSyncOnRoll, NoCRCCheck)
	// for the simulator's mutation suite. Nothing else sets it.
	Bugs bugs.Set
	// PreallocateBytes: reserve this much space when a segment is created
	// (vfs.File.Preallocate, which leaves the file's size as it is).
	// Default 0 (no preallocation).
	PreallocateBytes int64
	// ExtendBytes: whenever a write would pass the end of a segment's file,
	// the file is first extended with zeros (Truncate) to cover it and up
	// to ExtendBytes more, at most SegmentBytesMax; when the log moves on to
	// a new segment, the old one is cut back to its frames. An append then
	// writes inside the file, so its fdatasync commits no change of size:
	// ext4 journals a growing file's size at every fdatasync, and three
	// logs syncing at once on one disk wait about 50 µs longer each for it
	// (docs/performance.md). The zeros after the last frame are an empty
	// frame area, which the scan reads as the clean end. Default 0: the
	// file grows with its frames.
	ExtendBytes int64
	// WriteBufferBytes bounds the bytes appended but not yet written to the
	// file; the buffer is written when full and at Sync. A frame larger
	// than the buffer is written directly. Default 1 MiB (a group commit of eight 64 KiB records is one write).
	WriteBufferBytes int
	// IndexIntervalBytes: the sparse index holds one entry per this many
	// bytes of frames (at least one per segment). Default 4 KiB.
	IndexIntervalBytes int64
	// Buffers, if set, is where the log takes its buffers from and gives
	// them back when closed or released (buffers.go); nil: it allocates.
	Buffers *Buffers
}

func (o *Options) setDefaults() {
	if o.SegmentBytesMax <= 0 {
		o.SegmentBytesMax = SegmentBytesMaxDefault
	}
	if o.PreallocateBytes < 0 {
		o.PreallocateBytes = 0
	}
	if o.ExtendBytes < 0 {
		o.ExtendBytes = 0
	}
	if o.WriteBufferBytes <= 0 {
		o.WriteBufferBytes = WriteBufferBytesDefault
	}
	o.WriteBufferBytes = max(o.WriteBufferBytes, segHeaderBytes+frameBytesMin)
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = IndexIntervalBytesDefault
	}
	if o.SlotsPerSegment <= 0 {
		o.SlotsPerSegment = SlotsPerSegmentDefault
	}
}

// check refuses options that the format cannot hold.
func (o *Options) check() error {
	if o.SlotsPerSegment > SlotsPerSegmentMax {
		return fmt.Errorf("seglog: Options.SlotsPerSegment %d above the format's limit %d", o.SlotsPerSegment, SlotsPerSegmentMax)
	}
	return nil
}

// EpochStart is record's: records from Offset on carry Epoch.
type EpochStart = record.EpochStart

// Damage describes the first torn, corrupt, lost or unreadable record the
// recovery scan met (see the package documentation for the reasons).
type Damage struct {
	Segment string // file name of the segment
	// Pos is the byte position in that segment where its valid frames
	// end: the bad frame's position, or where the missing frame belongs
	// (0 when the segment header is bad). DiscardDamage cuts there.
	Pos int64
	// Offset is the log offset the bad frame would have held: the end of
	// the valid records.
	Offset uint64
	Reason string // e.g. "crc mismatch", "frame lost: header copy names offset 7"
	// Durable: a valid header copy of a frame appended after a later
	// completed sync lies beyond the damage (slotSyncFirst), so the frames
	// from Offset on had been synced: acknowledged records are certainly
	// lost, not an unsynced tail torn by a crash.
	Durable bool
}

func (d *Damage) String() string {
	s := fmt.Sprintf("damage in %s at byte %d (offset %d): %s", d.Segment, d.Pos, d.Offset, d.Reason)
	if d.Durable {
		s += " (synced records: a later sync's frames lie beyond)"
	}
	return s
}

// Recovery reports what Open found.
type Recovery struct {
	Start, End uint64       // valid records are [Start, End)
	Bytes      int64        // bytes of valid frames scanned
	Epochs     []EpochStart // epoch history of the valid records, ascending
	Damage     *Damage      // nil when the scan ended cleanly
	// Unrepaired: an earlier open found damage and its tail was discarded,
	// but MarkRepaired was not called since: the log may lack records.
	Unrepaired bool
	// Seal is the payload of the log's seal receipt (WriteSeal), if it has
	// one; SealDamage says why a receipt present does not check.
	Seal       []byte
	SealDamage string
	// Binding is the payload of the log's storage binding (WriteBinding,
	// bind.go), nil without one; BindingDamage says why one present does
	// not check.
	Binding       []byte
	BindingDamage string
	// BoundBefore: the marker beside the log's directory says the log was
	// bound on this storage (bind.go); with no Binding, its directory or
	// live generation was lost.
	BoundBefore bool
	// Generation is the log's generation (gen.go): 0 for the first.
	Generation uint64
}

// segment is one segment file.
type segment struct {
	base  uint64
	end   uint64 // offset after the segment's last valid record
	name  string
	slots int   // header-copy slots (from its header): the most frames it holds
	size  int64 // header, header copies and valid frames, buffered ones included
	// fileBytes: the file's size as this log found it (the scan) or made
	// it since (writes, extensions, cuts); at least the part of size that
	// was written. Beyond size it holds zeros (Options.ExtendBytes) or,
	// after a scan, whatever the scan accepted as the empty frame area.
	fileBytes  int64
	index      []indexEntry
	indexedPos int64 // position of the last index entry; -1: none
	f          vfs.File
	dirty      bool // written or truncated since the last successful sync
	open       bool // listed in Log.openSegs
}

// frames is the number of valid frames of the segment; frame i has slot i.
func (s *segment) frames() int { return int(s.end - s.base) }

// start is the position of the segment's first frame.
func (s *segment) start() int64 { return framesStart(s.slots) }

// indexEntry locates a frame: the record at off starts at pos.
type indexEntry struct {
	off uint64
	pos int64
}

// repair says how DiscardDamage removes the damaged tail.
type repair struct {
	seg           *segment // segment to cut at pos (nil: none)
	pos           int64
	slotsHi       int      // slots [seg.frames(), slotsHi) of seg may be non-zero: zero them
	rewriteHeader bool     // the first segment's header is bad: write it anew
	remove        []string // segment names after the damage, ascending
}

// Log is a segmented append-only record log over a vfs.FS.
//
// A Log is not safe for concurrent use.
type Log struct {
	fs   vfs.FS
	dir  string // the directory of its segments
	opts Options
	// base and gen: of a generation after the first (gen.go), the log's
	// directory (where the pointer lives) and the generation's number.
	base string
	gen  uint64

	syncs  uint64 // Sync calls (the planted bug bugs.SyncSkip skips every other)
	rolled bool   // a segment was started since the last directory sync

	unrepaired  bool // the UNREPAIRED mark is on disk
	afterSync   bool // nothing was appended since the last completed sync (or the open): the next frame's copy says so
	boundBefore bool // the marker beside the log's directory is there (bind.go)
	// bound: the binding this generation holds (nil: none read or written);
	// published: a stage that Publish made the log
	bound     []byte
	published bool

	segs   []*segment // ascending; the last one is active
	epochs []EpochStart

	buf    []byte // appended frames of the active segment not yet written
	bufPos int64  // their position in the active segment
	// slotBuf holds the header copies of the active segment not yet
	// written (after a new segment's header), written at slotBufPos after
	// the frames: slotBufPos+len(slotBuf) is always the position of the
	// slot of the next frame.
	slotBuf    []byte
	slotBufPos int64

	dirtySegs []*segment // segments to sync at the next Sync
	dirDirty  bool       // segments were created or removed since the last SyncDir
	openSegs  []*segment // inactive segments with an open handle, oldest first

	damage  *Damage
	repair  repair
	failErr error
	closed  bool

	// Read window: a cached range of one segment's contents.
	win      []byte
	winSeg   *segment
	winPos   int64
	winChunk int
	noAhead  bool // the scan met an unreadable range: read exactly what is wanted

	// The recovery scan's window on a segment's header-copy region: slots
	// [slotWinLo, slotWinLo+len(slotWin)/slotBytes) of slotWinSeg.
	slotWin    []byte
	slotWinSeg *segment
	slotWinLo  int
	slotExact  bool // a slot read failed: read one slot at a time

	// ReadLent's memory: the records and body blocks of the last lent
	// read (lentRecs, lentBlocks), and blocks of earlier ones to reuse
	// (spareBlocks, at most spareBlocksMax).
	lentRecs    []record.Record
	lentBlocks  [][]byte
	spareBlocks [][]byte

	scratch [frameBytesMin]byte
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// isActive reports whether seg is the active segment (during the recovery
// scan none is).
func (l *Log) isActive(seg *segment) bool {
	return len(l.segs) > 0 && l.segs[len(l.segs)-1] == seg
}

func (l *Log) segPath(name string) string { return path.Join(l.dir, name) }

// fail puts the log in the failed state.
func (l *Log) fail(err error) error {
	if l.failErr == nil {
		l.failErr = err
	}
	return l.failedErr()
}

func (l *Log) failedErr() error { return fmt.Errorf("%w: %w", ErrFailed, l.failErr) }

// usable reports whether the log may be used at all.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	if l.failErr != nil {
		return l.failedErr()
	}
	return nil
}

// writable reports whether the log may be changed.
func (l *Log) writable() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.damage != nil {
		return ErrDamaged
	}
	return nil
}

// Start returns the first offset held; End the next offset to append.
func (l *Log) Start() uint64 { return l.segs[0].base }

// End returns the next offset to append.
func (l *Log) End() uint64 { return l.active().end }

// Epochs returns the epoch history of the records held (a copy).
func (l *Log) Epochs() []EpochStart { return append([]EpochStart(nil), l.epochs...) }

// lastEpoch is the epoch of the last record, 0 for an empty log.
func (l *Log) lastEpoch() uint64 {
	if len(l.epochs) == 0 {
		return 0
	}
	return l.epochs[len(l.epochs)-1].Epoch
}

// Append writes records whose offsets continue End(); not durable until
// Sync. The whole batch is validated first: on ErrOffset, ErrEpoch, ErrKind
// or ErrTooLarge nothing is appended. A write error fails the log.
func (l *Log) Append(recs []record.Record) error {
	if err := l.writable(); err != nil {
		return err
	}
	next, epoch := l.End(), l.lastEpoch()
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Offset != next:
			return fmt.Errorf("%w: offset %d, log end %d", ErrOffset, r.Offset, next)
		case r.Epoch < epoch:
			return fmt.Errorf("%w: epoch %d after %d (offset %d)", ErrEpoch, r.Epoch, epoch, r.Offset)
		case !r.Kind.Valid():
			return fmt.Errorf("%w: %d (offset %d)", ErrKind, r.Kind, r.Offset)
		case len(r.Body) > record.BodyBytesMax:
			return fmt.Errorf("%w: body of %d bytes (offset %d)", ErrTooLarge, len(r.Body), r.Offset)
		}
		next++
		epoch = r.Epoch
	}
	l.ensureBuf()
	for i := range recs {
		if err := l.appendOne(&recs[i]); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

func (l *Log) appendOne(r *record.Record) error {
	seg := l.active()
	if seg.frames() >= seg.slots || (seg.size >= l.opts.SegmentBytesMax && seg.end > seg.base) {
		if err := l.roll(); err != nil {
			return err
		}
		seg = l.active()
	}
	n := frameBytes(len(r.Body))
	pos := seg.size
	if len(l.buf)+n > l.opts.WriteBufferBytes || len(l.slotBuf)+slotBytes > cap(l.slotBuf) {
		if err := l.flush(); err != nil {
			return err
		}
	}
	var fr []byte // the frame's fixed part, for its header copy
	if n <= l.opts.WriteBufferBytes {
		k := len(l.buf)
		l.growBuf(n)
		l.buf = l.buf[:k+n]
		putFrame(l.buf[k:], r)
		fr = l.buf[k:]
	} else {
		// Larger than the buffer (which is empty now): write directly.
		c := putFrameHeader(l.scratch[:], r)
		c = crcUpdate(c, r.Body)
		putU32(l.scratch[4:8], c)
		if err := l.writeAt(seg, l.scratch[:], pos, pos+int64(n)); err != nil {
			return err
		}
		if len(r.Body) > 0 {
			if err := l.writeAt(seg, r.Body, pos+frameBytesMin, pos+int64(n)); err != nil {
				return err
			}
		}
		l.bufPos = pos + int64(n)
		l.markDirty(seg)
		fr = l.scratch[:]
	}
	// The header copy goes to the slot buffer, written after the frames.
	assert(l.slotBufPos+int64(len(l.slotBuf)) == slotPos(seg.frames()), "slot buffer out of step with the frames")
	k := len(l.slotBuf)
	l.slotBuf = l.slotBuf[:k+slotBytes]
	var flags byte
	if l.afterSync {
		flags, l.afterSync = slotSyncFirst, false
	}
	putSlot(l.slotBuf[k:], fr, flags)
	l.noteFrame(seg, r.Offset, r.Epoch, pos, int64(n))
	return nil
}

// noteFrame accounts for a valid frame at pos of seg (appended or scanned).
func (l *Log) noteFrame(seg *segment, off, epoch uint64, pos, n int64) {
	if seg.indexedPos < 0 || pos-seg.indexedPos >= l.opts.IndexIntervalBytes {
		seg.index = append(seg.index, indexEntry{off: off, pos: pos})
		seg.indexedPos = pos
	}
	if len(l.epochs) == 0 || l.epochs[len(l.epochs)-1].Epoch != epoch {
		l.epochs = append(l.epochs, EpochStart{Epoch: epoch, Offset: off})
	}
	seg.size = pos + n
	seg.end = off + 1
}

func (l *Log) markDirty(seg *segment) {
	if !seg.dirty {
		seg.dirty = true
		l.dirtySegs = append(l.dirtySegs, seg)
	}
}

// flush writes the buffered frames to the active segment and then, with a
// separate write, their header copies (a frame and its copy never share a
// write, so that one lost write cannot take both).
func (l *Log) flush() error {
	seg := l.active()
	if len(l.buf) > 0 {
		if err := l.writeAt(seg, l.buf, l.bufPos, l.bufPos+int64(len(l.buf))); err != nil {
			return err
		}
		l.markDirty(seg)
		l.bufPos += int64(len(l.buf))
		l.buf = l.buf[:0]
	}
	if len(l.slotBuf) > 0 {
		if err := l.writeAt(seg, l.slotBuf, l.slotBufPos, l.slotBufPos+int64(len(l.slotBuf))); err != nil {
			return err
		}
		l.markDirty(seg)
		l.slotBufPos += int64(len(l.slotBuf))
		l.slotBuf = l.slotBuf[:0]
	}
	return nil
}

// writeAt writes p at pos of seg, the write of frames that end at end
// (end is beyond p for the header of a frame whose body follows): with
// Options.ExtendBytes, the file is first extended to cover end and up to
// ExtendBytes more, so that the next appends write inside it.
func (l *Log) writeAt(seg *segment, p []byte, pos, end int64) error {
	if step := l.opts.ExtendBytes; step > 0 && end > seg.fileBytes {
		size := max(end, min(end+step, l.opts.SegmentBytesMax))
		if err := seg.f.Truncate(size); err != nil {
			return err
		}
		seg.fileBytes = size
	}
	if _, err := seg.f.WriteAt(p, pos); err != nil {
		return err
	}
	seg.fileBytes = max(seg.fileBytes, pos+int64(len(p)))
	return nil
}

// trim cuts the zeros an extension left after seg's frames, once the log
// has moved on to the next segment: a closed segment holds only its frames
// (no space held, no zeros for the scan to read). Durable at the next
// Sync; a crash before it leaves the zeros, which the scan accepts.
func (l *Log) trim(seg *segment) error {
	if l.opts.ExtendBytes == 0 || seg.fileBytes <= seg.size {
		return nil
	}
	if err := l.ensureOpen(seg); err != nil {
		return err
	}
	if err := seg.f.Truncate(seg.size); err != nil {
		return err
	}
	seg.fileBytes = seg.size
	l.markDirty(seg)
	return nil
}

// roll starts a new active segment at End().
func (l *Log) roll() error {
	if err := l.flush(); err != nil {
		return err
	}
	old := l.active()
	if err := l.trim(old); err != nil {
		return err
	}
	seg, err := l.createSegment(old.end)
	if err != nil {
		return err
	}
	l.segs = append(l.segs, seg)
	l.retire(old)
	l.rolled = true
	return nil
}

// createSegment creates the file of a new segment at base and buffers its
// header (written with its first header copies); the segment becomes the
// target of the buffers, which must be empty.
func (l *Log) createSegment(base uint64) (*segment, error) {
	assert(len(l.buf) == 0 && len(l.slotBuf) == 0, "new segment with buffered bytes")
	name := segName(base)
	f, err := l.fs.Create(l.segPath(name))
	if err != nil {
		return nil, err
	}
	l.dirDirty = true
	if l.opts.PreallocateBytes > 0 {
		if err := f.Preallocate(l.opts.PreallocateBytes); err != nil {
			f.Close()
			return nil, err
		}
	}
	slots := l.opts.SlotsPerSegment
	seg := &segment{base: base, end: base, name: name, slots: slots, size: framesStart(slots), indexedPos: -1, f: f}
	l.markDirty(seg)
	l.ensureBuf()
	l.bufPos = seg.size
	l.slotBuf = l.slotBuf[:segHeaderBytes]
	putSegHeader(l.slotBuf, base, slots)
	l.slotBufPos = 0
	return seg, nil
}

// writeBufBytesMin is the write buffer's first capacity. The buffer grows
// (doubling) to what the commits need, never past Options.WriteBufferBytes:
// a log whose commits are a few small records (most of them) keeps a few
// KiB instead of the whole MiB, which every Open allocated before. When
// the buffer is written depends on WriteBufferBytes only, never on its
// capacity.
const writeBufBytesMin = 4 << 10

// growBuf makes room in the write buffer for n more bytes, within
// Options.WriteBufferBytes (the caller flushed when they would not fit).
func (l *Log) growBuf(n int) {
	if len(l.buf)+n <= cap(l.buf) {
		return
	}
	c := min(max(2*cap(l.buf), len(l.buf)+n, writeBufBytesMin), l.opts.WriteBufferBytes)
	buf := l.opts.Buffers.get(len(l.buf), c)
	copy(buf, l.buf)
	l.opts.Buffers.put(l.buf)
	l.buf = buf
}

func (l *Log) ensureBuf() {
	if l.buf == nil {
		l.buf = l.opts.Buffers.get(0, min(writeBufBytesMin, l.opts.WriteBufferBytes))
	}
	if l.slotBuf == nil {
		// Its capacity exactly: a full slot buffer is what makes Append
		// write (a pooled buffer may be larger).
		c := segHeaderBytes + slotBytes*min(l.opts.SlotsPerSegment, slotBufSlotsMax)
		l.slotBuf = l.opts.Buffers.get(0, c)[:0:c]
	}
}

// resetBufs points the (empty) buffers at the end of the active segment.
func (l *Log) resetBufs() {
	assert(len(l.buf) == 0 && len(l.slotBuf) == 0, "buffers not written")
	act := l.active()
	l.bufPos = act.size
	l.slotBufPos = slotPos(act.frames())
}

// retire moves a segment that stopped being active to the open-handle list,
// closing the handles of the oldest synced inactive segments past the limit.
func (l *Log) retire(seg *segment) {
	if seg.f == nil || seg.open {
		return
	}
	seg.open = true
	l.openSegs = append(l.openSegs, seg)
	// Never seg itself (the last): its handle is wanted now (ensureOpen).
	// Dirty ones stay open until synced, so the list may exceed the limit
	// while more than openFilesMax segments await a sync.
	for i := 0; len(l.openSegs) > openFilesMax && i < len(l.openSegs)-1; {
		s := l.openSegs[i]
		if s.dirty {
			i++
			continue
		}
		s.f.Close()
		s.f = nil
		s.open = false
		l.openSegs = append(l.openSegs[:i], l.openSegs[i+1:]...)
	}
}

// ensureOpen opens the file of seg if it is closed.
func (l *Log) ensureOpen(seg *segment) error {
	if seg.f != nil {
		return nil
	}
	f, err := l.fs.Open(l.segPath(seg.name))
	if err != nil {
		return err
	}
	seg.f = f
	if !l.isActive(seg) {
		l.retire(seg)
	}
	return nil
}

// forget drops a removed segment's handle and list memberships.
func (l *Log) forget(seg *segment) {
	if seg.f != nil {
		seg.f.Close()
		seg.f = nil
	}
	l.openSegs = deleteSeg(l.openSegs, seg)
	l.dirtySegs = deleteSeg(l.dirtySegs, seg)
	seg.open, seg.dirty = false, false
	if l.winSeg == seg {
		l.winSeg = nil
	}
}

func deleteSeg(s []*segment, seg *segment) []*segment {
	for i, x := range s {
		if x == seg {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// Sync makes every appended record and every truncation durable: it writes
// the buffer, syncs each segment file written since the last Sync (one file
// unless a segment was started), then syncs the directory if segments were
// created or removed. A failure fails the log.
func (l *Log) Sync() error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.syncAll(); err != nil {
		return l.fail(err)
	}
	return nil
}

// Flush writes the appended records (and their header copies) to the
// segment file without syncing: the first half of Sync, for a caller that
// starts a sync before the device finishes it (the simulator, whose disks
// then hold the writes unsynced while the sync is under way). A failure
// fails the log.
func (l *Log) Flush() error {
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return l.fail(err)
	}
	return nil
}

func (l *Log) syncAll() error {
	if err := l.flush(); err != nil {
		return err
	}
	l.syncs++
	skip := l.opts.Bugs.Has(bugs.SyncSkip) && l.syncs%2 == 0 // planted
	for _, seg := range l.dirtySegs {
		if !skip {
			if err := seg.f.Sync(); err != nil {
				return err
			}
		}
		seg.dirty = false
	}
	clear(l.dirtySegs)
	l.dirtySegs = l.dirtySegs[:0]
	if l.dirDirty {
		if !(l.rolled && l.opts.Bugs.Has(bugs.NoDirSyncOnRoll)) { // planted
			if err := l.fs.SyncDir(l.dir); err != nil {
				return err
			}
		}
		l.dirDirty, l.rolled = false, false
	}
	l.afterSync = !skip
	return nil
}

// TruncateFrom removes every record at offset >= from, possibly across
// segments. It is durable when it returns: TruncateFrom syncs (the contract
// only promises durability after the next Sync), so that records appended
// afterwards can never be mixed, by a crash, with the removed ones.
func (l *Log) TruncateFrom(from uint64) error {
	if err := l.writable(); err != nil {
		return err
	}
	if from < l.Start() || from > l.End() {
		return fmt.Errorf("%w: truncate from %d, log [%d, %d)", ErrRange, from, l.Start(), l.End())
	}
	if from == l.End() {
		return nil
	}
	if err := l.truncate(from); err != nil {
		return l.fail(err)
	}
	return nil
}

func (l *Log) truncate(from uint64) error {
	if err := l.flush(); err != nil {
		return err
	}
	i := l.findSeg(from)
	seg := l.segs[i]
	cut := i + 1 // segments [cut:] are removed
	var pos int64
	if seg.base == from && i > 0 {
		cut = i
	} else {
		p, err := l.locate(seg, from)
		if err != nil {
			return err
		}
		pos = p
	}
	// Remove the last segments first, so that a crash keeps a contiguous
	// prefix of them.
	for j := len(l.segs) - 1; j >= cut; j-- {
		s := l.segs[j]
		l.forget(s)
		if err := l.fs.Remove(l.segPath(s.name)); err != nil {
			return err
		}
		l.dirDirty = true
		l.segs[j] = nil
	}
	l.segs = l.segs[:cut]
	if cut == i+1 {
		if err := l.cutSegment(seg, pos, from, seg.frames()); err != nil {
			return err
		}
	}
	act := l.active()
	if act.open {
		l.openSegs = deleteSeg(l.openSegs, act)
		act.open = false
	}
	if err := l.ensureOpen(act); err != nil {
		return err
	}
	l.resetBufs()
	for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].Offset >= from {
		l.epochs = l.epochs[:len(l.epochs)-1]
	}
	return l.syncAll()
}

// cutSegment truncates seg at pos so that its last record is from-1, then
// zeroes the header copies [from-base, slotsHi) with one write, so that a
// later scan finds no stale copy of a removed frame. The frames go first:
// a crash between the two leaves copies of frames that are gone, and a torn
// zeroing write leaves a half-zeroed copy (its CRC fails) or an untouched
// one after a zeroed one; the next scan reports each of these as damage,
// never as records (conservative, see the package documentation).
func (l *Log) cutSegment(seg *segment, pos int64, from uint64, slotsHi int) error {
	if err := l.ensureOpen(seg); err != nil {
		return err
	}
	if err := seg.f.Truncate(pos); err != nil {
		return err
	}
	seg.fileBytes = pos
	l.markDirty(seg)
	lo := int(from - seg.base)
	if hi := min(slotsHi, seg.slots); hi > lo {
		if _, err := seg.f.WriteAt(make([]byte, (hi-lo)*slotBytes), slotPos(lo)); err != nil {
			return err
		}
	}
	if l.winSeg == seg {
		l.winSeg = nil
	}
	seg.size, seg.end = pos, from
	k := len(seg.index)
	for k > 0 && seg.index[k-1].off >= from {
		k--
	}
	seg.index = seg.index[:k]
	seg.indexedPos = -1
	if k > 0 {
		seg.indexedPos = seg.index[k-1].pos
	}
	return nil
}

// DiscardDamage removes the damaged tail reported by Open, durably: it cuts
// the damaged segment at the damage (rewriting the header of a first segment
// whose header is bad), removes the segments after it, and syncs. Without
// damage it does nothing.
func (l *Log) DiscardDamage() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.damage == nil {
		return nil
	}
	// First, durably, the fact that this log lost records: a crash after
	// the discard must not make a shortened log look whole.
	if !l.unrepaired {
		if err := l.writeUnrepaired(); err != nil {
			return l.fail(err)
		}
	}
	if err := l.discard(); err != nil {
		return l.fail(err)
	}
	l.damage, l.repair = nil, repair{}
	return nil
}

// unrepairedName marks a log whose damaged tail was discarded and whose
// owner has not yet declared the loss repaired (MarkRepaired).
const unrepairedName = "UNREPAIRED"

func (l *Log) writeUnrepaired() error {
	f, err := l.fs.Create(l.segPath(unrepairedName))
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err == nil {
		l.unrepaired = true
	}
	return err
}

// Unrepaired reports whether the log lost records to damage (now or at an
// earlier open) and nobody has called MarkRepaired since.
func (l *Log) Unrepaired() bool { return l.unrepaired || l.damage != nil }

// MarkRepaired durably clears the mark DiscardDamage left: the caller has
// restored what the log lost (from other replicas) or knows it needs
// nothing back.
func (l *Log) MarkRepaired() error {
	if err := l.writable(); err != nil {
		return err
	}
	if !l.unrepaired {
		return nil
	}
	if err := l.fs.Remove(l.segPath(unrepairedName)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return l.fail(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.unrepaired = false
	return nil
}

func (l *Log) discard() error {
	rp := &l.repair
	for j := len(rp.remove) - 1; j >= 0; j-- {
		if err := l.fs.Remove(l.segPath(rp.remove[j])); err != nil && !errors.Is(err, vfs.ErrNotExist) {
			return err
		}
		l.dirDirty = true
	}
	if seg := rp.seg; seg != nil {
		if rp.rewriteHeader {
			// The first segment's header is bad: it starts anew, empty,
			// with the slots of the options (the scan set them).
			assert(seg.end == seg.base && seg.slots == l.opts.SlotsPerSegment, "bad header with frames")
			if err := l.cutSegment(seg, 0, seg.base, 0); err != nil {
				return err
			}
			var h [segHeaderBytes]byte
			putSegHeader(h[:], seg.base, seg.slots)
			if err := l.writeAt(seg, h[:], 0, int64(len(h))); err != nil {
				return err
			}
			seg.size = seg.start()
		} else if err := l.cutSegment(seg, rp.pos, seg.end, rp.slotsHi); err != nil {
			return err
		}
	}
	l.resetBufs()
	return l.syncAll()
}

// Close writes the buffer (unless the log failed) and closes the files
// without syncing.
func (l *Log) Close() error {
	if l.closed {
		return ErrClosed
	}
	var err error
	if l.failErr == nil {
		err = l.flush()
	}
	for _, seg := range l.segs {
		if seg.f != nil {
			if cerr := seg.f.Close(); err == nil {
				err = cerr
			}
			seg.f = nil
		}
	}
	l.closed = true
	l.releaseBuffers()
	return err
}

// Release ends a log that is abandoned without being closed (its process
// is gone: a power loss, a kill): nothing is written, its files are left
// as they are, and its buffers go back to Options.Buffers. The log is
// closed afterwards.
func (l *Log) Release() {
	if l.closed {
		return
	}
	l.closed = true
	l.releaseBuffers()
}

func (l *Log) releaseBuffers() {
	b := l.opts.Buffers
	b.put(l.win)
	b.put(l.buf)
	b.put(l.slotBuf)
	b.put(l.slotWin)
	for _, p := range l.lentBlocks {
		b.put(p)
	}
	for _, p := range l.spareBlocks {
		b.put(p)
	}
	l.win, l.winSeg, l.buf, l.slotBuf, l.slotWin, l.slotWinSeg = nil, nil, nil, nil, nil, nil
	l.lentBlocks, l.spareBlocks, l.lentRecs = nil, nil, nil
}

// findSeg returns the index of the segment holding offset off: the last one
// whose base is <= off.
func (l *Log) findSeg(off uint64) int {
	lo, hi := 0, len(l.segs) // invariant: segs[lo-1].base <= off < segs[hi].base
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.segs[m].base <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
}
