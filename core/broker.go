package core

import (
	"fmt"
	"math"
	"sort"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/record"
)

// Broker is one broker's replication and queue logic as a state machine.
// It is not safe for concurrent use; the driver calls Step from one place.
type Broker struct {
	node     NodeID
	process  uint64
	lim      Limits
	bugs     bugs.Set
	started  bool
	nowNs    int64
	replicas []*replica // sorted by queue id: the order effects come out in
	byQueue  map[QueueID]*replica

	effects    []Effect
	deadlineNs int64 // the last deadline emitted
	refused    uint64
}

// Refused counts the peer messages refused as impossible (a report beyond
// what the owner ever wrote, say): a buggy or hostile peer, never a panic.
func (b *Broker) Refused() uint64 { return b.refused }

// New returns a broker for cfg. It panics on an invalid configuration, which
// is a programmer error: the driver validates what users write.
func New(cfg Config) *Broker {
	b := &Broker{node: cfg.Node, process: cfg.Process, lim: cfg.Limits.withDefaults(), bugs: cfg.Bugs, byQueue: map[QueueID]*replica{}}
	for _, qc := range cfg.Queues {
		if err := qc.Validate(); err != nil {
			panic("core: " + err.Error())
		}
		mine := false
		for _, n := range qc.Replicas {
			mine = mine || n == cfg.Node
		}
		if !mine {
			panic(fmt.Sprintf("core: node n%d holds no replica of queue %d", cfg.Node, qc.Queue))
		}
		if _, dup := b.byQueue[qc.Queue]; dup {
			panic(fmt.Sprintf("core: queue %d configured twice", qc.Queue))
		}
		r := newReplica(b, qc)
		b.replicas = append(b.replicas, r)
		b.byQueue[qc.Queue] = r
	}
	sort.Slice(b.replicas, func(i, j int) bool { return b.replicas[i].cfg.Queue < b.replicas[j].cfg.Queue })
	return b
}

// Node returns the broker's node id.
func (b *Broker) Node() NodeID { return b.node }

// Step consumes one input and returns the effects it causes, in the order
// the driver must start them. The returned slice is valid until the next
// call to Step.
func (b *Broker) Step(in *Input) []Effect {
	b.effects = b.effects[:0]
	if in.NowNs < b.nowNs {
		panic(fmt.Sprintf("core: time went backwards: %d after %d", in.NowNs, b.nowNs))
	}
	b.nowNs = in.NowNs
	if !b.started && in.Kind != InStart {
		panic("core: first input must be start, got " + in.String())
	}
	switch in.Kind {
	case InStart:
		if b.started {
			panic("core: second start input")
		}
		b.started = true
		b.start(in.Logs)
	case InMessage:
		if r := b.byQueue[in.Msg.Queue]; r != nil {
			r.onMessage(in.From, &in.Msg)
		}
	case InClient:
		b.onClient(in.Client, &in.Req)
	case InClientGone:
		for _, r := range b.replicas {
			r.onClientGone(in.Client)
		}
	case InStorage:
		r := b.byQueue[in.Done.Queue]
		if r == nil {
			panic(fmt.Sprintf("core: storage completion for unknown queue %d", in.Done.Queue))
		}
		r.onStorage(&in.Done)
	case InTick:
		for _, r := range b.replicas {
			r.onTick()
		}
	default:
		panic("core: unknown input kind")
	}
	b.emitDeadline()
	return b.effects
}

func (b *Broker) start(logs []LogState) {
	for i := range logs {
		r := b.byQueue[logs[i].Queue]
		if r == nil {
			panic(fmt.Sprintf("core: start names unknown queue %d", logs[i].Queue))
		}
		r.restore(&logs[i])
	}
	for _, r := range b.replicas {
		r.begin()
	}
}

func (b *Broker) onClient(c ClientID, req *Request) {
	r := b.byQueue[req.Queue]
	if r == nil {
		b.reply(c, req.ID, Failed, 0, 0, "no such queue")
		return
	}
	switch req.Kind {
	case ReqPublish:
		r.onPublish(c, req)
	case ReqSubscribe:
		r.onSubscribe(c, req)
	case ReqAck:
		r.onAck(c, req)
	default:
		b.reply(c, req.ID, Failed, req.Queue, 0, "unknown request kind")
	}
}

func (b *Broker) emitDeadline() {
	at := int64(math.MaxInt64)
	for _, r := range b.replicas {
		if d := r.deadlineNs(); d < at {
			at = d
		}
	}
	if at == math.MaxInt64 || at == b.deadlineNs {
		return
	}
	if b.deadlineNs > b.nowNs && at > b.deadlineNs {
		// An earlier tick is already asked for; when it comes, the later
		// deadline is asked for then. Deadlines move on every send, and
		// most of them need not reach the driver.
		return
	}
	b.deadlineNs = at
	b.effects = append(b.effects, Effect{Kind: EfDeadline, AtNs: at})
}

func (b *Broker) send(to NodeID, m Message) {
	m.Process = b.process
	b.effects = append(b.effects, Effect{Kind: EfSend, To: to, Msg: m})
}

func (b *Broker) storage(e Effect) {
	e.Kind = EfStorage
	b.effects = append(b.effects, e)
}

func (b *Broker) reply(c ClientID, id uint64, o Outcome, q QueueID, offset uint64, reason string) {
	b.effects = append(b.effects, Effect{Kind: EfReply, Client: c, ReqID: id, Outcome: o, Queue: q, Offset: offset, Reason: reason})
}

func (b *Broker) deliver(c ClientID, q QueueID, rec *record.Record, redelivered bool) {
	b.effects = append(b.effects, Effect{Kind: EfDeliver, Client: c, Queue: q, Offset: rec.Offset, Body: rec.Body, Redelivered: redelivered})
}
