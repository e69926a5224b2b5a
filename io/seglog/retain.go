package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"github.com/sluicemq/sluice/io/vfs"
)

// Retention (docs/design/retention.md, "On disk"): the log's head is deleted a whole segment at a
// time, once its records are settled. The log's start is then made durable
// first, in the file START beside the segments, so that a crash in the
// middle of the removals (which a directory may apply in any order until
// it is synced) never leaves a log with a hole: Open ignores, and removes,
// every segment below the durable start.
//
// START also keeps the epoch history of the records below the start (the
// entries whose offsets lie below it), since the epoch of the record before
// the start is what a follower's log is matched by at the start, and no
// segment holds it any more.
//
// Layout of START: the magic "SLUICSTART", the start (u64), the count n
// of history entries below it (u32, at most startEpochsMax), n entries of
// (epoch u64, offset u64), ascending in both, offsets below the start,
// and the CRC32C of all that precedes it (u32); little endian. It is
// written to START.tmp, synced, renamed over START, and the directory
// synced. A START that does not check fails Open (ErrStart): the log is
// not opened on a guess. Without START the log starts at its first
// segment's base (0 for every log that never retained).

const (
	startName      = "START"
	startTemp      = "START.tmp"
	startMagic     = "SLUICSTART"
	startEpochsMax = 1 << 16
)

// ErrStart: a START file that does not check, or a log whose segments do
// not begin at the start it names.
var ErrStart = errors.New("seglog: log start damaged")

// Retain deletes the records below to, a whole segment at a time: after
// it returns, the log starts at the base of the segment that holds to
// (Start, at most to), durably, and the segments below are gone. A to at
// or below Start does nothing; a to past End is refused (Reset empties a
// log). It returns the log's start. A failure fails the log.
func (l *Log) Retain(to uint64) (uint64, error) {
	if err := l.writable(); err != nil {
		return 0, err
	}
	if to > l.End() {
		return 0, fmt.Errorf("%w: retain to %d, log [%d, %d)", ErrRange, to, l.Start(), l.End())
	}
	if to <= l.Start() {
		return l.Start(), nil
	}
	i := l.findSeg(to)
	if i == 0 {
		return l.Start(), nil // to lies in the first segment: nothing whole below it
	}
	start := l.segs[i].base
	if err := l.retainTo(i, start); err != nil {
		return 0, l.fail(err)
	}
	return start, nil
}

// Reset empties the log and restarts it at start, durably, with below as
// the epoch history of the records before it (a reseed from another log
// that starts there: below is that log's history below start). start may
// lie anywhere, below the log's own start too. The records go first, the
// last segment first, as a truncation removes them (a crash meanwhile
// leaves a shorter log from the old start); then START is written and the
// new first segment made. A failure fails the log.
func (l *Log) Reset(start uint64, below []EpochStart) error {
	if err := l.writable(); err != nil {
		return err
	}
	if err := checkBelow(below, start, startEpochsMax); err != nil {
		return err
	}
	if err := l.reset(start, below); err != nil {
		return l.fail(err)
	}
	return nil
}

// retainTo makes start (segment i's base) the durable start, then removes
// segments [0, i).
func (l *Log) retainTo(i int, start uint64) error {
	if err := l.writeStart(start, l.epochsBelow(start)); err != nil {
		return err
	}
	for j := 0; j < i; j++ {
		s := l.segs[j]
		l.forget(s)
		if err := l.fs.Remove(l.segPath(s.name)); err != nil {
			return err // (the log fails: nothing uses its segments again)
		}
	}
	clear(l.segs[:i])
	l.segs = l.segs[i:]
	return l.fs.SyncDir(l.dir)
}

