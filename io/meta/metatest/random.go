package metatest

import (
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/io/meta"
)

// model is the suite's own, naive reading of the batch semantics (a slice
// of entries, cut and appended to), independent of meta.Validate and of
// any implementation. It assumes the batch is valid.
type model struct {
	st meta.State
}

func (m *model) clone() model {
	c := *m
	c.st.Entries = append([]meta.Entry(nil), m.st.Entries...)
	return c
}

func (m *model) termAt(index uint64) (uint64, bool) {
	if index == m.st.Compacted.Index {
		return m.st.Compacted.Term, true
	}
	for _, e := range m.st.Entries {
		if e.Index == index {
			return e.Term, true
		}
	}
	return 0, false
}

func (m *model) dropThrough(index uint64) {
	var keep []meta.Entry
	for _, e := range m.st.Entries {
		if e.Index > index {
			keep = append(keep, e)
		}
	}
	m.st.Entries = keep
}

func (m *model) apply(b *meta.Batch) {
	if s := b.Snapshot; s != nil {
		t, ok := m.termAt(s.Index)
		if ok && t == s.Term {
			m.dropThrough(s.Index)
		} else {
			m.st.Entries = nil
		}
		m.st.Snapshot = *s
		m.st.Compacted = meta.EntryID{Index: s.Index, Term: s.Term}
	}
	if len(b.Entries) > 0 {
		first := b.Entries[0].Index
		var keep []meta.Entry
		for _, e := range m.st.Entries {
			if e.Index < first {
				keep = append(keep, e)
			}
		}
		m.st.Entries = append(keep, b.Entries...)
	}
	if b.HardState != nil {
		m.st.HardState = *b.HardState
	}
	if b.Applied != nil {
		m.st.Applied = *b.Applied
	}
	if c := b.CompactIndex; c != 0 {
		t, _ := m.termAt(c)
		m.dropThrough(c)
		m.st.Compacted = meta.EntryID{Index: c, Term: t}
	}
}

// rng is SplitMix64: small, seeded, the same on every machine.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// n returns a value in [0, k); k > 0.
func (r *rng) n(k uint64) uint64 { return r.next() % k }

func (r *rng) data() []byte {
	n := r.n(25)
	if n == 0 {
		return nil
	}
	if r.n(20) == 0 {
		n = 3000 + r.n(9000)
	}
	d := make([]byte, n)
	for i := range d {
		d[i] = byte(r.next())
	}
	return d
}

// batch returns a random valid batch for m and the model after it.
func (r *rng) batch(m *model) (*meta.Batch, model) {
	w := m.clone()
	b := &meta.Batch{}
	if r.n(10) == 0 {
		c, last := w.st.Compacted, w.st.LastIndex()
		var s meta.Snapshot
		if last >= 1 && r.n(2) == 0 {
			s.Index = max(c.Index, 1) + r.n(last-max(c.Index, 1)+1)
			s.Term, _ = w.termAt(s.Index)
		} else {
			lo := max(c.Index, w.st.HardState.Commit, 1)
			s.Index = lo + r.n(last+4-lo)
			t, _ := w.termAt(s.Index)
			s.Term = max(c.Term, t) + 1
		}
		s.Data = r.data()
		b.Snapshot = &s
		w.apply(&meta.Batch{Snapshot: &s})
	}
	if r.n(3) != 0 {
		lo := max(w.st.Compacted.Index, w.st.HardState.Commit) + 1
		first := lo + r.n(w.st.LastIndex()+2-lo)
		term, _ := w.termAt(first - 1)
		term += r.n(2)
		n := 1 + r.n(6)
		if r.n(10) == 0 {
			n = 1 + r.n(60)
		}
		for i := range n {
			if r.n(5) == 0 {
				term++
			}
			b.Entries = append(b.Entries, meta.Entry{Index: first + i, Term: term, Kind: meta.EntryKind(r.n(2)), Data: r.data()})
		}
		w.apply(&meta.Batch{Entries: b.Entries})
	}
	if r.n(2) == 0 {
		old := w.st.HardState
		h := meta.HardState{Term: old.Term + r.n(4)/3}
		if h.Term == old.Term && old.Vote != 0 {
			h.Vote = old.Vote
		} else {
			h.Vote = r.n(4)
		}
		h.Commit = old.Commit + r.n(w.st.LastIndex()-old.Commit+1)
		b.HardState = &h
		w.apply(&meta.Batch{HardState: &h})
	}
	if r.n(3) == 0 {
		a := meta.Applied{Index: w.st.Applied.Index + r.n(w.st.HardState.Commit-w.st.Applied.Index+1), Data: r.data()}
		b.Applied = &a
		w.apply(&meta.Batch{Applied: &a})
	}
	if hi := min(w.st.LastIndex(), w.st.Applied.Index); r.n(5) == 0 && hi > w.st.Compacted.Index {
		b.CompactIndex = w.st.Compacted.Index + 1 + r.n(hi-w.st.Compacted.Index)
		w.apply(&meta.Batch{CompactIndex: b.CompactIndex})
	}
	return b, w
}

