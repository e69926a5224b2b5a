package metamem

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/meta/metakv"
)

// PendingBatchesMax bounds the batches started and not yet completed on a
// Disk. Starting one more is a caller bug (the host bounds its own
// pipeline) and panics.
const PendingBatchesMax = 64

// ErrSyncFailed is the cause wrapped by the error of a failed sync.
var ErrSyncFailed = errors.New("metamem: injected sync failure")

// Ticket names a started batch, in start order on its Disk.
type Ticket uint64

// Disk is one broker's metadata medium. It outlives the Stores opened on
// it, process kills and power losses.
type Disk struct {
	durable map[string][]byte
	pending []pendingBatch // started, not durable, in start order
	nextSeq Ticket
	open    *Store // the open store, if any

	failNextSync bool
	// tornPowerLoss is a planted bug for the package's own tests: a power
	// loss keeps the first half of the writes of the first pending batch
	// that it should drop. Never set outside tests.
	tornPowerLoss bool
}

type pendingBatch struct {
	seq Ticket
	ops []metakv.Op
}

// NewDisk returns an empty disk.
func NewDisk() *Disk {
	return &Disk{durable: map[string][]byte{}, nextSeq: 1}
}

// Open opens a store on d. At most one store is open on a disk at a time.
//
// Opening first makes durable every batch a killed process left written
// and not durable (in the page cache): the new process loads them, and
// raft takes what it loads for its stable log, so they must survive a
// later power loss. Without this sync (a real store's fsync on open), a
// process that exited, restarted, acknowledged entries from its loaded
// log and then lost power came back without entries it had acknowledged:
// raft's "tocommit out of range" panic, found by swarm seed 423 on
// 2026-12-01 (with an operator one command off from today's).
func (d *Disk) Open() (*Store, error) {
	if d.open != nil {
		return nil, errors.New("metamem: disk already has an open store")
	}
	for i := range d.pending {
		applyOps(d.durable, d.pending[i].ops)
	}
	d.pending = nil
	s := &Store{d: d}
	d.open = s
	return s, nil
}

// Pending returns the number of batches started and not yet durable.
func (d *Disk) Pending() int { return len(d.pending) }

// Records returns the number of durable records.
func (d *Disk) Records() int { return len(d.durable) }

// Kill ends the open store's process: the store returns ErrClosed from then
// on. Started batches stay written, not durable, as in a page cache that
// outlives a process.
func (d *Disk) Kill() {
	if d.open != nil {
		d.open.closed = true
		d.open = nil
	}
}

// PowerLoss simulates a power loss: the open store is killed, and of the
// batches started and not yet completed the first keep (at most all) are
// kept whole and the rest lost whole. keep is the caller's deterministic
// choice (the simulator draws it); every choice is legal, since none of
// these batches was acknowledged and a crash keeps batches in order.
func (d *Disk) PowerLoss(keep int) {
	d.Kill()
	keep = max(0, min(keep, len(d.pending)))
	for i := range keep {
		applyOps(d.durable, d.pending[i].ops)
	}
	if d.tornPowerLoss && keep < len(d.pending) {
		ops := d.pending[keep].ops
		applyOps(d.durable, ops[:len(ops)/2])
	}
	d.pending = nil
}

// FailNextSync makes the next completion (Complete or Apply) fail. As on
// Linux, where a failed fsync drops the dirty pages and reports the error
// once, the batches not yet durable are lost whole, the call returns an
// error wrapping meta.ErrFailed and ErrSyncFailed, and the store is failed
// until it is reopened. (On a real store a failed batch may also survive;
// callers treat its outcome as unknown.)
func (d *Disk) FailNextSync() { d.failNextSync = true }

// Corrupt flips one bit of one durable record, both chosen by pick (the
// caller's deterministic draw): record pick mod the number of records in
// key order, then a bit of its value. It returns the record's key, or ""
// when the disk holds no durable record. Load reports the damage as a
// *meta.CorruptError; nothing repairs it. Batches not yet durable are not
// touched (a later one may overwrite or delete the damaged record).
func (d *Disk) Corrupt(pick uint64) string {
	keys := slices.Sorted(maps.Keys(d.durable))
	if len(keys) == 0 {
		return ""
	}
	n := uint64(len(keys))
	k := keys[pick%n]
	v := slices.Clone(d.durable[k])
	bit := (pick / n) % uint64(8*len(v))
	v[bit/8] ^= 1 << (bit % 8)
	d.durable[k] = v
	return k
}

// visible returns the records as a reader sees them: the durable ones with
// the started batches applied in order.
func (d *Disk) visible() map[string][]byte {
	m := maps.Clone(d.durable)
	for i := range d.pending {
		applyOps(m, d.pending[i].ops)
	}
	return m
}

// get reads one record as a reader sees it.
func (d *Disk) get(key string) ([]byte, bool) {
	for i := len(d.pending) - 1; i >= 0; i-- {
		for _, op := range d.pending[i].ops {
			if op.IsDelete() {
				if key >= string(op.Key) && key < string(op.End) {
					return nil, false
				}
			} else if key == string(op.Key) {
				return op.Value, true
			}
		}
	}
	v, ok := d.durable[key]
	return v, ok
}

