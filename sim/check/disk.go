package check

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core/record"
)

// Disk is a fake disk's durable state as the checkers read it: what a power
// loss would leave (sim/memfs implements it). The checkers read the segment
// files through it with their own parser of the format documented in
// io/seglog's doc.go; they never call io/seglog, whose claims they judge.
type Disk interface {
	// DurableList returns the sorted names durable in dir.
	DurableList(dir string) ([]string, error)
	// DurableDirGen changes whenever dir's durable entries may have
	// changed.
	DurableDirGen(dir string) uint64
	// ReadDurable reads the durable contents of name at off (ReadAt rules).
	ReadDurable(name string, p []byte, off int64) (int, error)
}

// Media is what a Disk may also tell (sim/memfs does): whether a file
// holds bytes its medium cannot read. A log's scan reads past its last
// frame to find its end, so an unreadable range there, which no frame the
// parser follows covers, still leaves the copy unable to prove its end.
type Media interface {
	HasUnreadable(name string) bool
}

// ChangeLog is what a Disk may also tell (sim/memfs does): where durable
// bytes changed. With it, reading a log again after a crash or an injected
// fault reads only the frames, headers and header copies whose bytes may
// have changed since they were last read, instead of the whole log; the
// verdicts are the same as a full reading (TestIncrementalRereadIsFull).
// The checkers still read what they judge from the durable bytes with
// their own parser; a change log only says what need not be read again.
type ChangeLog interface {
	// DurableStamp returns a stamp such that every change made after the
	// call is reported by DurableChanges for it.
	DurableStamp() uint64
	// DurableChanges calls f (if not nil) with ranges covering every byte
	// of the file under the durable name whose durable value,
	// readability or presence changed after stamp since, and returns the
	// file's identity (another file under the name has another).
	DurableChanges(name string, since uint64, f func(lo, hi int64)) (file uint64, err error)
	// DurableFiles calls f with each file durable in dir (not its
	// subdirectories) and its identity, as DurableChanges returns it, in
	// no particular order.
	DurableFiles(dir string, f func(name string, file uint64)) error
}

// Ident identifies a record: its epoch, kind, body length and first 8 body
// bytes (a publish's key, an ack's acked offset). One owner writes each
// offset at most once per epoch, and a simulated publish's key is unique, so
// two copies with the same Ident are the same record.
type Ident struct {
	Epoch uint64
	Val   uint64
	Len   uint32
	Kind  record.Kind // 0: no intact record
}

// IdentOf returns the identity of r.
func IdentOf(r *record.Record) Ident {
	return identOf(r.Epoch, r.Kind, r.Body)
}

func identOf(epoch uint64, kind record.Kind, body []byte) Ident {
	id := Ident{Epoch: epoch, Kind: kind, Len: uint32(len(body))}
	if len(body) >= 8 {
		id.Val = binary.LittleEndian.Uint64(body)
	}
	return id
}

// Intact reports whether the identity names a record.
func (id Ident) Intact() bool { return id.Kind != 0 }

func (id Ident) String() string {
	if !id.Intact() {
		return "none"
	}
	return "e=" + strconv.FormatUint(id.Epoch, 10) + " " + id.Kind.String() +
		" val=" + strconv.FormatUint(id.Val, 16) + " len=" + strconv.FormatUint(uint64(id.Len), 10)
}

// The segment format, version 2, as io/seglog's doc.go specifies it. These
// constants are restated here on purpose: the parser is an independent
// reading of the specification.
const (
	dSegMagic       = "SLUICSEG"
	dSegVersion     = 2
	dSegHeaderBytes = 32
	dSlotBytes      = 32
	dSlotsMax       = 1 << 20
	dFrameHeader    = 8
	dPayloadMin     = 17
	dPayloadMax     = dPayloadMin + record.BodyBytesMax
	dSegSuffix      = ".seg"
	dReadChunkBytes = 1 << 20
)

var dCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// diskSeg is the parse state of one segment file.
type diskSeg struct {
	name  string
	path  string // dir/name
	base  uint64
	slots int        // from the header; 0 until the header was read
	locs  []frameLoc // where each frame seen intact lies, by index
	pos   int64      // where the next new frame is looked for
	done  bool       // nothing more can be found in it (full, or lost track)
	// atTail: a parse stopped at pos with no frame durable there yet (the
	// end of the file, or the zeros a log's file runs ahead with): from
	// then on the segment is followed through small windows
	// (tailWindowBytes), since what is new at each look is a frame or two
	// and a full window would copy the zeros after them every time.
	atTail bool

	// For rereads with a ChangeLog (see DiskLog.Reparse): file is the
	// identity of the file read under the name (fileKnown: one was);
	// mixed, that another file stood under the name at some read since
	// the last Reparse; headerOK, that the header was valid at the last
	// reading of it; slotsOK, that the header copies were all as they
	// should be for slotsOKLocs frames at the last check.
	file        uint64
	fileKnown   bool
	mixed       bool
	headerOK    bool
	slotsOK     bool
	slotsOKLocs int
}

// frameLoc is where a frame was seen: the checker remembers it, so that
// damage to a frame, its header copy or the segment header later does not
// hide the frames after it.
type frameLoc struct {
	pos int64
	n   uint32 // the frame's length field
}

