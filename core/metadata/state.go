package metadata

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core/seam"
)

// Broker is one broker as the metadata knows it.
type Broker struct {
	Node     seam.NodeID
	Process  uint64 // its registered process instance (new on every start)
	Storage  uint64 // its registered storage instance (new per data directory)
	Live     bool
	Draining bool
	// Since is the index of the command that last changed Live.
	Since uint64
}

// Queue is one catalogue entry.
type Queue struct {
	Name string
	// ID is the queue's id (its replica group's id), unique over the
	// catalogue's history, given at declaration.
	ID          seam.QueueID
	Incarnation uint64 // the declaring entry's index
	Replicas    int
	Policy      seam.Policy
	MinInsync   int
	// Assigned: the queue is placed (Assignment holds where); until then
	// it is declared only.
	Assigned   bool
	Assignment Assignment
	// Life: what else ends it (auto-delete, non-durable, exclusive).
	Life Lifetime
}

// UnderReplicated reports a placed queue whose in-sync set is smaller than
// its replica count (docs/design/in-sync.md, "Reporting"); UnderMinInSync one whose set is below its
// min in-sync (an isr queue then refuses publishes).
func (q *Queue) UnderReplicated() bool { return q.Assigned && q.Assignment.InSync.N < q.Replicas }

// UnderMinInSync: see UnderReplicated.
func (q *Queue) UnderMinInSync() bool { return q.Assigned && q.Assignment.InSync.N < q.MinInsync }

// Health is " under-replicated", " under-replicated under-min-insync" or
// "", as traces print it after the in-sync set.
func (q *Queue) Health() string {
	s := ""
	if q.UnderReplicated() {
		s += " under-replicated"
	}
	if q.UnderMinInSync() {
		s += " under-min-insync"
	}
	return s
}

// Assignment is where a queue lives: its epoch, owner and members with
// their exact instances. Fenced: a member left the live set or runs
// another process, and the pending transition (Pending) proposes the next
// members; a fenced assignment admits no writes until recovery activates
// the next (docs/design/recovery.md).
type Assignment struct {
	Epoch   uint64
	Owner   seam.NodeID
	Members Members
	// InSync is the committed in-sync set (docs/design/in-sync.md): every member at
	// placement, then as the owner's proposals commit; InSyncVersion
	// counts its changes (a change from an older version is refused).
	InSync        Nodes
	InSyncVersion uint64
	Fenced        bool
	Pending       PendingTransition
	// Learner: a member's broker back with a new process on the same
	// storage, catching up as a learner until AdmitLearner (zero: none).
	// It never counts toward W; a transition clears it.
	Learner Member
}

// PendingTransition is a committed transition: the members proposed for
// epoch Epoch, and the digest that binds the whole transition. Candidate
// is the proposed member a Handoff gave the recovery to (0: none, the
// first candidate, Candidate() says which). Retries counts the operator's
// RetryRecovery commands applied to it: a change tells the candidate's
// worker to try an attempt it set aside at once. Plan is the recovery plan
// committed for it (zero Source: none yet).
type PendingTransition struct {
	Epoch     uint64
	Proposed  Nodes
	Digest    Digest
	Candidate seam.NodeID
	Retries   uint64
	Plan      RecoveryPlan
}

// Candidate is the broker whose recovery worker drives a fenced
// assignment's pending transition: the one a Handoff named, else the
// first proposed member that was a member before (its log is evidence
// already, and a continuing owner's is the longest), else the first
// proposed. 0 when no transition is pending.
func (a *Assignment) Candidate() seam.NodeID {
	switch {
	case !a.Fenced || a.Pending.Proposed.N == 0:
		return 0
	case a.Pending.Candidate != 0:
		return a.Pending.Candidate
	}
	for _, p := range a.Pending.Proposed.Slice() {
		if slices.ContainsFunc(a.Members.Slice(), func(m Member) bool { return m.Node == p }) {
			return p
		}
	}
	return a.Pending.Proposed.ID[0]
}

