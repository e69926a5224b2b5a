package check

import (
	"fmt"
	"github.com/sluicemq/sluice/core/ctrl"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/io/meta"
)

// The metadata group's checkers. Ground truth: what each broker process
// applied (its EfApplied effects, as a consumer's deliveries are seen at
// the seam), what the operator's client was told, and the durable bytes
// of every voter's metadata disk.
//
//   - One history: every process applies entries 1, 2, 3, ... in order,
//     and all of them, on every broker and in every process, agree on the
//     term and command at each index (raft's state machine safety).
//   - Committed means durable on a majority: at the end, an entry a
//     client was told is committed is in the durable log of a majority of
//     the voters, at its index, with its command.
//   - The catalogue: the checker folds declarations and deletions itself;
//     a confirmed declaration reports the incarnation of the first
//     declaration of its name still standing, a confirmed deletion
//     named the standing incarnation, and a command answered refused
//     conflicted with the catalogue (meta-catalogue).
//   - The disks agree: every voter's durable entries up to its durable
//     commit index are the history's.

// metaEntriesMax bounds the history kept: far above what a run commits.
const metaEntriesMax = 1 << 20

type metaEntry struct {
	term uint64
	cmd  string
}

// The catalogue model: the checkers' own fold of the applied history's
// declarations and deletions (independent of core/metadata's state
// machine), so that what the operator is told can be judged.
type modelQueue struct {
	incarnation         uint64
	replicas, minInsync int
	policy              core.Policy
	epoch               uint64 // the placed assignment's epoch; 0: not placed
	fenced              bool
	id                  core.QueueID
	owner               core.NodeID
	members             []core.NodeID
	inSync              metadata.Nodes
	inSyncVersion       uint64
	proposed            metadata.Nodes // the pending transition's, while fenced
	// digest: the pending transition's; handedTo: the candidate a handoff
	// named (0: none)
	digest   metadata.Digest
	handedTo core.NodeID
	// plan: the pending transition's committed recovery plan (zero: none)
	plan metadata.RecoveryPlan
	// instances: the members' exact instances; learner: the assignment's
	// learner (zero: none)
	instances []metadata.Member
	learner   metadata.Member
	// since when it has been under-replicated / under min in-sync (0:
	// it is not), for the summaries
	underReplicatedNs, underMinNs int64
}

// underReplicated and underMin say the queue's health by the model: a
// placed, unfenced queue whose committed in-sync set is smaller than its
// replica count, or than its min in-sync.
func (q *modelQueue) underReplicated() bool {
	return q.epoch != 0 && !q.fenced && q.inSync.N < q.replicas
}

func (q *modelQueue) underMin() bool { return q.epoch != 0 && !q.fenced && q.inSync.N < q.minInsync }

// MetaQueueInfo is a declared queue as the checker's model holds it.
type MetaQueueInfo struct {
	ID        core.QueueID
	Policy    core.Policy
	MinInsync int
	Replicas  int
	// Fenced: a transition is pending, Proposed its proposed members
	Fenced   bool
	Proposed metadata.Nodes
	// Plan: the pending transition's committed recovery plan (zero: none)
	Plan metadata.RecoveryPlan
	// Learner: the assignment's learner's broker (0: none)
	Learner core.NodeID
}

// MetaQueue returns the declared queue name, by the model.
func (c *Checker) MetaQueue(name string) (MetaQueueInfo, bool) {
	q, ok := c.metaTruth().catalog[name]
	return MetaQueueInfo{ID: q.id, Policy: q.policy, MinInsync: q.minInsync, Replicas: q.replicas, Fenced: q.fenced, Proposed: q.proposed, Plan: q.plan,
		Learner: q.learner.Node}, ok
}

// MetaHandoffDue reports, by the model, whether declared queue name is
// fenced with a recovery candidate that is not live or drains while
// another proposed member is live and not draining: a case the leader's
// placement hands to that member.
func (c *Checker) MetaHandoffDue(name string) bool {
	m := c.metaTruth()
	q, ok := m.catalog[name]
	if !ok || !q.fenced || q.proposed.N == 0 {
		return false
	}
	cand := q.handedTo
	for _, n := range q.proposed.Slice() {
		if cand == 0 && slices.Contains(q.members, n) {
			cand = n
		}
	}
	if cand == 0 {
		cand = q.proposed.ID[0]
	}
	if b := m.brokers[cand]; b.live && !b.draining {
		return false
	}
	for _, n := range q.proposed.Slice() {
		if b := m.brokers[n]; n != cand && b.live && !b.draining {
			return true
		}
	}
	return false
}