func (seg *diskSeg) next() uint64 { return seg.base + uint64(len(seg.locs)) }

// DiskLog is what one replica's disk durably holds of one queue's log: for
// each offset, the identity of an intact copy (CRC-valid frame carrying that
// offset), or none. It is built by Resume, which reads only what was made
// durable since the last read, and Reparse, which reads again every frame
// seen so far (after a crash or an injected fault may have changed them) at
// the place it was seen: the cost is linear in what was written, plus a
// full read after each such event.
type DiskLog struct {
	dir  string
	ids  *identTable // the identities recs name (its queue's)
	recs []identRef  // recs[o] for o in [0, len(recs)); none below start
	// start: the log's durable start (its START file, retention; 0
	// without one): segments below it are outside the log
	start uint64
	segs  []diskSeg
	// listed: the durable generation at the last listing; the directory
	// is listed again only when it changed.
	listed   uint64
	listedOK bool
	note     string // why a part of the files could not be read
	// damaged: at the last Reparse, a frame or a header copy below the end
	// did not hold what the format says: the log will find damage there.
	damaged bool
	buf     []byte
	// The read window: bytes [winPos, winPos+len(buf)) of segment winSeg,
	// valid within one Resume or Reparse (the durable bytes do not change
	// during one).
	winSeg *diskSeg
	winPos int64
	small  [dSlotBytes]byte // readExact's bytes
	// stamp: the disk's change stamp at the last Reparse (stamped: there
	// was one, on a disk with a ChangeLog): what changed since then is
	// what the next Reparse must read again. fullRereads turns the
	// incremental reading off (tests compare the two).
	stamp       uint64
	stamped     bool
	fullRereads bool
	changed     []changedSpan  // scratch: the ranges changed in one segment
	ranges      []offRange     // scratch: segsDisjoint's
	knownNames  map[string]int // scratch: list's index of each known segment by name
	dirFiles    []dirFile      // scratch: list's entries of the directory
	skipped     int            // frames a Reparse did not read again (tests)
	freeLocs    [][]frameLoc   // tables of segments gone, to reuse (giveLocs)
	// shadow, when set (CrossCheck), reads everything on every reread
	// and must agree after each.
	shadow *DiskLog
}

// CrossCheck makes the log read every reread twice, incrementally and in
// full (a shadow fed the same calls), and panic when the two differ: a
// test's check of the incremental reading in whole simulated runs.
func (l *DiskLog) CrossCheck() {
	if l.shadow != nil {
		return
	}
	sh := newDiskLog(l.ids, l.dir)
	sh.fullRereads = true
	sh.recs = slices.Clone(l.recs)
	sh.segs = slices.Clone(l.segs)
	for i := range sh.segs {
		sh.segs[i].locs = slices.Clone(sh.segs[i].locs)
	}
	sh.listed, sh.listedOK, sh.note, sh.damaged, sh.start = l.listed, l.listedOK, l.note, l.damaged, l.start
	l.shadow = sh
}

func (l *DiskLog) crossChecked(what string) {
	if s := compareDiskLogs(l, l.shadow); s != "" {
		panic("check: the incremental " + what + " of " + l.dir + " differs from a full one: " + s)
	}
}

// changedSpan is a range [lo, hi) of a segment file whose durable bytes may
// have changed.
type changedSpan struct{ lo, hi int64 }

// locsPresizeMax bounds the frame locations reserved for a new segment.
const locsPresizeMax = 1 << 13

// windowBytes is how much the parser reads at once: one read of the disk
// serves the frames of many small records.
const windowBytes = 64 << 10

// tailWindowBytes: the read window at a segment's end (diskSeg.atTail),
// where a look finds a frame or two and then zeros: enough for those in
// one read, little to copy of the zeros.
const tailWindowBytes = 2 << 10

// Damaged reports whether the last full read found a damaged frame or
// header copy: a log that holds one is not a whole copy, even when every
// record is intact (a damaged header copy makes the log discard from it).
func (l *DiskLog) Damaged() bool { return l.damaged }

// NewDiskLog returns the (empty) truth of the log in dir.
func NewDiskLog(dir string) *DiskLog { return newDiskLog(&identTable{}, dir) }

// newDiskLog returns the truth of the log in dir, with its identities in
// ids (its queue's, shared by the queue's replicas and their generations).
func newDiskLog(ids *identTable, dir string) *DiskLog { return &DiskLog{dir: dir, ids: ids} }

// Start returns the log's durable start (retention).
func (l *DiskLog) Start() uint64 { return l.start }

// At returns the identity of the intact copy at offset o, if any.
func (l *DiskLog) At(o uint64) Ident {
	return l.ids.id(o, l.refAt(o))
}

// refAt returns the reference to the identity at offset o (0: none).
func (l *DiskLog) refAt(o uint64) identRef {
	if o >= uint64(len(l.recs)) || o < l.start {
		return 0
	}
	return l.recs[o]
}

// appendRefs appends to dst the refs of offsets [0, end) (refAt's), and
// returns it.
func (l *DiskLog) appendRefs(dst []identRef, end uint64) []identRef {
	k := len(dst)
	n := min(end, uint64(len(l.recs)))
	dst = append(dst, l.recs[:n]...)
	clear(dst[k : k+int(min(l.start, n))]) // none below the start
	for uint64(len(dst)-k) < end {
		dst = append(dst, 0)
	}
	return dst
}

