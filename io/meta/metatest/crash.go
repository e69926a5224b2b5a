package metatest

import (
	"fmt"

	"github.com/sluicemq/sluice/io/meta"
)

// caseCrashAcknowledged: after a power loss, every batch Apply acknowledged
// is there, exactly.
func caseCrashAcknowledged(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	var m model
	for round := range uint64(6) {
		for i := range uint64(5) {
			term := round + 1
			first := m.st.LastIndex() + 1
			b := &meta.Batch{Entries: ents(first, first+i, term), HardState: hs(term, 1, m.st.LastIndex())}
			if i == 4 {
				b.Applied = &meta.Applied{Index: b.HardState.Commit, Data: []byte(fmt.Sprintf("r%d", round))}
				b.CompactIndex = b.HardState.Commit
			}
			if err := ss.apply(fmt.Sprintf("round %d batch %d", round, i), b); err != nil {
				return err
			}
			m.apply(b)
		}
		if err := ss.powerLoss(round); err != nil {
			return err
		}
		if err := ss.expect(fmt.Sprintf("round %d: after a power loss (seed %d)", round, round), &m.st); err != nil {
			return err
		}
	}
	return nil
}

// caseCrashInFlight: a batch written but not synced when the power fails is
// found whole or not at all, and the acknowledged ones before it stay.
func caseCrashInFlight(h Harness) error {
	ss, err := open(h)
	if err != nil {
		return err
	}
	defer ss.close()
	var m model
	seen := [2]int{} // rounds that lost, kept the batch in flight
	for round := range uint64(8) {
		term := m.st.HardState.Term + 1
		first := m.st.LastIndex() + 1
		ack := &meta.Batch{Entries: ents(first, first+2, term), HardState: hs(term, 1, m.st.LastIndex())}
		if err := ss.apply(fmt.Sprintf("round %d acknowledged", round), ack); err != nil {
			return err
		}
		m.apply(ack)
		// The batch in flight touches every part of the store: it
		// overwrites the last entry, appends, commits, applies, compacts.
		last := m.st.LastIndex()
		fly := &meta.Batch{
			Entries:      ents(last, last+40, term+1),
			HardState:    hs(term+1, 0, last+20),
			Applied:      &meta.Applied{Index: last + 10, Data: []byte(fmt.Sprintf("in flight %d", round))},
			CompactIndex: last + 5,
		}
		fly.Entries[7].Data = make([]byte, 20000) // spans blocks
		before := m.clone()
		if err := h.Crash.ApplyUnsynced(ss.s, fly); err != nil {
			return fmt.Errorf("round %d: ApplyUnsynced: %w", round, err)
		}
		m.apply(fly)
		if err := ss.powerLoss(round); err != nil {
			return err
		}
		got, err := ss.s.Load()
		if err != nil {
			return fmt.Errorf("round %d: Load after a power loss (seed %d) with a batch in flight: %w", round, round, err)
		}
		dBefore, dAfter := diffState(&got, &before.st), diffState(&got, &m.st)
		switch {
		case dBefore == "":
			m = before
			seen[0]++
		case dAfter == "":
			seen[1]++
		default:
			return fmt.Errorf("round %d: after a power loss (seed %d) the batch in flight is neither absent (%s) nor whole (%s)", round, round, dBefore, dAfter)
		}
	}
	_ = seen // both outcomes are legal; which ones occur is the implementation's business
	return nil
}
