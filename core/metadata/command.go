package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/sluicemq/sluice/core/route"
	"github.com/sluicemq/sluice/core/seam"
)

// Kind names a command.
type Kind uint8

// The commands.
const (
	// SetSetting sets runtime setting Key to Value.
	SetSetting Kind = 1
	// RegisterBroker records broker Node live with its exact process and
	// storage instances (a new process, a new data directory, or a broker
	// back after it left the live set).
	RegisterBroker Kind = 2
	// BrokerDown removes broker Node from the live set, if its committed
	// process instance is still Process (a stale report of an older
	// process changes nothing).
	BrokerDown Kind = 3
	// Drain marks broker Node draining (Draining) or not: placement puts
	// nothing new on a draining broker.
	Drain Kind = 4
	// DeclareQueue declares queue Name with its replica count, policy and
	// minimum in-sync count; its incarnation id is the entry's index.
	DeclareQueue Kind = 5
	// DeleteQueue deletes queue Name if its incarnation is still
	// Incarnation.
	DeleteQueue Kind = 6
	// Assign places queue Name (of Incarnation), not yet placed: epoch
	// Epoch, owner Owner, Members (the owner among them) with their exact
	// process and storage instances, every one live in the metadata with
	// those instances when it commits.
	Assign Kind = 7
	// Transition fences queue Name's assignment of epoch Epoch (a member
	// left the live set or runs another process): the assignment stops
	// admitting writes, and the pending transition proposes Proposed as
	// members under epoch Epoch+1, bound by Digest (TransitionDigest).
	Transition Kind = 8
	// SetInSync records queue Name's in-sync set under epoch Epoch (the
	// owner's proposal, docs/design/in-sync.md): InSync, the owner among them, all
	// members of the assignment.
	SetInSync Kind = 9
	// Activate ends queue Name's pending transition from epoch Epoch
	// (bound by Digest, the pending transition's): the assignment of epoch
	// Epoch+1 with owner Owner and Members, the proposed members with their
	// exact instances, every one live with them when it commits; InSync
	// is the members that installed the recovered history (the owner among
	// them, at least the new W of them): the certificate's receipts, and
	// the new in-sync set.
	Activate Kind = 10
	// AddLearner names Learner (a broker's exact process and storage
	// instances) the learner of queue Name's assignment of epoch Epoch
	// (docs/design/recovery.md, "Learners and admission"), whose copy
	// catches up, never
	// counted toward W, instead of going through recovery: a member's
	// broker back with a new process on the same storage (a successor of
	// the member on Learner's node), or, while the assignment has fewer
	// members than the queue's replicas, a broker outside them (a new
	// copy).
	AddLearner Kind = 11
	// AdmitLearner admits queue Name's learner Learner into its assignment
	// of epoch Epoch: a successor becomes the member on its node (E and W
	// unchanged); a new copy becomes one member more (E grows, W stays:
	// AddLearner refused a copy that would change it). Refused while a
	// transition is pending.
	AdmitLearner Kind = 12
	// Handoff hands queue Name's pending transition from epoch Epoch
	// (bound by Digest) from its recovery candidate Node to Candidate,
	// another proposed member: applied only while Node is the candidate
	// and is no longer live or is draining, and Candidate is live and not
	// draining. The transition, its proposed set, its witness threshold
	// and its new W stay as they were; only who drives the recovery
	// changes, and a candidate handed to stays one when the first returns.
	Handoff Kind = 13
	// RetryRecovery asks that queue Name's recovery of its pending
	// transition to epoch Epoch be tried again at once (the operator's
	// `sluice recovery retry`): it counts one more retry on the pending
	// transition (PendingTransition.Retries), and the candidate's worker
	// that set its attempt aside ends the backoff when it sees the count
	// change. Refused unless the queue is incarnation Incarnation and
	// fenced with that transition pending.
	RetryRecovery Kind = 14
	// Repropose replaces the proposed set of queue Name's pending
	// transition from epoch Epoch (bound by Digest, the pending one) with
	// Proposed, while the pending transition cannot activate: fewer of its
	// proposed members are live than the queue's configured W needs. The
	// previous members, the fencing epoch and the epoch it would activate
	// stay; the transition's digest becomes TransitionDigest of the new
	// proposal, so every seal, installation and activation of the old one
	// no longer counts, and the candidate is chosen afresh; the plan
	// stays. Every member of Proposed must be live, and one it adds not
	// draining.
	Repropose Kind = 15
	// Plan records the recovery plan of queue Name's pending transition
	// from epoch Epoch (bound by Digest): Plan, the verified source's
	// sealed history, which every installation of the transition copies.
	// The first plan stays for the transition's life (a Handoff and a
	// Repropose keep it; a retry resumes it). A plan replaces it only by
	// naming it (Replaces: the identity of the plan it replaces), the
	// guarded write of a worker that saw it and found no replica holding
	// its history any more; a plan that names none, or another, is
	// refused, and so is the same plan again.
	Plan Kind = 16
	// DeclareExchange declares exchange Exchange of kind ExchangeKind
	// with its flags and alternate exchange; its incarnation id is the
	// entry's index. An existing exchange with the same attributes is
	// kept; other attributes are refused (RefusalConflict), and so is a
	// new name in the reserved amq. namespace (RefusalReserved).
	DeclareExchange Kind = 17
	// DeleteExchange deletes exchange Exchange and every binding from or
	// to it; with IfUnused, refused while it is the source of a binding.
	DeleteExchange Kind = 18
	// Bind binds exchange Exchange to queue Queue or to exchange Dest
	// with routing key RoutingKey and arguments Args (route.AppendFields's
	// encoding); the same binding again is kept.
	Bind Kind = 19
	// Unbind removes the binding Bind would add, if there is one; an
	// auto-delete exchange left without bindings as a source goes.
	Unbind Kind = 20
	// DeclareLifetime is DeclareQueue of a queue with a lifetime (Life:
	// auto-delete, non-durable, exclusive, home) or ServerNamed (Name
	// empty: the queue is ServerName(index)). A kind apart, so that a
	// durable named queue's declaration is what it always was.
	DeclareLifetime Kind = 21
	// kindEnd is one past the last kind. (Written out: a bare name here
	// would repeat the line above's value.)
	kindEnd Kind = 22
)