// invalid returns a batch that breaks a rule.
func (r *rng) invalid(m *model) *meta.Batch {
	switch r.n(5) {
	case 0:
		return &meta.Batch{Entries: ents(m.st.LastIndex()+2, m.st.LastIndex()+3, m.st.HardState.Term+1)}
	case 1:
		if m.st.HardState.Term > 0 {
			h := m.st.HardState
			h.Term--
			return &meta.Batch{HardState: &h}
		}
		fallthrough
	case 2:
		return &meta.Batch{Applied: &meta.Applied{Index: m.st.HardState.Commit + 1}}
	case 3:
		return &meta.Batch{CompactIndex: m.st.LastIndex() + 1}
	}
	// A valid batch spoiled only by its applied record: refused whole.
	b, w := r.batch(m)
	b.Applied = &meta.Applied{Index: w.st.HardState.Commit + 1, Data: []byte("bad")}
	return b
}

// randomRun applies random batches (and some invalid ones) and compares
// Load with the model after each, reopening at random points and, with
// crash, cutting the power with and without a batch in flight.
func randomRun(h Harness, seed uint64, crash bool) error {
	const steps = 150
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	r := &rng{s: seed}
	var m model
	for step := range steps {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("seed %d step %d (replay: %s=%d): %s", seed, step, SeedEnv, seed, fmt.Sprintf(format, args...))
		}
		switch k := r.n(20); {
		case k == 0:
			if err := ss.reopen(); err != nil {
				return fail("%v", err)
			}
		case k == 1 && crash:
			b, w := r.batch(&m)
			if err := h.Crash.ApplyUnsynced(ss.s, b); err != nil {
				return fail("ApplyUnsynced: %v", err)
			}
			lossSeed := r.next()
			if err := ss.powerLoss(lossSeed); err != nil {
				return fail("%v", err)
			}
			got, err := ss.s.Load()
			if err != nil {
				return fail("Load after a power loss (seed %d) with a batch in flight: %v", lossSeed, err)
			}
			dBefore, dAfter := diffState(&got, &m.st), diffState(&got, &w.st)
			switch {
			case dBefore == "":
			case dAfter == "":
				m = w
			default:
				return fail("after a power loss (seed %d) the batch in flight is neither absent (%s) nor whole (%s)", lossSeed, dBefore, dAfter)
			}
			continue
		case k == 2 && crash:
			if err := ss.powerLoss(r.next()); err != nil {
				return fail("%v", err)
			}
		case k <= 4:
			err := ss.s.Apply(r.invalid(&m))
			if !errors.Is(err, meta.ErrRefused) {
				return fail("invalid batch: Apply returned %v, want ErrRefused", err)
			}
		default:
			b, w := r.batch(&m)
			if err := ss.s.Apply(b); err != nil {
				return fail("Apply: %v", err)
			}
			m = w
		}
		if err := ss.expect("model", &m.st); err != nil {
			return fail("%v", err)
		}
	}
	return ss.reopen()
}