// reset empties the log at to, with history below.
func (l *Log) reset(to uint64, below []EpochStart) error {
	if err := l.flush(); err != nil {
		return err
	}
	for j := len(l.segs) - 1; j >= 0; j-- {
		s := l.segs[j]
		l.forget(s)
		if err := l.fs.Remove(l.segPath(s.name)); err != nil {
			return err // (the log fails: nothing uses its segments again)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	if err := l.writeStart(to, below); err != nil {
		return err
	}
	seg, err := l.createSegment(to)
	if err != nil {
		return err
	}
	l.segs = append(l.segs[:0], seg)
	l.epochs = append(l.epochs[:0], below...)
	return l.syncAll() // writes the new segment's header (createSegment buffered it)
}

// epochsBelow returns the log's history entries below start.
func (l *Log) epochsBelow(start uint64) []EpochStart {
	var out []EpochStart
	for _, e := range l.epochs {
		if e.Offset < start {
			out = append(out, e)
		}
	}
	return out
}

func checkBelow(below []EpochStart, start uint64, max int) error {
	if len(below) > max {
		return fmt.Errorf("seglog: %d history entries below the start, at most %d", len(below), max)
	}
	for i, e := range below {
		if e.Offset >= start || (i > 0 && (e.Epoch <= below[i-1].Epoch || e.Offset <= below[i-1].Offset)) {
			return fmt.Errorf("seglog: history below the start %d out of order: %v", start, below)
		}
	}
	return nil
}

// writeStart makes (start, below) the durable START.
func (l *Log) writeStart(start uint64, below []EpochStart) error {
	b := make([]byte, 0, len(startMagic)+8+4+16*len(below)+4)
	b = append(b, startMagic...)
	b = binary.LittleEndian.AppendUint64(b, start)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(below)))
	for _, e := range below {
		b = binary.LittleEndian.AppendUint64(b, e.Epoch)
		b = binary.LittleEndian.AppendUint64(b, e.Offset)
	}
	b = binary.LittleEndian.AppendUint32(b, crcUpdate(0, b))
	return writeDurably(l.fs, l.dir, startTemp, startName, b)
}

// readStart reads dir's START: ok false without one.
func readStart(fs vfs.FS, dir string) (start uint64, below []EpochStart, ok bool, err error) {
	f, err := fs.Open(path.Join(dir, startName))
	if errors.Is(err, vfs.ErrNotExist) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, nil, false, err
	}
	fixed := int64(len(startMagic) + 8 + 4 + 4)
	if size < fixed || size > fixed+16*startEpochsMax || (size-fixed)%16 != 0 {
		return 0, nil, false, fmt.Errorf("%w: %d bytes in %s", ErrStart, size, dir)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		if errors.Is(err, vfs.ErrIO) {
			return 0, nil, false, fmt.Errorf("%w: unreadable in %s", ErrStart, dir)
		}
		return 0, nil, false, err
	}
	n := len(b)
	switch {
	case string(b[:len(startMagic)]) != startMagic:
		return 0, nil, false, fmt.Errorf("%w: magic in %s", ErrStart, dir)
	case crcUpdate(0, b[:n-4]) != binary.LittleEndian.Uint32(b[n-4:]):
		return 0, nil, false, fmt.Errorf("%w: checksum in %s", ErrStart, dir)
	}
	p := b[len(startMagic):]
	start = binary.LittleEndian.Uint64(p)
	count := binary.LittleEndian.Uint32(p[8:])
	p = p[12 : len(p)-4]
	if int64(count)*16 != int64(len(p)) {
		return 0, nil, false, fmt.Errorf("%w: %d entries in %d bytes in %s", ErrStart, count, len(p), dir)
	}
	for i := 0; i < int(count); i++ {
		below = append(below, EpochStart{Epoch: binary.LittleEndian.Uint64(p[16*i:]), Offset: binary.LittleEndian.Uint64(p[16*i+8:])})
	}
	if err := checkBelow(below, start, startEpochsMax); err != nil {
		return 0, nil, false, fmt.Errorf("%w: %v", ErrStart, err)
	}
	return start, below, true, nil
}
