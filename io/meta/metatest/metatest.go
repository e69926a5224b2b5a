package metatest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/sluicemq/sluice/io/meta"
)

// SeedEnv is the environment variable that picks the randomized cases' seed.
const SeedEnv = "SLUICE_META_SEED"

// Harness is one storage medium for the suite.
type Harness struct {
	// Open opens a store on the harness's storage, the same storage every
	// time. The suite closes the previous store before it opens again.
	Open func() (meta.Store, error)
	// Crash, when not nil, enables the power-loss cases.
	Crash Crasher
}

// Crasher simulates power loss on a harness's storage.
type Crasher interface {
	// ApplyUnsynced validates b as Apply does and writes it through s
	// without making it durable: a batch in flight when the power fails.
	ApplyUnsynced(s meta.Store, b *meta.Batch) error
	// PowerLoss cuts the power: the open store becomes unusable (the suite
	// only closes it, ignoring the error) and what was not durable is lost
	// or kept, as the implementation's model allows, chosen from seed.
	// The suite then opens the storage again with Harness.Open.
	PowerLoss(seed uint64) error
}

// Case is one check of the suite.
type Case struct {
	Name string
	// Crash: the case needs Harness.Crash.
	Crash bool
	Run   func(h Harness) error
}

// Run runs every case as a subtest, each on a fresh harness. Cases that
// need a Crasher are skipped when the harness has none.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			h := newHarness(t)
			if c.Crash && h.Crash == nil {
				t.Skip("the harness cannot simulate a power loss")
			}
			if err := c.Run(h); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Seeds returns the randomized cases' seeds: SLUICE_META_SEED if set (it
// panics on a malformed value, so a typo is never a silent default), else
// the fixed seeds.
func Seeds() []uint64 {
	v := os.Getenv(SeedEnv)
	if v == "" {
		return []uint64{1, 2, 3}
	}
	s, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("metatest: %s=%q: %v", SeedEnv, v, err))
	}
	return []uint64{s}
}

// Cases returns the suite.
func Cases() []Case {
	cs := []Case{
		{Name: "empty", Run: caseEmpty},
		{Name: "append", Run: caseAppend},
		{Name: "overwrite", Run: caseOverwrite},
		{Name: "hard-state", Run: caseHardState},
		{Name: "snapshot", Run: caseSnapshot},
		{Name: "compaction", Run: caseCompaction},
		{Name: "applied", Run: caseApplied},
		{Name: "large-batch", Run: caseLargeBatch},
		{Name: "closed", Run: caseClosed},
		{Name: "crash/acknowledged", Crash: true, Run: caseCrashAcknowledged},
		{Name: "crash/in-flight", Crash: true, Run: caseCrashInFlight},
	}
	for _, r := range refusals() {
		cs = append(cs, Case{Name: "refuse/" + r.name, Run: r.run})
	}
	for _, seed := range Seeds() {
		cs = append(cs, Random(seed, false), Random(seed, true))
	}
	return cs
}

// Random returns the randomized case for seed, with power losses when
// crash is set (named random/seed=N or random-crash/seed=N). Cases() holds
// it for the seeds of Seeds(); tests of planted bugs take it directly so
// that their seed does not follow SLUICE_META_SEED.
func Random(seed uint64, crash bool) Case {
	if crash {
		return Case{Name: fmt.Sprintf("random-crash/seed=%d", seed), Crash: true, Run: func(h Harness) error {
			return randomRun(h, seed, true)
		}}
	}
	return Case{Name: fmt.Sprintf("random/seed=%d", seed), Run: func(h Harness) error {
		return randomRun(h, seed, false)
	}}
}

// ---- helpers ----

func ents(first, last, term uint64) []meta.Entry {
	var es []meta.Entry
	for i := first; i <= last; i++ {
		es = append(es, meta.Entry{Index: i, Term: term, Data: []byte(fmt.Sprintf("e%d/t%d", i, term))})
	}
	return es
}

func hs(term, vote, commit uint64) *meta.HardState {
	return &meta.HardState{Term: term, Vote: vote, Commit: commit}
}

// session holds the open store of a case.
type session struct {
	h Harness
	s meta.Store
}

func open(h Harness) (*session, error) {
	s, err := h.Open()
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return &session{h: h, s: s}, nil
}

func (ss *session) close() {
	if ss.s != nil {
		_ = ss.s.Close()
		ss.s = nil
	}
}

func (ss *session) reopen() error {
	if err := ss.s.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	s, err := ss.h.Open()
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	ss.s = s
	return nil
}

