package metapebble

import (
	"errors"
	"fmt"
	"log"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/meta/metakv"
)

// Options configure a Store.
type Options struct {
	// FS is the file system; nil means the operating system's (vfs.Default).
	FS vfs.FS
	// Logger receives pebble's messages; nil drops informational ones,
	// writes errors to the standard logger and panics on fatal ones.
	Logger pebble.Logger

	// noSync commits without syncing: a planted bug that the package's own
	// tests require the power-loss checks to catch. Never set otherwise.
	noSync bool
}

// Store is a meta.Store on a pebble database.
type Store struct {
	db     *pebble.DB
	sum    meta.Summary
	loaded bool
	failed error
	closed bool
	noSync bool
}

var _ meta.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dir.
func Open(dir string, o Options) (*Store, error) {
	po := &pebble.Options{FS: o.FS, Logger: o.Logger}
	if po.FS == nil {
		po.FS = vfs.Default
	}
	if po.Logger == nil {
		po.Logger = quietLogger{}
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("metapebble: open %s: %w", dir, err)
	}
	// What the open recovered from the write-ahead log may sit only in the
	// page cache (a killed process's unsynced batches): raft takes what it
	// loads for its stable log, so make it durable before anyone loads it
	// (a flush writes and syncs the recovered memtable). sim/metamem does
	// the same at its open; swarm seed 423 showed why.
	if err := db.Flush(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("metapebble: open %s: making the recovered state durable: %w", dir, err)
	}
	return &Store{db: db, noSync: o.noSync}, nil
}

func (s *Store) usable() error { return meta.Usable(s.closed, s.failed) }

// Load implements meta.Store.
func (s *Store) Load() (meta.State, error) {
	if err := s.usable(); err != nil {
		return meta.State{}, err
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return meta.State{}, fmt.Errorf("metapebble: load: %w", err)
	}
	var l metakv.Loader
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return meta.State{}, fmt.Errorf("metapebble: load: reading %x: %w", it.Key(), err)
		}
		if err := l.Add(it.Key(), v); err != nil {
			_ = it.Close()
			return meta.State{}, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return meta.State{}, fmt.Errorf("metapebble: load: %w", err)
	}
	st, err := l.Finish()
	if err != nil {
		return meta.State{}, err
	}
	s.sum, s.loaded = st.Summary(), true
	return st, nil
}

// Apply implements meta.Store.
func (s *Store) Apply(b *meta.Batch) error {
	wo := pebble.Sync
	if s.noSync {
		wo = pebble.NoSync
	}
	return s.apply(b, wo)
}

func (s *Store) apply(b *meta.Batch, wo *pebble.WriteOptions) error {
	if err := s.usable(); err != nil {
		return err
	}
	if !s.loaded {
		if _, err := s.Load(); err != nil {
			return err
		}
	}
	next, err := meta.Validate(s.sum, s.term, b)
	if err != nil {
		return err
	}
	if b.IsEmpty() {
		return nil
	}
	pb := s.db.NewBatch()
	defer pb.Close()
	for _, op := range metakv.Plan(s.sum, next, b) {
		if op.IsDelete() {
			err = pb.DeleteRange(op.Key, op.End, nil)
		} else {
			err = pb.Set(op.Key, op.Value, nil)
		}
		if err != nil {
			// Building the batch in memory failed: nothing was written.
			return fmt.Errorf("metapebble: building the batch: %w", err)
		}
	}
	if err := pb.Commit(wo); err != nil {
		s.failed = err
		return s.usable()
	}
	s.sum = next
	return nil
}

// Close implements meta.Store.
func (s *Store) Close() error {
	if s.closed {
		return meta.ErrClosed
	}
	s.closed = true
	return s.db.Close()
}

func (s *Store) term(index uint64) (uint64, error) {
	k := metakv.EntryKey(index)
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, meta.Corrupt(fmt.Sprintf("entry %d", index), "missing inside the log (%d, %d]", s.sum.Compacted.Index, s.sum.LastIndex)
	}
	if err != nil {
		return 0, fmt.Errorf("metapebble: reading entry %d: %w", index, err)
	}
	defer closer.Close()
	e, err := metakv.DecodeEntry(k, v)
	if err != nil {
		return 0, err
	}
	return e.Term, nil
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	log.Printf("metapebble: pebble: "+format, args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("metapebble: pebble: "+format, args...))
}