// MetaShort says, by the model, why declared queue name is short of full
// health, or "": placed, unfenced, on its declared replica count (or on
// every broker of up that is not draining, when they are fewer), every
// member in its committed in-sync set. up: the brokers whose process runs,
// by the world. gone: the brokers that never return (the world's gone
// fault); a member on one is not asked to be in sync, as an unfenced
// assignment keeps it only under the follower-loss hold (hold-ended judges
// when that must end), and it counts as no broker available.
func (c *Checker) MetaShort(name string, up, gone []core.NodeID) string {
	m := c.metaTruth()
	q, ok := m.catalog[name]
	available := 0
	for _, n := range up {
		if !m.brokers[n].draining && !slices.Contains(gone, n) {
			available++
		}
	}
	inSyncWanted := 0
	for _, n := range q.members {
		if !slices.Contains(gone, n) {
			inSyncWanted++
		}
	}
	inSync := 0
	for _, n := range q.inSync.Slice() {
		if !slices.Contains(gone, n) {
			inSync++
		}
	}
	switch {
	case !ok:
		return "not declared"
	case q.epoch == 0:
		return "not placed"
	case q.fenced:
		return "fenced"
	case len(q.members) < min(q.replicas, available):
		return fmt.Sprintf("on %d members of %d replicas, %d brokers available", len(q.members), q.replicas, available)
	case inSync < inSyncWanted:
		return fmt.Sprintf("%d of its %d members in sync", inSync, inSyncWanted)
	}
	return ""
}

// verdict is the model's outcome of one entry.
type verdict struct {
	refused     bool
	incarnation uint64 // a declaration's (new or existing)
	// outsideLive: a placement naming a broker outside the live set (or
	// another instance than the live one)
	outsideLive bool
	// unplanned: an activation of a transition with no committed recovery
	// plan (its installations copied a history nobody committed)
	unplanned bool
}

type metaConfirm struct {
	atNs  int64
	index uint64
	cmd   string
}

// metaTruth is the metadata history as brokers applied it.
// modelBroker is the model's view of one broker.
type modelBroker struct {
	process, storage uint64
	live, known      bool
	draining         bool // kept across registrations, as the operator set it
}

// BrokerTruth is a broker as the world knows it: its running process and
// storage instances (process 0: down).
type BrokerTruth struct {
	Node             core.NodeID
	Process, Storage uint64
}

type metaTruth struct {
	history  []metaEntry // index i+1 at i
	verdicts []verdict   // the model's outcome of each entry, as history
	next     map[core.NodeID]uint64
	confirms []metaConfirm
	catalog  map[string]modelQueue
	brokers  map[core.NodeID]modelBroker
	lastID   core.QueueID // the last queue id the catalogue gave
	names    map[core.QueueID]string
	health   InSyncHealth // spells and time of queues no longer so
}

func (c *Checker) metaTruth() *metaTruth {
	if c.meta == nil {
		c.meta = &metaTruth{next: map[core.NodeID]uint64{}, catalog: map[string]modelQueue{}, brokers: map[core.NodeID]modelBroker{},
			names: map[core.QueueID]string{}}
	}
	return c.meta
}

// MetaStarted says that node's process started: it applies again from 1.
func (c *Checker) MetaStarted(node core.NodeID) {
	c.metaTruth().next[node] = 1
}

