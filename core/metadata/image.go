package metadata

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/seam"
)

// The image of a State: the applied metadata as one canonical byte string,
// for the metadata group's snapshots and its applied record (io/meta's
// Snapshot.Data and Applied.Data), so that a process can start from it
// instead of re-applying the whole log, and a lagging follower can be sent
// it. One State has one image (fields in a fixed order, slices in their
// sorted order, every integer a minimal varint), and DecodeImage refuses
// anything else: an unknown version, truncated or trailing bytes, padded
// varints, unsorted or duplicate brokers and queues, values out of range.

// imageVersion is the image format's version: 2 holds every setting of
// Settings in order, with recovery.workers_per_broker (1 held three).
// 3 adds each assignment's learner; 4 the recovery inspection budgets
// (recovery.inspect_*); 5 the staging budgets (recovery.stage_*); 6 a
// pending transition's handed-to candidate; 7 its retry count; 8 its
// recovery plan.
const imageVersion = 8

// ImageBytesMax bounds an image. The largest metadata the limits allow
// (BrokersMax brokers, QueuesMax queues with the longest names and widest
// integers, all placed and fenced) has an image of 29.4 MiB
// (TestImageLargestFits), so 40 MiB leaves room for the format to grow;
// core/ctrl sends an image as one raft message within its MsgBytesMax.
const ImageBytesMax = 40 << 20

// AppendImage appends s's image.
func (s *State) AppendImage(dst []byte) []byte {
	dst = append(dst, imageVersion)
	dst = binary.AppendUvarint(dst, s.applied)
	dst = binary.AppendUvarint(dst, uint64(s.lastQueueID))
	for i := range Settings {
		dst = appendBool(dst, s.isSet[i])
		dst = binary.AppendVarint(dst, s.set[i])
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.brokers)))
	for _, b := range s.brokers {
		dst = binary.AppendUvarint(dst, uint64(b.Node))
		dst = binary.AppendUvarint(dst, b.Process)
		dst = binary.AppendUvarint(dst, b.Storage)
		dst = appendBool(dst, b.Live)
		dst = appendBool(dst, b.Draining)
		dst = binary.AppendUvarint(dst, b.Since)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.queues)))
	for i := range s.queues {
		q := &s.queues[i]
		dst = appendStr(dst, q.Name)
		dst = binary.AppendUvarint(dst, uint64(q.ID))
		dst = binary.AppendUvarint(dst, q.Incarnation)
		dst = binary.AppendUvarint(dst, uint64(q.Replicas))
		dst = append(dst, byte(q.Policy))
		dst = binary.AppendUvarint(dst, uint64(q.MinInsync))
		dst = appendBool(dst, q.Assigned)
		a := &q.Assignment
		dst = binary.AppendUvarint(dst, a.Epoch)
		dst = binary.AppendUvarint(dst, uint64(a.Owner))
		dst = appendMembers(dst, &a.Members)
		dst = appendNodes(dst, &a.InSync)
		dst = binary.AppendUvarint(dst, a.InSyncVersion)
		dst = appendBool(dst, a.Fenced)
		dst = binary.AppendUvarint(dst, a.Pending.Epoch)
		dst = appendNodes(dst, &a.Pending.Proposed)
		dst = append(dst, a.Pending.Digest[:]...)
		dst = binary.AppendUvarint(dst, uint64(a.Pending.Candidate))
		dst = binary.AppendUvarint(dst, a.Pending.Retries)
		dst = appendPlan(dst, &a.Pending.Plan)
		dst = binary.AppendUvarint(dst, uint64(a.Learner.Node))
		dst = binary.AppendUvarint(dst, a.Learner.Process)
		dst = binary.AppendUvarint(dst, a.Learner.Storage)
	}
	return dst
}

func appendNodes(dst []byte, ns *Nodes) []byte {
	dst = binary.AppendUvarint(dst, uint64(ns.N))
	for _, n := range ns.Slice() {
		dst = binary.AppendUvarint(dst, uint64(n))
	}
	return dst
}

