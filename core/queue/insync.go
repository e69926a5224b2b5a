package queue

import (
	"slices"

	"github.com/sluicemq/sluice/core/seam"
)

// In-sync tracking (seed 003), for queues whose assignment the controller
// keeps: the owner records when each follower last reported its whole log
// durable (progress.caughtUpNs). Every lag/2 it wants removed the
// followers of the committed in-sync set whose moment is older than the
// lag time; at any tick it wants back a follower that reached the high
// watermark (the lowest durable end over the committed set). It keeps
// using the committed set until the controller commits the change: the
// node carries the wanted set to the controller's leader (InSyncWanted).

// inSync is the owner's view of its in-sync set.
type inSync struct {
	tracking    bool          // the node feeds it a committed set
	committed   []seam.NodeID // the committed in-sync set, sorted
	lagNs       int64         // replica.lag_time_max_ms
	nextCheckNs int64         // the next removal check
	wanted      []seam.NodeID // the last set asked for
	askedNs     int64         // when it was asked for
}

// SetInSync gives the committed in-sync set and the lag time (read by the
// node from the metadata on every tick).
func (r *Replica) SetInSync(committed []seam.NodeID, lagMs int64) {
	s := &r.inSync
	if !s.tracking {
		s.tracking = true
		s.nextCheckNs = r.x.NowNs + lagMs*1e6/2
	}
	s.committed = append(s.committed[:0], committed...)
	slices.Sort(s.committed)
	s.lagNs = lagMs * 1e6
}

// HighWatermark is the lowest durable end over the committed in-sync set
// (the owner's own synced end among them); ok is false off the owner or
// without a committed set.
func (r *Replica) HighWatermark() (hw uint64, ok bool) {
	o := r.owner
	if o == nil || !r.inSync.tracking {
		return 0, false
	}
	hw = r.log.syncedEnd
	for i := range o.peers {
		p := &o.peers[i]
		if slices.Contains(r.inSync.committed, p.node) {
			d := p.durable
			if !p.matched {
				d = 0
			}
			hw = min(hw, d)
		}
	}
	return hw, true
}

// InSyncWanted returns the in-sync set the owner wants committed, when it
// differs from the committed one and was not asked for within the last
// lag/2 (a request may be lost; the controller ignores a repeat).
func (r *Replica) InSyncWanted() ([]seam.NodeID, bool) {
	o, s := r.owner, &r.inSync
	if o == nil || !o.ready || !s.tracking || r.fenced != "" || r.failed {
		return nil, false
	}
	now := r.x.NowNs
	check := now >= s.nextCheckNs
	if check {
		s.nextCheckNs = now + max(s.lagNs/2, 1)
	}
	hw, _ := r.HighWatermark()
	want := []seam.NodeID{r.x.Node}
	for i := range o.peers {
		p := &o.peers[i]
		in := slices.Contains(s.committed, p.node)
		switch {
		case in && (!check || now-p.caughtUpNs <= s.lagNs):
			want = append(want, p.node) // stays: not checked now, or in time
		case !in && p.matched && p.durable >= hw && now-p.caughtUpNs <= s.lagNs:
			want = append(want, p.node) // back: it reached the high watermark
		}
	}
	slices.Sort(want)
	if slices.Equal(want, s.committed) {
		return nil, false
	}
	if slices.Equal(want, s.wanted) && now-s.askedNs < max(s.lagNs/2, 1) {
		return nil, false
	}
	s.wanted, s.askedNs = append(s.wanted[:0], want...), now
	return want, true
}