// State is the metadata the committed commands fold into. The zero State
// is the empty metadata (every setting at its default).
type State struct {
	set     [settingsCount]int64
	isSet   [settingsCount]bool
	brokers []Broker // by Node
	queues  []Queue  // by Name
	// exchanges by Name; bindings by compareBindings; bindingsBytes is
	// their image cost (bindingBytes), against BindingsBytesMax
	exchanges     []Exchange
	bindings      []Binding
	bindingsBytes int
	// lastQueueID is the last queue id given; ids are never reused.
	lastQueueID seam.QueueID
	applied     uint64 // the index of the last command applied
}

// Setting returns setting i's value (its default until set).
func (s *State) Setting(i int) int64 {
	if s.isSet[i] {
		return s.set[i]
	}
	return Settings[i].Default
}

// Brokers returns the brokers by id (the caller must not change them).
func (s *State) Brokers() []Broker { return s.brokers }

// Broker returns broker n, if known.
func (s *State) Broker(n seam.NodeID) (Broker, bool) {
	i, ok := s.brokerIndex(n)
	if !ok {
		return Broker{}, false
	}
	return s.brokers[i], true
}

// Queues returns the catalogue by name (the caller must not change it).
func (s *State) Queues() []Queue { return s.queues }

// Queue returns the catalogue entry of name, if declared.
func (s *State) Queue(name string) (Queue, bool) {
	i, ok := s.queueIndex(name)
	if !ok {
		return Queue{}, false
	}
	return s.queues[i], true
}

// Applied is the index of the last command applied.
func (s *State) Applied() uint64 { return s.applied }

func (s *State) brokerIndex(n seam.NodeID) (int, bool) {
	return slices.BinarySearchFunc(s.brokers, n, func(b Broker, n seam.NodeID) int {
		switch {
		case b.Node < n:
			return -1
		case b.Node > n:
			return 1
		}
		return 0
	})
}

func (s *State) queueIndex(name string) (int, bool) {
	return slices.BinarySearchFunc(s.queues, name, func(q Queue, name string) int { return strings.Compare(q.Name, name) })
}

// FirstQueueID is the first id the catalogue gives: ids below it belong to
// statically configured queues (tests, the simulator's profiles), which
// run beside placed ones until the static configuration goes.
const FirstQueueID seam.QueueID = 1 << 20

// Refused is a command that conflicts with the state: committed, applied
// as a no-op on every replica. Code is its typed cause where the proposer
// decides by it (seam.RefusalNone: the reason's words are all there is).
type Refused struct {
	Code   seam.Refusal
	Reason string
}

func (r *Refused) Error() string { return "refused: " + r.Reason }

func refuse(format string, a ...any) error { return &Refused{Reason: fmt.Sprintf(format, a...)} }

func refuseAs(code seam.Refusal, format string, a ...any) error {
	return &Refused{Code: code, Reason: fmt.Sprintf(format, a...)}
}

