package seglog

import (
	"errors"
	"fmt"
	"path"

	"github.com/sluicemq/sluice/io/vfs"
)

// The storage binding. A replica binds its log to what it holds (the
// caller's bytes, opaque here: the queue's incarnation and the storage
// instance) in the file BIND beside the segments of each generation, and,
// the first time its live generation is bound, in a marker beside the
// log's directory ("DIR.bound" in its parent), both written like the seal
// receipt (a temporary file synced, renamed, the directory synced). A
// stage's binding writes the marker only once Publish made the stage the
// log: a marker written before would make the live generation, which the
// stage has not replaced yet and which may hold no binding (a log never
// bound), look like one that lost its directory after a crash between the
// two. An Open that finds the live generation bound and no marker (a crash
// between the publish and the marker) writes the marker. Open reports both
// (Recovery.Binding, Recovery.BoundBefore): a log whose marker says it was
// bound but which holds no binding of its own lost its directory or its
// live generation's (emptied, removed, never restored), and what it
// acknowledged with it; a log with neither was never bound on this storage
// (new). A binding that does not check is reported (Recovery.BindingDamage),
// never silently dropped; a marker that does not check counts as one (the
// log was bound: its loss is not passed off as newness).
//
// Layout of both: the magic "SLUICBIND1", the payload's length (u32 little
// endian), the payload, and the CRC32C of everything before it (u32).

const (
	bindName     = "BIND"
	bindTempName = "BIND.tmp"
	bindMagic    = "SLUICBIND1"
	markerSuffix = ".bound"
)

// WriteBinding durably stores binding as the log's storage binding,
// replacing any earlier one, and the marker beside the log's directory if
// it has none. It does not change the log's records.
func (l *Log) WriteBinding(binding []byte) error {
	if err := l.usable(); err != nil {
		return err
	}
	if len(binding) == 0 || len(binding) > sealBytesMax {
		return fmt.Errorf("seglog: a binding of %d bytes (1..%d)", len(binding), sealBytesMax)
	}
	if err := l.writeReceipt(bindName, bindTempName, bindMagic, binding); err != nil {
		return l.fail(err)
	}
	l.bound = binding
	if l.gen != 0 && !l.published {
		return nil // (the marker once Publish makes it the log)
	}
	return l.writeMarker()
}

// writeMarker writes the marker beside the log's directory (the bytes of
// the binding it was bound with), if it has none.
func (l *Log) writeMarker() error {
	if l.boundBefore || len(l.bound) == 0 {
		return nil
	}
	parent, name := markerPath(l.baseDir())
	if err := writeDurably(l.fs, parent, name+".tmp", name, receiptBytes(bindMagic, l.bound)); err != nil {
		return l.fail(err)
	}
	l.boundBefore = true
	return nil
}

// baseDir is the log's directory: a stage's base, else its own.
func (l *Log) baseDir() string {
	if l.gen != 0 {
		return l.base
	}
	return l.dir
}

// markerPath is the parent directory of a log's directory dir and its
// marker's name there.
func markerPath(dir string) (parent, name string) {
	return path.Dir(dir), path.Base(dir) + markerSuffix
}

// readBinding reads the storage binding, if any. A read that fails fails
// the open (the failure policy restarts the process, whose open reads it
// again): an unreadable binding is no evidence that the log lost anything.
func (l *Log) readBinding() (payload []byte, damage string, err error) {
	return l.readReceipt(bindName, bindMagic, "storage binding", false)
}

// boundMarker reports whether the log of directory dir has its marker
// (present at all: one that does not check counts).
func boundMarker(fs vfs.FS, dir string) (bool, error) {
	parent, name := markerPath(dir)
	f, err := fs.Open(path.Join(parent, name))
	if errors.Is(err, vfs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f.Close()
	return true, nil
}

// readMarker reads whether the log's marker is there into rec.
func (l *Log) readMarker(rec *Recovery) error {
	ok, err := boundMarker(l.fs, l.baseDir())
	l.boundBefore, rec.BoundBefore = ok, ok
	return err
}