// Len returns one past the highest offset with an intact copy.
func (l *DiskLog) Len() uint64 {
	n := len(l.recs)
	for n > 0 && l.recs[n-1] == 0 {
		n--
	}
	return uint64(n)
}

// Prefix returns the end of the longest run of intact copies from the
// log's start.
func (l *DiskLog) Prefix() uint64 {
	for o := l.start; o < uint64(len(l.recs)); o++ {
		if l.recs[o] == 0 {
			return o
		}
	}
	return max(uint64(len(l.recs)), l.start)
}

// Note says why parts of the files could not be read ("" if none).
func (l *DiskLog) Note() string { return l.note }

// Cut forgets the frames from offset end on: the log truncated them (the
// segments after are removed, the one holding end is cut).
func (l *DiskLog) Cut(end uint64) {
	if l.shadow != nil {
		l.shadow.Cut(end)
	}
	k := 0
	for i := range l.segs {
		seg := &l.segs[i]
		if seg.base >= end && !(seg.base == 0 && end == 0) {
			l.giveLocs(seg.locs)
			continue // removed by the truncation
		}
		if keep := end - seg.base; uint64(len(seg.locs)) > keep {
			seg.locs = seg.locs[:keep]
			seg.done = false
			seg.slotsOK = false // frames found at these slots again are others
			seg.pos = seg.frameStart()
			if keep > 0 {
				last := seg.locs[keep-1]
				seg.pos = last.pos + dFrameHeader + int64(last.n)
			}
		}
		l.segs[k] = *seg
		k++
	}
	clear(l.segs[k:])
	l.segs = l.segs[:k]
	l.winSeg = nil
	l.listedOK = false // removed segments may come back under their names
	if uint64(len(l.recs)) > end {
		clear(l.recs[end:])
		l.recs = l.recs[:end]
	}
}

func (seg *diskSeg) frameStart() int64 {
	return dSegHeaderBytes + dSlotBytes*int64(seg.slots)
}

// Reparse reads every frame seen so far again, where it was seen, then
// whatever is new. On a disk with a ChangeLog it reads again only what may
// have changed since the last Reparse: a frame, header or header-copy
// region whose bytes did not change keeps the verdict it had when it was
// last read (a frame that was valid keeps its identity; anything found
// wrong is read again), so the result is what reading everything would
// give, and a restart costs what was written since the last one instead of
// the whole log.
func (l *DiskLog) Reparse(d Disk) {
	l.reparse(d)
	if l.shadow != nil {
		l.shadow.Reparse(d)
		l.crossChecked("reread")
	}
}

func (l *DiskLog) reparse(d Disk) {
	l.winSeg = nil
	since := l.stamp
	cl, _ := d.(ChangeLog)
	incr := cl != nil && l.stamped && !l.fullRereads && l.segsDisjoint()
	if cl != nil {
		// The durable bytes do not change while they are read: what
		// changes from now on is what the next Reparse reads again.
		l.stamp, l.stamped = cl.DurableStamp(), true
	}
	if !incr {
		clear(l.recs)
		l.recs = l.recs[:0]
	}
	l.note, l.damaged = "", false
	for i := range l.segs {
		seg := &l.segs[i]
		all := !incr || !l.loadChanges(cl, seg, since)
		if seg.slots > 0 && (all || !seg.headerOK || l.changedIn(0, dSegHeaderBytes)) {
			h, err := l.read(d, seg, 0, dSegHeaderBytes)
			seg.headerOK = err == nil && headerOK(h, seg.base, seg.slots)
			if !seg.headerOK {
				// The frames are still found where they were seen, but the
				// log will not read past this header.
				l.setNote(seg.name + ": segment header damaged")
				l.damaged = true
			}
		}
		for j, loc := range seg.locs {
			o := seg.base + uint64(j)
			if incr {
				// A frame valid when last read (its identity is there: the
				// segments' offsets are disjoint, so no other frame put it)
				// whose bytes did not change since is valid still.
				if !all && o < uint64(len(l.recs)) && l.recs[o] != 0 && !l.changedIn(loc.pos, loc.pos+dFrameHeader+int64(loc.n)) {
					l.skipped++
					continue
				}
				if o < uint64(len(l.recs)) {
					l.recs[o] = 0
				}
			}
			fr, err := l.read(d, seg, loc.pos, dFrameHeader+int(loc.n))
			if err != nil || len(fr) < dFrameHeader+int(loc.n) {
				l.setNote(seg.name + ": frame of offset " + strconv.FormatUint(o, 10) + " unreadable or gone")
				l.damaged = true
				continue
			}
			if id, ok := frameIdent(fr, o); ok {
				l.put(o, id)
			} else {
				l.setNote(seg.name + ": frame of offset " + strconv.FormatUint(o, 10) + " damaged")
				l.damaged = true
			}
		}
		seg.done = uint64(len(seg.locs)) >= uint64(seg.slots) && seg.slots > 0
		if !all {
			continue
		}
		// Read whole: from now on the file under the name is this one.
		seg.mixed, seg.slotsOK, seg.fileKnown = false, false, false
		if cl != nil {
			l.noteFile(cl, seg)
		}
	}
	if incr {
		// As a full reading leaves it: nothing past the last valid frame.
		n := len(l.recs)
		for n > 0 && l.recs[n-1] == 0 {
			n--
		}
		l.recs = l.recs[:n]
	}
	l.resume(d)
	for i := range l.segs {
		seg := &l.segs[i]
		if incr && seg.slotsOK && seg.slotsOKLocs == len(seg.locs) && l.loadChanges(cl, seg, since) &&
			!l.changedIn(dSegHeaderBytes, dSegHeaderBytes+dSlotBytes*int64(seg.slots)) {
			continue // the same copies, for the same frames: as good as then
		}
		l.checkSlots(d, seg) // against every frame now known
	}
}

