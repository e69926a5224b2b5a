package metadata

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core/route"
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
// recovery plan; 9 the exchanges, the bindings and the queues' lifetimes.
// A catalogue without exchanges, bindings and lifetimes keeps version 8's
// image (one State, one image: version 9 with the three sections empty is
// refused), so that the images of metadata that never used them do not
// change.
const (
	imageVersion       = 9
	imageVersionQueues = 8
)

// ImageBytesMax bounds an image. The largest metadata the limits allow
// (BrokersMax brokers, QueuesMax queues with the longest names and widest
// integers, all placed and fenced, ExchangesMax exchanges with the longest
// names and bindings up to BindingsBytesMax) fits (TestImageLargestFits);
// core/ctrl sends an image as one raft message within its MsgBytesMax.
const ImageBytesMax = 52 << 20

// AppendImage appends s's image.
func (s *State) AppendImage(dst []byte) []byte {
	v := byte(imageVersionQueues)
	lives := 0
	for i := range s.queues {
		if s.queues[i].Life != (Lifetime{}) {
			lives++
		}
	}
	if len(s.exchanges) > 0 || len(s.bindings) > 0 || lives > 0 {
		v = imageVersion
	}
	dst = append(dst, v)
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
	if v == imageVersionQueues {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.exchanges)))
	for i := range s.exchanges {
		x := &s.exchanges[i]
		dst = appendStr(dst, x.Name)
		dst = append(dst, byte(x.Kind))
		dst = appendBool(dst, x.Durable)
		dst = appendBool(dst, x.AutoDelete)
		dst = appendBool(dst, x.Internal)
		dst = appendStr(dst, x.Alternate)
		dst = binary.AppendUvarint(dst, x.Incarnation)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.bindings)))
	for i := range s.bindings {
		b := &s.bindings[i]
		dst = appendStr(dst, b.Source)
		dst = appendStr(dst, b.Queue)
		dst = appendStr(dst, b.Exchange)
		dst = appendStr(dst, b.Key)
		dst = appendStr(dst, b.Args)
	}
	// The lifetimes: each queue's position in the catalogue (ascending)
	// and its lifetime, for the queues with one.
	dst = binary.AppendUvarint(dst, uint64(lives))
	for i := range s.queues {
		if l := &s.queues[i].Life; *l != (Lifetime{}) {
			dst = binary.AppendUvarint(dst, uint64(i))
			dst = appendLife(dst, l, false)
		}
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
	v := r.byte()
	if r.err == nil && v != imageVersion && v != imageVersionQueues {
		return State{}, fmt.Errorf("%w: image version %d, want %d or %d", ErrDecode, v, imageVersionQueues, imageVersion)
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
	if v == imageVersion {
		r.exchanges(&s)
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	if r.err != nil {
		return State{}, fmt.Errorf("%w: image: %v", ErrDecode, r.err)
	}
	return s, nil
}

// exchanges reads the exchanges and bindings of a version 9 image into s:
// each valid as its command would be, sorted, distinct, their ends in the
// catalogue, within the limits, and not both empty.
func (r *reader) exchanges(s *State) {
	prevLife := 0
	nx := r.count(ExchangesMax)
	for i := range nx {
		x := Exchange{Name: r.str(ExchangeNameBytesMax), Kind: route.Kind(r.byte()), Durable: r.bool(), AutoDelete: r.bool(),
			Internal: r.bool(), Alternate: r.str(ExchangeNameBytesMax), Incarnation: r.uvarint()}
		if r.err != nil {
			return
		}
		c := Command{Kind: DeclareExchange, Exchange: x.Name, ExchangeKind: x.Kind, Alternate: x.Alternate}
		switch err := c.Validate(); {
		case err != nil:
			r.fail(err.Error())
		case strings.HasPrefix(x.Name, reservedPrefix):
			r.fail(fmt.Sprintf("exchange %q: reserved name", x.Name))
		case x.Incarnation == 0 || x.Incarnation > s.applied:
			r.fail(fmt.Sprintf("exchange %q: incarnation %d", x.Name, x.Incarnation))
		case i > 0 && x.Name <= s.exchanges[i-1].Name:
			r.fail("exchanges not ascending by name")
		}
		s.exchanges = append(s.exchanges, x)
	}
	nb := r.count(BindingsMax)
	for i := range nb {
		b := Binding{Source: r.str(ExchangeNameBytesMax), Queue: r.str(QueueNameBytesMax), Exchange: r.str(ExchangeNameBytesMax),
			Key: r.str(RoutingKeyBytesMax), Args: r.str(BindingArgsBytesMax)}
		if r.err != nil {
			return
		}
		c := Command{Kind: Bind, Exchange: b.Source, Queue: b.Queue, Dest: b.Exchange, RoutingKey: b.Key, Args: b.Args}
		if err := c.Validate(); err != nil {
			r.fail(err.Error())
			return
		}
		if err := s.bindEnds(&b); err != nil {
			r.fail(err.Error())
			return
		}
		if i > 0 && compareBindings(&s.bindings[i-1], &b) >= 0 {
			r.fail("bindings not in order")
			return
		}
		b.fields, _ = decodeArgs(b.Args)
		s.bindings = append(s.bindings, b)
		s.bindingsBytes += bindingBytes(&b)
	}
	nl := r.count(len(s.queues))
	for j := range nl {
		i := r.count(len(s.queues))
		l, named := r.life()
		if r.err != nil {
			return
		}
		if named || i == len(s.queues) || j > 0 && i <= prevLife {
			r.fail("lifetimes out of order, or server-named")
			return
		}
		prevLife = i
		s.queues[i].Life = l
	}
	switch {
	case r.err != nil:
	case nx == 0 && nb == 0 && nl == 0:
		r.fail(fmt.Sprintf("image version %d without exchanges, bindings or lifetimes (version %d's)", imageVersion, imageVersionQueues))
	case s.bindingsBytes > BindingsBytesMax:
		r.fail(fmt.Sprintf("bindings of %d bytes, over %d", s.bindingsBytes, BindingsBytesMax))
	}
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
