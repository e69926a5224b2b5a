package check

import (
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// Seals (docs/design/recovery.md, "Seals"). A replica that seals its log for recovery freezes it:
// what its seal reports ([start, end), made durable before the answer)
// must be what its disk durably holds from then on, with nothing written
// at or past end, until an installation writes it or a recovery activates
// the next assignment. The checker takes every seal a broker sends and
// judges it from the disk: at once (seal-durable: the sealed records are
// intact on the disk) and at the end of the run (seal-frozen: the same
// records, and none past end). Damage injected into the copy since
// excuses it (the fault budget answers for that), and a seal that reported
// its log damaged is not held to "nothing past end" (its torn tail is
// garbage the checkers' parser may still read in part).

// sealsMax bounds the seals the checker keeps; more are not judged.
const sealsMax = 4096

type sealTruth struct {
	atNs       int64
	node       core.NodeID
	q          core.QueueID
	epoch      uint64
	start, end uint64
	damaged    bool
	// identity: the content identity the seal names (a key that tells two
	// seals of the same bounds apart, never taken as the content: idents
	// is read from the disk)
	identity [32]byte
	idents   []Ident // the disk's records over [start, end) at the seal
	// injected: damage had been injected into the copy (and not repaired)
	// when it sealed: an ident missing from idents may be that damage
	injected bool
}

// Sealed takes a seal node sent: queue q frozen for the transition to
// epoch, retaining [start, end) with content identity, damaged as it says.
func (c *Checker) Sealed(atNs int64, node core.NodeID, q core.QueueID, epoch, start, end uint64, identity [32]byte, damaged bool) {
	qt := c.queues[q]
	if qt == nil || qt.replica(node) == nil {
		c.fail("seal-durable", atNs, "n%d sealed q=%d, which it holds no replica of", node, q)
		return
	}
	for _, s := range c.seals {
		if s.node == node && s.q == q && s.epoch == epoch && s.start == start && s.end == end && s.identity == identity && s.damaged == damaged {
			// A retry's answer: the seal already judged. (One with other
			// bounds or another identity is the receipt an installation
			// renewed in its new generation, for the history it installed
			// (the same bounds as its old log's, say): judged anew, and
			// the latest is the one a source answers for.)
			return
		}
	}
	if len(c.seals) >= sealsMax {
		return
	}
	r := qt.replica(node)
	r.disk.Reparse(c.diskOf(q, node))
	s := &sealTruth{atNs: atNs, node: node, q: q, epoch: epoch, start: start, end: end, identity: identity, damaged: damaged, injected: r.injected}
	for o := start; o < end; o++ {
		id := r.disk.At(o)
		if !id.Intact() && !r.injected {
			c.fail("seal-durable", atNs, "n%d sealed q=%d for epoch %d retaining [%d,%d), but its disk holds no intact record at o=%d%s",
				node, q, epoch, start, end, o, noteOf(r.disk))
			return
		}
		s.idents = append(s.idents, id)
	}
	c.seals = append(c.seals, s)
}

// sealsFinal judges every seal against the disks as they are at the end.
// An installation that did not finish may have written a sealed log: only
// with the chosen source's records (sourceIdent), at their offsets.
func (c *Checker) sealsFinal(atNs int64) {
	for _, s := range c.seals {
		qt := c.queues[s.q]
		r := qt.replica(s.node)
		if r.injected || r.installedNs >= s.atNs || slices.Contains(qt.activatedEpochs, s.epoch) {
			// Damaged since (the fault budget's business), or written on
			// purpose: by an installation, or as a member of the recovered
			// assignment.
			continue
		}
		r.disk.Reparse(c.diskOf(s.q, s.node))
		for i, want := range s.idents {
			o := s.start + uint64(i)
			if got := r.disk.At(o); got != want && got != c.sourceIdent(s.q, s.epoch, o) {
				c.fail("seal-frozen", atNs, "n%d sealed q=%d %s retaining [%d,%d); at the end its disk holds %s at o=%d, not the sealed %s (nor the source's)",
					s.node, s.q, instant(s.atNs), s.start, s.end, got, o, want)
				break
			}
		}
		if s.damaged {
			continue
		}
		for o := s.end; o < r.disk.Len(); o++ {
			if got := r.disk.At(o); got != c.sourceIdent(s.q, s.epoch, o) {
				c.fail("seal-frozen", atNs, "n%d sealed q=%d %s retaining [%d,%d); at the end its disk holds %s at o=%d, past its end and not the source's",
					s.node, s.q, instant(s.atNs), s.start, s.end, got, o)
				break
			}
		}
	}
}

// sourceIdent is the record the source chosen for queue q's transition to
// epoch held at o when it sealed (none: no source, or o outside it).
func (c *Checker) sourceIdent(q core.QueueID, epoch, o uint64) Ident {
	for _, src := range c.sources {
		if src.q != q || src.epoch != epoch {
			continue
		}
		for _, s := range c.seals {
			if s.q == q && s.epoch == epoch && s.node == src.node && o >= s.start && o < s.start+uint64(len(s.idents)) {
				return s.idents[o-s.start]
			}
		}
	}
	return Ident{}
}

// sourceTruth is a recovery source a worker chose.
type sourceTruth struct {
	atNs       int64
	node       core.NodeID
	q          core.QueueID
	epoch      uint64
	start, end uint64
	identity   [32]byte
}

// SourceChosen takes the source a recovery worker chose for queue q's
// transition to epoch: node's sealed log retaining [start, end) with
// content identity (its seal's).
func (c *Checker) SourceChosen(atNs int64, node core.NodeID, q core.QueueID, epoch, start, end uint64, identity [32]byte) {
	qt := c.queues[q]
	if qt == nil || qt.replica(node) == nil {
		c.fail("source-complete", atNs, "q=%d: the source chosen, n%d, holds no replica of it", q, node)
		return
	}
	if slices.Contains(qt.activatedEpochs, epoch) {
		// The epoch activated already, from an earlier choice: a worker
		// whose metadata lags (a restarted broker catching up) may choose
		// again for a transition no longer pending, and nothing installs
		// or activates from it (seed 9000005836).
		return
	}
	if len(c.sources) < sealsMax {
		c.sources = append(c.sources, &sourceTruth{atNs: atNs, node: node, q: q, epoch: epoch, start: start, end: end, identity: identity})
	}
}

// sourcesFinal: every record the queue confirmed (by the end of the run)
// is within the chosen source's bounds and intact on its disk, so that a
// recovery copying the source loses nothing confirmed. (The source's seal
// made it durable and froze it; seal-frozen judges that part.)
func (c *Checker) sourcesFinal(atNs int64) {
	// Each queue's confirmed records, sorted once with their keys and
	// epochs: a run with faults chooses tens of sources over the same
	// table, and reading it as maps for each cost more than all the rest.
	sorted := map[*queueTruth][]confirmedRecord{}
	for i, s := range c.sources {
		if slices.ContainsFunc(c.sources[i+1:], func(l *sourceTruth) bool { return l.q == s.q && l.epoch == s.epoch }) {
			// A later attempt at the same transition chose again (its
			// worker restarted): the last choice is the one the epoch's
			// activation installed, and the records the new epoch confirmed
			// from that source's end on are no business of this one.
			continue
		}
		qt := c.queues[s.q]
		r := qt.replica(s.node)
		// What the source's disk held when it sealed (seal-durable judged
		// it intact then): a later recovery may rewrite the log on
		// purpose, and the source answers for its seal, not for that.
		var sealed *sealTruth
		for _, t := range c.seals {
			if t.q == s.q && t.node == s.node && t.epoch == s.epoch && t.start == s.start && t.end == s.end && t.identity == s.identity {
				// (Only the seal chosen, by its bounds and identity: a
				// receipt an installation renewed answers for what it
				// installed, whose bounds may be its old log's.)
				sealed = t
			}
		}
		at := func(o uint64) Ident {
			if sealed != nil && o >= sealed.start && o < sealed.start+uint64(len(sealed.idents)) {
				return sealed.idents[o-sealed.start]
			}
			return r.disk.At(o)
		}
		if sealed == nil {
			if r.injected {
				continue // damaged since: the fault budget's business
			}
			r.disk.Reparse(c.diskOf(s.q, s.node))
		}
		recs, ok := sorted[qt]
		if !ok {
			recs = qt.confirmedRecords()
			sorted[qt] = recs
		}
		base := seam.EpochBase(s.epoch)
		for _, cr := range recs {
			o := cr.offset
			if cr.epochKnown && cr.epoch >= base {
				// Confirmed in the recovered assignment's epoch or a later
				// one: no business of a source of this transition. (By
				// epoch, not by the source's end: an earlier attempt's
				// activation may commit after a later attempt chose a
				// longer source, seed 18722.)
				continue
			}
			key := cr.key
			id := at(o)
			if sealed != nil && sealed.injected && !id.Intact() && o >= s.start && o < s.end {
				// The source's disk had met injected damage there when it
				// sealed (an unreadable sector its page cache still
				// served, say): within its bounds, the fault budget's
				// business; whether the installations copied the record
				// is judged where they hold it (converged, confirmed-lost).
				continue
			}
			if rc := qt.receipt(o); (o < s.start || (sealed == nil && o < r.disk.Start())) && rc != nil && rc.settled {
				// Below its start (or its disk's, read at the end), and
				// settled: a retention may delete it (retain.go).
				continue
			}
			if o < s.start || o >= s.end || id.Kind != record.KindPublish || id.Val != key {
				c.fail("source-complete", atNs, "q=%d: the source chosen %s for epoch %d, n%d retaining [%d,%d), lacks confirmed publish %#x at o=%d (its disk holds %s there)",
					s.q, instant(s.atNs), s.epoch, s.node, s.start, s.end, key, o, id)
				break
			}
		}
	}
}

// confirmedRecord is a confirmed publish: its offset, key and (epochKnown)
// the epoch of the record confirmed there.
type confirmedRecord struct {
	offset, key, epoch uint64
	epochKnown         bool
}

// confirmedRecords returns q's confirmed publishes in offset order.
func (q *queueTruth) confirmedRecords() []confirmedRecord {
	offsets := sortedOffsets(q.confirmed) // (integers sort fast; records by a function do not)
	out := make([]confirmedRecord, len(offsets))
	for i, o := range offsets {
		out[i] = confirmedRecord{offset: o, key: q.confirmed[o]}
		out[i].epoch, out[i].epochKnown = q.confirmedEpoch[o]
	}
	return out
}

func instant(ns int64) string { return string(appendInstant(nil, ns)) }
