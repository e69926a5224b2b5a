package metamem

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/meta/metatest"
)

// crasher is the suite's power-loss hook for a Disk.
type crasher struct{ d *Disk }

func (c crasher) ApplyUnsynced(s meta.Store, b *meta.Batch) error {
	_, err := s.(*Store).Start(b)
	return err
}

func (c crasher) PowerLoss(seed uint64) error {
	// Keep or lose the batches in flight, as the seed says.
	c.d.PowerLoss(int(seed % 2 * PendingBatchesMax))
	return nil
}

func harness(d *Disk) metatest.Harness {
	return metatest.Harness{
		Open:  func() (meta.Store, error) { return d.Open() },
		Crash: crasher{d},
	}
}

func TestSuite(t *testing.T) {
	metatest.Run(t, func(t *testing.T) metatest.Harness { return harness(NewDisk()) })
}

// caseByName returns the suite's case named name; the randomized cases by
// their fixed seed, whatever SLUICE_META_SEED says.
func caseByName(t *testing.T, name string) metatest.Case {
	switch name {
	case "random/seed=1":
		return metatest.Random(1, false)
	case "random-crash/seed=1":
		return metatest.Random(1, true)
	}
	for _, c := range metatest.Cases() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no suite case %q", name)
	return metatest.Case{}
}

// TestSuiteCatchesTornPowerLoss plants a bug, a power loss that keeps half
// of a batch in flight, and requires the suite to catch it.
func TestSuiteCatchesTornPowerLoss(t *testing.T) {
	for _, name := range []string{"crash/in-flight", "random-crash/seed=1"} {
		d := NewDisk()
		d.tornPowerLoss = true
		err := caseByName(t, name).Run(harness(d))
		if err == nil {
			t.Fatalf("%s passed a store whose power loss keeps half a batch", name)
		}
		t.Logf("%s caught it: %v", name, err)
	}
}

// swallowRefusals is a broken store: it reports refused batches as applied.
type swallowRefusals struct{ meta.Store }

func (s swallowRefusals) Apply(b *meta.Batch) error {
	if err := s.Store.Apply(b); err != nil && !errors.Is(err, meta.ErrRefused) {
		return err
	}
	return nil
}

// forgetfulLoad is a broken store: Load loses the last entry.
type forgetfulLoad struct{ meta.Store }

func (s forgetfulLoad) Load() (meta.State, error) {
	st, err := s.Store.Load()
	if n := len(st.Entries); n > 0 {
		st.Entries = st.Entries[:n-1]
	}
	return st, err
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wrap  func(meta.Store) meta.Store
		cases []string
	}{
		{"swallows refusals", func(s meta.Store) meta.Store { return swallowRefusals{s} }, []string{"refuse/entries-gap", "refuse/hard-state-commit-back", "random/seed=1"}},
		{"loses the last entry", func(s meta.Store) meta.Store { return forgetfulLoad{s} }, []string{"append", "overwrite", "random/seed=1"}},
	} {
		for _, name := range tc.cases {
			d := NewDisk()
			h := metatest.Harness{Open: func() (meta.Store, error) {
				s, err := d.Open()
				if err != nil {
					return nil, err
				}
				return tc.wrap(s), nil
			}}
			err := caseByName(t, name).Run(h)
			if err == nil {
				t.Errorf("%s: case %s passed a store that %s", tc.name, name, tc.name)
				continue
			}
			t.Logf("%s: %s caught it: %v", tc.name, name, err)
		}
	}
}

func entries(first, last, term uint64) []meta.Entry {
	var es []meta.Entry
	for i := first; i <= last; i++ {
		es = append(es, meta.Entry{Index: i, Term: term, Data: []byte{byte(i)}})
	}
	return es
}

