package core

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/queue"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/meta"
)

// Config is one node's configuration.
type Config struct {
	Node NodeID
	// Process is this start's sequence number: strictly greater than any
	// earlier start's of the same node (the daemon keeps a durable counter;
	// the simulator counts incarnations).
	Process uint64
	// Storage is the node's storage instance: new per data directory (the
	// daemon draws it when it creates one), never 0 with a metadata group.
	Storage uint64
	// Queues: replica groups under a fixed assignment, started with the
	// node. Tests only (the transcripts drive one group this way): every
	// queue of a simulated or real cluster is declared and placed by the
	// controller, and its group follows the committed assignments.
	Queues []QueueConfig
	// Ctrl configures this node's replica of the metadata group (group
	// GroupCtrl), if it holds one: a voter. Nil: none.
	Ctrl   *ctrl.Config
	Limits Limits
	Bugs   bugs.Set // tests and the simulator only: planted bugs
}

// Node is one broker's logic as a state machine: it routes each input to
// the group it names (today, the replica group of each queue it holds) and
// collects the groups' effects. It is not safe for concurrent use; the
// driver calls Step from one place.
type Node struct {
	x       queue.Ctx
	out     seam.Out
	started bool
	// routed is a route answer's names, reused
	routed []string
	// queues holds the replica groups, ascending by group id: the order in
	// which a tick visits them, and so the order of their effects.
	queues []*queue.Replica
	// ctrl is the metadata group (nil on a node without one); it starts
	// with the start input, from what the metadata store loaded.
	ctrl       *ctrl.Group
	ctrlCfg    *ctrl.Config
	storage    uint64        // this node's storage instance
	placed     []placedGroup // queues the controller placed here (placed.go)
	reconciled uint64        // the metadata index reconcile last followed
	deadlineNs int64         // the last deadline emitted
	sealer     sealer        // this broker's seal (seal.go)
	installer  installer     // this broker's installation (install.go)
	lease      lease         // the owner lease (lease.go)
	gone       []peerProcess // processes whose exit this node saw (InPeerLost), newest last
	// recoveries: the attempts this node's recovery workers drive, at most
	// recovery.workers_per_broker; recoveryRetries: the queues whose
	// attempt was set aside, with their backoff (recover.go)
	recoveries      []*recoveryWork
	recoveryRetries []recoveryRetry
	// recoveryBudget: the inspection and staging budgets as last seen (a
	// change retries the attempts set aside at once)
	recoveryBudget [5]int64
	// gathering: a free worker with a queue due waits, since gatherSinceNs,
	// for the metadata entries in its log to apply (recoveryGathered)
	gathering     bool
	gatherSinceNs int64
	// reattach: the recovered queues this node owns that have confirmed
	// no publish yet (placed.go's reattachTick), at most placedMax
	reattach []QueueID
	// recoveryDue: the applied metadata changed since the recovery workers
	// last ran (reconcile); they run at the end of the step
	recoveryDue bool
	// admitAskedNs: when this node's owners last asked the leader to admit
	// their learners, per queue (placed.go's learnerTick), at most
	// placedMax
	admitAskedNs []queueInstant
}

// queueInstant is an instant about one queue.
type queueInstant struct {
	queue QueueID
	atNs  int64
}

// GroupCtrl is the metadata group's id.
const GroupCtrl = seam.GroupCtrl

