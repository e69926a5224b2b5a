package queue

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/seam"
)

// Learners (docs/design/recovery.md, "Learners and admission"). A follower's
// broker back with a new process on the same storage is named its queue's
// learner by the metadata (core/ctrl's learner.go); the node tells the
// owner (SetLearner), whose progress for that node then follows the
// learner's process: it streams to it from where its log matches (the
// copy the old process left, so catch-up resumes), takes its reports for
// what to send next and for retention, but never counts them toward W
// (quorumConfirmable) nor asks it back into the in-sync set. When it first
// matches, the owner fixes a cut (its log end then); once the learner holds
// the cut durably, LearnerCaughtUp says so and the node asks the leader
// to admit it. Admission makes it the member (SetMembers): the progress,
// with the learner's durable report, counts from then on.

// SetLearner tells the owner its assignment's learner: the process on
// node (0, 0: none). A learner on a node outside the replicas (a new copy,
// which admission adds as one member more) gets a progress of its own,
// which goes again if it leaves unadmitted.
func (r *Replica) SetLearner(node seam.NodeID, process uint64) {
	o := r.owner
	if o == nil {
		return
	}
	if node != 0 && process != 0 && node != r.x.Node && o.peer(node) == nil {
		now := r.x.NowNs
		o.peers = append(o.peers, progress{node: node, member: true, caughtUpNs: now, reportNs: now,
			reportEnd: r.log.end, reportEndNs: now, next: r.log.end, lastSendNs: now})
	}
	o.peers = slices.DeleteFunc(o.peers, func(p progress) bool {
		// A new copy's learner that went without admission (a newer
		// learner on another node replaced it, or none is named).
		return p.learning && p.named == 0 && (p.node != node || process == 0)
	})
	for i := range o.peers {
		p := &o.peers[i]
		switch {
		case p.node == node && process != 0 && (!p.learning || p.process != process) && p.named != process:
			p.learning, p.cut = true, 0
			p.restarted(process) // its reports from now on, the member's no more
			if o.ready {
				o.probe(p)
			}
		case p.learning && (p.node != node || process == 0) && p.named != p.process:
			// The learner went without admission (a transition cleared
			// it, or a newer learner replaced it on another node): the
			// member is the named process again.
			p.learning = false
			p.restarted(p.named)
		}
	}
}

// SetMembers tells the owner the members its assignment names now, nodes
// and their processes in the same order: an admission changed one (a
// successor) or added one (a new copy), and the learner that was that
// process counts from now on. W stays what it was (the metadata admits no
// copy that would change it).
func (r *Replica) SetMembers(nodes []seam.NodeID, processes []uint64) {
	o := r.owner
	if o == nil || len(processes) != len(nodes) || !r.cfg.Leased {
		return
	}
	if len(nodes) == len(r.cfg.Replicas)+1 {
		for _, n := range r.cfg.Replicas {
			if !slices.Contains(nodes, n) {
				return // not this assignment's growth
			}
		}
		if w := r.cfg.Policy.WriteQuorum(len(nodes), r.cfg.MinInSync); w != r.w {
			panic(fmt.Sprintf("queue: a member more changed W from %d to %d", r.w, w))
		}
		i := slices.IndexFunc(nodes, func(n seam.NodeID) bool { return !slices.Contains(r.cfg.Replicas, n) })
		p := o.peer(nodes[i])
		if p == nil || !p.learning || p.process != processes[i] {
			return // the member added is not this owner's learner (yet)
		}
		r.cfg.Replicas, r.cfg.Processes = slices.Clone(nodes), slices.Clone(processes)
		p.named, p.learning = processes[i], false // admitted: its durable report counts now
		o.advanceCommit()
	}
	if len(nodes) != len(r.cfg.Replicas) {
		return
	}
	for i, n := range r.cfg.Replicas {
		p := o.peer(n)
		if p == nil || !p.member || p.named == processes[i] {
			continue
		}
		p.named = processes[i]
		if p.learning && p.process == p.named {
			p.learning = false // admitted: its durable report counts now
			o.advanceCommit()
			continue
		}
		p.learning = false
		p.restarted(p.named)
	}
}

// LearnerCaughtUp reports the learner that holds its cut durably, for the
// node to ask its admission (the owner of a ready, unfenced group only).
func (r *Replica) LearnerCaughtUp() (node seam.NodeID, process uint64, ok bool) {
	o := r.owner
	if o == nil || !o.ready || r.fenced != "" || r.failed || r.sealed {
		return 0, 0, false
	}
	for i := range o.peers {
		if p := &o.peers[i]; p.learning && p.cut > 0 && p.matched && p.durable >= p.cut {
			return p.node, p.process, true
		}
	}
	return 0, 0, false
}

// Learning reports whether the replica runs as its queue's learner.
func (r *Replica) Learning() bool { return r.cfg.Learner }

// Admitted tells a learner that its assignment names it the member now:
// its copy holds the owner's log up to the cut, everything the member it
// succeeds acknowledged, so a loss its log met at its start is repaired.
func (r *Replica) Admitted() {
	if !r.cfg.Learner {
		return
	}
	r.cfg.Learner = false
	if r.unrepaired && r.follower != nil && !r.sealed && !r.failed {
		r.storage(seam.Effect{Op: seam.OpRepaired})
		r.unrepaired = false
	}
}