var kindNames = [...]string{SetSetting: "set", RegisterBroker: "register", BrokerDown: "down",
	Drain: "drain", DeclareQueue: "declare", DeleteQueue: "delete", Assign: "assign", Transition: "transition", SetInSync: "in-sync", Activate: "activate",
	AddLearner: "add-learner", AdmitLearner: "admit", Handoff: "handoff", RetryRecovery: "retry-recovery",
	Repropose: "repropose", Plan: "plan", DeclareExchange: "declare-exchange", DeleteExchange: "delete-exchange",
	Bind: "bind", Unbind: "unbind", DeclareLifetime: "declare-lifetime"}

func (k Kind) String() string {
	if k > 0 && k < kindEnd {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// Limits.
const (
	BrokersMax        = 1024
	QueuesMax         = 1 << 16
	QueueNameBytesMax = 255 // AMQP's shortstr
	// ExchangeNameBytesMax and RoutingKeyBytesMax: AMQP's shortstr too.
	ExchangeNameBytesMax = 255
	RoutingKeyBytesMax   = 255
	// CommandBytesMax bounds an encoded command (a binding with the
	// longest names, key and arguments fits).
	CommandBytesMax = 2048
)

// version is the codec's version byte.
const version = 1

// Command is one metadata command. Only the fields of its Kind are
// encoded; the others must be zero.
type Command struct {
	Kind Kind
	// SetSetting
	Key   string
	Value int64
	// RegisterBroker, BrokerDown (Process), Drain
	Node     seam.NodeID
	Process  uint64
	Storage  uint64
	Draining bool
	// DeclareQueue, DeleteQueue (Queue, Incarnation), Assign and
	// Transition (Queue, Incarnation)
	Queue       string
	Replicas    int
	Policy      seam.Policy
	MinInsync   int
	Incarnation uint64
	// DeclareQueue: what else ends the queue (the zero Lifetime: nothing
	// but a deletion), and whether the broker names it
	Life        Lifetime
	ServerNamed bool
	// Assign (Epoch, Owner, Members), Transition (Epoch: the fenced one;
	// Proposed; Digest)
	Epoch    uint64
	Owner    seam.NodeID
	Members  Members
	Proposed Nodes
	Digest   Digest
	// SetInSync (Queue, Incarnation, Epoch, InSync, InSyncVersion: the
	// version of the committed set the owner asked from; the change
	// applies only while that version is current, and every change, even
	// to the same set, makes the next version, so a delayed request can
	// never bring back a set the owner has moved on from)
	InSync        Nodes
	InSyncVersion uint64
	// AddLearner, AdmitLearner (Queue, Incarnation, Epoch, Learner)
	Learner Member
	// Handoff (Queue, Incarnation, Epoch, Digest, Node: the candidate
	// handed from, Candidate: the one handed to)
	Candidate seam.NodeID
	// RetryRecovery: Queue, Incarnation, Epoch (the pending transition's,
	// the epoch it would activate)
	// Plan (Queue, Incarnation, Epoch, Digest, Plan, Replaces: the
	// identity of the committed plan it replaces; zero for the first)
	Plan     RecoveryPlan
	Replaces Digest
	// DeclareExchange (Exchange, ExchangeKind, Durable, AutoDelete,
	// Internal, Alternate), DeleteExchange (Exchange, IfUnused); Bind and
	// Unbind (Exchange: the source; Queue or Dest: the destination;
	// RoutingKey, Args)
	Exchange     string
	ExchangeKind route.Kind
	Durable      bool
	AutoDelete   bool
	Internal     bool
	Alternate    string
	IfUnused     bool
	Dest         string
	RoutingKey   string
	Args         string
}

// RecoveryPlan is a pending transition's recovery plan: the source whose
// sealed log the recovery worker verified against R witnesses (its node
// and storage instance then), and that log's range, last epoch and
// content identity. A log that hashes to Identity holds the plan's
// history whoever holds it (the source, or a copy installed from it).
type RecoveryPlan struct {
	Source     seam.NodeID
	Storage    uint64
	Start, End uint64
	LastEpoch  uint64
	Identity   Digest
}

// Member is one replica of an assignment: a broker and the exact process
// and storage instances the assignment names.
type Member struct {
	Node             seam.NodeID
	Process, Storage uint64
}

// Members is an assignment's replicas, by node id, at most
// seam.ReplicasMax; Nodes a list of node ids, ascending. Both are fixed-size
// values, so that commands compare with ==.
type (
	Members struct {
		N int
		M [seam.ReplicasMax]Member
	}
	Nodes struct {
		N  int
		ID [seam.ReplicasMax]seam.NodeID
	}
)

// Slice returns the members in use.
func (m *Members) Slice() []Member { return m.M[:m.N] }

// Slice returns the nodes in use.
func (n *Nodes) Slice() []seam.NodeID { return n.ID[:n.N] }

// Digest is a BLAKE3-256 digest.
type Digest [32]byte

// Set returns the command that sets key to value, validated.
func Set(key, value string) (Command, error) {
	v, err := ParseSetting(key, value)
	if err != nil {
		return Command{}, err
	}
	return Command{Kind: SetSetting, Key: key, Value: v}, nil
}

// Validate reports a command no replica would apply whatever the state.
func (c *Command) Validate() error {
	switch c.Kind {
	case SetSetting:
		i := settingIndex(c.Key)
		if i < 0 {
			return fmt.Errorf("unknown setting %q (known: %s)", c.Key, settingKeys())
		}
		return checkSetting(i, c.Value)
	case RegisterBroker, BrokerDown, Drain:
		if c.Node == 0 {
			return errors.New("broker id 0")
		}
		if c.Kind != Drain && c.Process == 0 {
			return errors.New("process instance 0")
		}
		if c.Kind == RegisterBroker && c.Storage == 0 {
			return errors.New("storage instance 0")
		}
		return nil
	case DeclareQueue, DeleteQueue, DeclareLifetime:
		if c.Kind == DeclareLifetime && c.ServerNamed {
			if c.Queue != "" {
				return fmt.Errorf("declare of a server-named queue names it %q", c.Queue)
			}
		} else if err := checkQueueName(c.Queue); err != nil {
			return err
		}
		if err := c.Life.Check(); err != nil {
			return fmt.Errorf("%s %s: %v", c.Kind, c.Queue, err)
		}
		hasLife := c.Life != Lifetime{} || c.ServerNamed
		if hasLife != (c.Kind == DeclareLifetime) {
			return fmt.Errorf("%s %s: a lifetime only with %s, and never empty there", c.Kind, c.Queue, DeclareLifetime)
		}
		if c.Kind == DeleteQueue {
			if c.Incarnation == 0 {
				return errors.New("delete: no incarnation observed")
			}
			return nil
		}
		if c.Replicas < 1 || c.Replicas > seam.ReplicasMax {
			return fmt.Errorf("declare %s: %d replicas, want 1 to %d", c.Queue, c.Replicas, seam.ReplicasMax)
		}
		if !c.Policy.Valid() {
			return fmt.Errorf("declare %s: unknown policy %d", c.Queue, c.Policy)
		}
		if c.MinInsync < 1 || c.MinInsync > c.Replicas {
			return fmt.Errorf("declare %s: min in-sync %d, want 1 to the replica count %d", c.Queue, c.MinInsync, c.Replicas)
		}
		return nil
	case Assign, Transition, SetInSync, Activate, AddLearner, AdmitLearner, Handoff, RetryRecovery, Repropose, Plan:
		if err := checkQueueName(c.Queue); err != nil {
			return err
		}
		if c.Incarnation == 0 || c.Epoch == 0 {
			return fmt.Errorf("%s %s: incarnation %d, epoch %d: want both non-zero", c.Kind, c.Queue, c.Incarnation, c.Epoch)
		}
		if c.Kind == RetryRecovery {
			return nil
		}
		if c.Kind == Plan {
			if p := &c.Plan; p.Source == 0 || p.Storage == 0 || p.Start > p.End {
				return fmt.Errorf("plan %s: source n%d on storage %d, [%d,%d): want a non-zero source and storage, a range", c.Queue, p.Source, p.Storage, p.Start, p.End)
			}
			return nil
		}
		if c.Kind == Handoff {
			if c.Node == 0 || c.Candidate == 0 || c.Node == c.Candidate {
				return fmt.Errorf("handoff %s: from n%d to n%d: want two distinct non-zero brokers", c.Queue, c.Node, c.Candidate)
			}
			return nil
		}
		if c.Kind == AddLearner || c.Kind == AdmitLearner {
			if l := c.Learner; l.Node == 0 || l.Process == 0 || l.Storage == 0 {
				return fmt.Errorf("%s %s: learner n%d/%d/%d: want non-zero instances", c.Kind, c.Queue, l.Node, l.Process, l.Storage)
			}
			return nil
		}
		if c.Kind == Transition || c.Kind == Repropose {
			return checkNodes(c.Proposed.Slice())
		}
		if c.Kind == SetInSync {
			return checkNodes(c.InSync.Slice())
		}
		ms := c.Members.Slice()
		if len(ms) == 0 {
			return fmt.Errorf("assign %s: no members", c.Queue)
		}
		owner := false
		for i, m := range ms {
			if m.Node == 0 || m.Process == 0 || m.Storage == 0 || (i > 0 && ms[i-1].Node >= m.Node) {
				return fmt.Errorf("assign %s: members must be distinct, ascending, with non-zero instances", c.Queue)
			}
			owner = owner || m.Node == c.Owner
		}
		if !owner {
			return fmt.Errorf("%s %s: owner n%d is not a member", c.Kind, c.Queue, c.Owner)
		}
		if c.Kind == Activate {
			if err := checkNodes(c.InSync.Slice()); err != nil {
				return fmt.Errorf("activate %s: in-sync: %v", c.Queue, err)
			}
			owner = false
			for _, n := range c.InSync.Slice() {
				if !slices.ContainsFunc(ms, func(m Member) bool { return m.Node == n }) {
					return fmt.Errorf("activate %s: n%d installed is not a member", c.Queue, n)
				}
				owner = owner || n == c.Owner
			}
			if !owner {
				return fmt.Errorf("activate %s: the owner n%d did not install", c.Queue, c.Owner)
			}
		}
		return nil
	case DeclareExchange, DeleteExchange, Bind, Unbind:
		return c.validateExchange()
	}
	return fmt.Errorf("unknown command kind %d", c.Kind)
}

// validateExchange validates the exchange commands.
func (c *Command) validateExchange() error {
	if err := checkName("exchange", c.Exchange, ExchangeNameBytesMax); err != nil {
		return err
	}
	switch c.Kind {
	case DeclareExchange:
		if !c.ExchangeKind.Valid() {
			return fmt.Errorf("declare exchange %s: unknown kind %d", c.Exchange, c.ExchangeKind)
		}
		if c.Alternate != "" {
			return checkName("alternate exchange", c.Alternate, ExchangeNameBytesMax)
		}
	case Bind, Unbind:
		switch {
		case (c.Queue == "") == (c.Dest == ""):
			return fmt.Errorf("%s %s: want a queue or an exchange as the destination, one of them", c.Kind, c.Exchange)
		case c.Queue != "":
			if err := checkQueueName(c.Queue); err != nil {
				return err
			}
		default:
			if err := checkName("exchange", c.Dest, ExchangeNameBytesMax); err != nil {
				return err
			}
		}
		if len(c.RoutingKey) > RoutingKeyBytesMax {
			return fmt.Errorf("%s %s: routing key of %d bytes, over %d", c.Kind, c.Exchange, len(c.RoutingKey), RoutingKeyBytesMax)
		}
		if len(c.Args) > BindingArgsBytesMax {
			return fmt.Errorf("%s %s: arguments of %d bytes, over %d", c.Kind, c.Exchange, len(c.Args), BindingArgsBytesMax)
		}
		if _, err := decodeArgs(c.Args); err != nil {
			return fmt.Errorf("%s %s: arguments: %v", c.Kind, c.Exchange, err)
		}
	}
	return nil
}

func checkNodes(ns []seam.NodeID) error {
	if len(ns) == 0 {
		return errors.New("no nodes")
	}
	for i, n := range ns {
		if n == 0 || (i > 0 && ns[i-1] >= n) {
			return errors.New("nodes must be distinct, non-zero and ascending")
		}
	}
	return nil
}

func checkQueueName(name string) error { return checkName("queue", name, QueueNameBytesMax) }

// checkName refuses a name that is empty, longer than max bytes, not
// UTF-8, or holds a control character (RabbitMQ takes any other UTF-8
// name of a shortstr).
func checkName(what, name string, max int) error {
	if name == "" || len(name) > max {
		return fmt.Errorf("%s name of %d bytes, want 1 to %d", what, len(name), max)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s name %q is not UTF-8", what, name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s name %q: byte %d is a control character", what, name, i)
		}
	}
	return nil
}

