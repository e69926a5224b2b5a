package meta

import "fmt"

// Summary is what validating a batch needs to know of the stored state.
// Implementations keep it up to date (Validate returns the next one) so
// that a batch is checked without reading the whole store.
type Summary struct {
	HardState HardState
	Compacted EntryID
	// LastIndex is the last stored entry's index, or Compacted.Index when
	// the log is empty.
	LastIndex    uint64
	AppliedIndex uint64
}

// TermFunc returns the term of the stored entry at index, which Validate
// asks only for indexes in (Compacted.Index, LastIndex]. An error is a
// failure to read the store and is returned as is.
type TermFunc func(index uint64) (uint64, error)

// Validate checks b against the stored state summarised by cur (the rules
// are listed on Batch) and returns the summary after b. It changes nothing.
// A broken rule or limit is a *RefusedError naming the field.
//
// An implementation then makes the stored entries exactly those in
// (next.Compacted.Index, next.LastIndex], the batch's entries replacing
// stored ones at the same index: every stored entry at or below
// next.Compacted.Index or above next.LastIndex is discarded.
func Validate(cur Summary, term TermFunc, b *Batch) (Summary, error) {
	if err := checkLimits(b); err != nil {
		return cur, err
	}
	next := cur
	// termAt answers for the log as the batch has changed it so far.
	batchTerm := func(index uint64) (uint64, bool) {
		if n := len(b.Entries); n > 0 && index >= b.Entries[0].Index && index <= b.Entries[n-1].Index {
			return b.Entries[index-b.Entries[0].Index].Term, true
		}
		return 0, false
	}
	entriesDone := false
	termAt := func(index uint64) (uint64, error) {
		if index == next.Compacted.Index {
			return next.Compacted.Term, nil
		}
		if entriesDone {
			if t, ok := batchTerm(index); ok {
				return t, nil
			}
		}
		if index < next.Compacted.Index || index > next.LastIndex {
			panic(fmt.Sprintf("meta: term asked for index %d outside (%d, %d]", index, next.Compacted.Index, next.LastIndex))
		}
		return term(index)
	}

	if s := b.Snapshot; s != nil {
		switch {
		case s.Index == 0:
			return cur, refuse("Snapshot.Index", "0 (a snapshot names the entry it covers)")
		case s.Index < next.Compacted.Index:
			return cur, refuse("Snapshot.Index", "%d below the compaction point %d", s.Index, next.Compacted.Index)
		case s.Term < next.Compacted.Term:
			return cur, refuse("Snapshot.Term", "%d below the compaction point's term %d", s.Term, next.Compacted.Term)
		}
		keep := false // whether the entries above the snapshot survive
		if s.Index <= next.LastIndex {
			t, err := termAt(s.Index)
			if err != nil {
				return cur, err
			}
			keep = t == s.Term
		}
		next.Compacted = EntryID{Index: s.Index, Term: s.Term}
		if !keep {
			next.LastIndex = s.Index
		}
	}

	if n := len(b.Entries); n > 0 {
		first := b.Entries[0].Index
		switch {
		case first <= next.Compacted.Index:
			return cur, refuse("Entries[0].Index", "%d at or below the compaction point %d", first, next.Compacted.Index)
		case first > next.LastIndex+1:
			return cur, refuse("Entries[0].Index", "%d leaves a gap after the last index %d", first, next.LastIndex)
		case first <= next.HardState.Commit:
			return cur, refuse("Entries[0].Index", "%d at or below the commit index %d (committed entries are never replaced)", first, next.HardState.Commit)
		}
		prevTerm, err := termAt(first - 1)
		if err != nil {
			return cur, err
		}
		for i := range b.Entries {
			e := &b.Entries[i]
			if e.Index != first+uint64(i) {
				return cur, refuse(fmt.Sprintf("Entries[%d].Index", i), "%d, want %d (entries are contiguous)", e.Index, first+uint64(i))
			}
			if e.Term < prevTerm {
				return cur, refuse(fmt.Sprintf("Entries[%d].Term", i), "%d below the previous entry's term %d", e.Term, prevTerm)
			}
			prevTerm = e.Term
		}
		next.LastIndex = b.Entries[n-1].Index
		entriesDone = true
	}

	if h := b.HardState; h != nil {
		old := next.HardState
		switch {
		case h.Term < old.Term:
			return cur, refuse("HardState.Term", "%d below the stored term %d", h.Term, old.Term)
		case h.Term == old.Term && old.Vote != 0 && h.Vote != old.Vote:
			return cur, refuse("HardState.Vote", "%d, but %d was voted for in term %d", h.Vote, old.Vote, h.Term)
		case h.Commit < old.Commit:
			return cur, refuse("HardState.Commit", "%d below the stored commit index %d", h.Commit, old.Commit)
		}
		next.HardState = *h
	}

	if a := b.Applied; a != nil {
		switch {
		case a.Index < next.AppliedIndex:
			return cur, refuse("Applied.Index", "%d below the stored applied index %d", a.Index, next.AppliedIndex)
		case a.Index > next.HardState.Commit:
			return cur, refuse("Applied.Index", "%d above the commit index %d", a.Index, next.HardState.Commit)
		}
		next.AppliedIndex = a.Index
	}

	if c := b.CompactIndex; c != 0 {
		switch {
		case c <= next.Compacted.Index:
			return cur, refuse("CompactIndex", "%d at or below the compaction point %d", c, next.Compacted.Index)
		case c > next.LastIndex:
			return cur, refuse("CompactIndex", "%d above the last index %d", c, next.LastIndex)
		case c > next.AppliedIndex:
			return cur, refuse("CompactIndex", "%d above the applied index %d", c, next.AppliedIndex)
		}
		t, err := termAt(c)
		if err != nil {
			return cur, err
		}
		next.Compacted = EntryID{Index: c, Term: t}
	}

	if next.HardState.Commit > next.LastIndex {
		return cur, refuse("HardState.Commit", "%d beyond the last index %d", next.HardState.Commit, next.LastIndex)
	}
	next.assert()
	return next, nil
}

