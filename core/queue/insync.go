package queue

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/quorum"
	"github.com/sluicemq/sluice/core/seam"
)

// In-sync tracking (docs/design/in-sync.md), for queues whose assignment the controller
// keeps: the owner records the last moment each follower held its whole
// log durably (progress.caughtUpNs: a report that reached the owner's end,
// or one that reached the end the owner had at the follower's previous
// report, which dates the moment to that report; so a follower streaming
// a few records behind a busy owner stays caught up, and the number of
// records behind never enters the rule). Every lag/2 it wants removed the
// followers of the committed in-sync set whose moment is older than the
// lag time; at any tick it wants back a follower that reached the high
// watermark. It keeps using the committed set until the controller commits
// the change: the node carries the wanted set to the controller's leader
// (InSyncWanted), with the version of the committed set it was asked
// from, and the metadata applies it only while that version is current
// (every change makes the next version).
//
// The high watermark is the lowest durable end over the counted set: the
// committed set plus every follower the owner asked back since the
// committed set last changed (Kafka's "maximal ISR" while an expansion is
// pending). Counting an asked-back follower at once matters: the change
// may commit before this node applies it, and from that moment the
// follower is in the committed set, so every record confirmed from then on
// must be on it; it held the watermark when asked, so counting it never
// lowers the watermark below what is confirmed. Because a request can
// commit only while the version it was asked from is current, once the
// version changes no older request can commit, and the asked-back list
// starts over. An asked-back follower that no longer qualifies (it stopped
// reaching the log end for the lag time) is withdrawn by asking for the
// committed set itself, which makes the next version. The watermark never
// moves back (a counted follower that restarts reports nothing until it
// catches up again; the watermark waits, at most the lag time).
//
// An isr queue confirms at the watermark (advanceCommit), and admits
// publishes only while the committed set has at least min_insync members;
// publishes already admitted wait while it is below (Kafka answers
// NOT_ENOUGH_REPLICAS_AFTER_APPEND; here they stay pending and are
// confirmed once the set grows back, or end unknown with the log).

// inSync is the owner's view of its in-sync set.
type inSync struct {
	tracking    bool          // the node feeds it a committed set
	committed   []seam.NodeID // the committed in-sync set, sorted
	version     uint64        // its version
	askedBack   []seam.NodeID // followers asked back since the version changed, sorted
	hw          uint64        // the high watermark, never moving back
	lagNs       int64         // replica.lag_time_max_ms
	nextCheckNs int64         // the next removal check
	wanted      []seam.NodeID // the last set asked for
	askedNs     int64         // when it was asked for
	// wantBuf is InSyncWanted's result, reused by its next call (the
	// owner and its peers: at most a queue's members)
	wantBuf []seam.NodeID
}

// SetInSync gives the committed in-sync set (ascending), its version and
// the lag time (read by the node from the metadata on every tick).
func (r *Replica) SetInSync(committed []seam.NodeID, version uint64, lagMs int64) {
	s := &r.inSync
	if !s.tracking || version != s.version {
		if !slices.IsSorted(committed) {
			panic("queue: in-sync set not ascending")
		}
		s.committed = append(s.committed[:0], committed...)
		s.version = version
		s.askedBack = s.askedBack[:0]
		s.wanted = s.wanted[:0]
	}
	if !s.tracking {
		s.tracking = true
		s.nextCheckNs = r.x.NowNs + lagMs*1e6/2
	}
	s.lagNs = lagMs * 1e6
	if r.owner != nil && r.owner.ready {
		r.owner.advanceCommit() // a follower left: the watermark may rise
	}
}

// InSyncCommitted returns the committed in-sync set (nil untracked).
func (r *Replica) InSyncCommitted() []seam.NodeID { return r.inSync.committed }

// counted reports whether follower n counts toward the high watermark.
func (s *inSync) counted(r *Replica, n seam.NodeID) bool {
	if slices.Contains(s.committed, n) {
		return true
	}
	return !r.x.Bugs.Has(bugs.ISRIgnoresAskedBack) && slices.Contains(s.askedBack, n)
}

// HighWatermark is the owner's high watermark; ok is false off the owner
// or without a committed set.
func (r *Replica) HighWatermark() (hw uint64, ok bool) {
	if r.owner == nil || !r.inSync.tracking {
		return 0, false
	}
	return r.inSync.hw, true
}

// lowestCounted is the lowest durable end over the counted set, the
// owner's own synced end among them.
func (o *owner) lowestCounted() uint64 {
	r, s := o.r, &o.r.inSync
	low := r.log.syncedEnd
	for i := range o.peers {
		p := &o.peers[i]
		if s.counted(r, p.node) {
			d := p.durable
			if !p.matched || (p.learning && !r.x.Bugs.Has(bugs.LearnerCountsTowardW)) {
				// (A learner in the set, not admitted yet, counts for
				// nothing: the watermark waits for its admission, or for
				// the set to drop it.)
				d = 0
			}
			low = min(low, d)
		}
	}
	return low
}