func (ss *session) powerLoss(seed uint64) error {
	if err := ss.h.Crash.PowerLoss(seed); err != nil {
		return fmt.Errorf("power loss: %w", err)
	}
	_ = ss.s.Close()
	s, err := ss.h.Open()
	if err != nil {
		return fmt.Errorf("open after power loss: %w", err)
	}
	ss.s = s
	return nil
}

func (ss *session) apply(what string, b *meta.Batch) error {
	if err := ss.s.Apply(b); err != nil {
		return fmt.Errorf("%s: Apply: %w", what, err)
	}
	return nil
}

// expect loads the state and compares it with want.
func (ss *session) expect(what string, want *meta.State) error {
	got, err := ss.s.Load()
	if err != nil {
		return fmt.Errorf("%s: Load: %w", what, err)
	}
	if d := diffState(&got, want); d != "" {
		return fmt.Errorf("%s: Load differs: %s", what, d)
	}
	return nil
}

// expectBoth checks the state, reopens, and checks it again.
func (ss *session) expectBoth(what string, want *meta.State) error {
	if err := ss.expect(what, want); err != nil {
		return err
	}
	if err := ss.reopen(); err != nil {
		return err
	}
	return ss.expect(what+" (after reopen)", want)
}

// diffState describes the first difference, "" if none. Nil and empty
// Data are equal.
func diffState(got, want *meta.State) string {
	if got.HardState != want.HardState {
		return fmt.Sprintf("hard state %+v, want %+v", got.HardState, want.HardState)
	}
	if got.Compacted != want.Compacted {
		return fmt.Sprintf("compaction point %+v, want %+v", got.Compacted, want.Compacted)
	}
	if got.Snapshot.Index != want.Snapshot.Index || got.Snapshot.Term != want.Snapshot.Term || !bytes.Equal(got.Snapshot.Data, want.Snapshot.Data) {
		return fmt.Sprintf("snapshot (%d, %d, %d bytes), want (%d, %d, %d bytes)",
			got.Snapshot.Index, got.Snapshot.Term, len(got.Snapshot.Data), want.Snapshot.Index, want.Snapshot.Term, len(want.Snapshot.Data))
	}
	if got.Applied.Index != want.Applied.Index || !bytes.Equal(got.Applied.Data, want.Applied.Data) {
		return fmt.Sprintf("applied (%d, %s), want (%d, %s)", got.Applied.Index, short(got.Applied.Data), want.Applied.Index, short(want.Applied.Data))
	}
	for i := range min(len(got.Entries), len(want.Entries)) {
		g, w := &got.Entries[i], &want.Entries[i]
		if g.Index != w.Index || g.Term != w.Term || g.Kind != w.Kind || !bytes.Equal(g.Data, w.Data) {
			return fmt.Sprintf("entry #%d is (%d, %d, %v, %d bytes), want (%d, %d, %v, %d bytes)",
				i, g.Index, g.Term, g.Kind, len(g.Data), w.Index, w.Term, w.Kind, len(w.Data))
		}
	}
	if len(got.Entries) != len(want.Entries) {
		return fmt.Sprintf("%d entries (last index %d), want %d (last index %d)", len(got.Entries), got.LastIndex(), len(want.Entries), want.LastIndex())
	}
	return ""
}

// short prints data for a message: whole when short, else its length.
func short(d []byte) string {
	if len(d) <= 16 {
		return fmt.Sprintf("%q", d)
	}
	return fmt.Sprintf("%d bytes", len(d))
}

// ---- plain cases ----

func caseEmpty(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	if err := ss.expectBoth("new store", &meta.State{}); err != nil {
		return err
	}
	if err := ss.apply("empty batch", &meta.Batch{}); err != nil {
		return err
	}
	return ss.expectBoth("after an empty batch", &meta.State{})
}

func caseAppend(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	b := &meta.Batch{Entries: ents(1, 5, 1), HardState: hs(1, 1, 0)}
	b.Entries[2].Kind = meta.EntryConfChange
	b.Entries[3].Data = nil
	if err := ss.apply("entries 1..5", b); err != nil {
		return err
	}
	want := meta.State{HardState: *b.HardState, Entries: b.Entries}
	if err := ss.expectBoth("entries 1..5", &want); err != nil {
		return err
	}
	b2 := &meta.Batch{Entries: ents(6, 8, 2), HardState: hs(2, 0, 5)}
	if err := ss.apply("entries 6..8", b2); err != nil {
		return err
	}
	want.Entries = append(append([]meta.Entry(nil), b.Entries...), b2.Entries...)
	want.HardState = *b2.HardState
	return ss.expectBoth("entries 1..8", &want)
}