// New returns a node for cfg. It panics on an invalid configuration, which
// is a programmer error: the driver validates what users write.
func New(cfg Config) *Node {
	n := &Node{storage: cfg.Storage}
	if cfg.Ctrl != nil {
		cc := *cfg.Ctrl
		cc.Process, cc.Storage = cfg.Process, cfg.Storage
		n.ctrlCfg = &cc
	}
	n.x = queue.Ctx{Node: cfg.Node, Process: cfg.Process, Lim: cfg.Limits.WithDefaults(), Bugs: cfg.Bugs, Out: &n.out}
	for _, qc := range cfg.Queues {
		if err := qc.Validate(); err != nil {
			panic("core: " + err.Error())
		}
		if !slices.Contains(qc.Replicas, cfg.Node) {
			panic(fmt.Sprintf("core: node n%d holds no replica of queue %d", cfg.Node, qc.Queue))
		}
		if n.queue(seam.QueueGroup(qc.Queue)) != nil {
			panic(fmt.Sprintf("core: queue %d configured twice", qc.Queue))
		}
		n.queues = append(n.queues, queue.New(&n.x, qc))
	}
	slices.SortFunc(n.queues, func(a, b *queue.Replica) int {
		switch {
		case a.Group() < b.Group():
			return -1
		case a.Group() > b.Group():
			return 1
		}
		return 0
	})
	return n
}

// queue returns the replica group g, or nil.
func (n *Node) queue(g GroupID) *queue.Replica {
	i, ok := slices.BinarySearchFunc(n.queues, g, func(r *queue.Replica, g GroupID) int {
		switch {
		case r.Group() < g:
			return -1
		case r.Group() > g:
			return 1
		}
		return 0
	})
	if !ok {
		for _, r := range n.queues { // before New sorted them
			if r.Group() == g {
				return r
			}
		}
		return nil
	}
	return n.queues[i]
}

// Serves reports whether this node runs queue q's replica group, unfenced:
// its log is open and the group began (a statically configured queue, or
// one the controller placed on this very process). A front door asks it
// before promising a client a queue the topology names this node the
// owner of: a restarted process is named by an assignment of its previous
// process until the controller fences it. Read-only.
func (n *Node) Serves(q QueueID) bool {
	r := n.queue(seam.QueueGroup(q))
	return r != nil && !r.Fenced()
}

// Metadata is the metadata this node applied (nil on a node without the
// metadata group), for operators' listings (sluice describe). Read-only:
// the caller reads it between two steps and keeps nothing of it.
func (n *Node) Metadata() *metadata.State {
	if n.ctrl == nil {
		return nil
	}
	return n.ctrl.Metadata()
}

// Refused counts the peer messages refused as malformed or impossible (a
// report beyond what the owner ever wrote, say): a buggy or hostile peer,
// never a panic.
func (n *Node) Refused() uint64 { return n.x.Refused }

