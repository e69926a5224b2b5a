package queue

import (
	"fmt"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/seam"
)

// follower is the role of a replica that copies its owner's log: it matches
// the owner's log by (offset, epoch), truncates a suffix the owner lacks,
// and reports only what a completed sync made durable.
type follower struct {
	ownerProcess uint64 // the newest owner process heard from
	matchEnd     uint64 // the log below matchEnd matches the owner's in this epoch
	replyWanted  bool
	replyEnd     uint64 // the last End reported
	// reseedSyncs: after a reseed, the syncs that must have completed
	// before the follower reports again (the first issued after it)
	reseedSyncs uint64
}

func (f *follower) onMessage(r *Replica, from seam.NodeID, m *Msg) {
	switch m.Kind {
	case MsgAppend:
		f.onAppend(r, from, m)
	}
}

func (f *follower) onAppend(r *Replica, from seam.NodeID, m *Msg) {
	if from != r.cfg.Owner || r.failed || m.Epoch < r.epoch || m.Process < f.ownerProcess {
		return // fenced: an older epoch's or older process's owner may not write
	}
	if r.sealed {
		return // frozen for recovery: no owner of this assignment writes here again
	}
	f.ownerProcess = max(f.ownerProcess, m.Process)
	if m.Epoch > r.epoch {
		r.epoch = m.Epoch
		f.matchEnd = 0
		f.replyEnd = 0
	}
	l := &r.log
	if m.Reset && m.Prev > l.end {
		// The owner's log starts at Prev, past this copy's end: it starts
		// again there (retain.go). (Only then: a late reset finds a copy
		// that caught up since, whose records above the owner's start may
		// be confirmed, and a copy whose start is past Prev keeps its
		// log and answers as to any append.)
		f.reseed(r, m.Prev, m.Epochs)
	}
	if !f.matches(r, m) {
		if r.x.Bugs.Has(bugs.RejectAsOK) { // planted: claims a match it lacks
			r.send(from, Msg{Kind: MsgAppendReply, Epoch: r.epoch, Ok: true, End: min(l.syncedEnd, m.Prev)})
			return
		}
		hist := make([]seam.EpochStart, len(l.epochs))
		copy(hist, l.epochs)
		r.send(from, Msg{Kind: MsgAppendReply, Epoch: r.epoch, End: l.end, Start: l.start, Epochs: hist})
		return
	}
	recs := m.Records
	for len(recs) > 0 && recs[0].Offset < l.end {
		if seam.EpochAt(l.epochs, recs[0].Offset) != recs[0].Epoch && !r.x.Bugs.Has(bugs.SkipTruncate) {
			r.truncate(recs[0].Offset)
			break
		}
		recs = recs[1:]
	}
	if len(recs) > 0 {
		for i := range recs {
			if recs[i].Offset != l.end+uint64(i) {
				panic("queue: append message with a gap")
			}
			r.noteEpoch(recs[i].Epoch, recs[i].Offset)
		}
		l.appendUncached(len(recs))
		r.storage(seam.Effect{Op: seam.OpAppend, Records: recs})
		r.ensureSync()
	}
	f.matchEnd = max(f.matchEnd, m.Prev+uint64(len(m.Records)))
	if m.Start > l.start {
		f.followStart(r, m.Start)
	}
	f.replyWanted = true
	f.maybeReply(r)
}

// matches reports whether the follower's log holds the owner's at m.Prev:
// Prev lies within it and the record before Prev has m's epoch, unless
// Prev is either log's start: what lies below a start is settled and
// deleted (or to be), so whether the two agree there matters to nobody,
// and the records from Prev on are matched one by one as they come.
func (f *follower) matches(r *Replica, m *Msg) bool {
	l := &r.log
	return m.Prev >= l.start && m.Prev <= l.end &&
		(m.Prev == l.start || m.Prev == m.Start || seam.EpochAt(l.epochs, m.Prev-1) == m.PrevEpoch)
}

// maybeReply reports the durable, matching end once it covers what the
// owner sent: never more than a completed sync made durable.
func (f *follower) maybeReply(r *Replica) {
	if !f.replyWanted || r.log.syncsDone < f.reseedSyncs {
		// (A reseed is durable once a sync issued after it completed:
		// until then the log may still hold the old records, and
		// reports nothing.)
		return
	}
	end := min(r.log.syncedEnd, f.matchEnd)
	if r.x.Bugs.Has(bugs.AckBeforeSync) {
		end = min(r.log.end, f.matchEnd) // planted: appended is not durable
	}
	if end <= f.replyEnd && r.log.syncInFlight {
		return // nothing new yet; the sync in flight will tell more
	}
	f.replyEnd = end
	f.replyWanted = end < f.matchEnd
	r.send(r.cfg.Owner, Msg{Kind: MsgAppendReply, Epoch: r.epoch, Ok: true, End: end})
}

func (f *follower) invariants(r *Replica) {
	if f.matchEnd > r.log.end {
		panic(fmt.Sprintf("queue %d: follower matched up to %d beyond its log end %d", r.cfg.Queue, f.matchEnd, r.log.end))
	}
}