// Encode appends the command's encoding: the version, the kind, then the
// kind's fields as uvarints and length-prefixed strings.
func (c *Command) Encode(dst []byte) []byte {
	dst = append(dst, version, byte(c.Kind))
	switch c.Kind {
	case SetSetting:
		dst = appendStr(dst, c.Key)
		dst = binary.AppendVarint(dst, c.Value)
	case RegisterBroker:
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = binary.AppendUvarint(dst, c.Process)
		dst = binary.AppendUvarint(dst, c.Storage)
	case BrokerDown:
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = binary.AppendUvarint(dst, c.Process)
	case Drain:
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = appendBool(dst, c.Draining)
	case DeclareQueue:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, uint64(c.Replicas))
		dst = append(dst, byte(c.Policy))
		dst = binary.AppendUvarint(dst, uint64(c.MinInsync))
	case DeclareLifetime:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, uint64(c.Replicas))
		dst = append(dst, byte(c.Policy))
		dst = binary.AppendUvarint(dst, uint64(c.MinInsync))
		dst = appendLife(dst, &c.Life, c.ServerNamed)
	case DeleteQueue:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
	case Assign:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = binary.AppendUvarint(dst, uint64(c.Owner))
		dst = appendMembers(dst, &c.Members)
	case Transition, Repropose:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = binary.AppendUvarint(dst, uint64(c.Proposed.N))
		for _, n := range c.Proposed.Slice() {
			dst = binary.AppendUvarint(dst, uint64(n))
		}
		dst = append(dst, c.Digest[:]...)
	case SetInSync:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = binary.AppendUvarint(dst, uint64(c.InSync.N))
		for _, n := range c.InSync.Slice() {
			dst = binary.AppendUvarint(dst, uint64(n))
		}
		dst = binary.AppendUvarint(dst, c.InSyncVersion)
	case Activate:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = binary.AppendUvarint(dst, uint64(c.Owner))
		dst = appendMembers(dst, &c.Members)
		dst = appendNodes(dst, &c.InSync)
		dst = append(dst, c.Digest[:]...)
	case AddLearner, AdmitLearner:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = binary.AppendUvarint(dst, uint64(c.Learner.Node))
		dst = binary.AppendUvarint(dst, c.Learner.Process)
		dst = binary.AppendUvarint(dst, c.Learner.Storage)
	case Handoff:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = append(dst, c.Digest[:]...)
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = binary.AppendUvarint(dst, uint64(c.Candidate))
	case RetryRecovery:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
	case Plan:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
		dst = binary.AppendUvarint(dst, c.Epoch)
		dst = append(dst, c.Digest[:]...)
		dst = appendPlan(dst, &c.Plan)
		dst = append(dst, c.Replaces[:]...)
	case DeclareExchange:
		dst = appendStr(dst, c.Exchange)
		dst = append(dst, byte(c.ExchangeKind))
		dst = appendBool(dst, c.Durable)
		dst = appendBool(dst, c.AutoDelete)
		dst = appendBool(dst, c.Internal)
		dst = appendStr(dst, c.Alternate)
	case DeleteExchange:
		dst = appendStr(dst, c.Exchange)
		dst = appendBool(dst, c.IfUnused)
	case Bind, Unbind:
		dst = appendStr(dst, c.Exchange)
		dst = appendStr(dst, c.Queue)
		dst = appendStr(dst, c.Dest)
		dst = appendStr(dst, c.RoutingKey)
		dst = appendStr(dst, c.Args)
	default:
		panic(fmt.Sprintf("metadata: encode of command kind %d", c.Kind))
	}
	return dst
}

