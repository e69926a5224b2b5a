package seglog

import (
	"path"
	"strconv"

	"github.com/sluicemq/sluice/io/vfs"
)

// Open opens (creating if needed) the log in dir and scans it.
//
// A new log (no segment in dir) starts at offset 0; Open creates its first
// segment and makes it durable (file, directory and the directory's ancestors)
// before returning. An existing log is scanned segment by segment; see the
// package documentation for what the scan validates. Open never changes an
// existing log: damage is reported in Recovery.Damage and stays until
// DiscardDamage. It does sync what it scanned (each segment file and the
// directory), so that every record Recovery reports is durable even if an
// earlier instance closed without syncing. Open fails only when the file system does (or a segment
// file name is malformed).
func Open(fs vfs.FS, dir string, opts Options) (*Log, Recovery, error) {
	opts.setDefaults()
	l := &Log{fs: fs, dir: dir, opts: opts, winChunk: scanChunkBytes}
	if err := fs.MkdirAll(dir); err != nil {
		return nil, Recovery{}, err
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	var bases []uint64
	var segNames []string
	for _, name := range names {
		if name == unrepairedName {
			l.unrepaired = true
			continue
		}
		base, ok, err := parseSegName(name)
		if err != nil {
			return nil, Recovery{}, err
		}
		if ok {
			bases = append(bases, base)
			segNames = append(segNames, name)
		}
	}
	if len(bases) == 0 {
		if err := l.create(); err != nil {
			l.closeFiles()
			return nil, Recovery{}, err
		}
		return l, Recovery{}, nil
	}
	rec, err := l.scan(bases, segNames)
	l.win, l.winSeg, l.winChunk = nil, nil, readChunkBytes
	if err != nil {
		l.closeFiles()
		return nil, Recovery{}, err
	}
	return l, rec, nil
}

// create makes the first segment of a new log, durably.
func (l *Log) create() error {
	seg, err := l.createSegment(0)
	if err != nil {
		return err
	}
	l.segs = []*segment{seg}
	if err := l.syncAll(); err != nil {
		return err
	}
	// MkdirAll may have made any of the ancestors: sync them all.
	for d := l.dir; d != "." && d != "/" && d != ""; {
		d = path.Dir(d)
		if err := l.fs.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func (l *Log) closeFiles() {
	for _, seg := range l.segs {
		if seg.f != nil {
			seg.f.Close()
		}
	}
}

// scan reads every segment in order and stops at the first damage.
func (l *Log) scan(bases []uint64, names []string) (Recovery, error) {
	var rec Recovery
	for i, base := range bases {
		seg := &segment{base: base, end: base, name: names[i], indexedPos: -1}
		f, err := l.fs.Open(l.segPath(seg.name))
		if err != nil {
			return rec, err
		}
		seg.f = f
		fileSize, err := f.Size()
		if err != nil {
			f.Close()
			return rec, err
		}
		expect := base
		if i > 0 {
			expect = l.active().end
		}
		d, bytes, err := l.scanSegment(seg, fileSize, i == 0, expect)
		if err != nil {
			f.Close()
			return rec, err
		}
		rec.Bytes += bytes
		// What the scan read may not be durable yet (an earlier instance
		// closed without syncing): make it so before reporting it.
		if err := f.Sync(); err != nil {
			f.Close()
			return rec, err
		}
		if d != nil && d.Pos == 0 && i > 0 {
			// The segment itself is bad (header, or not where the log
			// continues): it goes whole.
			f.Close()
			l.repair.remove = append(l.repair.remove, names[i:]...)
		} else {
			if i > 0 {
				l.retire(l.active())
			}
			l.segs = append(l.segs, seg)
			if d != nil {
				l.repair.seg, l.repair.pos = seg, d.Pos
				l.repair.rewriteHeader = d.Pos == 0
				l.repair.remove = append(l.repair.remove, names[i+1:]...)
			}
		}
		if d != nil {
			l.damage = d
			rec.Damage = d
			break
		}
	}
	act := l.active()
	if act.f == nil {
		if err := l.ensureOpen(act); err != nil {
			return rec, err
		}
	}
	l.bufPos = act.size
	if err := l.fs.SyncDir(l.dir); err != nil {
		return rec, err
	}
	rec.Start, rec.End = l.Start(), l.End()
	rec.Epochs = l.Epochs()
	rec.Unrepaired = l.unrepaired
	return rec, nil
}

// scanSegment validates seg's header and frames up to fileSize, building its
// index. It returns the first damage (nil at a clean end) and the bytes of
// valid frames.
func (l *Log) scanSegment(seg *segment, fileSize int64, first bool, expect uint64) (*Damage, int64, error) {
	damage := func(pos int64, off uint64, reason string) *Damage {
		return &Damage{Segment: seg.name, Pos: pos, Offset: off, Reason: reason}
	}
	if fileSize < segHeaderBytes {
		return damage(0, expect, "torn segment header"), 0, nil
	}
	h, err := l.view(seg, 0, segHeaderBytes, fileSize)
	if err != nil {
		return nil, 0, err
	}
	if reason := checkSegHeader(h, seg.base); reason != "" {
		return damage(0, expect, reason), 0, nil
	}
	if !first && seg.base != expect {
		return damage(0, expect, "segment starts at offset "+strconv.FormatUint(seg.base, 10)+
			", the log continues at "+strconv.FormatUint(expect, 10)), 0, nil
	}
	pos, off := int64(segHeaderBytes), seg.base
	seg.size = pos
	epoch := l.lastEpoch()
	var bytes int64
	for pos < fileSize {
		if fileSize-pos < frameHeaderBytes {
			zero, err := l.allZero(seg, pos, fileSize)
			if err != nil {
				return nil, bytes, err
			}
			if zero {
				break
			}
			return damage(pos, off, "torn frame header"), bytes, nil
		}
		fh, err := l.view(seg, pos, frameHeaderBytes, fileSize)
		if err != nil {
			return nil, bytes, err
		}
		n, ok := frameLen(fh)
		if !ok {
			if n == 0 {
				zero, err := l.allZero(seg, pos, fileSize)
				if err != nil {
					return nil, bytes, err
				}
				if zero {
					break // preallocated or zero-filled tail: a clean end
				}
			}
			return damage(pos, off, "frame length "+strconv.Itoa(n)+" out of bounds"), bytes, nil
		}
		fl := int64(frameHeaderBytes + n)
		if pos+fl > fileSize {
			return damage(pos, off, "torn frame: "+strconv.FormatInt(pos+fl-fileSize, 10)+
				" bytes past the end of the segment"), bytes, nil
		}
		fr, err := l.view(seg, pos, int(fl), fileSize)
		if err != nil {
			return nil, bytes, err
		}
		if !frameCRCOK(fr) {
			return damage(pos, off, "crc mismatch"), bytes, nil
		}
		e, o, kind, _ := frameFields(fr)
		switch {
		case o != off:
			return damage(pos, off, "offset "+strconv.FormatUint(o, 10)+" out of sequence"), bytes, nil
		case e < epoch:
			return damage(pos, off, "epoch "+strconv.FormatUint(e, 10)+" below "+strconv.FormatUint(epoch, 10)), bytes, nil
		case !kind.Valid():
			return damage(pos, off, "unknown record kind "+strconv.Itoa(int(kind))), bytes, nil
		}
		l.noteFrame(seg, o, e, pos, fl)
		epoch = e
		bytes += fl
		pos += fl
		off++
	}
	return nil, bytes, nil
}

// allZero reports whether bytes [from, to) of seg are all zero.
func (l *Log) allZero(seg *segment, from, to int64) (bool, error) {
	for from < to {
		n := int(min(to-from, int64(l.winChunk)))
		p, err := l.view(seg, from, n, to)
		if err != nil {
			return false, err
		}
		for _, b := range p {
			if b != 0 {
				return false, nil
			}
		}
		from += int64(n)
	}
	return true, nil
}
