package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/io/vfs"
)

// Generations (docs/design/recovery.md, "Installation in a stage"). A
// recovery installs a replica's new history in a stage apart from its live
// log, so that an interrupted installation leaves the sealed log
// untouched, and then publishes the stage as the log's new generation with
// one pointer file.
//
// The log of directory dir is its first generation (generation 0: the
// segments in dir itself) until dir holds the pointer file GEN; then it is
// the generation GEN names, whose segments (and seal receipt) live in the
// subdirectory gen-G of dir, G the generation's number (the epoch of the
// installation that staged it). A stage is opened by OpenStage in its
// subdirectory, and Publish makes it the log: it writes the pointer to
// GEN.tmp, syncs it, renames it over GEN and syncs dir, so that a crash
// leaves the old generation or the new, never neither.
//
// Reclamation. The generation a publish replaces stays on the disk
// untouched, readable for inspection (a returning replica's older history
// is kept apart, never truncated). The ones before it are unreachable:
// no Open, seal or read uses a generation that is neither the live one
// nor a stage, so Publish removes their files before it writes the pointer
// (reclaim): a log keeps at most two generations, whatever the number of
// recoveries it went through, instead of a full copy per recovery. A
// stage older than the one published (an installation that never
// published, its recovery gone to a later epoch) goes too. Directories
// stay, empty (vfs has no directory removal); a crash part way leaves
// files the next publish removes.
//
// Layout of GEN: the magic "SLUICGEN01", the generation (u64 little
// endian), and the CRC32C of what precedes it (u32). A pointer that does
// not check fails Open (ErrPointer): the log is not opened on a guess.

const (
	genPointerName = "GEN"
	genPointerTemp = "GEN.tmp"
	genMagic       = "SLUICGEN01"
	genPrefix      = "gen-"
	genBytes       = len(genMagic) + 8 + 4
)

// ErrPointer: a generation pointer that does not check.
var ErrPointer = errors.New("seglog: generation pointer damaged")

// StageDir returns the directory of generation gen of the log in dir.
func StageDir(dir string, gen uint64) string {
	if gen == 0 {
		return dir
	}
	return path.Join(dir, genPrefix+strconv.FormatUint(gen, 10))
}

// LiveGeneration returns the generation that is the log of dir (0 without
// a pointer).
func LiveGeneration(fs vfs.FS, dir string) (uint64, error) {
	f, err := fs.Open(path.Join(dir, genPointerName))
	if errors.Is(err, vfs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, err
	}
	if size != int64(genBytes) {
		return 0, fmt.Errorf("%w: %d bytes in %s", ErrPointer, size, dir)
	}
	b := make([]byte, genBytes)
	if _, err := f.ReadAt(b, 0); err != nil {
		if errors.Is(err, vfs.ErrIO) {
			return 0, fmt.Errorf("%w: unreadable in %s", ErrPointer, dir)
		}
		return 0, err
	}
	switch {
	case string(b[:len(genMagic)]) != genMagic:
		return 0, fmt.Errorf("%w: magic in %s", ErrPointer, dir)
	case crcUpdate(0, b[:genBytes-4]) != binary.LittleEndian.Uint32(b[genBytes-4:]):
		return 0, fmt.Errorf("%w: checksum in %s", ErrPointer, dir)
	}
	gen := binary.LittleEndian.Uint64(b[len(genMagic):])
	if gen == 0 {
		return 0, fmt.Errorf("%w: names generation 0 in %s", ErrPointer, dir)
	}
	return gen, nil
}

// OpenStage opens (creating if needed) the stage for generation gen > 0 of
// the log in dir, as Open opens a log. The stage is not the log until
// Publish.
func OpenStage(fs vfs.FS, dir string, gen uint64, opts Options) (*Log, Recovery, error) {
	if gen == 0 {
		return nil, Recovery{}, errors.New("seglog: a stage of generation 0")
	}
	l, rec, err := openDir(fs, StageDir(dir, gen), opts)
	if err != nil {
		return nil, Recovery{}, err
	}
	l.base, l.gen = dir, gen
	rec.Generation = gen
	if err := l.readMarker(&rec); err != nil {
		l.closeFiles()
		return nil, Recovery{}, err
	}
	return l, rec, nil
}

// Publish makes the stage l the log of its directory: after it returns,
// the pointer naming l's generation is durable, and an Open of the
// directory opens l's segments. The stage's records should be synced
// first (Publish does not sync them).
func (l *Log) Publish() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.gen == 0 {
		return errors.New("seglog: publish of a log that is no stage")
	}
	// A pointer that does not check names no live generation: nothing is
	// removed on a guess.
	if live, err := LiveGeneration(l.fs, l.base); err == nil {
		if err := reclaim(l.fs, l.base, live, l.gen); err != nil {
			return l.fail(err)
		}
	} else if !errors.Is(err, ErrPointer) {
		return l.fail(err)
	}
	b := make([]byte, 0, genBytes)
	b = append(b, genMagic...)
	b = binary.LittleEndian.AppendUint64(b, l.gen)
	b = binary.LittleEndian.AppendUint32(b, crcUpdate(0, b))
	if err := writeDurably(l.fs, l.base, genPointerTemp, genPointerName, b); err != nil {
		return l.fail(err)
	}
	l.published = true
	return l.writeMarker()
}

// reclaim removes, durably, the files of every generation of the log in
// dir that is older than gen, about to be published, except live, the
// generation it replaces: generation 0's are dir's own files but the
// pointer's, a later one's those of its subdirectory.
func reclaim(fs vfs.FS, dir string, live, gen uint64) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	removeIn := func(d string, keep func(string) bool) error {
		files, err := fs.List(d)
		if err != nil {
			return err
		}
		removed := false
		for _, f := range files {
			if keep(f) {
				continue
			}
			if err := fs.Remove(path.Join(d, f)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
				return err
			}
			removed = true
		}
		if !removed {
			return nil
		}
		return fs.SyncDir(d)
	}
	if live != 0 {
		err := removeIn(dir, func(f string) bool {
			return f == genPointerName || f == genPointerTemp || strings.HasPrefix(f, genPrefix)
		})
		if err != nil {
			return err
		}
	}
	for _, n := range names {
		g, ok := genOfDir(n)
		if !ok || g == live || g >= gen {
			continue
		}
		if err := removeIn(path.Join(dir, n), func(string) bool { return false }); err != nil {
			return err
		}
	}
	return nil
}

// genOfDir returns the generation a subdirectory name gen-G names.
func genOfDir(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, genPrefix)
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseUint(digits, 10, 64)
	return g, err == nil && g > 0 && strconv.FormatUint(g, 10) == digits
}

// Generation returns the log's generation.
func (l *Log) Generation() uint64 { return l.gen }

// writeDurably writes b to dir/temp, syncs it, renames it over dir/name and
// syncs dir.
func writeDurably(fs vfs.FS, dir, temp, name string, b []byte) error {
	f, err := fs.Create(path.Join(dir, temp))
	if err != nil {
		return err
	}
	if _, err = f.WriteAt(b, 0); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(path.Join(dir, temp), path.Join(dir, name))
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	return err
}