// appendMembers appends a member list: the count, then each member's node
// and instances.
func appendMembers(dst []byte, ms *Members) []byte {
	dst = binary.AppendUvarint(dst, uint64(ms.N))
	for _, m := range ms.Slice() {
		dst = binary.AppendUvarint(dst, uint64(m.Node))
		dst = binary.AppendUvarint(dst, m.Process)
		dst = binary.AppendUvarint(dst, m.Storage)
	}
	return dst
}

// appendPlan appends a recovery plan: its source and storage, range, last
// epoch and identity.
func appendPlan(dst []byte, p *RecoveryPlan) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.Source))
	dst = binary.AppendUvarint(dst, p.Storage)
	dst = binary.AppendUvarint(dst, p.Start)
	dst = binary.AppendUvarint(dst, p.End)
	dst = binary.AppendUvarint(dst, p.LastEpoch)
	return append(dst, p.Identity[:]...)
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// ErrDecode is wrapped by every decoding error.
var ErrDecode = errors.New("metadata: command does not decode")

// Decode reads one command: exactly, and valid (Validate).
func Decode(b []byte) (Command, error) {
	if len(b) > CommandBytesMax {
		return Command{}, fmt.Errorf("%w: %d bytes, over %d", ErrDecode, len(b), CommandBytesMax)
	}
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != version {
		return Command{}, fmt.Errorf("%w: version %d, want %d", ErrDecode, v, version)
	}
	c := Command{Kind: Kind(r.byte())}
	switch c.Kind {
	case SetSetting:
		c.Key = r.str(64)
		c.Value = r.varint()
	case RegisterBroker:
		c.Node = r.node()
		c.Process = r.uvarint()
		c.Storage = r.uvarint()
	case BrokerDown:
		c.Node = r.node()
		c.Process = r.uvarint()
	case Drain:
		c.Node = r.node()
		c.Draining = r.bool()
	case DeclareQueue:
		c.Queue = r.str(QueueNameBytesMax)
		c.Replicas = r.small()
		c.Policy = seam.Policy(r.byte())
		c.MinInsync = r.small()
	case DeclareLifetime:
		c.Queue = r.str(QueueNameBytesMax)
		c.Replicas = r.small()
		c.Policy = seam.Policy(r.byte())
		c.MinInsync = r.small()
		c.Life, c.ServerNamed = r.life()
	case DeleteQueue:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
	case Assign:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		c.Owner = r.node()
		c.Members = r.members()
	case Transition, Repropose:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		c.Proposed.N = r.count(seam.ReplicasMax)
		for i := range c.Proposed.N {
			c.Proposed.ID[i] = r.node()
		}
		copy(c.Digest[:], r.bytes(len(c.Digest)))
	case SetInSync:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		c.InSync.N = r.count(seam.ReplicasMax)
		for i := range c.InSync.N {
			c.InSync.ID[i] = r.node()
		}
		c.InSyncVersion = r.uvarint()
	case Activate:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		c.Owner = r.node()
		c.Members = r.members()
		c.InSync.N = r.count(seam.ReplicasMax)
		for i := range c.InSync.N {
			c.InSync.ID[i] = r.node()
		}
		copy(c.Digest[:], r.bytes(len(c.Digest)))
	case AddLearner, AdmitLearner:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		c.Learner = Member{Node: r.node(), Process: r.uvarint(), Storage: r.uvarint()}
	case Handoff:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		copy(c.Digest[:], r.bytes(len(c.Digest)))
		c.Node = r.node()
		c.Candidate = r.node()
	case RetryRecovery:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
	case Plan:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
		c.Epoch = r.uvarint()
		copy(c.Digest[:], r.bytes(len(c.Digest)))
		c.Plan = r.plan()
		copy(c.Replaces[:], r.bytes(len(c.Replaces)))
	case DeclareExchange:
		c.Exchange = r.str(ExchangeNameBytesMax)
		c.ExchangeKind = route.Kind(r.byte())
		c.Durable, c.AutoDelete, c.Internal = r.bool(), r.bool(), r.bool()
		c.Alternate = r.str(ExchangeNameBytesMax)
	case DeleteExchange:
		c.Exchange = r.str(ExchangeNameBytesMax)
		c.IfUnused = r.bool()
	case Bind, Unbind:
		c.Exchange = r.str(ExchangeNameBytesMax)
		c.Queue = r.str(QueueNameBytesMax)
		c.Dest = r.str(ExchangeNameBytesMax)
		c.RoutingKey = r.str(RoutingKeyBytesMax)
		c.Args = r.str(BindingArgsBytesMax)
	default:
		if r.err == nil {
			r.err = fmt.Errorf("unknown kind %d", c.Kind)
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrDecode, r.err)
	}
	if err := c.Validate(); err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return c, nil
}