func caseOverwrite(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	if err := ss.apply("entries 1..5 term 1", &meta.Batch{Entries: ents(1, 5, 1), HardState: hs(1, 0, 1)}); err != nil {
		return err
	}
	// A new leader's entries from index 3 replace 3..5; 5 goes.
	if err := ss.apply("entries 3..4 term 2", &meta.Batch{Entries: ents(3, 4, 2), HardState: hs(2, 0, 1)}); err != nil {
		return err
	}
	want := meta.State{HardState: *hs(2, 0, 1), Entries: append(ents(1, 2, 1), ents(3, 4, 2)...)}
	if err := ss.expectBoth("overwritten from 3", &want); err != nil {
		return err
	}
	// Appending at last+1 keeps everything; at 2 truncates to 1.
	if err := ss.apply("entry 5 term 2", &meta.Batch{Entries: ents(5, 5, 2)}); err != nil {
		return err
	}
	if err := ss.apply("entries 2..3 term 3", &meta.Batch{Entries: ents(2, 3, 3), HardState: hs(3, 0, 1)}); err != nil {
		return err
	}
	want = meta.State{HardState: *hs(3, 0, 1), Entries: append(ents(1, 1, 1), ents(2, 3, 3)...)}
	return ss.expectBoth("overwritten from 2", &want)
}

func caseHardState(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	want := meta.State{Entries: ents(1, 3, 1)}
	steps := []meta.HardState{{Term: 1}, {Term: 1, Vote: 2}, {Term: 1, Vote: 2, Commit: 2}, {Term: 4, Vote: 0, Commit: 2}, {Term: 4, Vote: 3, Commit: 3}}
	if err := ss.apply("entries", &meta.Batch{Entries: want.Entries}); err != nil {
		return err
	}
	for i, h := range steps {
		if err := ss.apply(fmt.Sprintf("hard state %d", i), &meta.Batch{HardState: &h}); err != nil {
			return err
		}
		want.HardState = h
		if err := ss.expectBoth(fmt.Sprintf("hard state %d", i), &want); err != nil {
			return err
		}
	}
	return nil
}

func caseSnapshot(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	log := append(ents(1, 5, 1), ents(6, 10, 2)...)
	if err := ss.apply("entries 1..10", &meta.Batch{Entries: log, HardState: hs(2, 1, 4)}); err != nil {
		return err
	}
	// A matching snapshot at 7 discards 1..7 and keeps 8..10.
	snap := meta.Snapshot{Index: 7, Term: 2, Data: []byte("image@7")}
	if err := ss.apply("snapshot at 7", &meta.Batch{Snapshot: &snap, HardState: hs(2, 1, 7)}); err != nil {
		return err
	}
	want := meta.State{HardState: *hs(2, 1, 7), Snapshot: snap, Compacted: meta.EntryID{Index: 7, Term: 2}, Entries: log[7:]}
	if err := ss.expectBoth("matching snapshot at 7", &want); err != nil {
		return err
	}
	// A snapshot at 9 of another term discards the whole log.
	snap2 := meta.Snapshot{Index: 9, Term: 3, Data: []byte("image@9")}
	if err := ss.apply("snapshot at 9 term 3", &meta.Batch{Snapshot: &snap2, HardState: hs(3, 0, 9)}); err != nil {
		return err
	}
	want = meta.State{HardState: *hs(3, 0, 9), Snapshot: snap2, Compacted: meta.EntryID{Index: 9, Term: 3}}
	if err := ss.expectBoth("mismatching snapshot at 9", &want); err != nil {
		return err
	}
	// A snapshot beyond the log, with entries after it in the same batch.
	snap3 := meta.Snapshot{Index: 20, Term: 4, Data: []byte("image@20")}
	b := &meta.Batch{Snapshot: &snap3, Entries: ents(21, 22, 4), HardState: hs(4, 2, 20)}
	if err := ss.apply("snapshot at 20 with entries 21..22", b); err != nil {
		return err
	}
	want = meta.State{HardState: *hs(4, 2, 20), Snapshot: snap3, Compacted: meta.EntryID{Index: 20, Term: 4}, Entries: ents(21, 22, 4)}
	return ss.expectBoth("snapshot beyond the log", &want)
}

