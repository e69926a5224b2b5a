package meta

import (
	"errors"
	"fmt"
)

// Limits. A batch over any of them is refused before anything is written.
const (
	// EntryDataBytesMax bounds one entry's Data.
	EntryDataBytesMax = 64 << 10
	// BatchEntriesMax bounds the number of entries in one batch.
	BatchEntriesMax = 1024
	// BatchBytesMax bounds the data of one batch: every entry's Data plus
	// the snapshot's and the applied record's Data.
	BatchBytesMax = 64 << 20
	// IndexMax bounds every entry and snapshot index, far beyond any real
	// log, so that index+1 never overflows.
	IndexMax = 1 << 62
)

// EntryKind tells a normal entry from a configuration change.
type EntryKind uint8

// Entry kinds. Any other value is refused.
const (
	EntryNormal     EntryKind = 0
	EntryConfChange EntryKind = 1
)

func (k EntryKind) String() string {
	switch k {
	case EntryNormal:
		return "normal"
	case EntryConfChange:
		return "conf-change"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Entry is one raft log entry. Data is opaque to the port.
type Entry struct {
	Index uint64
	Term  uint64
	Kind  EntryKind
	Data  []byte
}

// EntryID names a position in the log.
type EntryID struct {
	Index uint64
	Term  uint64
}

// HardState is raft's persistent vote state. The zero value is the state of
// a new store.
type HardState struct {
	Term   uint64
	Vote   uint64
	Commit uint64
}

// Snapshot is the image of the state machine (and its configuration) as of
// the entry (Index, Term). Data is opaque to the port. Index 0 means "no
// snapshot".
type Snapshot struct {
	Index uint64
	Term  uint64
	Data  []byte
}

// Applied is the applied metadata: the index of the last entry the state
// machine applied and its image or a marker, opaque to the port. Index 0
// with no Data means "nothing applied".
type Applied struct {
	Index uint64
	Data  []byte
}

// Batch is one atomic, durable unit of change. Its parts take effect in this
// order, each checked against the state the earlier parts left:
//
//  1. Snapshot (optional): installs the snapshot. Every entry at or below
//     its index is discarded, and the compaction point becomes the
//     snapshot's (Index, Term). Entries above its index are kept only if
//     the stored entry at its index has the snapshot's term (the log
//     matches); otherwise they are discarded too (raft's restore).
//  2. Entries (optional): appended with raft's semantics. Appending entries
//     that start at index i first discards every stored entry at or above
//     i; the entries must be contiguous with increasing indices, start at
//     most one past the last stored index, above the compaction point and
//     above the stored commit index, with terms that never decrease.
//  3. HardState (optional): replaces the hard state. The term never goes
//     back; within a term a vote, once cast, never changes; the commit
//     index never goes back.
//  4. Applied (optional): replaces the applied record. Its index never goes
//     back and never passes the commit index.
//  5. CompactIndex (optional, 0 = none): discards every entry at or below
//     it. It must lie above the compaction point, at or below the last
//     index and at or below the applied index.
//
// Finally the commit index must not pass the last index. A batch breaking
// any rule, or any limit above, is refused whole with a *RefusedError.
type Batch struct {
	Entries      []Entry
	HardState    *HardState
	Snapshot     *Snapshot
	Applied      *Applied
	CompactIndex uint64
}

// IsEmpty reports whether the batch changes nothing.
func (b *Batch) IsEmpty() bool {
	return len(b.Entries) == 0 && b.HardState == nil && b.Snapshot == nil &&
		b.Applied == nil && b.CompactIndex == 0
}

// State is what a starting process recovers.
type State struct {
	HardState HardState
	// Snapshot is the latest installed snapshot (Index 0: none).
	Snapshot Snapshot
	// Compacted is the last entry discarded from the front of the log, by a
	// snapshot or a compaction ({0, 0} for a log never compacted). It is at
	// or above the snapshot.
	Compacted EntryID
	// Entries are the stored entries, contiguous from Compacted.Index+1.
	Entries []Entry
	Applied Applied
}

// LastIndex is the index of the last entry, or the compaction point when
// the log holds none.
func (s *State) LastIndex() uint64 {
	if n := len(s.Entries); n > 0 {
		return s.Entries[n-1].Index
	}
	return s.Compacted.Index
}

// Summary is the part of the stored state that validating a batch needs.
func (s *State) Summary() Summary {
	return Summary{
		HardState:    s.HardState,
		Compacted:    s.Compacted,
		LastIndex:    s.LastIndex(),
		AppliedIndex: s.Applied.Index,
	}
}

// Store is the metadata storage port. A Store is used from one goroutine.
type Store interface {
	// Apply validates b and, if it is valid, makes it durable. When Apply
	// returns nil, all of b is durable; after any crash, all of b or none
	// of it is visible. A *RefusedError (ErrRefused) means b broke a rule
	// or a limit and nothing changed; the store stays usable. Any other
	// error means the store failed: b's outcome is unknown (a crash may
	// later show all of it or none of it, never part), and every later call
	// but Close returns ErrFailed until the store is reopened.
	Apply(b *Batch) error
	// Load returns the stored state (see State). It reports corruption or
	// inconsistency as a *CorruptError (ErrCorrupt) and never repairs it.
	Load() (State, error)
	// Close releases the store. Later calls return ErrClosed.
	Close() error
}

// Error kinds, tested with errors.Is.
var (
	// ErrRefused: a batch broke a rule or a limit; nothing changed.
	ErrRefused = errors.New("meta: batch refused")
	// ErrCorrupt: stored bytes failed a checksum, did not decode, or
	// contradict each other. Load never repairs them.
	ErrCorrupt = errors.New("meta: store corrupt")
	// ErrFailed: an earlier write or sync failed; the store must be closed
	// and reopened.
	ErrFailed = errors.New("meta: store failed")
	// ErrClosed: the store was closed (or lost with its machine's power).
	ErrClosed = errors.New("meta: store closed")
)

// RefusedError names the field of a refused batch and the rule it broke.
type RefusedError struct {
	Field  string // e.g. "Entries[3].Index", "HardState.Commit"
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("meta: batch refused: %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refuse(field, format string, args ...any) error {
	return &RefusedError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// CorruptError names the stored record that is corrupt or inconsistent.
type CorruptError struct {
	Record string // e.g. "entry 17", "hard state", "key 0x7f01"
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("meta: store corrupt: %s: %s", e.Record, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Corrupt returns a *CorruptError.
func Corrupt(record, format string, args ...any) error {
	return &CorruptError{Record: record, Reason: fmt.Sprintf(format, args...)}
}

// Usable is the check every store makes before a call: ErrClosed after
// Close, an error wrapping ErrFailed and the failure after a failed write or
// sync (contract point 4), nil otherwise.
func Usable(closed bool, failed error) error {
	switch {
	case closed:
		return ErrClosed
	case failed != nil:
		return fmt.Errorf("%w: %w", ErrFailed, failed)
	}
	return nil
}
