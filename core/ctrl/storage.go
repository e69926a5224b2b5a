package ctrl

import (
	"fmt"

	"github.com/sluicemq/sluice/io/meta"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// logStore is raft's Storage: the group's view of what io/meta holds
// durably. It changes only when the host reports a batch persisted, so raft
// never reads from it an entry that a crash could lose.
type logStore struct {
	voters    []uint64 // sorted
	learners  []uint64 // sorted
	hs        meta.HardState
	compacted meta.EntryID
	ents      []*pb.Entry // contiguous from compacted.Index+1
	// image is the newest durable image of the applied metadata (the
	// applied record, or an installed snapshot): what Snapshot sends a
	// follower that needs compacted entries. Index 0: none.
	image meta.Applied
}

var _ raft.Storage = (*logStore)(nil)

func newLogStore(voters, learners []uint64, st meta.State) (*logStore, error) {
	s := &logStore{voters: voters, learners: learners, hs: st.HardState, compacted: st.Compacted}
	for i, e := range st.Entries {
		if e.Kind != meta.EntryNormal {
			return nil, fmt.Errorf("ctrl: stored entry %d is a %s entry; this group has none", e.Index, e.Kind)
		}
		if e.Index != st.Compacted.Index+1+uint64(i) {
			return nil, fmt.Errorf("ctrl: stored entries not contiguous at %d", e.Index)
		}
		s.ents = append(s.ents, toPBEntry(e))
	}
	return s, nil
}

func toPBEntry(e meta.Entry) *pb.Entry {
	return &pb.Entry{Index: new(e.Index), Term: new(e.Term), Type: pb.EntryNormal.Enum(),
		Data: append([]byte(nil), e.Data...)}
}

func toMetaEntry(e *pb.Entry) meta.Entry {
	if e.GetType() != pb.EntryNormal {
		panic(fmt.Sprintf("ctrl: raft produced a %s entry; this group proposes none", e.GetType()))
	}
	return meta.Entry{Index: e.GetIndex(), Term: e.GetTerm(), Kind: meta.EntryNormal,
		Data: append([]byte(nil), e.GetData()...)}
}

func (s *logStore) lastIndex() uint64 { return s.compacted.Index + uint64(len(s.ents)) }

// persisted records a batch the host has made durable (io/meta's order:
// snapshot, entries, hard state, applied record, compaction).
func (s *logStore) persisted(b *meta.Batch) {
	if sn := b.Snapshot; sn != nil {
		// io/meta's install: entries above the snapshot stay only if the
		// log matches at its index.
		keep := sn.Index < s.lastIndex() && sn.Index > s.compacted.Index && s.ents[sn.Index-s.compacted.Index-1].GetTerm() == sn.Term
		if keep {
			s.ents = s.ents[sn.Index-s.compacted.Index:]
		} else {
			s.ents = nil
		}
		s.compacted = meta.EntryID{Index: sn.Index, Term: sn.Term}
		s.image = meta.Applied{Index: sn.Index, Data: sn.Data}
	}
	if len(b.Entries) > 0 {
		first := b.Entries[0].Index
		if first <= s.compacted.Index || first > s.lastIndex()+1 {
			panic(fmt.Sprintf("ctrl: batch entries start at %d, log holds (%d, %d]", first, s.compacted.Index, s.lastIndex()))
		}
		s.ents = s.ents[:first-s.compacted.Index-1]
		for _, e := range b.Entries {
			s.ents = append(s.ents, toPBEntry(e))
		}
	}
	if b.HardState != nil {
		s.hs = *b.HardState
	}
	if b.Applied != nil && b.Applied.Index > s.image.Index {
		s.image = *b.Applied
	}
	if c := b.CompactIndex; c != 0 {
		if c <= s.compacted.Index || c > s.lastIndex() {
			panic(fmt.Sprintf("ctrl: compaction to %d, log holds (%d, %d]", c, s.compacted.Index, s.lastIndex()))
		}
		t := s.ents[c-s.compacted.Index-1].GetTerm()
		s.ents = s.ents[c-s.compacted.Index:]
		s.compacted = meta.EntryID{Index: c, Term: t}
	}
}

func (s *logStore) InitialState() (*pb.HardState, *pb.ConfState, error) {
	hs := &pb.HardState{Term: new(s.hs.Term), Vote: new(s.hs.Vote), Commit: new(s.hs.Commit)}
	return hs, s.confState(), nil
}

func (s *logStore) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if lo <= s.compacted.Index {
		return nil, raft.ErrCompacted
	}
	if hi > s.lastIndex()+1 || lo > hi {
		panic(fmt.Sprintf("ctrl: entries [%d, %d) asked of a log holding (%d, %d]", lo, hi, s.compacted.Index, s.lastIndex()))
	}
	off := s.compacted.Index + 1
	ents := s.ents[lo-off : hi-off : hi-off]
	// At least one entry, then as many as fit in maxSize.
	size := uint64(0)
	for i, e := range ents {
		size += uint64(len(e.GetData())) + 24
		if i > 0 && size > maxSize {
			return ents[:i:i], nil
		}
	}
	return ents, nil
}

func (s *logStore) Term(i uint64) (uint64, error) {
	switch {
	case i == s.compacted.Index:
		return s.compacted.Term, nil
	case i < s.compacted.Index:
		return 0, raft.ErrCompacted
	case i > s.lastIndex():
		return 0, raft.ErrUnavailable
	}
	return s.ents[i-s.compacted.Index-1].GetTerm(), nil
}

func (s *logStore) LastIndex() (uint64, error)  { return s.lastIndex(), nil }
func (s *logStore) FirstIndex() (uint64, error) { return s.compacted.Index + 1, nil }

// Snapshot is the newest image, which covers every compacted entry (the
// log is compacted only up to an image); raft sends it to a follower that
// needs compacted entries.
func (s *logStore) Snapshot() (*pb.Snapshot, error) {
	if s.image.Index == 0 {
		return &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: new(s.compacted.Index), Term: new(s.compacted.Term),
			ConfState: s.confState()}}, nil
	}
	t, err := s.Term(s.image.Index)
	if err != nil {
		panic(fmt.Sprintf("ctrl: no term for the image at %d: %v", s.image.Index, err))
	}
	return &pb.Snapshot{Data: s.image.Data, Metadata: &pb.SnapshotMetadata{Index: new(s.image.Index), Term: new(t),
		ConfState: s.confState()}}, nil
}

// confState is the group's fixed membership: its voters and learners.
func (s *logStore) confState() *pb.ConfState {
	cs := &pb.ConfState{Voters: append([]uint64(nil), s.voters...)}
	if len(s.learners) > 0 {
		cs.Learners = append([]uint64(nil), s.learners...)
	}
	return cs
}
