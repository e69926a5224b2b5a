package queue

import (
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/seam"
)

// rebuilding is the owner's first phase when its log lost records to
// damage: it asks every follower for its log, fetches what it lacks from the
// most complete one (highest last epoch, then longest), and only then opens
// an epoch, above every epoch a follower reported having seen.
type rebuilding struct {
	queriedNs int64 // when the log queries or the fetch were last sent
	source    int   // index in peers of the replica fetched from
	sourceEnd uint64
	fetching  bool
	seen      uint64 // the highest epoch any report named
}

func (b *rebuilding) queryLogs(o *owner) {
	r := o.r
	b.queriedNs = r.x.NowNs
	for i := range o.peers {
		if !o.peers[i].reported {
			r.send(o.peers[i].node, Msg{Kind: MsgLogQuery, Epoch: r.epoch})
		}
	}
}

func (b *rebuilding) onTick(o *owner) {
	if o.r.x.NowNs-b.queriedNs >= o.r.x.Lim.ResendMs*1e6 {
		if b.fetching {
			b.fetch(o)
		} else {
			b.queryLogs(o)
		}
	}
}

func (b *rebuilding) deadlineNs(r *Replica) int64 {
	return b.queriedNs + r.x.Lim.ResendMs*1e6
}

func (b *rebuilding) onLogReport(o *owner, from seam.NodeID, m *Msg) {
	r := o.r
	if b.fetching {
		return
	}
	if len(m.Epochs) > r.x.Lim.EpochsMax {
		r.x.Refused++
		return
	}
	for i := range o.peers {
		p := &o.peers[i]
		if p.node == from && m.Process >= p.process {
			p.process = m.Process
			p.reported, p.repEnd = true, m.End
			p.repEpochs = append(p.repEpochs[:0], m.Epochs...)
			// The follower may have seen a higher epoch than its log holds
			// (a probe of an epoch whose records it never kept): the new
			// epoch must be above that too, or the follower fences it out
			// forever (seed 431: epoch 3 opened over a follower at 4).
			if !r.x.Bugs.Has(bugs.EpochBelowSeen) {
				b.seen = max(b.seen, m.Epoch)
			}
		}
	}
	for i := range o.peers {
		if !o.peers[i].reported {
			return
		}
	}
	// Every follower reported: pick the most complete log, ours on a tie.
	best, bestEpoch, bestEnd := -1, seam.LastEpoch(r.log.epochs), r.log.end
	for i := range o.peers {
		p := &o.peers[i]
		e := seam.LastEpoch(p.repEpochs)
		b.seen = max(b.seen, e)
		better := e > bestEpoch || (e == bestEpoch && p.repEnd > bestEnd)
		if r.x.Bugs.Has(bugs.RecoveryWorstSource) {
			better = e < bestEpoch || (e == bestEpoch && p.repEnd < bestEnd) // planted
		}
		if better {
			best, bestEpoch, bestEnd = i, e, p.repEnd
		}
	}
	if best < 0 {
		o.openEpoch(b.seen)
		return
	}
	src := &o.peers[best]
	if d := seam.Divergence(r.log.epochs, r.log.end, src.repEpochs, src.repEnd); d < r.log.end {
		// Our records from d on are not the source's: none is confirmed.
		r.truncate(d)
	}
	b.source, b.sourceEnd, b.fetching = best, src.repEnd, true
	b.fetch(o)
}

func (b *rebuilding) fetch(o *owner) {
	r := o.r
	b.queriedNs = r.x.NowNs
	r.send(o.peers[b.source].node, Msg{Kind: MsgFetch, Epoch: r.epoch, Prev: r.log.end})
}

func (b *rebuilding) onFetchReply(o *owner, from seam.NodeID, m *Msg) {
	r := o.r
	if !b.fetching || from != o.peers[b.source].node || m.Prev != r.log.end {
		return // late, duplicate or not ours
	}
	src := &o.peers[b.source]
	if m.Process < src.process {
		return // a reply of an older process of the source
	}
	continues := m.Prev <= r.log.start || seam.EpochAt(r.log.epochs, m.Prev-1) == m.PrevEpoch
	if r.x.Bugs.Has(bugs.RecoveryTrustsChangedSource) {
		// planted: whatever the source answers, keep fetching from it
		if !continues {
			return
		}
	} else if m.Process > src.process || m.End < b.sourceEnd || !continues {
		// The source is no longer the log it reported: it restarted, or
		// lost records since (a fault), or no longer continues ours. Its
		// report proves nothing now, so start over: ask everyone, choose
		// again. Waiting for a resend would wait forever, since the source
		// answers every resend the same way (seed 1001943: the epoch check
		// came first and returned, so the owner never opened an epoch).
		b.restart(o)
		return
	}
	for i := range m.Records {
		rec := m.Records[i]
		if rec.Offset != r.log.end || rec.Epoch < seam.LastEpoch(r.log.epochs) {
			break
		}
		// The message's bytes last only this step; the cache keeps the
		// record.
		rec.Body = slices.Clone(rec.Body)
		r.appendLocal(rec)
	}
	if r.log.end >= b.sourceEnd {
		b.fetching = false
		if r.x.Bugs.Has(bugs.RepairedMarkEarly) && r.unrepaired {
			r.storage(seam.Effect{Op: seam.OpRepaired}) // planted: not durable yet
			r.unrepaired = false
		}
		o.openEpoch(b.seen)
		return
	}
	b.fetch(o)
}

// restart forgets every report and queries all followers again.
func (b *rebuilding) restart(o *owner) {
	b.fetching = false
	for i := range o.peers {
		o.peers[i].reported = false
	}
	b.queryLogs(o)
}