func caseCompaction(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	log := append(ents(1, 4, 1), ents(5, 10, 2)...)
	app := meta.Applied{Index: 6, Data: []byte("applied@6")}
	if err := ss.apply("entries 1..10", &meta.Batch{Entries: log, HardState: hs(2, 1, 8), Applied: &app}); err != nil {
		return err
	}
	if err := ss.apply("compact 5", &meta.Batch{CompactIndex: 5}); err != nil {
		return err
	}
	want := meta.State{HardState: *hs(2, 1, 8), Compacted: meta.EntryID{Index: 5, Term: 2}, Entries: log[5:], Applied: app}
	if err := ss.expectBoth("compacted through 5", &want); err != nil {
		return err
	}
	// Compaction with the applied record that allows it, in one batch.
	app2 := meta.Applied{Index: 8, Data: []byte("applied@8")}
	if err := ss.apply("apply 8, compact 8", &meta.Batch{Applied: &app2, CompactIndex: 8}); err != nil {
		return err
	}
	want = meta.State{HardState: *hs(2, 1, 8), Compacted: meta.EntryID{Index: 8, Term: 2}, Entries: log[8:], Applied: app2}
	if err := ss.expectBoth("compacted through 8", &want); err != nil {
		return err
	}
	// Entries, commit, applied and compaction through all of them at once:
	// the log ends up empty at the compaction point.
	app3 := meta.Applied{Index: 12}
	b := &meta.Batch{Entries: ents(11, 12, 3), HardState: hs(3, 0, 12), Applied: &app3, CompactIndex: 12}
	if err := ss.apply("append, commit, apply, compact 12", b); err != nil {
		return err
	}
	want = meta.State{HardState: *hs(3, 0, 12), Compacted: meta.EntryID{Index: 12, Term: 3}, Applied: app3}
	if err := ss.expectBoth("compacted through 12", &want); err != nil {
		return err
	}
	if err := ss.apply("entries 13..14", &meta.Batch{Entries: ents(13, 14, 3)}); err != nil {
		return err
	}
	want.Entries = ents(13, 14, 3)
	return ss.expectBoth("appended after the compaction point", &want)
}

func caseApplied(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	want := meta.State{HardState: *hs(1, 1, 3), Entries: ents(1, 3, 1)}
	if err := ss.apply("entries", &meta.Batch{Entries: want.Entries, HardState: &want.HardState}); err != nil {
		return err
	}
	for i, a := range []meta.Applied{{Index: 1, Data: []byte("image 1")}, {Index: 1, Data: []byte("marker")}, {Index: 3}} {
		if err := ss.apply(fmt.Sprintf("applied %d", i), &meta.Batch{Applied: &a}); err != nil {
			return err
		}
		want.Applied = a
		if err := ss.expectBoth(fmt.Sprintf("applied %d", i), &want); err != nil {
			return err
		}
	}
	return nil
}

// caseLargeBatch writes batches exactly at the limits.
func caseLargeBatch(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	b := &meta.Batch{HardState: hs(1, 1, 0)}
	for i := range meta.BatchEntriesMax {
		data := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, meta.EntryDataBytesMax/2)
		b.Entries = append(b.Entries, meta.Entry{Index: uint64(i) + 1, Term: 1, Data: data})
	}
	if err := ss.apply("1024 entries of 64 KiB", b); err != nil {
		return err
	}
	want := meta.State{HardState: *b.HardState, Entries: b.Entries}
	if err := ss.expectBoth("1024 entries of 64 KiB", &want); err != nil {
		return err
	}
	// Replace them all with small ones; the big ones must go.
	b2 := &meta.Batch{Entries: ents(1, 3, 2), HardState: hs(2, 0, 0)}
	if err := ss.apply("3 small entries over them", b2); err != nil {
		return err
	}
	return ss.expectBoth("3 small entries over them", &meta.State{HardState: *b2.HardState, Entries: b2.Entries})
}

func caseClosed(h Harness) error {
	s, err := h.Open()
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("Close: %w", err)
	}
	if err := s.Apply(&meta.Batch{Entries: ents(1, 1, 1)}); !errors.Is(err, meta.ErrClosed) {
		return fmt.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Load(); !errors.Is(err, meta.ErrClosed) {
		return fmt.Errorf("Load after Close: %v, want ErrClosed", err)
	}
	s, err = h.Open()
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		return err
	}
	if d := diffState(&st, &meta.State{}); d != "" {
		return fmt.Errorf("the refused Apply after Close wrote: %s", d)
	}
	return nil
}