func checkLimits(b *Batch) error {
	if len(b.Entries) > BatchEntriesMax {
		return refuse("Entries", "%d entries, limit %d (BatchEntriesMax)", len(b.Entries), BatchEntriesMax)
	}
	bytes := 0
	for i := range b.Entries {
		e := &b.Entries[i]
		if len(e.Data) > EntryDataBytesMax {
			return refuse(fmt.Sprintf("Entries[%d].Data", i), "%d bytes, limit %d (EntryDataBytesMax)", len(e.Data), EntryDataBytesMax)
		}
		if e.Kind != EntryNormal && e.Kind != EntryConfChange {
			return refuse(fmt.Sprintf("Entries[%d].Kind", i), "unknown kind %d", uint8(e.Kind))
		}
		if e.Index == 0 || e.Index > IndexMax {
			return refuse(fmt.Sprintf("Entries[%d].Index", i), "%d outside [1, %d]", e.Index, uint64(IndexMax))
		}
		bytes += len(e.Data)
	}
	if b.Snapshot != nil {
		if b.Snapshot.Index > IndexMax {
			return refuse("Snapshot.Index", "%d above %d", b.Snapshot.Index, uint64(IndexMax))
		}
		bytes += len(b.Snapshot.Data)
	}
	if b.Applied != nil {
		bytes += len(b.Applied.Data)
	}
	if bytes > BatchBytesMax {
		return refuse("Batch", "%d data bytes, limit %d (BatchBytesMax)", bytes, BatchBytesMax)
	}
	return nil
}

func (s Summary) assert() {
	if s.LastIndex < s.Compacted.Index || s.HardState.Commit > s.LastIndex || s.AppliedIndex > s.HardState.Commit {
		panic(fmt.Sprintf("meta: summary invariant broken: %+v", s))
	}
}

// CheckState verifies that a loaded state is consistent: the snapshot at or
// below the compaction point, entries contiguous from the compaction point
// with terms that never decrease, a commit index within the log, an applied
// index within the commit index, and every entry of a known kind. A
// violation is a *CorruptError: the stored bytes decoded, yet contradict
// each other.
func CheckState(s *State) error {
	if s.Snapshot.Index > s.Compacted.Index {
		return Corrupt("snapshot", "index %d above the compaction point %d", s.Snapshot.Index, s.Compacted.Index)
	}
	if s.Snapshot.Index == s.Compacted.Index && s.Snapshot.Term != s.Compacted.Term {
		return Corrupt("snapshot", "term %d, but the compaction point at the same index has term %d", s.Snapshot.Term, s.Compacted.Term)
	}
	prev := s.Compacted
	for i := range s.Entries {
		e := &s.Entries[i]
		rec := fmt.Sprintf("entry %d", e.Index)
		if e.Index != prev.Index+1 {
			return Corrupt(rec, "follows index %d (entries must be contiguous from the compaction point %d)", prev.Index, s.Compacted.Index)
		}
		if e.Term < prev.Term {
			return Corrupt(rec, "term %d below the previous term %d", e.Term, prev.Term)
		}
		if e.Kind != EntryNormal && e.Kind != EntryConfChange {
			return Corrupt(rec, "unknown kind %d", uint8(e.Kind))
		}
		prev = EntryID{Index: e.Index, Term: e.Term}
	}
	if s.HardState.Commit > s.LastIndex() {
		return Corrupt("hard state", "commit index %d beyond the last index %d", s.HardState.Commit, s.LastIndex())
	}
	if s.Applied.Index > s.HardState.Commit {
		return Corrupt("applied", "index %d above the commit index %d", s.Applied.Index, s.HardState.Commit)
	}
	return nil
}