// MetaApplied records that node's current process applied entry index.
//
// result is the applied entry's text as the node gave it ("... => refused:
// why" when its state machine refused it): the model must agree.
func (c *Checker) MetaApplied(atNs int64, node core.NodeID, index, term uint64, cmd []byte, result string) {
	m := c.metaTruth()
	want, ok := m.next[node]
	if !ok {
		want = 1
	}
	if result == ctrl.ImageRestoredNote {
		// The node's applied metadata is an image's (its stored one at a
		// start, or a leader's snapshot): of a prefix the history holds,
		// never behind what this process applied; it goes on after it.
		if index+1 < want || index > uint64(len(m.history)) {
			c.fail("meta-one-history", atNs, "n%d restored a metadata image at %d, having applied up to %d; the history holds %d entries",
				node, index, want-1, len(m.history))
		}
		m.next[node] = index + 1
		return
	}
	if index != want {
		c.fail("meta-one-history", atNs, "n%d applied metadata entry %d, expected %d next", node, index, want)
	}
	m.next[node] = index + 1
	e := metaEntry{term: term, cmd: string(cmd)}
	switch {
	case index == 0:
		c.fail("meta-one-history", atNs, "n%d applied metadata entry 0", node)
	case index <= uint64(len(m.history)):
		if h := m.history[index-1]; h != e {
			c.fail("meta-one-history", atNs, "n%d applied metadata entry %d as %d/%q; applied before as %d/%q",
				node, index, term, cmd, h.term, h.cmd)
		}
	case index == uint64(len(m.history))+1 && len(m.history) < metaEntriesMax:
		m.history = append(m.history, e)
		before := m.healthOf(cmd)
		v := m.fold(index, cmd)
		m.healthChanged(atNs, cmd, before)
		m.verdicts = append(m.verdicts, v)
		refused := strings.Contains(result, "=> refused")
		switch {
		case v.outsideLive && !refused:
			c.fail("meta-placement", atNs, "n%d applied entry %d, a placement outside the live set: %s", node, index, result)
		case v.unplanned && !refused:
			c.fail("meta-plan", atNs, "n%d applied entry %d, an activation of a transition with no committed recovery plan: %s", node, index, result)
		case len(cmd) > 0 && v.refused != refused:
			c.fail("meta-model", atNs, "n%d applied entry %d as %q; the checker's model says refused=%t", node, index, result, v.refused)
		}
	}
}