// Step consumes one input and returns the effects it causes, in the order
// the driver must start them. The returned slice, and the bytes its effects
// point into, are valid until the next call to Step.
func (n *Node) Step(in *Input) []Effect {
	n.out.Reset()
	if in.NowNs < n.x.NowNs {
		panic(fmt.Sprintf("core: time went backwards: %d after %d", in.NowNs, n.x.NowNs))
	}
	n.x.NowNs = in.NowNs
	if !n.started && in.Kind != InStart {
		panic("core: first input must be start, got " + in.String())
	}
	switch in.Kind {
	case InStart:
		if n.started {
			panic("core: second start input")
		}
		n.started = true
		n.start(in.Logs, in.Meta)
	case InMessage:
		n.recoveryHeard(in.From)
		if r := n.queue(in.Group); r != nil {
			if !r.Sealed() || !n.holdForReplacement(in.From, in.Group, in.Data) {
				r.OnMessage(in.From, in.Data)
			}
		} else if in.Group == GroupCtrl && n.ctrl != nil {
			n.stepCtrl(ctrl.Input{Kind: ctrl.InMessage, From: uint64(in.From), Msg: in.Data})
		} else if in.Group == seam.GroupCtrlPeer && n.ctrl != nil {
			n.stepCtrl(ctrl.Input{Kind: ctrl.InPeerMessage, From: uint64(in.From), Msg: in.Data})
		} else if in.Group == seam.GroupRecovery && n.ctrl != nil {
			n.onRecoveryMsg(in.From, in.Data)
		} else {
			n.x.Refused++ // a group this node does not hold
		}
	case InClient:
		n.onClient(in.Client, &in.Req)
	case InClientGone:
		for _, r := range n.queues {
			r.OnClientGone(in.Client)
		}
	case InStorage:
		if in.Done.Op == seam.OpOpen && in.Done.Log == seam.LogStage {
			if n.freshOpened(&in.Done) {
				break
			}
			n.stageOpened(&in.Done)
			break
		}
		if in.Done.Op == seam.OpOpen {
			n.opened(&in.Done)
			break
		}
		if in.Done.Op == seam.OpPersist {
			if in.Done.Group != GroupCtrl || n.ctrl == nil {
				panic(fmt.Sprintf("core: persist completion for group %d", in.Done.Group))
			}
			n.stepCtrl(ctrl.Input{Kind: ctrl.InPersisted, Seq: in.Done.Tag, Err: in.Done.Err})
			break
		}
		if in.Done.Tag&sealTag != 0 {
			n.sealStorage(&in.Done)
			break
		}
		r := n.queue(in.Done.Group)
		if r == nil {
			panic(fmt.Sprintf("core: storage completion for unknown group %d", in.Done.Group))
		}
		r.OnStorage(&in.Done)
	case InPeerLost:
		n.peerGone(in.From, in.Process)
		if n.ctrl != nil {
			n.stepCtrl(ctrl.Input{Kind: ctrl.InPeerLost, From: uint64(in.From), Process: in.Process})
		}
	case InTick:
		for _, r := range n.queues {
			r.OnTick()
		}
		if n.ctrl != nil {
			n.stepCtrl(ctrl.Input{Kind: ctrl.InTick, Draw: in.Draw})
			n.inSyncTick()
			n.learnerTick()
			n.recoveryTick()
			n.installTick()
			n.leaseTick(false)
		}
	default:
		panic("core: unknown input kind")
	}
	if n.recoveryDue && n.ctrl != nil {
		// The metadata moved: a queue fenced for this node to recover, or
		// a recovery's assignment activated, is taken up now rather than
		// at the next tick (up to 20 ms in the daemon, twice on the path
		// of a failover). Here, after the input, never inside a step of
		// the metadata group (the workers step it themselves).
		n.recoveryDue = false
		n.recoveryTick()
	}
	if len(n.reattach) > 0 {
		n.reattachTick()
	}
	n.emitDeadline()
	return n.out.Effects
}

func (n *Node) start(logs []LogState, st *meta.State) {
	if n.ctrlCfg != nil {
		if st == nil {
			panic("core: the start input carries no metadata state for the metadata group")
		}
		g, err := ctrl.New(*n.ctrlCfg, *st)
		if err != nil {
			// What the store loaded cannot be this group's (io/meta
			// checked its consistency): a broken store or configuration.
			panic("core: " + err.Error())
		}
		n.ctrl = g
		n.ctrlEffects(g.Begin(n.x.NowNs))
	}
	for i := range logs {
		r := n.queue(logs[i].Group)
		if r == nil {
			panic(fmt.Sprintf("core: start names unknown group %d", logs[i].Group))
		}
		r.Restore(&logs[i])
	}
	for _, r := range n.queues {
		r.Begin()
	}
}