// segsDisjoint reports whether no two segments' frames claim one offset:
// then each offset's identity in recs was put by the one frame seen there.
// Linear in the segments when they are in base order (they nearly always
// are: listing appends names in order), else it sorts their ranges.
func (l *DiskLog) segsDisjoint() bool {
	ranges := l.ranges[:0]
	sorted := true
	for i := range l.segs {
		if seg := &l.segs[i]; len(seg.locs) > 0 {
			r := offRange{seg.base, seg.next()}
			sorted = sorted && (len(ranges) == 0 || ranges[len(ranges)-1].lo <= r.lo)
			ranges = append(ranges, r)
		}
	}
	l.ranges = ranges
	if !sorted {
		slices.SortFunc(ranges, func(a, b offRange) int { return cmp.Compare(a.lo, b.lo) })
	}
	for i := 1; i < len(ranges); i++ {
		if ranges[i].lo < ranges[i-1].hi {
			return false
		}
	}
	return true
}

// offRange is a segment's offsets [lo, hi) with a frame seen.
type offRange struct{ lo, hi uint64 }

// loadChanges loads into l.changed the ranges of seg's file that changed
// since stamp since. It reports false when the segment must be read whole:
// the file under its name is not the one read last (or another stood there
// at a read since), or it is not durable.
func (l *DiskLog) loadChanges(cl ChangeLog, seg *diskSeg, since uint64) bool {
	l.changed = l.changed[:0]
	file, err := cl.DurableChanges(seg.path, since, func(lo, hi int64) {
		l.changed = append(l.changed, changedSpan{lo, hi})
	})
	return err == nil && seg.fileKnown && file == seg.file && !seg.mixed
}

// changedIn reports whether a range loaded by loadChanges overlaps [lo, hi).
func (l *DiskLog) changedIn(lo, hi int64) bool {
	for _, c := range l.changed {
		if c.lo < hi && lo < c.hi {
			return true
		}
	}
	return false
}

// checkSlots reads seg's header copies: each frame seen must have its copy,
// and no copy may stand beyond them. A mismatch is damage the log will find
// (it marks the log damaged, not the records).
func (l *DiskLog) checkSlots(d Disk, seg *diskSeg) {
	if seg.slots == 0 {
		return
	}
	seg.slotsOK, seg.slotsOKLocs = false, len(seg.locs)
	region, err := l.read(d, seg, dSegHeaderBytes, dSlotBytes*seg.slots)
	if err != nil {
		l.setNote(seg.name + ": header copies unreadable")
		l.damaged = true
		return
	}
	bad := false
	for i := 0; i < seg.slots; i++ {
		var s []byte
		if (i+1)*dSlotBytes <= len(region) {
			s = region[i*dSlotBytes : (i+1)*dSlotBytes]
		}
		if i >= len(seg.locs) {
			if !slotZero(s) {
				l.setNote(seg.name + ": stray header copy at slot " + strconv.Itoa(i))
				bad = true
			}
			continue
		}
		if len(s) < dSlotBytes || binary.LittleEndian.Uint32(s[28:32]) != crc32.Checksum(s[0:28], dCastagnoli) ||
			binary.LittleEndian.Uint64(s[0:8]) != seg.base+uint64(i) || binary.LittleEndian.Uint32(s[20:24]) != seg.locs[i].n {
			l.setNote(seg.name + ": header copy of offset " + strconv.FormatUint(seg.base+uint64(i), 10) + " missing or damaged")
			bad = true
		}
	}
	l.damaged = l.damaged || bad
	seg.slotsOK = !bad
}

// slotZero reports whether a slot's bytes (a whole slot, or none) are all
// zero: no header copy stands there.
func slotZero(s []byte) bool {
	if len(s) != dSlotBytes {
		return len(s) == 0
	}
	return binary.LittleEndian.Uint64(s[0:8])|binary.LittleEndian.Uint64(s[8:16])|
		binary.LittleEndian.Uint64(s[16:24])|binary.LittleEndian.Uint64(s[24:32]) == 0
}

// Resume reads what was made durable since the last read, assuming bytes
// already read did not change.
func (l *DiskLog) Resume(d Disk) {
	l.resume(d)
	if l.shadow != nil {
		l.shadow.Resume(d)
		l.crossChecked("read")
	}
}