// fold applies entry index to the catalogue model and returns its verdict.
func (m *metaTruth) fold(index uint64, cmd []byte) verdict {
	if len(cmd) == 0 {
		return verdict{} // raft's empty entry
	}
	c, err := metadata.Decode(cmd)
	if err != nil {
		return verdict{refused: true}
	}
	q, exists := m.catalog[c.Queue]
	b := m.brokers[c.Node]
	switch c.Kind {
	case metadata.RegisterBroker:
		if c.Process < b.process || (b.live && b.process == c.Process && b.storage == c.Storage) {
			return verdict{refused: true}
		}
		m.brokers[c.Node] = modelBroker{process: c.Process, storage: c.Storage, live: true, known: true, draining: b.draining}
	case metadata.Drain:
		if !b.known {
			return verdict{refused: true}
		}
		b.draining = c.Draining
		m.brokers[c.Node] = b
	case metadata.BrokerDown:
		if !b.live || b.process != c.Process {
			return verdict{refused: true}
		}
		b.live = false
		m.brokers[c.Node] = b
	case metadata.DeclareQueue:
		if exists {
			same := q.replicas == c.Replicas && q.minInsync == c.MinInsync && q.policy == c.Policy
			return verdict{refused: !same, incarnation: q.incarnation}
		}
		m.lastID = max(m.lastID+1, metadata.FirstQueueID)
		m.catalog[c.Queue] = modelQueue{incarnation: index, replicas: c.Replicas, minInsync: c.MinInsync, policy: c.Policy, id: m.lastID}
		m.names[m.lastID] = c.Queue
		return verdict{incarnation: index}
	case metadata.DeleteQueue:
		if !exists || q.incarnation != c.Incarnation {
			return verdict{refused: true}
		}
		delete(m.catalog, c.Queue)
	case metadata.Assign:
		if !exists || q.incarnation != c.Incarnation || q.epoch != 0 || c.Members.N != q.replicas {
			return verdict{refused: true}
		}
		for _, mb := range c.Members.Slice() {
			if b := m.brokers[mb.Node]; !b.live || b.process != mb.Process || b.storage != mb.Storage {
				return verdict{refused: true, outsideLive: true}
			}
			if m.brokers[mb.Node].draining {
				return verdict{refused: true} // (a drain committed after the leader chose it)
			}
		}
		q.epoch, q.owner, q.members = c.Epoch, c.Owner, nil
		q.inSync, q.inSyncVersion = metadata.Nodes{}, 0
		q.instances, q.learner = slices.Clone(c.Members.Slice()), metadata.Member{}
		for _, mb := range c.Members.Slice() {
			q.members = append(q.members, mb.Node)
			q.inSync.ID[q.inSync.N] = mb.Node
			q.inSync.N++
		}
		m.catalog[c.Queue] = q
	case metadata.SetInSync:
		if !exists || q.incarnation != c.Incarnation || q.epoch == 0 || q.fenced || q.epoch != c.Epoch || q.inSyncVersion != c.InSyncVersion {
			return verdict{refused: true}
		}
		owner := false
		for _, n := range c.InSync.Slice() {
			if !slices.Contains(q.members, n) {
				return verdict{refused: true}
			}
			owner = owner || n == q.owner
		}
		if !owner {
			return verdict{refused: true}
		}
		q.inSync = c.InSync
		q.inSyncVersion++
		m.catalog[c.Queue] = q
	case metadata.Transition:
		if !exists || q.incarnation != c.Incarnation || q.epoch == 0 || q.fenced || q.epoch != c.Epoch {
			return verdict{refused: true}
		}
		// The digest binds the members' instances: one proposed before an
		// admission changed them is refused (the model hashes its own
		// instances with the digest's pure function).
		var mq metadata.Queue
		mq.Incarnation, mq.Policy, mq.MinInsync = q.incarnation, q.policy, q.minInsync
		mq.Assignment.Epoch = q.epoch
		mq.Assignment.Members.N = copy(mq.Assignment.Members.M[:], q.instances)
		if metadata.TransitionDigest(&mq, &c.Proposed) != c.Digest {
			return verdict{refused: true}
		}
		q.fenced = true
		q.proposed = c.Proposed
		q.digest, q.handedTo, q.plan = c.Digest, 0, metadata.RecoveryPlan{}
		q.learner = metadata.Member{}
		m.catalog[c.Queue] = q
	case metadata.Repropose:
		// Only while too few proposed members are live for the queue's
		// configured W, to live brokers only, with the digest of the new
		// proposal against the model's own member instances.
		if !exists || q.incarnation != c.Incarnation || !q.fenced || q.epoch != c.Epoch || q.digest != c.Digest {
			return verdict{refused: true}
		}
		wOf := func(n int) int { return q.policy.WriteQuorum(n, min(q.minInsync, n)) }
		live := 0
		for _, n := range q.proposed.Slice() {
			if m.brokers[n].live {
				live++
			}
		}
		if (live > 0 && wOf(live) >= wOf(q.replicas)) || c.Proposed.N == 0 || c.Proposed == q.proposed || wOf(c.Proposed.N) < wOf(q.replicas) {
			return verdict{refused: true}
		}
		for _, n := range c.Proposed.Slice() {
			if !m.brokers[n].live {
				return verdict{refused: true, outsideLive: true}
			}
			if m.brokers[n].draining && !slices.Contains(q.proposed.Slice(), n) {
				return verdict{refused: true}
			}
		}
		var mq metadata.Queue
		mq.Incarnation, mq.Policy, mq.MinInsync = q.incarnation, q.policy, q.minInsync
		mq.Assignment.Epoch = q.epoch
		mq.Assignment.Members.N = copy(mq.Assignment.Members.M[:], q.instances)
		q.proposed = c.Proposed
		q.digest, q.handedTo = metadata.TransitionDigest(&mq, &c.Proposed), 0
		m.catalog[c.Queue] = q
	case metadata.Handoff:
		// The candidate: the one handed to, else the first proposed node
		// that was a member, else the first proposed.
		cand := q.handedTo
		for _, n := range q.proposed.Slice() {
			if cand == 0 && slices.Contains(q.members, n) {
				cand = n
			}
		}
		if cand == 0 && q.proposed.N > 0 {
			cand = q.proposed.ID[0]
		}
		from, to := m.brokers[c.Node], m.brokers[c.Candidate]
		if !exists || q.incarnation != c.Incarnation || !q.fenced || q.epoch != c.Epoch || q.digest != c.Digest || cand != c.Node ||
			!slices.Contains(q.proposed.Slice(), c.Candidate) || (from.live && !from.draining) || !to.live || to.draining {
			return verdict{refused: true}
		}
		q.handedTo = c.Candidate
		m.catalog[c.Queue] = q
	case metadata.Plan:
		// The first plan stays unless a plan names it as the one it
		// replaces; a plan names a member on its storage; the same plan
		// again changes nothing.
		if !exists || q.incarnation != c.Incarnation || !q.fenced || q.epoch != c.Epoch || q.digest != c.Digest || c.Plan == q.plan ||
			!slices.ContainsFunc(q.instances, func(mb metadata.Member) bool { return mb.Node == c.Plan.Source && mb.Storage == c.Plan.Storage }) ||
			c.Replaces != q.plan.Identity {
			return verdict{refused: true}
		}
		q.plan = c.Plan
		m.catalog[c.Queue] = q
	case metadata.Activate:
		if !exists || q.incarnation != c.Incarnation || !q.fenced || q.epoch != c.Epoch || c.Members.N > q.proposed.N ||
			q.policy.WriteQuorum(c.Members.N, min(q.minInsync, c.Members.N)) < q.policy.WriteQuorum(q.replicas, min(q.minInsync, q.replicas)) {
			return verdict{refused: true}
		}
		for _, mb := range c.Members.Slice() {
			if !slices.Contains(q.proposed.Slice(), mb.Node) {
				return verdict{refused: true}
			}
			if b := m.brokers[mb.Node]; !b.live || b.process != mb.Process || b.storage != mb.Storage {
				return verdict{refused: true, outsideLive: true}
			}
		}
		if c.InSync.N < q.policy.WriteQuorum(c.Members.N, min(q.minInsync, c.Members.N)) {
			return verdict{refused: true}
		}
		unplanned := q.plan.Source == 0
		q.epoch, q.owner, q.members, q.fenced = c.Epoch+1, c.Owner, nil, false
		q.inSync, q.inSyncVersion, q.proposed = c.InSync, 0, metadata.Nodes{}
		q.digest, q.handedTo, q.plan = metadata.Digest{}, 0, metadata.RecoveryPlan{}
		q.instances, q.learner = slices.Clone(c.Members.Slice()), metadata.Member{}
		for _, mb := range c.Members.Slice() {
			q.members = append(q.members, mb.Node)
		}
		m.catalog[c.Queue] = q
		return verdict{unplanned: unplanned}
	case metadata.AddLearner, metadata.AdmitLearner:
		if !exists || q.incarnation != c.Incarnation || q.epoch == 0 || q.fenced || q.epoch != c.Epoch {
			return verdict{refused: true}
		}
		l := c.Learner
		if b := m.brokers[l.Node]; !b.live || b.process != l.Process || b.storage != l.Storage {
			return verdict{refused: true, outsideLive: true}
		}
		i := slices.IndexFunc(q.instances, func(mb metadata.Member) bool { return mb.Node == l.Node })
		if c.Kind == metadata.AdmitLearner {
			if q.learner != l {
				return verdict{refused: true}
			}
			q.instances = slices.Clone(q.instances)
			if i >= 0 {
				q.instances[i] = l // a successor
			} else {
				// A new copy: one member more, ascending.
				at := 0
				for at < len(q.instances) && q.instances[at].Node < l.Node {
					at++
				}
				q.instances = slices.Insert(q.instances, at, l)
				q.members = slices.Insert(slices.Clone(q.members), at, l.Node)
			}
			q.learner = metadata.Member{}
			m.catalog[c.Queue] = q
			return verdict{}
		}
		// A follower's successor on its storage, or a new copy on an
		// undrained broker outside the members of an assignment short of
		// its replicas whose W one more leaves as it is; one learner at a
		// time (a learner whose process left the live set, or drains, may
		// be replaced).
		n := len(q.instances)
		switch {
		case l.Node == q.owner:
			return verdict{refused: true}
		case i >= 0 && (q.instances[i].Storage != l.Storage || l.Process <= q.instances[i].Process):
			return verdict{refused: true}
		case i < 0 && (n >= q.replicas || m.brokers[l.Node].draining ||
			q.policy.WriteQuorum(n, min(q.minInsync, n)) != q.policy.WriteQuorum(n+1, min(q.minInsync, n+1))):
			return verdict{refused: true}
		}
		if old := q.learner; old != (metadata.Member{}) {
			if b := m.brokers[old.Node]; b.live && b.process == old.Process && !b.draining {
				return verdict{refused: true}
			}
		}
		q.learner = l
		m.catalog[c.Queue] = q
	}
	return verdict{}
}

