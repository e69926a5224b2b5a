// API CONTRACT (implementation to be written): see doc.go when it lands.
package seglog

import (
	"errors"

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
)

// Options tune a log. Zero values take defaults.
type Options struct {
	// SegmentBytesMax: a new segment starts once the current one reaches
	// this size. Default 64 MiB.
	SegmentBytesMax int64
	// PreallocateBytes: reserve this much space when a segment is created
	// (vfs.File.Preallocate). Default 0 (no preallocation).
	PreallocateBytes int64
}

// EpochStart says that records from Offset on carry Epoch (until the next
// EpochStart).
type EpochStart struct {
	Epoch  uint64
	Offset uint64
}

// Damage describes the first torn or corrupt record the recovery scan met.
type Damage struct {
	Segment string // file name of the segment
	Pos     int64  // byte position of the bad frame in that segment
	Offset  uint64 // the log offset the bad frame would have held
	Reason  string // e.g. "torn frame header", "crc mismatch", "short body"
}

// Recovery reports what Open found.
type Recovery struct {
	Start, End uint64       // valid records are [Start, End)
	Bytes      int64        // bytes of valid frames scanned
	Epochs     []EpochStart // epoch history of the valid records, ascending
	Damage     *Damage      // nil when the scan ended cleanly
}

// Log is a segmented append-only record log over a vfs.FS.
type Log struct{}

// Open opens (creating if needed) the log in dir and scans it.
func Open(fs vfs.FS, dir string, opts Options) (*Log, Recovery, error) { panic("todo") }

// Append writes records whose offsets continue End(); not durable until Sync.
func (l *Log) Append(recs []record.Record) error { panic("todo") }

// Sync makes every appended record and every truncation durable.
func (l *Log) Sync() error { panic("todo") }

// Read returns records from offset from on: at most recordsMax records and
// about bytesMax body bytes, but at least one record if from < End().
func (l *Log) Read(from uint64, recordsMax int, bytesMax int) ([]record.Record, error) {
	panic("todo")
}

// TruncateFrom removes every record at offset >= from; durable after Sync.
func (l *Log) TruncateFrom(from uint64) error { panic("todo") }

// DiscardDamage removes the damaged tail reported by Open, durably.
func (l *Log) DiscardDamage() error { panic("todo") }

// Start returns the first offset held; End the next offset to append.
func (l *Log) Start() uint64 { panic("todo") }
func (l *Log) End() uint64   { panic("todo") }

// Epochs returns the epoch history of the records held.
func (l *Log) Epochs() []EpochStart { panic("todo") }

// Close closes the files without syncing.
func (l *Log) Close() error { panic("todo") }
