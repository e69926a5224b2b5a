package metatest

import (
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/io/meta"
)

type refusal struct {
	name string
	run  func(h Harness) error
}

// refusalBase is the state every refusal case starts from: entries 3..10
// (terms 1,1,2,2,2,3,3,3 for 1..10), compacted through 2 (term 1), hard
// state {3, 1, 6}, applied 4.
func refusalBase(ss *session) (meta.State, error) {
	log := append(append(ents(1, 3, 1), ents(4, 6, 2)...), ents(7, 10, 3)...)
	app := meta.Applied{Index: 4, Data: []byte("a4")}
	b := &meta.Batch{Entries: log, HardState: hs(3, 1, 6), Applied: &app, CompactIndex: 2}
	if err := ss.apply("base", b); err != nil {
		return meta.State{}, err
	}
	return meta.State{HardState: *hs(3, 1, 6), Compacted: meta.EntryID{Index: 2, Term: 1}, Entries: log[2:], Applied: app}, nil
}

// refusals returns one case per validation rule and limit: the batch must be
// refused with a *meta.RefusedError naming field, change nothing (before and
// after a reopen), and leave the store usable.
func refusals() []refusal {
	type rule struct {
		name  string
		field string
		batch func() *meta.Batch
	}
	one := func(index, term uint64) []meta.Entry { return ents(index, index, term) }
	rules := []rule{
		{"entries-gap", "Entries[0].Index", func() *meta.Batch { return &meta.Batch{Entries: one(12, 3)} }},
		{"entries-not-contiguous", "Entries[1].Index", func() *meta.Batch {
			return &meta.Batch{Entries: append(one(11, 3), one(13, 3)...)}
		}},
		{"entries-decreasing", "Entries[1].Index", func() *meta.Batch {
			return &meta.Batch{Entries: append(one(11, 3), one(10, 3)...)}
		}},
		{"entries-at-compaction-point", "Entries[0].Index", func() *meta.Batch { return &meta.Batch{Entries: one(2, 3)} }},
		{"entries-at-commit", "Entries[0].Index", func() *meta.Batch { return &meta.Batch{Entries: one(6, 3)} }},
		{"entries-term-below-stored", "Entries[0].Term", func() *meta.Batch { return &meta.Batch{Entries: one(11, 2)} }},
		{"entries-term-decreasing", "Entries[1].Term", func() *meta.Batch {
			return &meta.Batch{Entries: append(one(11, 4), one(12, 3)...)}
		}},
		{"entry-index-zero", "Entries[0].Index", func() *meta.Batch { return &meta.Batch{Entries: one(0, 3)} }},
		{"entry-index-above-max", "Entries[0].Index", func() *meta.Batch { return &meta.Batch{Entries: one(meta.IndexMax+1, 3)} }},
		{"entry-kind-unknown", "Entries[0].Kind", func() *meta.Batch {
			b := &meta.Batch{Entries: one(11, 3)}
			b.Entries[0].Kind = 7
			return b
		}},
		{"entry-data-over-limit", "Entries[0].Data", func() *meta.Batch {
			b := &meta.Batch{Entries: one(11, 3)}
			b.Entries[0].Data = make([]byte, meta.EntryDataBytesMax+1)
			return b
		}},
		{"batch-entries-over-limit", "Entries", func() *meta.Batch {
			return &meta.Batch{Entries: ents(11, 11+meta.BatchEntriesMax, 3)}
		}},
		{"batch-bytes-over-limit", "Batch", func() *meta.Batch {
			return &meta.Batch{Snapshot: &meta.Snapshot{Index: 10, Term: 3, Data: make([]byte, meta.BatchBytesMax+1)}}
		}},
		{"hard-state-term-back", "HardState.Term", func() *meta.Batch { return &meta.Batch{HardState: hs(2, 1, 6)} }},
		{"hard-state-vote-changed", "HardState.Vote", func() *meta.Batch { return &meta.Batch{HardState: hs(3, 2, 6)} }},
		{"hard-state-commit-back", "HardState.Commit", func() *meta.Batch { return &meta.Batch{HardState: hs(3, 1, 5)} }},
		{"hard-state-commit-beyond-last", "HardState.Commit", func() *meta.Batch { return &meta.Batch{HardState: hs(3, 1, 11)} }},
		{"snapshot-index-zero", "Snapshot.Index", func() *meta.Batch { return &meta.Batch{Snapshot: &meta.Snapshot{}} }},
		{"snapshot-below-compaction-point", "Snapshot.Index", func() *meta.Batch {
			return &meta.Batch{Snapshot: &meta.Snapshot{Index: 1, Term: 1}}
		}},
		{"snapshot-term-below-compaction-point", "Snapshot.Term", func() *meta.Batch {
			return &meta.Batch{Snapshot: &meta.Snapshot{Index: 5, Term: 0}}
		}},
		{"snapshot-drops-committed-entries", "HardState.Commit", func() *meta.Batch {
			// Term 3 at 5 does not match the log (term 2), so the log goes,
			// and the commit index 6 would point past it.
			return &meta.Batch{Snapshot: &meta.Snapshot{Index: 5, Term: 3}}
		}},
		{"applied-back", "Applied.Index", func() *meta.Batch { return &meta.Batch{Applied: &meta.Applied{Index: 3}} }},
		{"applied-beyond-commit", "Applied.Index", func() *meta.Batch { return &meta.Batch{Applied: &meta.Applied{Index: 7}} }},
		{"compact-at-compaction-point", "CompactIndex", func() *meta.Batch { return &meta.Batch{CompactIndex: 2} }},
		{"compact-beyond-applied", "CompactIndex", func() *meta.Batch { return &meta.Batch{CompactIndex: 5} }},
		{"compact-beyond-last", "CompactIndex", func() *meta.Batch { return &meta.Batch{CompactIndex: 11} }},
		{"whole-batch", "Applied.Index", func() *meta.Batch {
			// Valid entries and hard state; only the applied record is bad.
			return &meta.Batch{Entries: ents(11, 12, 4), HardState: hs(4, 0, 7), Applied: &meta.Applied{Index: 8}, Snapshot: &meta.Snapshot{Index: 3, Term: 1}}
		}},
	}
	var rs []refusal
	for _, r := range rules {
		rs = append(rs, refusal{name: r.name, run: func(h Harness) error {
			ss, err := open(h)
			if err != nil {
				return err
			}
			defer ss.close()
			want, err := refusalBase(ss)
			if err != nil {
				return err
			}
			err = ss.s.Apply(r.batch())
			var re *meta.RefusedError
			switch {
			case err == nil:
				return fmt.Errorf("%s: Apply accepted a batch that breaks the rule", r.name)
			case !errors.Is(err, meta.ErrRefused) || !errors.As(err, &re):
				return fmt.Errorf("%s: Apply: %v, want a *meta.RefusedError", r.name, err)
			case re.Field != r.field:
				return fmt.Errorf("%s: refused with field %q (%v), want %q", r.name, re.Field, err, r.field)
			}
			if err := ss.expectBoth(r.name+": after the refusal", &want); err != nil {
				return err
			}
			// Still usable: a valid batch goes through.
			ok := &meta.Batch{Entries: ents(11, 11, 3), HardState: hs(3, 1, 7)}
			if err := ss.apply(r.name+": a valid batch after the refusal", ok); err != nil {
				return err
			}
			want.Entries = append(want.Entries, ok.Entries...)
			want.HardState = *ok.HardState
			return ss.expectBoth(r.name+": the valid batch after the refusal", &want)
		}})
	}
	return rs
}
