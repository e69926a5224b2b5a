package ctrl

import (
	"fmt"
	"github.com/sluicemq/sluice/core/metadata"
	"testing"

	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/sim/metamem"
)

// TestReadySplitToStoreLimits: proposals gathered while a batch is being
// persisted make a Ready with more entries than io/meta takes in one batch.
// The group splits it into batches the store accepts, in order, and holds
// the Ready's messages and applies its entries only after the last.
func TestReadySplitToStoreLimits(t *testing.T) {
	const proposals = 2*meta.BatchEntriesMax + 500
	s, err := metamem.NewDisk().Open()
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(DefaultConfig(1, []uint64{1}), meta.State{})
	if err != nil {
		t.Fatal(err)
	}
	var queue []Effect // persist effects not yet durable, oldest first
	var nowNs int64
	applied, sizes := 0, []int{}
	run := func(in Input) {
		nowNs = max(nowNs, in.NowNs)
		in.NowNs = nowNs
		for _, e := range g.Step(in) {
			switch e.Kind {
			case EfPersist:
				queue = append(queue, e)
				sizes = append(sizes, len(e.Batch.Entries))
			case EfApplied:
				if len(e.Cmd) > 0 {
					applied++
				}
			case EfSend:
				t.Fatalf("a single voter sent %v", e)
			}
		}
	}
	complete := func() {
		e := queue[0]
		queue = queue[1:]
		if err := s.Apply(e.Batch); err != nil {
			t.Fatalf("the store refused persist %d (%d entries): %v", e.Seq, len(e.Batch.Entries), err)
		}
		run(Input{Kind: InPersisted, Seq: e.Seq})
	}
	// Campaign (the failure detector fires after its timeout) and settle.
	for now := int64(0); now <= 400_000_000; now += 10_000_000 {
		run(Input{Kind: InTick, NowNs: now, Draw: 7})
		for len(queue) > 0 {
			complete()
		}
	}
	if _, _, leader := g.Status(); !leader {
		t.Fatal("a single voter did not become leader")
	}
	// One proposal whose persist stays outstanding, then many more: they
	// gather into the next Ready.
	run(Input{Kind: InPropose, NowNs: 500_000_000, Msg: setCmd("liveness.expiry_ms", 1000)})
	if len(queue) != 1 {
		t.Fatalf("%d persists outstanding after one proposal, want 1", len(queue))
	}
	sizes = sizes[:0]
	for i := 1; i < proposals; i++ {
		run(Input{Kind: InPropose, NowNs: 500_000_000, Msg: setCmd("liveness.expiry_ms", 2000+int64(i))})
	}
	for len(queue) > 0 {
		complete()
	}
	if applied != proposals {
		t.Fatalf("applied %d of %d proposals", applied, proposals)
	}
	if len(sizes) < 3 {
		t.Fatalf("persist batch sizes %v: the big Ready was not split", sizes)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.HardState.Commit != st.LastIndex() || g.AppliedIndex() != st.LastIndex() {
		t.Fatalf("store commit %d, last %d, applied %d: want all equal", st.HardState.Commit, st.LastIndex(), g.AppliedIndex())
	}
	if v := g.Metadata().Setting(metadata.LivenessExpiryMs); v != 2000+int64(proposals-1) {
		t.Fatalf("liveness.expiry_ms = %d, want the last proposal's value", v)
	}
	t.Logf("persist batch sizes after the first: %v", sizes)
}

func TestSplitBatch(t *testing.T) {
	hs := &meta.HardState{Term: 2, Vote: 1, Commit: 5}
	mk := func(n, dataBytes int) *meta.Batch {
		b := &meta.Batch{HardState: hs}
		for i := 1; i <= n; i++ {
			b.Entries = append(b.Entries, meta.Entry{Index: uint64(i), Term: 2, Data: make([]byte, dataBytes)})
		}
		return b
	}
	for _, tc := range []struct {
		n, dataBytes int
		want         []int
	}{
		{0, 0, []int{0}},
		{1, 8, []int{1}},
		{meta.BatchEntriesMax, 8, []int{meta.BatchEntriesMax}},
		{meta.BatchEntriesMax + 1, 8, []int{meta.BatchEntriesMax, 1}},
		{2*meta.BatchEntriesMax + 3, 0, []int{meta.BatchEntriesMax, meta.BatchEntriesMax, 3}},
		// Full-size entries: the byte limit and the count limit agree.
		{meta.BatchEntriesMax + 2, meta.EntryDataBytesMax, []int{meta.BatchEntriesMax, 2}},
	} {
		bs := splitBatch(mk(tc.n, tc.dataBytes))
		var got []int
		next := uint64(1)
		for i, b := range bs {
			got = append(got, len(b.Entries))
			if (b.HardState != nil) != (i == len(bs)-1) {
				t.Errorf("%d entries: batch %d of %d has hard state %v; want it on the last only", tc.n, i, len(bs), b.HardState)
			}
			for _, e := range b.Entries {
				if e.Index != next {
					t.Fatalf("%d entries: batch %d holds index %d, want %d", tc.n, i, e.Index, next)
				}
				next++
			}
			if len(b.Entries) > meta.BatchEntriesMax || entryBytes(b.Entries) > meta.BatchBytesMax {
				t.Errorf("%d entries: batch %d over io/meta's limits", tc.n, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%d entries of %d bytes: split %v, want %v", tc.n, tc.dataBytes, got, tc.want)
		}
	}
}