// MetaRejected records that the operator was told its command committed at
// index and was refused by the metadata (a conflict).
func (c *Checker) MetaRejected(atNs int64, index uint64, cmd []byte, reason string) {
	m := c.metaTruth()
	if index == 0 || index > uint64(len(m.verdicts)) {
		return // judged by meta-committed at the end, if confirmed
	}
	if !m.verdicts[index-1].refused {
		c.fail("meta-catalogue", atNs, "command at index %d answered refused (%s); the catalogue takes it", index, reason)
	}
}

// MetaConfirmed records that a client was told its command committed at
// index with result; Final checks it against the history and the disks,
// and the catalogue model judges the result now.
func (c *Checker) MetaConfirmed(atNs int64, index uint64, cmd []byte, result string) {
	m := c.metaTruth()
	if index >= 1 && index <= uint64(len(m.verdicts)) && string(cmd) == m.history[index-1].cmd {
		v := m.verdicts[index-1]
		switch {
		case v.refused:
			c.fail("meta-catalogue", atNs, "command at index %d confirmed (%s); the catalogue refuses it", index, result)
		case v.incarnation != 0 && !strings.HasSuffix(result, "incarnation="+strconv.FormatUint(v.incarnation, 10)):
			c.fail("meta-catalogue", atNs, "declaration at index %d confirmed as %q; the catalogue has incarnation %d", index, result, v.incarnation)
		}
	}
	if len(m.confirms) < metaEntriesMax {
		m.confirms = append(m.confirms, metaConfirm{atNs: atNs, index: index, cmd: string(cmd)})
	}
}