func (l *DiskLog) resume(d Disk) {
	l.winSeg = nil
	cl, _ := d.(ChangeLog)
	if gen := d.DurableDirGen(l.dir); !l.listedOK || gen != l.listed {
		// The names may refer to other files now (only a change of the
		// directory's durable entries changes its generation): list
		// learns which, in the same pass.
		l.list(d, cl)
		l.listed, l.listedOK = gen, true
	}
	for i := range l.segs {
		seg := &l.segs[i]
		if !seg.done {
			if cl != nil && !seg.fileKnown {
				l.noteFile(cl, seg)
			}
			l.parseSeg(d, seg)
		}
	}
}

// noteFile learns which file the segment's name refers to: a segment read
// from another file than the one its last Reparse read is read whole at
// the next Reparse (mixed).
func (l *DiskLog) noteFile(cl ChangeLog, seg *diskSeg) {
	// Not durable (an error): nothing is read under the name until it is
	// again, and then the file it refers to is compared.
	if file, err := cl.DurableChanges(seg.path, math.MaxUint64, nil); err == nil {
		seg.noteFile(file)
	}
}

// noteFile takes file as the one the segment's durable name refers to now.
func (seg *diskSeg) noteFile(file uint64) {
	switch {
	case !seg.fileKnown:
		seg.file, seg.fileKnown = file, true
	case file != seg.file:
		seg.file, seg.mixed = file, true
	}
}

// The seal receipt beside the segments (io/seglog's doc.go): magic, payload
// length u32, payload, CRC32C u32 of everything before it.
const (
	dSealName     = "SEAL"
	dSealMagic    = "SLUICSEAL1"
	dSealFixed    = len(dSealMagic) + 4 + 4
	dSealBytesMax = 64<<10 + dSealFixed
	dBindName     = "BIND"
	dBindMagic    = "SLUICBIND1"
	// dUnrepairedName marks a log that discarded a damaged tail and was
	// not declared repaired since (io/seglog's DiscardDamage)
	dUnrepairedName = "UNREPAIRED"
)

// Unrepaired reports whether the log's live generation durably holds the
// mark of a discarded damaged tail: the system takes such a copy for one
// that lost what it acknowledged (a learner's until its admission), however
// many records it holds again.
func (l *DiskLog) Unrepaired(d Disk) bool {
	names, err := d.DurableList(l.dir)
	return err == nil && slices.Contains(names, dUnrepairedName)
}

// MediaReadable reports whether every durable segment file of the log's
// live generation reads whole (always, on a Disk that does not tell).
func (l *DiskLog) MediaReadable(d Disk) bool {
	m, ok := d.(Media)
	if !ok {
		return true
	}
	names, err := d.DurableList(l.dir)
	if err != nil {
		return true
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".seg") && m.HasUnreadable(l.dir+"/"+n) {
			return false
		}
	}
	return true
}

// FlipsPastFrames returns those of flips that still lie past their
// segment's last frame with their byte not zero: garbage after the frames,
// which the log's own scan takes for a torn or lost frame. A flip in
// another file (an older generation, a segment gone), or that frames now
// cover (the parse judges those bytes), or whose byte is zero again, is
// dropped. It reuses flips' storage.
func (l *DiskLog) FlipsPastFrames(d Disk, flips []flipAt) []flipAt {
	kept := flips[:0]
	for _, f := range flips {
		i := slices.IndexFunc(l.segs, func(s diskSeg) bool { return s.path == f.path })
		if i < 0 || f.off < l.segs[i].pos {
			continue
		}
		var b [1]byte
		if n, _ := d.ReadDurable(f.path, b[:], f.off); n == 1 && b[0] != 0 {
			kept = append(kept, f)
		}
	}
	clear(flips[len(kept):])
	return kept
}

// SealIntact reports whether the log's durable seal receipt, if it has
// one, checks (magic, length and CRC): a receipt that does not makes the
// log's seals damaged witnesses, so the fault budget counts it as damage.
func (l *DiskLog) SealIntact(d Disk) bool {
	names, err := d.DurableList(l.dir)
	if err != nil || !slices.Contains(names, dSealName) {
		return true
	}
	return receiptIntact(d, l.dir+"/"+dSealName, dSealMagic)
}

// BindIntact reports whether the log's live generation durably holds a
// storage binding that checks (its magic, length and CRC32C; io/seglog's
// bind.go): a copy whose binding is gone (its directory lost or emptied)
// is no whole copy to the system, however many records it holds again,
// until it is bound again.
// A log never bound (no marker beside its directory) is new: intact.
func (l *DiskLog) BindIntact(d Disk) bool {
	base := l.dir
	if strings.HasPrefix(path.Base(base), "gen-") {
		base = path.Dir(base)
	}
	parent, err := d.DurableList(path.Dir(base))
	if err != nil || !slices.Contains(parent, path.Base(base)+".bound") {
		return true
	}
	names, err := d.DurableList(l.dir)
	return err == nil && slices.Contains(names, dBindName) && receiptIntact(d, l.dir+"/"+dBindName, dBindMagic)
}