// reader reads fields, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New(what)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		// One encoding per value: a padded varint is refused.
		r.fail("truncated, overlong or padded varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		r.fail("truncated, overlong or padded varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) small() int {
	v := r.uvarint()
	if v > 1<<20 {
		r.fail("count out of range")
		return 0
	}
	return int(v)
}

func (r *reader) count(max int) int {
	v := r.uvarint()
	if v > uint64(max) {
		r.fail("count out of range")
		return 0
	}
	return int(v)
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.fail("truncated")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// members reads a member list appendMembers wrote.
func (r *reader) members() Members {
	var ms Members
	ms.N = r.count(seam.ReplicasMax)
	for i := range ms.N {
		ms.M[i] = Member{Node: r.node(), Process: r.uvarint(), Storage: r.uvarint()}
	}
	return ms
}

func (r *reader) node() seam.NodeID {
	v := r.uvarint()
	if v > 1<<32-1 {
		r.fail("broker id out of range")
		return 0
	}
	return seam.NodeID(v)
}

func (r *reader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail("bool not 0 or 1")
	return false
}

func (r *reader) str(max int) string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(max) || n > uint64(len(r.b)) {
		r.fail("string length out of range")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// plan reads a recovery plan (appendPlan).
func (r *reader) plan() RecoveryPlan {
	p := RecoveryPlan{Source: r.node(), Storage: r.uvarint(), Start: r.uvarint(), End: r.uvarint(), LastEpoch: r.uvarint()}
	copy(p.Identity[:], r.bytes(len(p.Identity)))
	return p
}

// String is the plan's stable one-line text form.
func (p RecoveryPlan) String() string {
	return fmt.Sprintf("source=n%d/%d [%d,%d) last-epoch=%d identity=%x", p.Source, p.Storage, p.Start, p.End, p.LastEpoch, p.Identity[:6])
}

// String is the command's stable one-line text form.
func (c *Command) String() string {
	switch c.Kind {
	case SetSetting:
		return fmt.Sprintf("set %s=%d", c.Key, c.Value)
	case RegisterBroker:
		return fmt.Sprintf("register n%d process=%d storage=%d", c.Node, c.Process, c.Storage)
	case BrokerDown:
		return fmt.Sprintf("down n%d process=%d", c.Node, c.Process)
	case Drain:
		return fmt.Sprintf("drain n%d %t", c.Node, c.Draining)
	case DeclareQueue, DeclareLifetime:
		s := fmt.Sprintf("declare %q replicas=%d policy=%s min-insync=%d", c.Queue, c.Replicas, c.Policy, c.MinInsync)
		if c.ServerNamed {
			s += " server-named"
		}
		return s + c.Life.String()
	case DeleteQueue:
		return fmt.Sprintf("delete %q incarnation=%d", c.Queue, c.Incarnation)
	case Assign:
		s := fmt.Sprintf("assign %q incarnation=%d epoch=%d owner=n%d members=[", c.Queue, c.Incarnation, c.Epoch, c.Owner)
		for i, m := range c.Members.Slice() {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprintf("n%d/%d/%d", m.Node, m.Process, m.Storage)
		}
		return s + "]"
	case SetInSync:
		return fmt.Sprintf("in-sync %q incarnation=%d epoch=%d in-sync=%v version=%d", c.Queue, c.Incarnation, c.Epoch, c.InSync.Slice(), c.InSyncVersion)
	case Transition, Repropose:
		return fmt.Sprintf("%s %q incarnation=%d epoch=%d proposed=%v digest=%x", c.Kind, c.Queue, c.Incarnation, c.Epoch,
			c.Proposed.Slice(), c.Digest[:6])
	case Activate:
		s := fmt.Sprintf("activate %q incarnation=%d epoch=%d digest=%x owner=n%d members=[", c.Queue, c.Incarnation, c.Epoch, c.Digest[:6], c.Owner)
		for i, m := range c.Members.Slice() {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprintf("n%d/%d/%d", m.Node, m.Process, m.Storage)
		}
		return s + fmt.Sprintf("] installed=%v", c.InSync.Slice())
	case AddLearner, AdmitLearner:
		return fmt.Sprintf("%s %q incarnation=%d epoch=%d learner=n%d/%d/%d", c.Kind, c.Queue, c.Incarnation, c.Epoch,
			c.Learner.Node, c.Learner.Process, c.Learner.Storage)
	case Handoff:
		return fmt.Sprintf("handoff %q incarnation=%d epoch=%d digest=%x from=n%d to=n%d", c.Queue, c.Incarnation, c.Epoch, c.Digest[:6], c.Node, c.Candidate)
	case RetryRecovery:
		return fmt.Sprintf("retry-recovery %q incarnation=%d epoch=%d", c.Queue, c.Incarnation, c.Epoch)
	case Plan:
		return fmt.Sprintf("plan %q incarnation=%d epoch=%d digest=%x %s replaces=%x", c.Queue, c.Incarnation, c.Epoch, c.Digest[:6], c.Plan.String(), c.Replaces[:6])
	case DeclareExchange:
		x := Exchange{Kind: c.ExchangeKind, Durable: c.Durable, AutoDelete: c.AutoDelete, Internal: c.Internal, Alternate: c.Alternate}
		return fmt.Sprintf("declare-exchange %q %s", c.Exchange, exchangeText(&x))
	case DeleteExchange:
		return fmt.Sprintf("delete-exchange %q if-unused=%t", c.Exchange, c.IfUnused)
	case Bind, Unbind:
		return fmt.Sprintf("%s %s", c.Kind, bindingOf(c).String())
	}
	return fmt.Sprintf("command kind=%d", c.Kind)
}