// MetaFinal judges the end of a run: disks holds the durable metadata
// state of every broker that keeps one (nodes[i]'s; nil for a disk that
// does not decode, reported as it is found), voters the metadata group's
// voters: a committed entry must be durable on a majority of theirs (a
// learner's disk counts for nothing there), and no disk may hold another
// committed history.
func (c *Checker) MetaFinal(atNs int64, voters, nodes []core.NodeID, disks []*meta.State, errs []error) {
	m := c.metaTruth()
	for i, st := range disks {
		if errs[i] != nil {
			c.fail("meta-disk", atNs, "n%d metadata disk does not load: %v", nodes[i], errs[i])
			continue
		}
		for _, e := range st.Entries {
			if e.Index > st.HardState.Commit {
				break
			}
			if e.Index <= uint64(len(m.history)) {
				if h := m.history[e.Index-1]; h.term != e.Term || h.cmd != string(e.Data) {
					c.fail("meta-one-history", atNs, "n%d durably holds committed metadata entry %d as %d/%q; applied as %d/%q",
						nodes[i], e.Index, e.Term, e.Data, h.term, h.cmd)
				}
			}
		}
	}
	for _, cf := range m.confirms {
		if cf.index == 0 || cf.index > uint64(len(m.history)) || m.history[cf.index-1].cmd != cf.cmd {
			got := "nothing"
			if cf.index >= 1 && cf.index <= uint64(len(m.history)) {
				got = fmt.Sprintf("%q", m.history[cf.index-1].cmd)
			}
			c.fail("meta-committed", cf.atNs, "command %q confirmed at index %d; the history holds %s there", cf.cmd, cf.index, got)
			continue
		}
		holders := 0
		for i, st := range disks {
			if errs[i] != nil || !slices.Contains(voters, nodes[i]) {
				continue
			}
			if e, ok := stateEntry(st, cf.index); ok && string(e.Data) == cf.cmd && e.Term == m.history[cf.index-1].term {
				holders++
			} else if cf.index <= st.Compacted.Index {
				// Compacted into a durable image (a log is compacted only
				// up to one), which holds what the entry did.
				holders++
			}
		}
		if holders < len(voters)/2+1 {
			c.fail("meta-committed", cf.atNs, "command %q confirmed at index %d is durable on %d of %d voters' disks",
				cf.cmd, cf.index, holders, len(voters))
		}
	}
}

// MetaHistory returns how many entries the brokers applied in all.
func (c *Checker) MetaHistory() int { return len(c.metaTruth().history) }

func stateEntry(st *meta.State, index uint64) (meta.Entry, bool) {
	if index <= st.Compacted.Index || index > st.Compacted.Index+uint64(len(st.Entries)) {
		return meta.Entry{}, false
	}
	return st.Entries[index-st.Compacted.Index-1], true
}