// receiptIntact reports whether the receipt file name (magic, payload
// length u32, payload, CRC32C u32) durably checks.
func receiptIntact(d Disk, name, magic string) bool {
	head := make([]byte, len(magic)+4)
	if n, _ := d.ReadDurable(name, head, 0); n < len(head) || string(head[:len(magic)]) != magic {
		return false
	}
	size := len(magic) + 8 + int(binary.LittleEndian.Uint32(head[len(magic):]))
	if size > dSealBytesMax {
		return false
	}
	b := make([]byte, size+1) // one byte more: a longer file does not check
	if n, _ := d.ReadDurable(name, b, 0); n != size {
		return false
	}
	b = b[:size]
	return crc32.Checksum(b[:size-4], dCastagnoli) == binary.LittleEndian.Uint32(b[size-4:])
}

// list learns the segment files durable in the directory, and the log's
// durable start: the segments below it are outside the log (what a
// retention removes, or an interrupted one left). On a disk that names
// its files (cl not nil) it also learns which file each known segment's
// name refers to now.
//
// One pass over the directory, with the known segments found by name in
// a map, not by a scan per name: a deep queue's log has thousands of
// segments and is listed again at every change of its directory.
func (l *DiskLog) list(d Disk, cl ChangeLog) {
	l.dirFiles = l.dirFiles[:0]
	var err error
	if cl != nil {
		err = cl.DurableFiles(l.dir, func(name string, file uint64) {
			l.dirFiles = append(l.dirFiles, dirFile{name, file})
		})
	} else {
		var names []string
		names, err = d.DurableList(l.dir)
		for _, name := range names {
			l.dirFiles = append(l.dirFiles, dirFile{name: name})
		}
	}
	if err != nil {
		return // no durable directory yet: nothing is durable
	}
	if slices.ContainsFunc(l.dirFiles, func(f dirFile) bool { return f.name == dStartName }) {
		if start, ok := durableStart(d, l.dir+"/"+dStartName); ok {
			l.setStart(start)
		} else {
			l.setNote("START damaged")
		}
	}
	if l.knownNames == nil {
		l.knownNames = make(map[string]int, len(l.segs))
	}
	clear(l.knownNames)
	for i := range l.segs {
		l.knownNames[l.segs[i].name] = i
	}
	fresh := l.dirFiles[:0] // the new segments' entries, in place
	for _, f := range l.dirFiles {
		digits, ok := strings.CutSuffix(f.name, dSegSuffix)
		if !ok {
			continue
		}
		if i, known := l.knownNames[f.name]; known {
			if cl != nil {
				l.segs[i].noteFile(f.file)
			}
			continue
		}
		if base, err := strconv.ParseUint(digits, 10, 64); err == nil && len(digits) == 20 && base < l.start {
			continue
		}
		fresh = append(fresh, f)
	}
	// The new ones in name order (a disk may list in any), which is base
	// order: what a run does never depends on a listing's order.
	slices.SortFunc(fresh, func(a, b dirFile) int { return strings.Compare(a.name, b.name) })
	for _, f := range fresh {
		digits, _ := strings.CutSuffix(f.name, dSegSuffix)
		base, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || len(digits) != 20 {
			l.setNote("malformed segment name " + f.name)
			continue
		}
		seg := diskSeg{name: f.name, path: l.dir + "/" + f.name, base: base}
		if cl != nil {
			seg.noteFile(f.file)
		}
		l.segs = append(l.segs, seg)
	}
}

// dirFile is a durable entry of a log's directory: its name and, on a disk
// that names files, the file it refers to.
type dirFile struct {
	name string
	file uint64
}

// The log's start beside the segments (io/seglog's retain.go): magic, the
// start u64, a count u32 of history entries (epoch u64, offset u64 each),
// CRC32C u32 of everything before it.
const (
	dStartName       = "START"
	dStartMagic      = "SLUICSTART"
	dStartFixed      = len(dStartMagic) + 8 + 4 + 4
	dStartEntriesMax = 1 << 16
)

// durableStart reads the durable START file name: ok false when it does
// not check.
func durableStart(d Disk, name string) (uint64, bool) {
	var head [len(dStartMagic) + 12]byte
	if n, _ := d.ReadDurable(name, head[:], 0); n < len(head) || string(head[:len(dStartMagic)]) != dStartMagic {
		return 0, false
	}
	count := binary.LittleEndian.Uint32(head[len(dStartMagic)+8:])
	if count > dStartEntriesMax {
		return 0, false
	}
	size := dStartFixed + 16*int(count)
	b := make([]byte, size+1) // one byte more: a longer file does not check
	if n, _ := d.ReadDurable(name, b, 0); n != size {
		return 0, false
	}
	if crc32.Checksum(b[:size-4], dCastagnoli) != binary.LittleEndian.Uint32(b[size-4:size]) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(head[len(dStartMagic):]), true
}

// setStart moves the log's start: the segments below it leave the log,
// and so do their records.
func (l *DiskLog) setStart(start uint64) {
	if start == l.start {
		return
	}
	l.start = start
	k := 0
	for i := range l.segs {
		if l.segs[i].base < start {
			l.giveLocs(l.segs[i].locs)
			continue
		}
		l.segs[k] = l.segs[i]
		k++
	}
	clear(l.segs[k:])
	l.segs = l.segs[:k]
	l.winSeg = nil
	clear(l.recs[:min(start, uint64(len(l.recs)))])
}

// locsKeptMax bounds the frame-location tables kept for reuse.
const locsKeptMax = 8