// DecodeImage reads an image exactly; the State it returns is the one
// whose image it is.
func DecodeImage(b []byte) (State, error) {
	if len(b) > ImageBytesMax {
		return State{}, fmt.Errorf("%w: image of %d bytes, over %d", ErrDecode, len(b), ImageBytesMax)
	}
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != imageVersion {
		return State{}, fmt.Errorf("%w: image version %d, want %d", ErrDecode, v, imageVersion)
	}
	var s State
	s.applied = r.uvarint()
	s.lastQueueID = seam.QueueID(r.node())
	for i := range Settings {
		s.isSet[i] = r.bool()
		s.set[i] = r.varint()
		if r.err == nil && (s.isSet[i] && checkSetting(i, s.set[i]) != nil || !s.isSet[i] && s.set[i] != 0) {
			r.fail(fmt.Sprintf("setting %s: value %d", Settings[i].Key, s.set[i]))
		}
	}
	nb := r.count(BrokersMax)
	for i := range nb {
		b := Broker{Node: r.node(), Process: r.uvarint(), Storage: r.uvarint(), Live: r.bool(), Draining: r.bool(), Since: r.uvarint()}
		if r.err == nil && (b.Node == 0 || i > 0 && b.Node <= s.brokers[i-1].Node) {
			r.fail("brokers not ascending by id")
		}
		s.brokers = append(s.brokers, b)
	}
	nq := r.count(QueuesMax)
	for i := range nq {
		q := Queue{Name: r.str(QueueNameBytesMax), ID: seam.QueueID(r.node()), Incarnation: r.uvarint(),
			Replicas: r.count(seam.ReplicasMax), Policy: seam.Policy(r.byte()), MinInsync: r.count(seam.ReplicasMax), Assigned: r.bool()}
		a := &q.Assignment
		a.Epoch, a.Owner = r.uvarint(), r.node()
		a.Members = r.members()
		r.nodes(&a.InSync)
		a.InSyncVersion = r.uvarint()
		a.Fenced = r.bool()
		a.Pending.Epoch = r.uvarint()
		r.nodes(&a.Pending.Proposed)
		copy(a.Pending.Digest[:], r.bytes(len(a.Pending.Digest)))
		a.Pending.Candidate = r.node()
		a.Pending.Retries = r.uvarint()
		a.Pending.Plan = r.plan()
		a.Learner = Member{Node: r.node(), Process: r.uvarint(), Storage: r.uvarint()}
		if r.err == nil {
			if err := q.check(); err != nil {
				r.fail(err.Error())
			} else if i > 0 && q.Name <= s.queues[i-1].Name {
				r.fail("queues not ascending by name")
			} else if q.ID > s.lastQueueID {
				r.fail(fmt.Sprintf("queue %q: id %d above the last given, %d", q.Name, q.ID, s.lastQueueID))
			}
		}
		s.queues = append(s.queues, q)
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	if r.err != nil {
		return State{}, fmt.Errorf("%w: image: %v", ErrDecode, r.err)
	}
	return s, nil
}

// nodes reads a node list: ascending, distinct, non-zero.
func (r *reader) nodes(ns *Nodes) {
	ns.N = r.count(seam.ReplicasMax)
	for i := range ns.N {
		ns.ID[i] = r.node()
		if r.err == nil && (ns.ID[i] == 0 || i > 0 && ns.ID[i] <= ns.ID[i-1]) {
			r.fail("node list not ascending")
		}
	}
}

// check reports a catalogue entry no sequence of commands could produce.
func (q *Queue) check() error {
	if err := checkQueueName(q.Name); err != nil {
		return err
	}
	a := &q.Assignment
	switch {
	case q.ID < FirstQueueID || q.Incarnation == 0:
		return fmt.Errorf("queue %q: id %d, incarnation %d", q.Name, q.ID, q.Incarnation)
	case q.Replicas < 1 || !q.Policy.Valid() || q.MinInsync < 1 || q.MinInsync > q.Replicas:
		return fmt.Errorf("queue %q: replicas %d, policy %d, min in-sync %d", q.Name, q.Replicas, q.Policy, q.MinInsync)
	case !q.Assigned && *a != (Assignment{}):
		return fmt.Errorf("queue %q: an assignment, not placed", q.Name)
	case q.Assigned && (a.Epoch == 0 || a.Members.N < 1 || a.Members.N > q.Replicas || a.InSync.N == 0):
		return fmt.Errorf("queue %q: placed with epoch %d, %d members, %d in sync", q.Name, a.Epoch, a.Members.N, a.InSync.N)
	case !a.Fenced && a.Pending != (PendingTransition{}):
		return fmt.Errorf("queue %q: a pending transition, not fenced", q.Name)
	case a.Pending.Candidate != 0 && !slices.Contains(a.Pending.Proposed.Slice(), a.Pending.Candidate):
		return fmt.Errorf("queue %q: candidate n%d is not proposed", q.Name, a.Pending.Candidate)
	case a.Pending.Plan != (RecoveryPlan{}) && (a.Pending.Plan.Source == 0 || a.Pending.Plan.Storage == 0 || a.Pending.Plan.Start > a.Pending.Plan.End ||
		!slices.ContainsFunc(a.Members.Slice(), func(m Member) bool { return m.Node == a.Pending.Plan.Source && m.Storage == a.Pending.Plan.Storage })):
		return fmt.Errorf("queue %q: plan %s names no previous member", q.Name, a.Pending.Plan.String())
	case a.Learner != (Member{}) && (a.Fenced || a.Learner.Node == a.Owner || a.Learner.Process == 0 || a.Learner.Storage == 0 ||
		(!slices.ContainsFunc(a.Members.Slice(), func(m Member) bool { return m.Node == a.Learner.Node }) && a.Members.N >= q.Replicas)):
		return fmt.Errorf("queue %q: learner n%d/%d/%d is no follower's successor, nor a new copy", q.Name, a.Learner.Node, a.Learner.Process, a.Learner.Storage)
	}
	return nil
}