func (n *Node) onClient(c ClientID, req *Request) {
	if req.Kind == seam.ReqTopology {
		n.topology(c, req)
		return
	}
	if req.Kind == seam.ReqRoute {
		n.route(c, req)
		return
	}
	if req.Kind == seam.ReqMeta {
		if n.ctrl == nil {
			n.out.Reply(c, req.ID, Failed, 0, 0, "no metadata group here")
			return
		}
		n.stepCtrl(ctrl.Input{Kind: ctrl.InPropose, Msg: req.Body, Client: uint64(c), ReqID: req.ID})
		return
	}
	r := n.queue(seam.QueueGroup(req.Queue))
	if r == nil {
		n.out.Reply(c, req.ID, Failed, 0, 0, "no such queue")
		return
	}
	switch req.Kind {
	case ReqPublish:
		r.OnPublish(c, req)
	case ReqSubscribe:
		r.OnSubscribe(c, req)
	case ReqAck:
		r.OnAck(c, req)
	case ReqRequeue:
		r.OnRequeue(c, req)
	case seam.ReqPurge:
		r.OnPurge(c, req)
	case ReqCount:
		var incarnation uint64 // (a static queue's: 0)
		if i := n.placedIndex(req.Queue); i >= 0 {
			incarnation = n.placed[i].incarnation
		}
		r.OnCount(c, req, incarnation)
	default:
		n.out.Reply(c, req.ID, Failed, req.Queue, 0, "unknown request kind")
	}
}

// emitDeadline asks for the earliest tick any group needs.
func (n *Node) emitDeadline() {
	at := int64(math.MaxInt64)
	for _, r := range n.queues {
		if d := r.DeadlineNs(); d < at {
			at = d
		}
	}
	if n.ctrl != nil {
		at = min(at, n.ctrl.DeadlineNs())
	}
	if at == math.MaxInt64 || at == n.deadlineNs {
		return
	}
	if n.deadlineNs > n.x.NowNs && at > n.deadlineNs {
		// An earlier tick is already asked for; when it comes, the later
		// deadline is asked for then. Deadlines move on every send, and
		// most of them need not reach the driver.
		return
	}
	n.deadlineNs = at
	n.out.Deadline(at)
}

// Invariants checks every group's invariants and those of the recovery
// roles (the workers, the sealer, the installer, the placed groups); it
// panics with what broke.
// The simulator calls it after every Step.
func (n *Node) Invariants() {
	for _, r := range n.queues {
		r.Invariants()
	}
	n.placedInvariants()
	n.recoveriesInvariants()
	n.sealer.invariants()
	n.installer.invariants()
	n.lease.invariants(n.x.NowNs)
}

// stepCtrl steps the metadata group and turns its effects into the node's:
// a persist is a storage effect on the metadata store (point 10 of the
// driver contract), a proposal's outcome a reply.
func (n *Node) stepCtrl(in ctrl.Input) {
	in.NowNs = n.x.NowNs
	n.ctrlEffects(n.ctrl.Step(in))
	n.reconcile()
}

// ctrlEffects turns the metadata group's effects into the node's.
func (n *Node) ctrlEffects(effects []ctrl.Effect) {
	for _, e := range effects {
		switch e.Kind {
		case ctrl.EfPersist:
			n.out.Storage(seam.Effect{Op: seam.OpPersist, Group: GroupCtrl, Tag: e.Seq, Batch: e.Batch})
		case ctrl.EfSend:
			buf := n.out.Grow(len(e.Msg))
			n.out.Send(GroupCtrl, NodeID(e.To), append(buf, e.Msg...))
		case ctrl.EfSendPeer:
			buf := n.out.Grow(len(e.Msg))
			n.out.Send(seam.GroupCtrlPeer, NodeID(e.To), append(buf, e.Msg...))
		case ctrl.EfApplied:
			n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfApplied, Group: GroupCtrl,
				Offset: e.Index, Tag: e.Term, Body: e.Cmd, Reason: e.Note})
			if strings.Contains(e.Note, fencedNote) {
				n.proposeMark(&e)
			}
		case ctrl.EfNote:
			n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfNote, Group: GroupCtrl, Reason: e.Note})
		case ctrl.EfOutcome:
			n.ctrlOutcome(&e)
		case ctrl.EfFresh:
			n.sealFreshDone(&e)
		default:
			panic(fmt.Sprintf("core: metadata group effect kind %d", e.Kind))
		}
	}
}

// fencedNote is in the note of an applied transition (metadata.State's).
const fencedNote = "=> fenced "