func TestStartCompleteAndPowerLoss(t *testing.T) {
	d := NewDisk()
	s, _ := d.Open()
	t1, err := s.Start(&meta.Batch{Entries: entries(1, 2, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := s.Start(&meta.Batch{Entries: entries(3, 4, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(&meta.Batch{Entries: entries(5, 6, 1)}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Load()
	if st.LastIndex() != 6 || d.Pending() != 3 {
		t.Fatalf("started batches: last index %d, pending %d; want 6, 3", st.LastIndex(), d.Pending())
	}
	if err := s.Complete(t2); err != nil { // syncs t1 and t2
		t.Fatal(err)
	}
	if err := s.Complete(t1); err != nil { // already durable: no-op
		t.Fatal(err)
	}
	if d.Pending() != 1 {
		t.Fatalf("pending %d after Complete(t2), want 1", d.Pending())
	}
	d.PowerLoss(0)
	if _, err := s.Load(); !errors.Is(err, meta.ErrClosed) {
		t.Fatalf("Load on a store that lost its power: %v, want ErrClosed", err)
	}
	s, _ = d.Open()
	st, err = s.Load()
	if err != nil || st.LastIndex() != 4 {
		t.Fatalf("after a power loss: last index %d, %v; want 4", st.LastIndex(), err)
	}
	// A kill (no power loss) keeps started batches visible to the next store.
	if _, err := s.Start(&meta.Batch{Entries: entries(5, 5, 2)}); err != nil {
		t.Fatal(err)
	}
	d.Kill()
	s, _ = d.Open()
	if st, _ := s.Load(); st.LastIndex() != 5 {
		t.Fatalf("after a kill: last index %d, want 5 (still in the page cache)", st.LastIndex())
	}
	// What the new process loaded was made durable at its open: a power
	// loss keeping nothing pending keeps it (seed 423).
	d.PowerLoss(0)
	s, _ = d.Open()
	if st, _ := s.Load(); st.LastIndex() != 5 {
		t.Fatalf("after a kill, an open and a power loss: last index %d, want 5 (synced at the open)", st.LastIndex())
	}
}

func TestFailedSync(t *testing.T) {
	d := NewDisk()
	s, _ := d.Open()
	if err := s.Apply(&meta.Batch{Entries: entries(1, 3, 1)}); err != nil {
		t.Fatal(err)
	}
	d.FailNextSync()
	err := s.Apply(&meta.Batch{Entries: entries(4, 5, 1)})
	if !errors.Is(err, meta.ErrFailed) || !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Apply with a failed sync: %v, want ErrFailed and ErrSyncFailed", err)
	}
	// Failed for good: even a valid batch and Load are refused.
	if err := s.Apply(&meta.Batch{Entries: entries(4, 4, 1)}); !errors.Is(err, meta.ErrFailed) {
		t.Fatalf("Apply after a failed sync: %v, want ErrFailed", err)
	}
	if _, err := s.Load(); !errors.Is(err, meta.ErrFailed) {
		t.Fatalf("Load after a failed sync: %v, want ErrFailed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, _ = d.Open()
	st, err := s.Load()
	if err != nil || st.LastIndex() != 3 {
		t.Fatalf("after reopening: last index %d, %v; want 3 (the failed batch is dropped whole)", st.LastIndex(), err)
	}
	if err := s.Apply(&meta.Batch{Entries: entries(4, 4, 1)}); err != nil {
		t.Fatalf("Apply after reopening: %v", err)
	}
}

func TestCorruptionIsReported(t *testing.T) {
	for pick := range uint64(40) {
		d := NewDisk()
		s, _ := d.Open()
		b := &meta.Batch{Entries: entries(2, 4, 1), HardState: &meta.HardState{Term: 1, Vote: 1, Commit: 3},
			Applied: &meta.Applied{Index: 2, Data: []byte("img")}, Snapshot: &meta.Snapshot{Index: 1, Term: 1, Data: []byte("snap")}}
		if err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		key := d.Corrupt(pick)
		_, err := s.Load()
		var ce *meta.CorruptError
		if !errors.Is(err, meta.ErrCorrupt) || !errors.As(err, &ce) {
			t.Fatalf("pick %d (key %x): Load: %v, want a *meta.CorruptError", pick, key, err)
		}
		if !strings.Contains(err.Error(), "crc mismatch") {
			t.Fatalf("pick %d: %v, want a crc mismatch", pick, err)
		}
		// Reported again on a new store: nothing was repaired.
		_ = s.Close()
		s, _ = d.Open()
		if _, err := s.Load(); !errors.Is(err, meta.ErrCorrupt) {
			t.Fatalf("pick %d: Load after reopening: %v, want ErrCorrupt", pick, err)
		}
		if err := s.Apply(&meta.Batch{Entries: entries(5, 5, 1)}); !errors.Is(err, meta.ErrCorrupt) {
			t.Fatalf("pick %d: Apply on a corrupt store: %v, want ErrCorrupt", pick, err)
		}
	}
}