// Apply applies the command committed at index (indexes increase; each is
// applied once). It returns the result's text (for the proposer and the
// trace) or a *Refused error; a refused command changes nothing but the
// applied index. A command that does not validate is refused too (it
// cannot come from this package's encoder).
func (s *State) Apply(index uint64, c *Command) (string, error) {
	if index <= s.applied {
		panic(fmt.Sprintf("metadata: apply of %d after %d", index, s.applied))
	}
	s.applied = index
	if err := c.Validate(); err != nil {
		return "", refuse("%v", err)
	}
	switch c.Kind {
	case SetSetting:
		i := settingIndex(c.Key)
		s.set[i], s.isSet[i] = c.Value, true
		return fmt.Sprintf("%s=%d", c.Key, c.Value), nil
	case RegisterBroker:
		return s.register(index, c)
	case BrokerDown:
		i, ok := s.brokerIndex(c.Node)
		if !ok {
			return "", refuse("n%d is not a known broker", c.Node)
		}
		b := &s.brokers[i]
		if b.Process != c.Process {
			return "", refuse("n%d runs process %d now, not %d", c.Node, b.Process, c.Process)
		}
		if !b.Live {
			return "", refuse("n%d is not live", c.Node)
		}
		b.Live, b.Since = false, index
		if n := s.endLives(c.Node, c.Process, false); n > 0 {
			return fmt.Sprintf("n%d down, %d exclusive queues deleted", c.Node, n), nil
		}
		return fmt.Sprintf("n%d down", c.Node), nil
	case Drain:
		i, ok := s.brokerIndex(c.Node)
		if !ok {
			return "", refuse("n%d is not a known broker", c.Node)
		}
		s.brokers[i].Draining = c.Draining
		return fmt.Sprintf("n%d draining=%t", c.Node, c.Draining), nil
	case DeclareQueue, DeclareLifetime:
		return s.declare(index, c)
	case Assign:
		return s.assign(c)
	case Transition:
		return s.transition(c)
	case SetInSync:
		return s.setInSync(c)
	case Activate:
		return s.activate(c)
	case AddLearner:
		return s.addLearner(c)
	case AdmitLearner:
		return s.admitLearner(c)
	case Handoff:
		return s.handoff(c)
	case RetryRecovery:
		return s.retryRecovery(c)
	case Repropose:
		return s.repropose(c)
	case Plan:
		return s.plan(c)
	case DeclareExchange:
		return s.declareExchange(index, c)
	case DeleteExchange:
		return s.deleteExchange(c)
	case Bind:
		return s.bind(c)
	case Unbind:
		return s.unbind(c)
	case DeleteQueue:
		i, ok := s.queueIndex(c.Queue)
		if !ok {
			return "", refuse("queue %q is not declared", c.Queue)
		}
		if q := s.queues[i]; q.Incarnation != c.Incarnation {
			return "", refuse("queue %q is incarnation %d now, not %d", c.Queue, q.Incarnation, c.Incarnation)
		}
		s.queues = slices.Delete(s.queues, i, i+1)
		if n := s.unbindWhere(func(b *Binding) bool { return b.Queue == c.Queue }); n > 0 {
			return fmt.Sprintf("deleted %q incarnation=%d bindings=%d", c.Queue, c.Incarnation, n), nil
		}
		return fmt.Sprintf("deleted %q incarnation=%d", c.Queue, c.Incarnation), nil
	}
	panic("metadata: validated command of unknown kind")
}