// MetaLiveSet reports whether the applied metadata's live set is the
// world's: every broker up is live with its running process and storage
// instances, and every broker down is not live. It says what differs.
func (c *Checker) MetaLiveSet(truth []BrokerTruth) (bool, string) {
	m := c.metaTruth()
	for _, t := range truth {
		b := m.brokers[t.Node]
		switch {
		case t.Process != 0 && (!b.live || b.process != t.Process || b.storage != t.Storage):
			return false, fmt.Sprintf("n%d runs process %d storage %d; the metadata has live=%t process %d storage %d",
				t.Node, t.Process, t.Storage, b.live, b.process, b.storage)
		case t.Process == 0 && b.live:
			return false, fmt.Sprintf("n%d is down; the metadata has it live (process %d)", t.Node, b.process)
		}
	}
	return true, ""
}

// MetaLiveSetFinal fails the run when, at its end, the live set is not the
// world's (meta-live-set).
func (c *Checker) MetaLiveSetFinal(atNs int64, truth []BrokerTruth) {
	if ok, why := c.MetaLiveSet(truth); !ok {
		c.fail("meta-live-set", atNs, "after the drain, %s", why)
	}
}

// inSyncOf returns placed queue q's committed in-sync set by the model's
// fold of the applied history (the latest any broker applied).
func (c *Checker) inSyncOf(q core.QueueID) (metadata.Nodes, bool) {
	if c.meta == nil {
		return metadata.Nodes{}, false
	}
	mq, ok := c.meta.catalog[c.meta.names[q]]
	if !ok || mq.id != q || mq.epoch == 0 {
		return metadata.Nodes{}, false
	}
	return mq.inSync, true // by value: the judge of every watermark allocates nothing
}

// healthOf returns the queue that cmd names, as the model holds it now.
func (m *metaTruth) healthOf(cmd []byte) modelQueue {
	c, err := metadata.Decode(cmd)
	if err != nil {
		return modelQueue{}
	}
	return m.catalog[c.Queue]
}

// healthChanged accounts the time the queue cmd names spent
// under-replicated and under min in-sync, once the command is folded.
func (m *metaTruth) healthChanged(atNs int64, cmd []byte, before modelQueue) {
	c, err := metadata.Decode(cmd)
	if err != nil || c.Queue == "" {
		return
	}
	after, exists := m.catalog[c.Queue]
	if exists && after.incarnation != before.incarnation {
		before = modelQueue{} // a new declaration
	}
	if before.underReplicated() && (!exists || !after.underReplicated()) {
		m.health.UnderReplicatedNs += atNs - before.underReplicatedNs
	}
	if before.underMin() && (!exists || !after.underMin()) {
		m.health.UnderMinInSyncNs += atNs - before.underMinNs
	}
	if !exists {
		return
	}
	switch {
	case !after.underReplicated():
		after.underReplicatedNs = 0
	case !before.underReplicated():
		after.underReplicatedNs = atNs
		m.health.UnderReplicatedSpells++
	}
	switch {
	case !after.underMin():
		after.underMinNs = 0
	case !before.underMin():
		after.underMinNs = atNs
		m.health.UnderMinInSyncSpells++
	}
	m.catalog[c.Queue] = after
}

// InSyncHealth is what the committed metadata said of the placed queues'
// in-sync sets (docs/design/in-sync.md) over a run, by the checker's model.
type InSyncHealth struct {
	Placed          int // placed, unfenced queues at the end
	UnderReplicated int // of them, with an in-sync set smaller than the replicas
	UnderMinInSync  int // of them, below min in-sync
	// Spells: times a queue became so; Ns: the time spent so, summed over
	// queues, up to the end
	UnderReplicatedSpells, UnderMinInSyncSpells int
	UnderReplicatedNs, UnderMinInSyncNs         int64
}

// InSyncHealth returns the placed queues' in-sync health at atNs.
func (c *Checker) InSyncHealth(atNs int64) InSyncHealth {
	if c.meta == nil {
		return InSyncHealth{}
	}
	h := c.meta.health
	for _, q := range c.meta.catalog { //detguard:order-independent sums and counts
		if q.epoch == 0 || q.fenced {
			continue
		}
		h.Placed++
		if q.underReplicated() {
			h.UnderReplicated++
			h.UnderReplicatedNs += atNs - q.underReplicatedNs
		}
		if q.underMin() {
			h.UnderMinInSync++
			h.UnderMinInSyncNs += atNs - q.underMinNs
		}
	}
	return h
}
