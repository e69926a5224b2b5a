package seglog

import (
	"fmt"
	"io"
	"math/bits"

	"github.com/sluicemq/sluice/core/record"
)

// readSeg fills p with the contents of seg at pos: the file, and for the
// active segment the part still in the write buffer.
func (l *Log) readSeg(seg *segment, p []byte, pos int64) error {
	if err := l.ensureOpen(seg); err != nil {
		return err
	}
	fileEnd := int64(-1) // position where the buffered bytes start
	if len(l.buf) > 0 && l.isActive(seg) {
		fileEnd = l.bufPos
	}
	if fileEnd >= 0 && pos+int64(len(p)) > fileEnd {
		k := max(fileEnd-pos, 0) // bytes from the file
		if k < int64(len(p)) {
			copy(p[k:], l.buf[pos+k-fileEnd:])
		}
		p = p[:k]
	}
	if len(p) == 0 {
		return nil
	}
	n, err := seg.f.ReadAt(p, pos)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// view returns bytes [pos, pos+n) of seg, reading ahead up to limit through
// the read window. The slice is valid until the next view.
func (l *Log) view(seg *segment, pos int64, n int, limit int64) ([]byte, error) {
	if l.winSeg == seg && pos >= l.winPos && pos+int64(n) <= l.winPos+int64(len(l.win)) {
		k := pos - l.winPos
		return l.win[k : k+int64(n)], nil
	}
	want := int64(max(n, l.winChunk))
	if l.noAhead {
		want = int64(n)
	}
	if pos+want > limit {
		want = max(limit-pos, int64(n))
	}
	if int64(cap(l.win)) < want {
		// Doubling, within the window's chunk: the scan's window fits
		// each segment whole, and segments differ by a few bytes, so
		// sizing it exactly reallocated it for nearly every segment.
		// Only the capacity grows: a read still reads want bytes.
		l.opts.Buffers.put(l.win)
		l.win = l.opts.Buffers.get(int(want), int(max(want, min(2*int64(cap(l.win)), int64(l.winChunk)))))
	}
	l.win = l.win[:want]
	l.winSeg = nil
	if err := l.readSeg(seg, l.win, pos); err != nil {
		return nil, err
	}
	l.winSeg, l.winPos = seg, pos
	return l.win[:n], nil
}

// locate returns the position in seg of the frame of offset off
// (seg.base <= off <= seg.end): the nearest index entry, then a walk over
// frame headers.
func (l *Log) locate(seg *segment, off uint64) (int64, error) {
	pos, at := seg.start(), seg.base
	lo, hi := 0, len(seg.index)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if seg.index[m].off <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo > 0 {
		pos, at = seg.index[lo-1].pos, seg.index[lo-1].off
	}
	for at < off {
		h, err := l.view(seg, pos, frameHeaderBytes, seg.size)
		if err != nil {
			return 0, err
		}
		n, ok := frameLen(h)
		if !ok {
			return 0, fmt.Errorf("%w: %s at byte %d: frame length %d out of bounds", ErrCorrupt, seg.name, pos, n)
		}
		pos += int64(frameHeaderBytes + n)
		at++
	}
	return pos, nil
}

// Read returns records from offset from on: at most recordsMax records and
// about bytesMax body bytes, but at least one record if from < End(). Reading
// at End() returns no records. It sees appended records whether synced or
// not. Record bodies are fresh memory owned by the caller. A frame failing
// validation returns ErrCorrupt (the log stays usable); a failed file read
// returns the file system's error.
func (l *Log) Read(from uint64, recordsMax int, bytesMax int) ([]record.Record, error) {
	out, _, err := l.readFrames(from, recordsMax, bytesMax, true, false)
	return out, err
}

// ReadLent is Read with the records and their bodies in memory the log
// lends: valid until the next ReadLent. A driver that hands a read's
// records to its core for one step, and starts the log's next read only
// after that step, reads without allocating (io/driver).
func (l *Log) ReadLent(from uint64, recordsMax int, bytesMax int) ([]record.Record, error) {
	for _, b := range l.lentBlocks {
		if len(l.spareBlocks) < spareBlocksMax {
			l.spareBlocks = append(l.spareBlocks, b)
		}
	}
	clear(l.lentBlocks)
	l.lentBlocks = l.lentBlocks[:0]
	out, _, err := l.readFrames(from, recordsMax, bytesMax, true, true)
	return out, err
}

// spareBlocksMax bounds the body blocks a log keeps for its lent reads.
const spareBlocksMax = 8

// lentBlock returns a block of at least n bytes for a lent read's bodies.
func (l *Log) lentBlock(n int) []byte {
	for i, b := range l.spareBlocks {
		if len(b) >= n {
			last := len(l.spareBlocks) - 1
			l.spareBlocks[i] = l.spareBlocks[last]
			l.spareBlocks[last] = nil
			l.spareBlocks = l.spareBlocks[:last]
			l.lentBlocks = append(l.lentBlocks, b)
			return b
		}
	}
	// Rounded up, so that a block serves later reads of other sizes.
	c := max(4096, 1<<bits.Len(uint(n-1)))
	b := l.opts.Buffers.get(c, c)
	l.lentBlocks = append(l.lentBlocks, b)
	return b
}

// Verify validates the records from offset from on as Read would (at most
// recordsMax records and about bytesMax body bytes, at least one if any)
// without copying them out, and returns how many it checked: a scrub's
// read. A frame failing validation returns ErrCorrupt with the count of the
// good ones before it. It reads the file afresh: the read window may hold
// bytes read before the media lost or garbled them, and a scrub that
// re-checked that memory would never meet the damage it exists to find.
func (l *Log) Verify(from uint64, recordsMax int, bytesMax int) (int, error) {
	l.winSeg = nil
	_, n, err := l.readFrames(from, recordsMax, bytesMax, false, false)
	return n, err
}

// readFrames walks and validates frames from offset from on; with keep, it
// returns the records.
func (l *Log) readFrames(from uint64, recordsMax int, bytesMax int, keep, lend bool) ([]record.Record, int, error) {
	if err := l.usable(); err != nil {
		return nil, 0, err
	}
	if from < l.Start() || from > l.End() {
		return nil, 0, fmt.Errorf("%w: read from %d, log [%d, %d)", ErrRange, from, l.Start(), l.End())
	}
	end := l.End()
	if from == end {
		return nil, 0, nil
	}
	recordsMax = max(recordsMax, 1)
	i := l.findSeg(from)
	for l.segs[i].end <= from {
		i++
	}
	seg := l.segs[i]
	pos, err := l.locate(seg, from)
	if err != nil {
		return nil, 0, err
	}
	var out []record.Record
	switch {
	case lend:
		out = l.lentRecs[:0]
		defer func() { l.lentRecs = out[:0] }() // (grown, kept for the next)
	case keep:
		out = make([]record.Record, 0, min(recordsMax, 64, int(end-from)))
	}
	var blk []byte // bodies are carved out of it
	bodyBytes, count := 0, 0
	for off := from; count < recordsMax && off < end; off++ {
		if pos >= seg.size {
			if i+1 >= len(l.segs) || off < seg.end {
				// The frames ran out of the segment before the records it
				// holds: its bytes are not what was written.
				return out, count, fmt.Errorf("%w: %s ends at byte %d before record %d (it holds up to %d)", ErrCorrupt, seg.name, pos, off, seg.end)
			}
			i++
			seg = l.segs[i]
			pos = seg.start()
		}
		h, err := l.view(seg, pos, frameHeaderBytes, seg.size)
		if err != nil {
			return out, count, err
		}
		n, ok := frameLen(h)
		if !ok {
			return out, count, fmt.Errorf("%w: %s at byte %d: frame length %d out of bounds", ErrCorrupt, seg.name, pos, n)
		}
		bodyLen := n - framePayloadMin
		if count > 0 && bodyBytes+bodyLen > bytesMax {
			break
		}
		fl := frameHeaderBytes + n
		if pos+int64(fl) > seg.size {
			return out, count, fmt.Errorf("%w: %s at byte %d: frame past the segment end", ErrCorrupt, seg.name, pos)
		}
		fr, err := l.view(seg, pos, fl, seg.size)
		if err != nil {
			return out, count, err
		}
		if !frameCRCOK(fr) {
			return out, count, fmt.Errorf("%w: %s at byte %d: crc mismatch", ErrCorrupt, seg.name, pos)
		}
		e, o, kind, body := frameFields(fr)
		if o != off {
			return out, count, fmt.Errorf("%w: %s at byte %d: offset %d, want %d", ErrCorrupt, seg.name, pos, o, off)
		}
		if keep {
			var b []byte
			if bodyLen > 0 {
				if len(blk) < bodyLen {
					n := l.bodyRun(seg, pos, off, end, recordsMax-count, bytesMax-bodyBytes, bodyLen)
					if lend {
						blk = l.lentBlock(n)
					} else {
						blk = make([]byte, n)
					}
				}
				b = blk[:bodyLen:bodyLen]
				blk = blk[bodyLen:]
				copy(b, body)
			}
			out = append(out, record.Record{Epoch: e, Offset: o, Kind: kind, Body: b})
		}
		count++
		bodyBytes += bodyLen
		pos += int64(fl)
	}
	return out, count, nil
}

// bodyRun sizes a body block: the bodies of the frames from pos on that are
// complete in the read window and within the limits (at least need bytes).
func (l *Log) bodyRun(seg *segment, pos int64, off, end uint64, recs, budget, need int) int {
	total := 0
	if l.winSeg == seg {
		winEnd := l.winPos + int64(len(l.win))
		for ; recs > 0 && off < end && pos+frameHeaderBytes <= winEnd; recs, off = recs-1, off+1 {
			n, ok := frameLen(l.win[pos-l.winPos:])
			if !ok || pos+int64(frameHeaderBytes+n) > winEnd {
				break
			}
			b := n - framePayloadMin
			if total > 0 && total+b > budget {
				break
			}
			total += b
			pos += int64(frameHeaderBytes + n)
		}
	}
	return max(total, need)
}
