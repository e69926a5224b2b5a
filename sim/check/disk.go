package check

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
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
	// ReadDurable reads the durable contents of name at off (ReadAt rules).
	ReadDurable(name string, p []byte, off int64) (int, error)
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
	base  uint64
	slots int    // from the header; 0 until the header was read
	pos   int64  // where the next frame is looked for
	next  uint64 // the offset the next frame must carry
	done  bool   // nothing more can be found in it (full, or lost track)
}

// DiskLog is what one replica's disk durably holds of one queue's log: for
// each offset, the identity of an intact copy (CRC-valid frame carrying that
// offset), or none. It is built by Reparse and kept up by Resume, which
// reads only what was appended since: the cost is linear in what was
// written, plus a full read after each event that may change old bytes (a
// crash, a truncation, an injected fault).
type DiskLog struct {
	dir  string
	recs []Ident // recs[o] for o in [0, len(recs))
	segs []diskSeg
	note string // why a part of the files could not be read
	buf  []byte
}

// NewDiskLog returns the (empty) truth of the log in dir.
func NewDiskLog(dir string) *DiskLog { return &DiskLog{dir: dir} }

// At returns the identity of the intact copy at offset o, if any.
func (l *DiskLog) At(o uint64) Ident {
	if o >= uint64(len(l.recs)) {
		return Ident{}
	}
	return l.recs[o]
}

// Len returns one past the highest offset with an intact copy.
func (l *DiskLog) Len() uint64 { return uint64(len(l.recs)) }

// Prefix returns the end of the longest run of intact copies from offset 0.
func (l *DiskLog) Prefix() uint64 {
	for o := range l.recs {
		if !l.recs[o].Intact() {
			return uint64(o)
		}
	}
	return uint64(len(l.recs))
}

// Note says why parts of the files could not be read ("" if none).
func (l *DiskLog) Note() string { return l.note }

// Reparse forgets everything and reads every durable segment again.
func (l *DiskLog) Reparse(d Disk) {
	clear(l.recs)
	l.recs, l.segs, l.note = l.recs[:0], l.segs[:0], ""
	l.Resume(d)
}

// Resume reads what was made durable since the last read, assuming bytes
// already read did not change.
func (l *DiskLog) Resume(d Disk) {
	names, err := d.DurableList(l.dir)
	if err != nil {
		return // no durable directory yet: nothing is durable
	}
	for _, name := range names {
		digits, ok := strings.CutSuffix(name, dSegSuffix)
		if !ok {
			continue
		}
		base, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || len(digits) != 20 {
			l.setNote("malformed segment name " + name)
			continue
		}
		known := false
		for i := range l.segs {
			known = known || l.segs[i].name == name
		}
		if !known {
			l.segs = append(l.segs, diskSeg{name: name, base: base, next: base})
		}
	}
	for i := range l.segs {
		if !l.segs[i].done {
			l.parseSeg(d, &l.segs[i])
		}
	}
}

func (l *DiskLog) setNote(s string) {
	if l.note == "" {
		l.note = s
	}
}

// read fills the buffer with the durable bytes of the segment from pos on,
// at most max bytes; it returns them (possibly fewer at the end of the file).
func (l *DiskLog) read(d Disk, seg *diskSeg, pos int64, n int) ([]byte, error) {
	if cap(l.buf) < n {
		l.buf = make([]byte, n)
	}
	p := l.buf[:n]
	k, err := d.ReadDurable(l.dir+"/"+seg.name, p, pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return p[:k], err
	}
	return p[:k], nil
}

// parseSeg reads frames of seg from where the last parse stopped.
func (l *DiskLog) parseSeg(d Disk, seg *diskSeg) {
	if seg.slots == 0 {
		h, err := l.read(d, seg, 0, dSegHeaderBytes)
		if err != nil || len(h) < dSegHeaderBytes {
			if err != nil {
				l.setNote(seg.name + ": header unreadable")
				seg.done = true
			}
			return // a header not yet durable
		}
		if binary.LittleEndian.Uint32(h[8:12]) == 1 { // TEMPORARY: v1 until the v2 format lands
			seg.slots = dSlotsMax
			seg.pos = dSegHeaderBytes
			goto frames
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
		seg.pos = dSegHeaderBytes + dSlotBytes*int64(slots)
	}
frames:
	for !seg.done {
		if seg.next-seg.base >= uint64(seg.slots) {
			seg.done = true // full: the format allows no more frames
			return
		}
		h, err := l.read(d, seg, seg.pos, dFrameHeader)
		if err != nil {
			if !l.skip(d, seg) {
				return
			}
			continue
		}
		if len(h) < dFrameHeader {
			return // nothing (more) durable here yet
		}
		n := binary.LittleEndian.Uint32(h[0:4])
		if n == 0 {
			// No frame here, or a lost one: the slot copy tells.
			if !l.skip(d, seg) {
				return
			}
			continue
		}
		if n < dPayloadMin || n > dPayloadMax {
			if !l.skip(d, seg) {
				l.setNote(seg.name + ": frame length out of bounds")
				seg.done = true
				return
			}
			continue
		}
		fr, err := l.read(d, seg, seg.pos, dFrameHeader+int(n))
		if err != nil {
			if !l.skip(d, seg) {
				return
			}
			continue
		}
		if len(fr) < dFrameHeader+int(n) {
			return // not whole yet
		}
		c := crc32.Update(0, dCastagnoli, fr[0:4])
		c = crc32.Update(c, dCastagnoli, fr[dFrameHeader:])
		off := binary.LittleEndian.Uint64(fr[16:24])
		if c != binary.LittleEndian.Uint32(fr[4:8]) || off != seg.next {
			if !l.skip(d, seg) {
				l.setNote(seg.name + ": unreadable frame at offset " + strconv.FormatUint(seg.next, 10))
				seg.done = true
				return
			}
			continue
		}
		l.put(seg.next, identOf(binary.LittleEndian.Uint64(fr[8:16]), record.Kind(fr[24]), fr[25:]))
		seg.pos += int64(dFrameHeader + n)
		seg.next++
	}
}

// skip steps over a frame that cannot be read, using its header copy (slot)
// to find where the next frame starts. It reports false when the slot is
// absent or unreadable: then the segment cannot be followed further now.
func (l *DiskLog) skip(d Disk, seg *diskSeg) bool {
	i := seg.next - seg.base
	s, err := l.read(d, seg, dSegHeaderBytes+dSlotBytes*int64(i), dSlotBytes)
	if err != nil || len(s) < dSlotBytes {
		return false
	}
	if binary.LittleEndian.Uint32(s[28:32]) != crc32.Checksum(s[0:28], dCastagnoli) ||
		binary.LittleEndian.Uint64(s[0:8]) != seg.next {
		return false // absent (all zero) or not a valid copy of this frame
	}
	n := binary.LittleEndian.Uint32(s[20:24])
	if n < dPayloadMin || n > dPayloadMax {
		return false
	}
	seg.pos += int64(dFrameHeader + n)
	seg.next++
	return true
}

func (l *DiskLog) put(o uint64, id Ident) {
	for uint64(len(l.recs)) <= o {
		l.recs = append(l.recs, Ident{})
	}
	l.recs[o] = id
}