// retryRecovery counts a retry on the queue's pending transition, which
// must be the one the operator saw (the queue's incarnation, fenced, the
// transition to c.Epoch pending).
func (s *State) retryRecovery(c *Command) (string, error) {
	q, err := s.placed(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	switch {
	case !q.Assigned || !a.Fenced:
		return "", refuse("queue %q is not fenced: no recovery to retry", c.Queue)
	case a.Pending.Epoch != c.Epoch:
		return "", refuse("queue %q's pending transition is to epoch %d, not %d", c.Queue, a.Pending.Epoch, c.Epoch)
	}
	a.Pending.Retries++
	return fmt.Sprintf("retry %q epoch=%d retries=%d", c.Queue, c.Epoch, a.Pending.Retries), nil
}

func (s *State) register(index uint64, c *Command) (string, error) {
	i, ok := s.brokerIndex(c.Node)
	if !ok {
		if len(s.brokers) >= BrokersMax {
			return "", refuse("%d brokers already, the limit", BrokersMax)
		}
		s.brokers = slices.Insert(s.brokers, i, Broker{Node: c.Node})
	}
	b := &s.brokers[i]
	if b.Live && b.Process == c.Process && b.Storage == c.Storage {
		return "", refuse("n%d is live with process %d already", c.Node, c.Process)
	}
	if c.Process < b.Process {
		// A delayed registration of an older process: the newer one
		// stays (process instances only grow).
		return "", refuse("n%d runs process %d, newer than %d", c.Node, b.Process, c.Process)
	}
	before := b.Process
	b.Process, b.Storage, b.Live, b.Since = c.Process, c.Storage, true, index
	if before != 0 && before != c.Process {
		if n := s.endLives(c.Node, before, true); n > 0 {
			return fmt.Sprintf("n%d live process=%d storage=%d, %d queues of process %d deleted", c.Node, c.Process, c.Storage, n, before), nil
		}
	}
	return fmt.Sprintf("n%d live process=%d storage=%d", c.Node, c.Process, c.Storage), nil
}

func (s *State) declare(index uint64, c *Command) (string, error) {
	name := c.Queue
	if c.ServerNamed {
		name = ServerName(index)
	}
	i, ok := s.queueIndex(name)
	if ok {
		q := s.queues[i]
		if q.Life.Exclusive && (q.Life.OwnerNode != c.Life.OwnerNode || q.Life.OwnerProcess != c.Life.OwnerProcess || q.Life.OwnerConn != c.Life.OwnerConn) {
			return "", refuseAs(seam.RefusalLocked, "queue %q is exclusive to another connection", q.Name)
		}
		if q.Life.AutoDelete != c.Life.AutoDelete || q.Life.Transient != c.Life.Transient {
			return "", refuseAs(seam.RefusalConflict, "queue %q exists with%s", q.Name, q.Life.String())
		}
		if q.Replicas != c.Replicas || q.Policy != c.Policy || q.MinInsync != c.MinInsync {
			return "", refuse("queue %q exists with replicas=%d policy=%s min-insync=%d", q.Name, q.Replicas, q.Policy, q.MinInsync)
		}
		// Concurrent declarations keep the first.
		return fmt.Sprintf("exists %q id=%d incarnation=%d", q.Name, q.ID, q.Incarnation), nil
	}
	if len(s.queues) >= QueuesMax {
		return "", refuse("%d queues already, the limit", QueuesMax)
	}
	if s.lastQueueID == 1<<32-1 {
		return "", refuse("queue ids exhausted")
	}
	s.lastQueueID = max(s.lastQueueID+1, FirstQueueID)
	q := Queue{Name: name, ID: s.lastQueueID, Incarnation: index, Replicas: c.Replicas, Policy: c.Policy, MinInsync: c.MinInsync, Life: c.Life}
	s.queues = slices.Insert(s.queues, i, q)
	return fmt.Sprintf("declared %q id=%d incarnation=%d", q.Name, q.ID, q.Incarnation), nil
}

// placed returns the catalogue entry c names (by name and incarnation).
func (s *State) placed(c *Command) (*Queue, error) {
	i, ok := s.queueIndex(c.Queue)
	if !ok {
		return nil, refuse("queue %q is not declared", c.Queue)
	}
	q := &s.queues[i]
	if q.Incarnation != c.Incarnation {
		return nil, refuse("queue %q is incarnation %d now, not %d", c.Queue, q.Incarnation, c.Incarnation)
	}
	return q, nil
}

func (s *State) assign(c *Command) (string, error) {
	q, err := s.placed(c)
	if err != nil {
		return "", err
	}
	if q.Assigned {
		return "", refuse("queue %q is placed already (epoch %d)", c.Queue, q.Assignment.Epoch)
	}
	if c.Members.N != q.Replicas {
		return "", refuse("queue %q has %d replicas, not %d", c.Queue, q.Replicas, c.Members.N)
	}
	// Placement never names a broker outside the live set, or an
	// instance that is not the one live.
	for _, m := range c.Members.Slice() {
		b, ok := s.Broker(m.Node)
		if !ok || !b.Live || b.Draining || b.Process != m.Process || b.Storage != m.Storage {
			return "", refuse("n%d/%d/%d is not a live, undrained broker with those instances", m.Node, m.Process, m.Storage)
		}
	}
	q.Assigned = true
	q.Assignment = Assignment{Epoch: c.Epoch, Owner: c.Owner, Members: c.Members}
	for _, m := range c.Members.Slice() {
		q.Assignment.InSync.ID[q.Assignment.InSync.N] = m.Node
		q.Assignment.InSync.N++
	}
	return fmt.Sprintf("placed %q epoch=%d owner=n%d", c.Queue, c.Epoch, c.Owner), nil
}

func (s *State) transition(c *Command) (string, error) {
	q, err := s.placed(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	switch {
	case !q.Assigned:
		return "", refuse("queue %q is not placed", c.Queue)
	case a.Fenced:
		return "", refuse("queue %q has a pending transition already (to epoch %d)", c.Queue, a.Pending.Epoch)
	case a.Epoch != c.Epoch:
		return "", refuse("queue %q is at epoch %d, not %d", c.Queue, a.Epoch, c.Epoch)
	}
	if want := TransitionDigest(q, &c.Proposed); want != c.Digest {
		return "", refuse("transition digest %x does not bind the transition (%x)", c.Digest[:6], want[:6])
	}
	a.Fenced = true
	a.Pending = PendingTransition{Epoch: c.Epoch + 1, Proposed: c.Proposed, Digest: c.Digest}
	a.Learner = Member{} // the transition's recovery decides the members now
	return fmt.Sprintf("fenced %q epoch=%d, pending epoch=%d", c.Queue, c.Epoch, c.Epoch+1), nil
}

// repropose replaces a pending transition's proposed set while too few of
// its proposed members are live for the queue's configured W (a proposed
// broker that left the live set for good would keep it fenced for ever).
func (s *State) repropose(c *Command) (string, error) {
	q, err := s.pendingBound(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	live := 0
	for _, n := range a.Pending.Proposed.Slice() {
		if b, ok := s.Broker(n); ok && b.Live {
			live++
		}
	}
	configuredW := q.Policy.WriteQuorum(q.Replicas, min(q.MinInsync, q.Replicas))
	switch {
	case q.Policy.WriteQuorum(live, min(q.MinInsync, live)) >= configuredW && live > 0:
		return "", refuse("queue %q: %d of the proposed %v are live, enough for W", c.Queue, live, a.Pending.Proposed.Slice())
	case c.Proposed.N == 0 || c.Proposed == a.Pending.Proposed:
		return "", refuse("queue %q: proposed %v replaces nothing", c.Queue, c.Proposed.Slice())
	case q.Policy.WriteQuorum(c.Proposed.N, min(q.MinInsync, c.Proposed.N)) < configuredW:
		return "", refuse("queue %q: proposed %v would confirm on fewer copies than its %d replicas' W", c.Queue, c.Proposed.Slice(), q.Replicas)
	}
	for _, n := range c.Proposed.Slice() {
		b, ok := s.Broker(n)
		switch {
		case !ok || !b.Live:
			return "", refuse("queue %q: proposed n%d is not a live broker", c.Queue, n)
		case b.Draining && !slices.Contains(a.Pending.Proposed.Slice(), n):
			// (Placement puts nothing new on a draining broker; a proposed
			// member that drains since stays.)
			return "", refuse("queue %q: proposed n%d drains", c.Queue, n)
		}
	}
	// (The plan stays: it names a history, verified against the previous
	// members' seals, not who copies it.)
	a.Pending = PendingTransition{Epoch: a.Pending.Epoch, Proposed: c.Proposed, Digest: TransitionDigest(q, &c.Proposed), Plan: a.Pending.Plan}
	return fmt.Sprintf("re-proposed %q pending epoch=%d proposed=%v digest=%x", c.Queue, a.Pending.Epoch, c.Proposed.Slice(), a.Pending.Digest[:6]), nil
}

// pendingBound returns the queue whose pending transition command c names
// exactly: its incarnation, the fenced assignment's epoch and the
// transition's digest (an activation or a handoff acts on that transition
// only, never on a later one).
func (s *State) pendingBound(c *Command) (*Queue, error) {
	q, err := s.placed(c)
	if err != nil {
		return nil, err
	}
	a := &q.Assignment
	switch {
	case !q.Assigned || !a.Fenced:
		return nil, refuse("queue %q has no pending transition", c.Queue)
	case a.Epoch != c.Epoch || a.Pending.Digest != c.Digest:
		return nil, refuse("queue %q's pending transition is from epoch %d, digest %x, not %d, %x", c.Queue, a.Epoch, a.Pending.Digest[:6], c.Epoch, c.Digest[:6])
	}
	return q, nil
}

// plan records a pending transition's recovery plan: the first one, or
// one that names the committed plan it replaces. The source must be a
// previous member on the storage instance the assignment names for it.
func (s *State) plan(c *Command) (string, error) {
	q, err := s.pendingBound(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	if !slices.ContainsFunc(a.Members.Slice(), func(m Member) bool { return m.Node == c.Plan.Source && m.Storage == c.Plan.Storage }) {
		return "", refuse("queue %q: the plan's source n%d on storage %d is not a previous member", c.Queue, c.Plan.Source, c.Plan.Storage)
	}
	old := &a.Pending.Plan
	switch {
	case *old == c.Plan:
		return "", refuse("queue %q's recovery is planned so already", c.Queue)
	case old.Source == 0 && c.Replaces != Digest{}:
		return "", refuse("queue %q has no plan to replace", c.Queue)
	case old.Source != 0 && c.Replaces != old.Identity:
		return "", refuse("queue %q's recovery is planned from n%d as %x, which this plan does not replace", c.Queue, old.Source, old.Identity[:6])
	}
	verb := "planned"
	if old.Source != 0 {
		verb = "re-planned"
	}
	*old = c.Plan
	return fmt.Sprintf("%s %q's recovery: %s", verb, c.Queue, c.Plan.String()), nil
}

// handoff gives a pending transition's recovery to another proposed
// member while its candidate is gone or draining.
func (s *State) handoff(c *Command) (string, error) {
	q, err := s.pendingBound(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	switch {
	case a.Candidate() != c.Node:
		return "", refuse("queue %q's candidate is n%d, not n%d", c.Queue, a.Candidate(), c.Node)
	case !slices.Contains(a.Pending.Proposed.Slice(), c.Candidate):
		return "", refuse("n%d is not among queue %q's proposed %v", c.Candidate, c.Queue, a.Pending.Proposed.Slice())
	}
	if b, ok := s.Broker(c.Node); ok && b.Live && !b.Draining {
		return "", refuse("the candidate n%d is live and not draining", c.Node)
	}
	if b, ok := s.Broker(c.Candidate); !ok || !b.Live || b.Draining {
		return "", refuse("n%d is not live, or is draining", c.Candidate)
	}
	a.Pending.Candidate = c.Candidate
	return fmt.Sprintf("handed %q's recovery from n%d to n%d", c.Queue, c.Node, c.Candidate), nil
}

// setInSync records an owner's in-sync set: for the current, unfenced
// assignment of that epoch, the owner in it, every node a member.
func (s *State) setInSync(c *Command) (string, error) {
	q, err := s.placed(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	switch {
	case !q.Assigned:
		return "", refuse("queue %q is not placed", c.Queue)
	case a.Fenced:
		return "", refuse("queue %q is fenced", c.Queue)
	case a.Epoch != c.Epoch:
		return "", refuse("queue %q is at epoch %d, not %d", c.Queue, a.Epoch, c.Epoch)
	case a.InSyncVersion != c.InSyncVersion:
		return "", refuse("queue %q's in-sync set is at version %d, not %d", c.Queue, a.InSyncVersion, c.InSyncVersion)
	}
	owner := false
	for _, n := range c.InSync.Slice() {
		member := false
		for _, m := range a.Members.Slice() {
			member = member || m.Node == n
		}
		if !member {
			return "", refuse("n%d is not a member of queue %q", n, c.Queue)
		}
		owner = owner || n == a.Owner
	}
	if !owner {
		return "", refuse("the owner n%d must stay in queue %q's in-sync set", a.Owner, c.Queue)
	}
	a.InSync = c.InSync
	a.InSyncVersion++
	return fmt.Sprintf("in-sync %q %v version=%d%s", c.Queue, c.InSync.Slice(), a.InSyncVersion, q.Health()), nil
}

// activate ends a pending transition with the recovered assignment
// (docs/design/recovery.md, "Activation"): only the transition it binds (epoch and digest), exactly
// the proposed members, each live with the instances named, and at least
// the new W of them installed, the owner among them. The new epoch's
// assignment admits writes; its in-sync set is the installed members.
func (s *State) activate(c *Command) (string, error) {
	q, err := s.pendingBound(c)
	if err != nil {
		return "", err
	}
	a := &q.Assignment
	switch {
	case c.Members.N > a.Pending.Proposed.N:
		return "", refuse("queue %q: %d members, the transition proposed %v", c.Queue, c.Members.N, a.Pending.Proposed.Slice())
	case q.Policy.WriteQuorum(c.Members.N, min(q.MinInsync, c.Members.N)) < q.Policy.WriteQuorum(q.Replicas, min(q.MinInsync, q.Replicas)):
		return "", refuse("queue %q: %d members would confirm on fewer copies than its %d replicas' W", c.Queue, c.Members.N, q.Replicas)
	}
	for _, m := range c.Members.Slice() {
		// The proposed members that are live (activation needs
		// the owner and W installed; a proposed member gone meanwhile is
		// left out, and the queue gets its copy back as a new copy's
		// learner).
		if !slices.Contains(a.Pending.Proposed.Slice(), m.Node) {
			return "", refuse("queue %q: members %v are not among the proposed %v", c.Queue, c.Members.Slice(), a.Pending.Proposed.Slice())
		}
		b, ok := s.Broker(m.Node)
		if !ok || !b.Live || b.Process != m.Process || b.Storage != m.Storage {
			return "", refuse("n%d/%d/%d is not a live broker with those instances", m.Node, m.Process, m.Storage)
		}
	}
	n := c.Members.N
	if w := q.Policy.WriteQuorum(n, min(q.MinInsync, n)); c.InSync.N < w {
		return "", refuse("queue %q: %d members installed, W is %d", c.Queue, c.InSync.N, w)
	}
	*a = Assignment{Epoch: c.Epoch + 1, Owner: c.Owner, Members: c.Members, InSync: c.InSync}
	return fmt.Sprintf("activated %q epoch=%d owner=n%d in-sync=%v%s", c.Queue, a.Epoch, a.Owner, a.InSync.Slice(), q.Health()), nil
}

// unfencedAt returns c's queue's assignment when it is placed, unfenced
// and of c's epoch.
func (s *State) unfencedAt(c *Command) (*Assignment, error) {
	q, err := s.placed(c)
	if err != nil {
		return nil, err
	}
	a := &q.Assignment
	switch {
	case !q.Assigned:
		return nil, refuse("queue %q is not placed", c.Queue)
	case a.Fenced:
		return nil, refuse("queue %q has a pending transition (to epoch %d)", c.Queue, a.Pending.Epoch)
	case a.Epoch != c.Epoch:
		return nil, refuse("queue %q is at epoch %d, not %d", c.Queue, a.Epoch, c.Epoch)
	}
	return a, nil
}

// addLearner names a learner (docs/design/recovery.md, "Learners and
// admission"): either
// the broker of a follower runs Learner's process now, live, on the
// member's storage (a successor, which will replace that member), or the
// queue runs on fewer members than its declared replicas and Learner is a
// live, undrained broker outside them (a new copy, which admission adds:
// E grows, W stays). There is no learner, or the one named runs no more
// (or drains).
func (s *State) addLearner(c *Command) (string, error) {
	q, err := s.placed(c)
	if err != nil {
		return "", err
	}
	a, err := s.unfencedAt(c)
	if err != nil {
		return "", err
	}
	l := c.Learner
	i := slices.IndexFunc(a.Members.Slice(), func(m Member) bool { return m.Node == l.Node })
	switch {
	case i < 0 && a.Members.N >= q.Replicas:
		return "", refuse("n%d is not a member of queue %q, which has its %d replicas", l.Node, c.Queue, q.Replicas)
	case i < 0 && !q.GrowthKeepsW():
		return "", refuse("queue %q: a member more would change its W", c.Queue)
	case l.Node == a.Owner:
		return "", refuse("n%d owns queue %q: an owner is replaced through recovery", l.Node, c.Queue)
	case i >= 0 && (a.Members.M[i].Storage != l.Storage || l.Process <= a.Members.M[i].Process):
		return "", refuse("n%d/%d/%d is no newer process on the member's storage (n%d/%d/%d)", l.Node, l.Process, l.Storage,
			a.Members.M[i].Node, a.Members.M[i].Process, a.Members.M[i].Storage)
	}
	b, ok := s.Broker(l.Node)
	if !ok || !b.Live || b.Process != l.Process || b.Storage != l.Storage {
		return "", refuse("n%d/%d/%d is not a live broker with those instances", l.Node, l.Process, l.Storage)
	}
	if i < 0 && b.Draining {
		return "", refuse("n%d is draining: no new copy goes there", l.Node)
	}
	if old := a.Learner; old != (Member{}) {
		if b, ok := s.Broker(old.Node); ok && b.Live && b.Process == old.Process && !b.Draining {
			return "", refuse("queue %q has a learner already (n%d/%d/%d)", c.Queue, old.Node, old.Process, old.Storage)
		}
	}
	a.Learner = l
	return fmt.Sprintf("learner of %q n%d/%d/%d", c.Queue, l.Node, l.Process, l.Storage), nil
}

// GrowthKeepsW reports whether one member more leaves q's write quorum as
// it is (admission keeps the configured write requirement, so
// that every confirm set of the smaller assignment still meets every
// R = E - W + 1 seals of the larger one).
func (q *Queue) GrowthKeepsW() bool {
	n := q.Assignment.Members.N
	return q.Policy.WriteQuorum(n, min(q.MinInsync, n)) == q.Policy.WriteQuorum(n+1, min(q.MinInsync, n+1))
}

// admitLearner admits the named learner: the member on its node becomes
// its exact instance. A pending transition refuses it (unfencedAt).
func (s *State) admitLearner(c *Command) (string, error) {
	a, err := s.unfencedAt(c)
	if err != nil {
		return "", err
	}
	l := c.Learner
	if a.Learner != l {
		return "", refuse("queue %q's learner is n%d/%d/%d, not n%d/%d/%d", c.Queue, a.Learner.Node, a.Learner.Process, a.Learner.Storage,
			l.Node, l.Process, l.Storage)
	}
	if b, ok := s.Broker(l.Node); !ok || !b.Live || b.Process != l.Process || b.Storage != l.Storage {
		return "", refuse("n%d/%d/%d is not a live broker with those instances", l.Node, l.Process, l.Storage)
	}
	i := slices.IndexFunc(a.Members.Slice(), func(m Member) bool { return m.Node == l.Node })
	if i >= 0 {
		a.Members.M[i] = l // a successor: E unchanged
		a.Learner = Member{}
		return fmt.Sprintf("admitted n%d/%d/%d to %q", l.Node, l.Process, l.Storage, c.Queue), nil
	}
	q, _ := s.placed(c)
	if a.Members.N >= q.Replicas || !q.GrowthKeepsW() {
		panic("metadata: a new copy's learner named beyond the queue's replicas or its W")
	}
	// A new copy: E grows by one, members stay ascending, W is unchanged.
	at, _ := slices.BinarySearchFunc(a.Members.Slice(), l.Node, func(m Member, n seam.NodeID) int { return int(m.Node) - int(n) })
	copy(a.Members.M[at+1:a.Members.N+1], a.Members.M[at:a.Members.N])
	a.Members.M[at] = l
	a.Members.N++
	a.Learner = Member{}
	return fmt.Sprintf("admitted n%d/%d/%d to %q: %d members%s", l.Node, l.Process, l.Storage, c.Queue, a.Members.N, q.Health()), nil
}