// proposeMark marks the propose stage of a queue's recovery on the
// metadata leader, once: where the transition that fenced it applied.
func (n *Node) proposeMark(e *ctrl.Effect) {
	if _, _, leader := n.ctrl.Status(); !leader {
		return
	}
	c, err := metadata.Decode(e.Cmd)
	if err != nil || c.Kind != metadata.Transition {
		return
	}
	if q, ok := n.ctrl.Metadata().Queue(c.Queue); ok && q.Incarnation == c.Incarnation {
		n.out.Recovery(q.ID, seam.StagePropose, c.Epoch+1, nil, fmt.Sprintf("fenced at index %d", e.Index))
	}
}

// ctrlOutcome answers an operator's metadata request.
func (n *Node) ctrlOutcome(e *ctrl.Effect) {
	c, id := ClientID(e.Client), e.ReqID
	switch e.Result {
	case ctrl.Committed:
		n.out.Reply(c, id, Confirmed, 0, e.Index, e.Note)
	case ctrl.Unknown:
		n.out.Reply(c, id, Unknown, 0, 0, e.Note)
	case ctrl.NotLeader:
		n.out.Reply(c, id, Failed, 0, 0, "not the leader: "+e.Note)
	case ctrl.Rejected:
		n.out.Reply(c, id, Failed, 0, e.Index, e.Note)
		n.out.Effects[len(n.out.Effects)-1].Refusal = e.Refusal
	default:
		n.out.Reply(c, id, Failed, 0, 0, e.Note)
	}
}

// CtrlStatus is the metadata group's view: its term, the leader it knows,
// whether it leads; ok is false on a node without the group. For worlds
// that aim faults at the leader; never for checkers.
func (n *Node) CtrlStatus() (term, lead uint64, leader, ok bool) {
	if n.ctrl == nil {
		return 0, 0, false, false
	}
	term, lead, leader = n.ctrl.Status()
	return term, lead, leader, true
}

// Holds returns the follower-loss hold's counters of the metadata group
// here (core/ctrl/hold.go: kept while it leads); ok is false on a node
// without the group. For metrics; never for checkers.
func (n *Node) Holds() (h ctrl.HoldStats, ok bool) {
	if n.ctrl == nil {
		return ctrl.HoldStats{}, false
	}
	return n.ctrl.Holds(), true
}

// AppendMsgText renders a peer message of group g (seam.MsgText).
func (n *Node) AppendMsgText(dst []byte, g GroupID, data []byte) []byte {
	return AppendMsgText(dst, g, data)
}

// AppendMsgText renders a peer message of group g: the group's kind of
// state machine knows its messages.
func AppendMsgText(dst []byte, g GroupID, data []byte) []byte {
	if g < seam.GroupReservedMin {
		return queue.AppendMsgText(dst, g, data)
	}
	switch g {
	case GroupCtrl:
		return ctrl.AppendMsgText(dst, data)
	case seam.GroupCtrlPeer:
		return ctrl.AppendPeerMsgText(dst, data)
	case seam.GroupRecovery:
		return recovery.AppendText(dst, data)
	}
	return seam.AppendKV(append(dst, "msg"...), "g", uint64(g))
}

// MsgTexts renders every group's messages; drivers pass it to the text
// forms of inputs and effects.
var MsgTexts seam.MsgText = msgTexts{}

type msgTexts struct{}

func (msgTexts) AppendMsgText(dst []byte, g GroupID, data []byte) []byte {
	return AppendMsgText(dst, g, data)
}

// AppendCmdText renders a metadata command, or why it does not decode.
func (msgTexts) AppendCmdText(dst []byte, cmd []byte) []byte {
	c, err := metadata.Decode(cmd)
	if err != nil {
		return strconv.AppendQuote(append(dst, "undecodable="...), err.Error())
	}
	return append(dst, c.String()...)
}