// giveLocs keeps the frame locations of a segment that left the log for
// the next segment found: retention deletes a log's segments from its
// head as new ones come at its end, and each table is a segment's slots.
func (l *DiskLog) giveLocs(locs []frameLoc) {
	if cap(locs) > 0 && len(l.freeLocs) < locsKeptMax {
		l.freeLocs = append(l.freeLocs, locs[:0])
	}
}

// takeLocs returns an empty table kept by giveLocs, or nil.
func (l *DiskLog) takeLocs() []frameLoc {
	k := len(l.freeLocs)
	if k == 0 {
		return nil
	}
	locs := l.freeLocs[k-1]
	l.freeLocs[k-1] = nil
	l.freeLocs = l.freeLocs[:k-1]
	return locs
}

func (l *DiskLog) setNote(s string) {
	if l.note == "" {
		l.note = s
	}
}

// read returns n durable bytes of the segment from pos on (fewer at the end
// of the file), through the read window. The slice is valid until the next
// read.
func (l *DiskLog) read(d Disk, seg *diskSeg, pos int64, n int) ([]byte, error) {
	if l.winSeg == seg && pos >= l.winPos && pos+int64(n) <= l.winPos+int64(len(l.buf)) {
		k := pos - l.winPos
		return l.buf[k : k+int64(n)], nil
	}
	want := max(n, windowBytes)
	if seg.atTail {
		want = max(n, tailWindowBytes)
	}
	if cap(l.buf) < want {
		l.buf = make([]byte, want)
	}
	p := l.buf[:want]
	l.winSeg = nil
	k, err := d.ReadDurable(seg.path, p, pos)
	// The plain comparison first: nearly every parse ends on io.EOF at the
	// durable end, and errors.Is costs a reflective look at its target.
	if err != nil && err != io.EOF && !errors.Is(err, io.EOF) {
		if k >= n {
			return p[:n], nil // the bytes wanted are readable; the error lies beyond
		}
		// An unreadable range may lie past the bytes wanted: read exactly
		// them.
		k, err = d.ReadDurable(seg.path, p[:n], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return p[:k], err
		}
		return p[:k], nil
	}
	l.buf, l.winSeg, l.winPos = p[:k], seg, pos
	return p[:min(k, n)], nil
}

// readExact reads bytes [pos, pos+n) of seg's durable contents (n at most
// dSlotBytes) past the window, which it leaves as it was: a header copy
// looked up between two frames. The result is valid until the next call.
func (l *DiskLog) readExact(d Disk, seg *diskSeg, pos int64, n int) ([]byte, error) {
	p := l.small[:n]
	k, err := d.ReadDurable(seg.path, p, pos)
	if err != nil && err != io.EOF && !errors.Is(err, io.EOF) {
		return p[:k], err
	}
	return p[:k], nil
}

// headerOK reports whether h is the valid header of a segment at base with
// the given slot count.
func headerOK(h []byte, base uint64, slots int) bool {
	return len(h) == dSegHeaderBytes && string(h[0:8]) == dSegMagic &&
		binary.LittleEndian.Uint32(h[24:28]) == crc32.Checksum(h[0:24], dCastagnoli) &&
		binary.LittleEndian.Uint32(h[8:12]) == dSegVersion && binary.LittleEndian.Uint64(h[16:24]) == base &&
		binary.LittleEndian.Uint32(h[12:16]) == uint32(slots) && binary.LittleEndian.Uint32(h[28:32]) == 0
}

// frameIdent validates a whole frame carrying offset o and returns its
// record's identity.
func frameIdent(fr []byte, o uint64) (Ident, bool) {
	if len(fr) < dFrameHeader+dPayloadMin {
		return Ident{}, false
	}
	n := binary.LittleEndian.Uint32(fr[0:4])
	if int(n) != len(fr)-dFrameHeader {
		return Ident{}, false
	}
	c := crc32.Update(0, dCastagnoli, fr[0:4])
	c = crc32.Update(c, dCastagnoli, fr[dFrameHeader:])
	if c != binary.LittleEndian.Uint32(fr[4:8]) || binary.LittleEndian.Uint64(fr[16:24]) != o {
		return Ident{}, false
	}
	return identOf(binary.LittleEndian.Uint64(fr[8:16]), record.Kind(fr[24]), fr[25:]), true
}

