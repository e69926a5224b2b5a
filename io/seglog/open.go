package seglog

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"

	"github.com/sluicemq/sluice/core/bugs"
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
// earlier instance closed without syncing. Open fails when the options are
// out of range, a segment file name is malformed, or the file system fails
// other than by an unreadable range of a segment (vfs.ErrIO on a read of
// its contents is reported as damage there).
//
// A directory whose generation pointer names a later generation (see
// gen.go) opens that generation's segments instead; a pointer that does
// not check fails Open with ErrPointer.
func Open(fs vfs.FS, dir string, opts Options) (*Log, Recovery, error) {
	gen, err := LiveGeneration(fs, dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	l, rec, err := openDir(fs, StageDir(dir, gen), opts)
	if err != nil {
		return nil, Recovery{}, err
	}
	if gen != 0 {
		l.base, l.gen, l.published = dir, gen, true
		rec.Generation = gen
	}
	if err := l.readMarker(&rec); err != nil {
		l.closeFiles()
		return nil, Recovery{}, err
	}
	if !rec.BoundBefore && len(rec.Binding) > 0 {
		// Bound, and no marker: a publish whose marker a crash cut short.
		if err := l.writeMarker(); err != nil {
			l.closeFiles()
			return nil, Recovery{}, err
		}
		rec.BoundBefore = true
	}
	return l, rec, nil
}

// openDir opens the log whose segments are in dir.
func openDir(fs vfs.FS, dir string, opts Options) (*Log, Recovery, error) {
	opts.setDefaults()
	if err := opts.check(); err != nil {
		return nil, Recovery{}, err
	}
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
	seal, sealDamage, err := l.readSeal()
	if err != nil {
		return nil, Recovery{}, err
	}
	binding, bindingDamage, err := l.readBinding()
	if err != nil {
		return nil, Recovery{}, err
	}
	l.bound = binding
	start, below, retained, err := readStart(fs, dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	if retained {
		// Segments below the durable start are what an interrupted
		// retention left: outside the log, removed now (retain.go).
		k := 0
		for k < len(bases) && bases[k] < start {
			if err := fs.Remove(path.Join(dir, segNames[k])); err != nil && !errors.Is(err, vfs.ErrNotExist) {
				return nil, Recovery{}, err
			}
			k++
		}
		if k > 0 {
			if err := fs.SyncDir(dir); err != nil {
				return nil, Recovery{}, err
			}
		}
		bases, segNames = bases[k:], segNames[k:]
		if len(bases) > 0 && bases[0] != start {
			return nil, Recovery{}, fmt.Errorf("%w: %s starts at %d, its first segment at %d", ErrStart, dir, start, bases[0])
		}
		l.epochs = append(l.epochs, below...)
	}
	if len(bases) == 0 {
		// A new log, or one whose reset was interrupted before its first
		// segment was made: it starts empty at its start.
		if err := l.create(start); err != nil {
			l.closeFiles()
			return nil, Recovery{}, err
		}
		return l, Recovery{Start: start, End: start, Epochs: l.Epochs(), Seal: seal, SealDamage: sealDamage,
			Binding: binding, BindingDamage: bindingDamage}, nil
	}
	rec, err := l.scan(bases, segNames)
	l.win, l.winSeg, l.winChunk, l.noAhead = nil, nil, readChunkBytes, false
	l.slotWin, l.slotWinSeg = nil, nil
	if err != nil {
		l.closeFiles()
		return nil, Recovery{}, err
	}
	rec.Seal, rec.SealDamage = seal, sealDamage
	rec.Binding, rec.BindingDamage = binding, bindingDamage
	l.afterSync = true // the scan synced what it kept
	return l, rec, nil
}

// create makes the first segment of a new log, at start, durably.
func (l *Log) create(start uint64) error {
	seg, err := l.createSegment(start)
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
		seg.fileBytes = fileSize
		d, bytes, err := l.scanSegment(seg, fileSize, i == 0, expect)
		if err != nil {
			f.Close()
			return rec, err
		}
		rec.Bytes += bytes
		if d != nil {
			if d.Durable, err = l.syncedBeyond(seg, fileSize, d, names[i+1:]); err != nil {
				f.Close()
				return rec, err
			}
		}
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
				if !l.repair.rewriteHeader {
					l.repair.slotsHi = l.slotsInUse(seg, fileSize)
				}
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
	l.resetBufs()
	if err := l.fs.SyncDir(l.dir); err != nil {
		return rec, err
	}
	rec.Start, rec.End = l.Start(), l.End()
	rec.Epochs = l.Epochs()
	rec.Unrepaired = l.unrepaired
	return rec, nil
}

// scanSegment validates seg's header, frames and header copies up to
// fileSize, building its index. It returns the first damage (nil at a clean
// end) and the bytes of valid frames. An unreadable range (vfs.ErrIO) is
// damage where the scan met it; any other error is returned.
func (l *Log) scanSegment(seg *segment, fileSize int64, first bool, expect uint64) (*Damage, int64, error) {
	damage := func(pos int64, off uint64, reason string) *Damage {
		return &Damage{Segment: seg.name, Pos: pos, Offset: off, Reason: reason}
	}
	var bytes int64
	// unreadable turns a read error into damage at (pos, off), or returns
	// it when it is not about the contents.
	unreadable := func(pos int64, off uint64, what string, err error) (*Damage, int64, error) {
		if errors.Is(err, vfs.ErrIO) {
			return damage(pos, off, "unreadable: "+what+": "+err.Error()), bytes, nil
		}
		return nil, bytes, err
	}
	l.noAhead, l.slotExact, l.slotWinSeg = false, false, nil
	// Until the header is read the segment has the slots a rewritten
	// header would get (DiscardDamage of a bad first segment).
	seg.slots = l.opts.SlotsPerSegment
	seg.size = seg.start()
	if fileSize < segHeaderBytes {
		return damage(0, expect, "torn segment header"), 0, nil
	}
	h, err := l.scanView(seg, 0, segHeaderBytes, fileSize)
	if err != nil {
		return unreadable(0, expect, "segment header", err)
	}
	slots, reason := checkSegHeader(h, seg.base)
	if reason != "" {
		return damage(0, expect, reason), 0, nil
	}
	if !first && seg.base != expect {
		return damage(0, expect, "segment starts at offset "+strconv.FormatUint(seg.base, 10)+
			", the log continues at "+strconv.FormatUint(expect, 10)), 0, nil
	}
	seg.slots = slots
	pos, off := seg.start(), seg.base
	seg.size = pos
	epoch := l.lastEpoch()
	for i := 0; ; i++ {
		assert(off == seg.base+uint64(i) && pos == seg.size, "scan out of step")
		if i == slots {
			// Full: no frame may follow.
			empty, err := l.frameAreaEmpty(seg, pos, fileSize)
			if err != nil {
				return unreadable(pos, off, "frame at byte "+strconv.FormatInt(pos, 10), err)
			}
			if !empty {
				return damage(pos, off, "frame beyond the segment's "+strconv.Itoa(slots)+" header-copy slots"), bytes, nil
			}
			return nil, bytes, nil
		}
		// Frame i, or an empty frame area (end of file or zeros to it).
		var fr []byte
		empty := pos >= fileSize
		if !empty && fileSize-pos < frameHeaderBytes {
			if empty, err = l.allZero(seg, pos, fileSize); err != nil {
				return unreadable(pos, off, "frame at byte "+strconv.FormatInt(pos, 10), err)
			}
			if !empty {
				return damage(pos, off, "torn frame header"), bytes, nil
			}
		} else if !empty {
			fh, err := l.scanView(seg, pos, frameHeaderBytes, fileSize)
			if err != nil {
				return unreadable(pos, off, "frame at byte "+strconv.FormatInt(pos, 10), err)
			}
			n, ok := frameLen(fh)
			if !ok && n == 0 {
				if empty, err = l.allZero(seg, pos, fileSize); err != nil {
					return unreadable(pos, off, "frame at byte "+strconv.FormatInt(pos, 10), err)
				}
			}
			if !ok && !empty {
				return damage(pos, off, "frame length "+strconv.Itoa(n)+" out of bounds"), bytes, nil
			}
			if !empty {
				fl := int64(frameHeaderBytes + n)
				if pos+fl > fileSize {
					return damage(pos, off, "torn frame: "+strconv.FormatInt(pos+fl-fileSize, 10)+
						" bytes past the end of the segment"), bytes, nil
				}
				if fr, err = l.scanView(seg, pos, int(fl), fileSize); err != nil {
					return unreadable(pos, off, "frame at byte "+strconv.FormatInt(pos, 10), err)
				}
				if !frameCRCOK(fr) && !l.opts.Bugs.Has(bugs.NoCRCCheck) {
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
			}
		}
		// Its header copy. (fr stays valid: slots have their own window.)
		s, err := l.slotAt(seg, i, fileSize)
		if err != nil {
			return unreadable(pos, off, "header copy at slot "+strconv.Itoa(i), err)
		}
		if empty {
			// A clean end only if no copy names a frame here or later: a
			// valid copy here is a synced frame whose write was lost.
			if !slotZero(s) {
				if slotCRCOK(s) {
					return damage(pos, off, "frame lost: header copy names offset "+strconv.FormatUint(slotOffset(s), 10)), bytes, nil
				}
				return damage(pos, off, "header copy corrupt at slot "+strconv.Itoa(i)), bytes, nil
			}
			for j := i + 1; j < slots; j++ {
				s, err := l.slotAt(seg, j, fileSize)
				if err != nil {
					return unreadable(pos, off, "header copy at slot "+strconv.Itoa(j), err)
				}
				if !slotZero(s) {
					return damage(pos, off, "stray header copy at slot "+strconv.Itoa(j)+" beyond the last frame"), bytes, nil
				}
			}
			return nil, bytes, nil
		}
		switch {
		case slotZero(s):
			return damage(pos, off, "header copy missing for offset "+strconv.FormatUint(off, 10)), bytes, nil
		case !slotCRCOK(s):
			return damage(pos, off, "header copy corrupt at slot "+strconv.Itoa(i)), bytes, nil
		case !slotMatches(s, fr) && !(l.opts.Bugs.Has(bugs.NoCRCCheck) && slotMatchesButCRC(s, fr)):
			return damage(pos, off, "header copy disagrees with frame at offset "+strconv.FormatUint(off, 10)), bytes, nil
		}
		e, o, _, _ := frameFields(fr)
		fl := int64(len(fr))
		l.noteFrame(seg, o, e, pos, fl)
		epoch = e
		bytes += fl
		pos += fl
		off++
	}
}

// scanView is view for the scan: when a read ahead fails with vfs.ErrIO, the
// unreadable range may lie past the bytes wanted, so it reads exactly them,
// and reads no further ahead in this segment.
func (l *Log) scanView(seg *segment, pos int64, n int, limit int64) ([]byte, error) {
	p, err := l.view(seg, pos, n, limit)
	if err != nil && !l.noAhead && errors.Is(err, vfs.ErrIO) {
		l.noAhead = true
		p, err = l.view(seg, pos, n, limit)
	}
	return p, err
}

// frameAreaEmpty reports whether bytes [pos, fileSize) of seg are absent or
// all zero.
func (l *Log) frameAreaEmpty(seg *segment, pos, fileSize int64) (bool, error) {
	if pos >= fileSize {
		return true, nil
	}
	return l.allZero(seg, pos, fileSize)
}

// allZero reports whether bytes [from, to) of seg are all zero.
func (l *Log) allZero(seg *segment, from, to int64) (bool, error) {
	for from < to {
		n := int(min(to-from, int64(l.winChunk)))
		p, err := l.scanView(seg, from, n, to)
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

// slotAt returns slot i of seg as read from the file (zeros past its end),
// through a window on the header-copy region: one read of up to
// scanSlotChunk slots, so that a segment's region is usually read at once.
// After a failed read it reads one slot at a time, so that an unreadable
// range is met at the slot it covers. The slice is valid until the next
// slotAt.
func (l *Log) slotAt(seg *segment, i int, fileSize int64) ([]byte, error) {
	assert(i >= 0 && i < seg.slots, "slot index out of range")
	if l.slotWinSeg == seg && i >= l.slotWinLo && i < l.slotWinLo+len(l.slotWin)/slotBytes {
		k := (i - l.slotWinLo) * slotBytes
		return l.slotWin[k : k+slotBytes], nil
	}
	for {
		n := min(seg.slots-i, scanSlotChunk)
		if l.slotExact {
			n = 1
		}
		if cap(l.slotWin) < n*slotBytes {
			l.opts.Buffers.put(l.slotWin)
			l.slotWin = l.opts.Buffers.get(n*slotBytes, n*slotBytes)
		}
		l.slotWin = l.slotWin[:n*slotBytes]
		l.slotWinSeg = nil
		pos := slotPos(i)
		k := int(max(min(fileSize-pos, int64(len(l.slotWin))), 0)) // bytes in the file
		clear(l.slotWin[k:])
		if k > 0 {
			if err := l.readSeg(seg, l.slotWin[:k], pos); err != nil {
				if !l.slotExact && n > 1 && errors.Is(err, vfs.ErrIO) {
					l.slotExact = true
					continue
				}
				return nil, err
			}
		}
		l.slotWinSeg, l.slotWinLo = seg, i
		return l.slotWin[:slotBytes], nil
	}
}

// slotsInUse returns the index after the last non-zero slot of seg from its
// valid frames on (all of its slots when they cannot be read): the range
// DiscardDamage zeroes.
func (l *Log) slotsInUse(seg *segment, fileSize int64) int {
	hi := seg.frames()
	for j := seg.frames(); j < seg.slots; j++ {
		s, err := l.slotAt(seg, j, fileSize)
		if err != nil {
			return seg.slots
		}
		if !slotZero(s) {
			hi = j + 1
		}
	}
	return hi
}

// syncedBeyond reports whether a valid header copy flagged slotSyncFirst
// names a frame past damage d: in seg's slots after d's, or in a later
// segment file of names (their copy regions only: one read each, bounded
// by the slots a segment may hold). Such a copy was written after a sync
// that covered the damaged frame completed. A copy that does not read or
// check is no evidence either way.
func (l *Log) syncedBeyond(seg *segment, fileSize int64, d *Damage, later []string) (bool, error) {
	if d.Pos != 0 && d.Offset >= seg.base { // (at 0 the segment header is bad: its slots are unknown)
		for i := int(d.Offset-seg.base) + 1; i < seg.slots; i++ {
			s, err := l.slotAt(seg, i, fileSize)
			if err != nil {
				if errors.Is(err, vfs.ErrIO) {
					break
				}
				return false, err
			}
			if slotCRCOK(s) && !slotZero(s) && s[25]&slotSyncFirst != 0 && slotOffset(s) > d.Offset {
				return true, nil
			}
		}
	}
	for _, name := range later {
		found, err := l.flaggedCopyIn(name, d.Offset)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// flaggedCopyIn reports whether segment file name holds a valid header copy
// flagged slotSyncFirst of a frame past offset.
func (l *Log) flaggedCopyIn(name string, offset uint64) (bool, error) {
	base, ok, err := parseSegName(name)
	if err != nil || !ok {
		return false, err
	}
	f, err := l.fs.Open(l.segPath(name))
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := make([]byte, segHeaderBytes)
	if _, err := f.ReadAt(h, 0); err != nil {
		return false, ignoreIO(err)
	}
	slots, reason := checkSegHeader(h, base)
	if reason != "" {
		return false, nil
	}
	region := make([]byte, slots*slotBytes)
	n, err := f.ReadAt(region, segHeaderBytes)
	if err != nil && n == 0 {
		return false, ignoreIO(err)
	}
	for i := 0; (i+1)*slotBytes <= n; i++ {
		s := region[i*slotBytes : (i+1)*slotBytes]
		if slotCRCOK(s) && !slotZero(s) && s[25]&slotSyncFirst != 0 && slotOffset(s) > offset {
			return true, nil
		}
	}
	return false, nil
}

// ignoreIO drops an unreadable range (no evidence) and a short file,
// keeping any other error.
func ignoreIO(err error) error {
	if errors.Is(err, vfs.ErrIO) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