// raiseWatermark moves the high watermark up to the lowest counted durable
// end, emitting it when it moved.
func (o *owner) raiseWatermark() {
	r, s := o.r, &o.r.inSync
	if !s.tracking || !o.ready {
		return
	}
	low := o.lowestCounted()
	if r.x.Bugs.Has(bugs.WatermarkMovesBack) && low < s.hw {
		s.hw = low // planted: the watermark follows a follower that fell back
		r.x.Out.Watermark(r.cfg.Queue, low)
		return
	}
	if low <= o.marker && r.cfg.Leased {
		return // below this epoch's first record: see advanceCommit
	}
	if low > s.hw {
		s.hw = low
		r.x.Out.Watermark(r.cfg.Queue, low)
	}
}

// isrConfirmable is an isr owner's confirmable end: the high watermark,
// while the committed set has at least min_insync members.
func (o *owner) isrConfirmable() (uint64, bool) {
	r, s := o.r, &o.r.inSync
	if !s.tracking || len(s.committed) < r.cfg.MinInSync {
		return 0, false
	}
	if r.x.Bugs.Has(bugs.ISRConfirmAtW) {
		// planted: confirm once min_insync copies hold it, as a fixed W
		var durables [seam.ReplicasMax]uint64
		n := 0
		for i := range o.peers {
			if o.peers[i].matched {
				durables[n] = o.peers[i].durable
				n++
			}
		}
		return quorum.ConfirmedEnd(r.log.syncedEnd, durables[:n], r.cfg.MinInSync-1, o.scratch[:0])
	}
	return s.hw, true
}

// belowMinInSync says why an isr owner refuses a publish, or "".
func (o *owner) belowMinInSync() string {
	r, s := o.r, &o.r.inSync
	if r.cfg.Policy != seam.ISR {
		return ""
	}
	if !s.tracking {
		return "no committed in-sync set yet"
	}
	if len(s.committed) < r.cfg.MinInSync {
		return fmt.Sprintf("in-sync set %v below min_insync %d", s.committed, r.cfg.MinInSync)
	}
	return ""
}

// InSyncWanted returns the in-sync set the owner wants committed and the
// version of the committed set it asks from, when it differs from the
// committed one (or withdraws a follower asked back that no longer
// qualifies) and was not asked for within inSyncAskAgainNs (a request may
// be lost, or refused by a leader that changed; the controller ignores a
// stale one). want is valid until the next call: it is the replica's
// buffer, not the caller's.
func (r *Replica) InSyncWanted() (want []seam.NodeID, version uint64, ok bool) {
	o, s := r.owner, &r.inSync
	if o == nil || !o.ready || !s.tracking || r.fenced != "" || r.failed {
		return nil, 0, false
	}
	now := r.x.NowNs
	check := now >= s.nextCheckNs
	if check {
		s.nextCheckNs = now + max(s.lagNs/2, 1)
	}
	want = append(s.wantBuf[:0], r.x.Node)
	for i := range o.peers {
		p := &o.peers[i]
		in := slices.Contains(s.committed, p.node)
		switch {
		case in && (!check || now-p.caughtUpNs <= s.lagNs):
			want = append(want, p.node) // stays: not checked now, or in time
		case !in && !p.learning && p.matched && p.durable >= s.hw && now-p.caughtUpNs <= s.lagNs:
			want = append(want, p.node) // back: it reached the high watermark
		}
	}
	slices.Sort(want)
	s.wantBuf = want
	if slices.Equal(want, s.committed) {
		withdraw := false
		for _, n := range s.askedBack {
			withdraw = withdraw || !slices.Contains(want, n)
		}
		if !withdraw {
			return nil, 0, false
		}
	}
	if slices.Equal(want, s.wanted) && now-s.askedNs < inSyncAskAgainNs(s.lagNs) {
		return nil, 0, false
	}
	for _, n := range want {
		if !slices.Contains(s.committed, n) && !slices.Contains(s.askedBack, n) {
			s.askedBack = append(s.askedBack, n) // counted from now on
			slices.Sort(s.askedBack)
		}
	}
	s.wanted, s.askedNs = append(s.wanted[:0], want...), now
	return want, s.version, true
}

// inSyncAskAgainNs is how long the owner waits before asking for the same
// in-sync set again: lag/2, the check's own period, but at most 1 s. A
// follower back in time would otherwise wait half the lag time (15 s by
// default) for a lost request's repeat, its queue under-replicated all
// along.
func inSyncAskAgainNs(lagNs int64) int64 { return min(max(lagNs/2, 1), 1e9) }

func (s *inSync) invariants(r *Replica) {
	if !s.tracking || r.owner == nil {
		return
	}
	if len(s.committed) > 0 && !slices.Contains(s.committed, r.x.Node) {
		panic(fmt.Sprintf("queue %d: the owner n%d is not in its committed in-sync set %v", r.cfg.Queue, r.x.Node, s.committed))
	}
	if s.hw > r.log.syncedEnd {
		panic(fmt.Sprintf("queue %d: high watermark %d above the owner's durable end %d", r.cfg.Queue, s.hw, r.log.syncedEnd))
	}
	if r.cfg.Policy == seam.ISR && r.owner.commit > s.hw && !r.x.Bugs.Has(bugs.ISRConfirmAtW) && !r.x.Bugs.Has(bugs.WatermarkMovesBack) {
		panic(fmt.Sprintf("queue %d: isr confirmed end %d above the high watermark %d", r.cfg.Queue, r.owner.commit, s.hw))
	}
}