// parseSeg reads new frames of seg from where the last parse stopped.
func (l *DiskLog) parseSeg(d Disk, seg *diskSeg) {
	if seg.slots == 0 {
		h, err := l.read(d, seg, 0, dSegHeaderBytes)
		if err != nil || len(h) < dSegHeaderBytes {
			return // a header not (yet) durable or readable
		}
		if string(h[0:8]) != dSegMagic ||
			binary.LittleEndian.Uint32(h[24:28]) != crc32.Checksum(h[0:24], dCastagnoli) ||
			binary.LittleEndian.Uint32(h[8:12]) != dSegVersion ||
			binary.LittleEndian.Uint64(h[16:24]) != seg.base {
			l.setNote(seg.name + ": bad segment header")
			seg.done = true
			return
		}
		slots := binary.LittleEndian.Uint32(h[12:16])
		if slots == 0 || slots > dSlotsMax {
			l.setNote(seg.name + ": bad slot count")
			seg.done = true
			return
		}
		seg.slots = int(slots)
		seg.pos = seg.frameStart()
		seg.atTail = false
		// A segment holds at most one frame per slot: room for them now
		// (bounded: the count comes from the disk) rather than growth
		// frame by frame.
		if seg.locs == nil {
			seg.locs = l.takeLocs()
		}
		seg.locs = slices.Grow(seg.locs, min(seg.slots, locsPresizeMax))
	}
	for !seg.done {
		if len(seg.locs) >= seg.slots {
			seg.done = true // full: the format allows no more frames
			return
		}
		o := seg.next()
		h, err := l.read(d, seg, seg.pos, dFrameHeader)
		if err != nil || len(h) < dFrameHeader {
			if err == nil || !l.skip(d, seg) {
				seg.atTail = seg.atTail || err == nil
				return // nothing (more) durable here yet, or unreadable
			}
			continue
		}
		n := binary.LittleEndian.Uint32(h[0:4])
		if n < dPayloadMin || n > dPayloadMax {
			// No frame here (zeros), or a damaged one: the slot copy tells.
			if !l.skip(d, seg) {
				seg.atTail = seg.atTail || n == 0
				return
			}
			continue
		}
		fr, err := l.read(d, seg, seg.pos, dFrameHeader+int(n))
		if err != nil || len(fr) < dFrameHeader+int(n) {
			if err == nil || !l.skip(d, seg) {
				return // not whole yet, or unreadable
			}
			continue
		}
		id, ok := frameIdent(fr, o)
		if !ok {
			if !l.skip(d, seg) {
				return
			}
			continue
		}
		l.put(o, id)
		seg.locs = append(seg.locs, frameLoc{pos: seg.pos, n: n})
		seg.pos += int64(dFrameHeader + n)
	}
}

// skip steps over a frame that cannot be read, using its header copy (slot)
// to find where the next frame starts. It reports false when the slot is
// absent or unreadable: then the segment cannot be followed further now.
func (l *DiskLog) skip(d Disk, seg *diskSeg) bool {
	i := len(seg.locs)
	s, err := l.readExact(d, seg, dSegHeaderBytes+dSlotBytes*int64(i), dSlotBytes)
	if err != nil || len(s) < dSlotBytes {
		return false
	}
	if binary.LittleEndian.Uint32(s[28:32]) != crc32.Checksum(s[0:28], dCastagnoli) ||
		binary.LittleEndian.Uint64(s[0:8]) != seg.next() {
		return false // absent (all zero) or not a valid copy of this frame
	}
	n := binary.LittleEndian.Uint32(s[20:24])
	if n < dPayloadMin || n > dPayloadMax {
		return false
	}
	o := seg.next()
	l.setNote(seg.name + ": frame of offset " + strconv.FormatUint(o, 10) + " damaged, found past by its header copy")
	seg.locs = append(seg.locs, frameLoc{pos: seg.pos, n: n})
	seg.pos += int64(dFrameHeader + n)
	return true
}

func (l *DiskLog) put(o uint64, id Ident) {
	for uint64(len(l.recs)) <= o {
		l.recs = append(l.recs, 0)
	}
	l.recs[o] = l.ids.ref(o, id)
}

// sameIdents reports whether a and b (of one length) name the same
// identities at every offset (their tables may differ).
func sameIdents(a, b *DiskLog) bool {
	for o := range a.recs {
		if a.ids.id(uint64(o), a.recs[o]) != b.ids.id(uint64(o), b.recs[o]) {
			return false
		}
	}
	return true
}

// compareDiskLogs describes how two DiskLogs' views differ, "" if not.
func compareDiskLogs(a, b *DiskLog) string {
	switch {
	case len(a.recs) != len(b.recs) || !sameIdents(a, b):
		o := 0
		for o < min(len(a.recs), len(b.recs)) && a.At(uint64(o)) == b.At(uint64(o)) {
			o++
		}
		return fmt.Sprintf("records differ from offset %d (%d vs %d records): %v vs %v", o, len(a.recs), len(b.recs), a.At(uint64(o)), b.At(uint64(o)))
	case a.note != b.note:
		return fmt.Sprintf("notes differ: %q vs %q", a.note, b.note)
	case a.damaged != b.damaged:
		return fmt.Sprintf("damaged %v vs %v", a.damaged, b.damaged)
	case a.start != b.start:
		return fmt.Sprintf("start %d vs %d", a.start, b.start)
	case len(a.segs) != len(b.segs):
		return fmt.Sprintf("%d segments vs %d", len(a.segs), len(b.segs))
	}
	for i := range a.segs {
		x, y := &a.segs[i], &b.segs[i]
		if x.name != y.name || x.base != y.base || x.slots != y.slots || x.pos != y.pos || x.done != y.done || !slices.Equal(x.locs, y.locs) {
			return fmt.Sprintf("segment %d differs: %s base=%d slots=%d pos=%d done=%v locs=%d vs %s base=%d slots=%d pos=%d done=%v locs=%d",
				i, x.name, x.base, x.slots, x.pos, x.done, len(x.locs), y.name, y.base, y.slots, y.pos, y.done, len(y.locs))
		}
	}
	return ""
}