func applyOps(m map[string][]byte, ops []metakv.Op) {
	for _, op := range ops {
		if !op.IsDelete() {
			m[string(op.Key)] = op.Value
			continue
		}
		// Plan deletes only entry ranges; a short one is deleted key by key.
		lo, okLo := metakv.EntryIndex(op.Key)
		hi, okHi := metakv.EntryIndex(op.End)
		if okLo && okHi && hi-lo <= uint64(len(m)) {
			for i := lo; i < hi; i++ {
				delete(m, string(metakv.EntryKey(i)))
			}
			continue
		}
		// Otherwise walk the keys, sorted so that no map order is involved.
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k >= string(op.Key) && k < string(op.End) {
				delete(m, k)
			}
		}
	}
}

// Store is a meta.Store on a Disk.
type Store struct {
	d      *Disk
	sum    meta.Summary
	loaded bool  // sum is valid
	failed error // non-nil once a sync failed
	closed bool
}

var _ meta.Store = (*Store)(nil)

func (s *Store) usable() error { return meta.Usable(s.closed, s.failed) }

// Load implements meta.Store: it reads the records as they stand, durable
// or started.
func (s *Store) Load() (meta.State, error) {
	if err := s.usable(); err != nil {
		return meta.State{}, err
	}
	m := s.d.visible()
	var l metakv.Loader
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := l.Add([]byte(k), m[k]); err != nil {
			return meta.State{}, err
		}
	}
	st, err := l.Finish()
	if err != nil {
		return meta.State{}, err
	}
	s.sum, s.loaded = st.Summary(), true
	return st, nil
}

// Start validates b and writes it: Load sees it at once, but it is not
// durable until Complete covers its ticket, and a power loss before that
// keeps or loses it whole. A refused batch (*meta.RefusedError) writes
// nothing.
func (s *Store) Start(b *meta.Batch) (Ticket, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if !s.loaded {
		if _, err := s.Load(); err != nil {
			return 0, err
		}
	}
	next, err := meta.Validate(s.sum, s.term, b)
	if err != nil {
		return 0, err
	}
	if len(s.d.pending) >= PendingBatchesMax {
		panic(fmt.Sprintf("metamem: more than %d batches started and not completed", PendingBatchesMax))
	}
	ops := metakv.Plan(s.sum, next, b)
	s.sum = next
	t := s.d.nextSeq
	s.d.nextSeq++
	s.d.pending = append(s.d.pending, pendingBatch{seq: t, ops: ops})
	return t, nil
}

// Complete is the sync: it makes the batch of ticket t durable, and with it
// every batch started before it (on this store or an earlier one on the
// same disk). A ticket already durable is a no-op. A failed sync (see
// FailNextSync) fails the store.
func (s *Store) Complete(t Ticket) error {
	if err := s.usable(); err != nil {
		return err
	}
	if t >= s.d.nextSeq {
		panic(fmt.Sprintf("metamem: Complete(%d) of a ticket never started", t))
	}
	if s.d.failNextSync {
		s.d.failNextSync = false
		s.d.pending = nil
		s.failed = ErrSyncFailed
		return s.usable()
	}
	n := 0
	for n < len(s.d.pending) && s.d.pending[n].seq <= t {
		applyOps(s.d.durable, s.d.pending[n].ops)
		n++
	}
	s.d.pending = slices.Delete(s.d.pending, 0, n)
	return nil
}

// Apply implements meta.Store: Start, then Complete.
func (s *Store) Apply(b *meta.Batch) error {
	t, err := s.Start(b)
	if err != nil {
		return err
	}
	return s.Complete(t)
}

// Close implements meta.Store. Started batches stay on the disk, written
// and not durable.
func (s *Store) Close() error {
	if s.closed {
		return meta.ErrClosed
	}
	s.closed = true
	if s.d.open == s {
		s.d.open = nil
	}
	return nil
}

func (s *Store) term(index uint64) (uint64, error) {
	k := metakv.EntryKey(index)
	v, ok := s.d.get(string(k))
	if !ok {
		return 0, meta.Corrupt(fmt.Sprintf("entry %d", index), "missing inside the log (%d, %d]", s.sum.Compacted.Index, s.sum.LastIndex)
	}
	e, err := metakv.DecodeEntry(k, v)
	if err != nil {
		return 0, err
	}
	return e.Term, nil
}

// Durable decodes what the disk holds durably, as a power loss now would
// leave it: the ground truth the simulator's checkers read (no store need
// be open, and nothing is changed).
func (d *Disk) Durable() (meta.State, error) {
	var l metakv.Loader
	for _, k := range slices.Sorted(maps.Keys(d.durable)) {
		if err := l.Add([]byte(k), d.durable[k]); err != nil {
			return meta.State{}, err
		}
	}
	return l.Finish()
}
