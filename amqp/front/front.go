package front

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// reasonNotReady is the core's reason for refusing a publish while its
// owner's new epoch record is not yet durable (core/queue): definitely not
// stored, so the front sends it again. front_test.go pins the text against
// a real core.
const reasonNotReady = "epoch not ready"

// reasonBusy is the core's reason for refusing a publish because the
// queue's owner holds PendingPublishesMax publishes not yet confirmed:
// definitely not stored, so the front sends it again (the connection's own
// limit on publishes in flight then pauses its reading: back-pressure, not
// a nack). Pinned in front_test.go like reasonNotReady.
const reasonBusy = "too many publishes in flight"

// reasonNotServed: the topology places the queue here, and the node does
// not run its group (yet: the log is opening; or no more: a restarted
// process, until the controller fences the old assignment).
const reasonNotServed = "placed on this broker, not served by this process (yet)"

// Front is the bridge of every client connection of one broker. It is not
// safe for concurrent use.
type Front struct {
	cfg   Config
	nowNs int64
	out   []Effect

	conns map[ConnID]*connState // lookup only
	ids   []ConnID              // open connections, ascending: iteration order

	clients    map[seam.ClientID]clientRef // core client → its connection
	lastClient seam.ClientID

	// names holds the queue ids the topology gave (the queue placed with
	// its owner here); a name is learned once.
	names map[string]seam.QueueID
	// routes holds, with Forward, the owner the topology last named for a
	// queue, while it is believed to serve it; a refusal that says it no
	// longer does, or the loss of that broker, removes the entry.
	routes map[seam.QueueID]seam.NodeID
	// unrouted says, per queue, why the topology named no serving owner
	// when last asked (the text a publish that waited in vain is nacked
	// with).
	unrouted map[seam.QueueID]string
	// lives: the lifetimes topology answers carried, by queue name (only
	// queues that have one; lifetime.go); jan: the deletions they cause
	lives map[string]*seam.QueueLife
	jan   janitor

	// work is the queue of connection inputs still to step (answers the
	// front makes itself, without the core), so that no call recurses.
	work    []work
	timerAt int64 // the EfTimer last emitted, 0 for none
	stats   Stats
}

// Stats counts what the front did, for a daemon's metrics.
type Stats struct {
	Connections int // open
	// Publish outcomes answered to clients.
	Confirmed, Failed, Unknown, Unroutable, Refused uint64
	// Retried counts publishes sent to the core again (epoch not ready,
	// owner at its limit).
	Retried uint64
	// Rerouted counts publishes an owner refused without storing them
	// because it no longer serves the queue, held until the topology
	// named a serving owner (Forward).
	Rerouted uint64
	// Forwarded counts requests carried to another broker (Forward).
	Forwarded uint64
	// JanitorDropped counts deletions of auto-delete and exclusive queues
	// not started because the janitor was at its limit.
	JanitorDropped uint64
	// Cancelled counts subscriptions the core ended (EfCancel: their
	// group fenced, replaced or retired), each told to its client.
	Cancelled uint64
	// NodesLost counts connections closed because a broker they had
	// requests or subscriptions at was lost (NodeLost).
	NodesLost uint64
	// ConfirmLatency counts confirmed publishes by the time from their
	// first request to the core until the core's confirm: bucket i holds
	// those at or below LatencyBoundsNs[i] and above the bound before; the
	// last bucket those above every bound. LatencySumNs is their total.
	LatencyCounts [len(LatencyBoundsNs) + 1]uint64
	LatencySumNs  int64
}

// LatencyBoundsNs are the confirm latency buckets' upper bounds.
var LatencyBoundsNs = [...]int64{100e3, 250e3, 500e3, 1e6, 2.5e6, 5e6, 10e6, 25e6, 50e6, 100e6, 250e6, 500e6, 1e9, 2.5e9, 5e9}

// Stats returns the counts so far.
func (f *Front) Stats() Stats {
	st := f.stats
	st.Connections = len(f.ids)
	return st
}

// countOutcome counts a publish outcome answered to a client.
func (f *Front) countOutcome(r *conn.PublishResult) {
	switch r.Outcome {
	case conn.Confirmed:
		f.stats.Confirmed++
	case conn.Failed:
		f.stats.Failed++
	case conn.Unknown:
		f.stats.Unknown++
	case conn.Unroutable:
		f.stats.Unroutable++
	case conn.Refused:
		f.stats.Refused++
	}
}

type work struct {
	c  ConnID
	in conn.Input
}

// clientRef says whose a core client is: a connection's own (sub 0) or one
// of its subscriptions'.
type clientRef struct {
	conn ConnID
	sub  conn.SubID
	get  bool // a basic.get's client (get.go)
}

// connState is one connection: its machine and what the front keeps for it.
type connState struct {
	id      ConnID
	m       *conn.Conn
	timerAt int64
	client  seam.ClientID // the connection's own core client
	lastReq uint64
	reqs    map[uint64]*pending // by core request id (unique per connection)
	subs    []*sub              // ascending by id (ids only grow)
	// held: outstanding deliveries of ack-mode subscriptions, by queue
	// name and handle: the core client that must ack them.
	held map[heldKey]seam.ClientID
	// resolving: operations waiting for a queue name's topology, in order;
	// names are asked once (resolvingNames keeps the order of first ask).
	resolving map[string][]conn.Effect
	// retry: publishes refused while their queue's epoch was not ready, to
	// send again at retryAtNs, in order; later publishes to those queues
	// wait here too.
	retry     []pubItem
	retryAtNs int64
	// timed: declarations waiting to ask again.
	timed []*declare
	// publishing counts the publishes sent to the core without an answer.
	publishing int
	// accepting: the queues whose owner confirmed a publish of this
	// connection since it last refused one for its epoch not being ready
	// or it moved: until then one publish at a time goes there (publish).
	accepting map[seam.QueueID]bool
	// inflight counts, per queue, the publishes sent without an answer: a
	// publish waiting for a retry is sent again only once none is in
	// flight to its queue, so that a refused publish never overtakes a
	// later one still on its way (Forward reroutes).
	inflight map[seam.QueueID]int
	// routing: queue names whose owner is being asked (one question at a
	// time per connection and name).
	routing map[string]bool
	// reasks: queue names whose topology answer was that this broker's
	// metadata is still catching up after its start: asked again at atNs,
	// until untilNs; their operations wait in resolving meanwhile
	reasks []reask
	// awaiting: operations other than publishes that need their queue's
	// owner and wait for the topology to name a serving one (Forward), in
	// the order they were asked.
	awaiting []*routeWait
	// nodes: the other brokers the connection's own client sent requests
	// to (Forward), each told when the connection ends.
	nodes []seam.NodeID
	// catalogTimed: exchange and binding operations waiting to ask again.
	catalogTimed []*catalogOp
	// routeQ: publishes in order behind an exchange publish whose route
	// is not known yet (exchange.go); fans: publishes routed to several
	// queues, by id, until each queue answered.
	routeQ []*routed
	fans   map[conn.PublishID]*fan
	// seenIndex: the highest metadata entry this connection saw
	// committed (its declarations and bindings); its routes reflect it.
	seenIndex uint64
	// exclusive: the exclusive queues this connection declared, each
	// deleted when it ends (lifetime.go)
	exclusive []declared
	// gets: basic.gets waiting for their delivery or holding it; parked:
	// gets and purges waiting for earlier publishes; purges: purges to ask
	// again (get.go)
	gets   []*getOp
	parked []parked
	purges []*purgeOp
}

// declared is a queue a connection declared: its name and incarnation.
type declared struct {
	name        string
	incarnation uint64
}

type heldKey struct {
	queue  string
	handle conn.Handle
}

type sub struct {
	id     conn.SubID
	client seam.ClientID
	queue  string
	noAck  bool
	node   seam.NodeID // the broker that runs it (this one's id, or the owner it was forwarded to)
}

// reask is a name whose topology is asked again (connState.reasks).
type reask struct {
	name          string
	atNs, untilNs int64
}

// routeWait is an operation that needs its queue's owner (a
// subscription) and waits for the topology to name a serving one: asked
// again every RouteRetryNs, refused past RouteWaitNs from its first try.
type routeWait struct {
	op      conn.EfSubscribe
	queue   seam.QueueID
	firstNs int64 // when it first looked for an owner
	askNs   int64 // when the topology is asked again
}

// pubItem is a publish on its way to a queue.
type pubItem struct {
	id        conn.PublishID
	firstNs   int64 // when it was first sent to the core
	queue     seam.QueueID
	name      string // the queue's name (its routing key)
	body      []byte
	mandatory bool
	content   conn.Content
}

// declare is a queue.declare in progress.
type declare struct {
	op     conn.OpID
	leader seam.NodeID // where its command goes (Forward: the leader last named; 0: this broker)
	spec   conn.QueueSpec
	cmd    []byte // the DeclareQueue command, nil for a passive one
	meta   bool   // still committing the command (else asking the topology)
	// counting: the queue is servable, and its owner is asked what
	// declare-ok reports (a ReqCount to queue, at node)
	counting bool
	queue    seam.QueueID
	node     seam.NodeID
	// del: a queue.delete (with its conditions), not a declaration: the
	// topology, the owner's count (its messages, consumers and the
	// incarnation it serves), then the metadata's DeleteQueue of that
	// incarnation (cmd, meta); messages: what delete-ok reports
	del      *conn.EfDeleteQueue
	messages uint32
	atNs     int64 // next attempt (in timed)
	untilNs  int64 // give up after
}

type pendingKind uint8

const (
	pPublish pendingKind = iota + 1
	pTopology
	pDeclare
	pSubscribe
	pRoute // a topology question for a waiting publish's owner (Forward)
	pCatalog
	pPublishRoute // a route question for an exchange publish
	pGetCount     // a basic.get's count
	pGetSub       // a basic.get's subscription
	pPurge
)

// pending is a core request awaiting its reply.
type pending struct {
	kind   pendingKind
	node   seam.NodeID // the broker the request went to
	pub    pubItem
	name   string     // topology
	decl   *declare   // declare
	cat    *catalogOp // catalog
	routed *routed    // publish route
	get    *getOp     // get count, get subscription
	purge  *purgeOp
	op     conn.OpID
	sub    conn.SubID // subscribe
	// subscribe: what was asked, on which queue, first tried when (a
	// broker that turns out not to serve the queue sends it back to wait).
	subReq  conn.EfSubscribe
	queue   seam.QueueID
	firstNs int64
	// topology asked again (reask): when its waiting operations give up
	untilNs int64
}

// New returns a front; it fails on a configuration no connection could
// honour.
func New(cfg Config) (*Front, error) {
	if cfg.Conn.MessageBytesMax == 0 || cfg.Conn.MessageBytesMax > MessageBytesMax {
		cfg.Conn.MessageBytesMax = MessageBytesMax
	}
	if err := cfg.Conn.Validate(); err != nil {
		return nil, err
	}
	f := &Front{cfg: cfg.withDefaults(), conns: map[ConnID]*connState{},
		clients: map[seam.ClientID]clientRef{}, names: map[string]seam.QueueID{},
		routes: map[seam.QueueID]seam.NodeID{}, unrouted: map[seam.QueueID]string{}, lives: map[string]*seam.QueueLife{}}
	f.lastClient++
	f.jan.client = f.lastClient // the janitor's: no connection's
	return f, nil
}

// Publishing returns how many publishes of open connections wait for an
// outcome (sent to the core, waiting to be sent again, waiting for their
// queue's name or their exchange's route): a draining daemon waits for
// zero.
func (f *Front) Publishing() int {
	n := 0
	for _, id := range f.ids {
		c := f.conns[id]
		n += c.publishing + len(c.retry) + len(c.resolving) + len(c.routeQ)
	}
	return n
}

// CheckInvariants checks every connection machine's invariants (tests
// and fuzzing call it after every step).
func (f *Front) CheckInvariants() error {
	for _, id := range f.ids {
		if err := f.conns[id].m.CheckInvariants(); err != nil {
			return fmt.Errorf("connection %d: %w", id, err)
		}
	}
	return nil
}

// Conns returns how many connections are open.
func (f *Front) Conns() int { return len(f.ids) }

func (f *Front) begin(nowNs int64) {
	if nowNs < f.nowNs {
		panic(fmt.Sprintf("front: time went backwards: %d after %d", nowNs, f.nowNs))
	}
	f.nowNs = nowNs
	f.out = f.out[:0]
}

// finish runs the queued work and asks for the next timer.
func (f *Front) finish() []Effect {
	if len(f.jan.jobs) > 0 {
		f.janitorDue()
	}
	for len(f.work) > 0 {
		w := f.work[0]
		f.work = f.work[1:]
		if c := f.conns[w.c]; c != nil {
			f.step(c, w.in)
		}
	}
	f.work = f.work[:0]
	at := int64(math.MaxInt64)
	for _, id := range f.ids {
		c := f.conns[id]
		if c.timerAt > 0 {
			at = min(at, c.timerAt)
		}
		if len(c.retry) > 0 {
			at = min(at, c.retryAtNs)
		}
		for _, d := range c.timed {
			at = min(at, d.atNs)
		}
		for _, o := range c.catalogTimed {
			at = min(at, o.atNs)
		}
		for _, g := range c.gets {
			if !g.delivered {
				at = min(at, g.untilNs)
			}
		}
		for _, p := range c.purges {
			at = min(at, p.atNs)
		}
		for _, r := range c.routeQ {
			if r.resendNs > 0 {
				at = min(at, r.resendNs)
			}
		}
		for _, w := range c.awaiting {
			at = min(at, w.askNs)
		}
		for _, r := range c.reasks {
			at = min(at, r.atNs)
		}
		//detguard:order-independent computes a minimum; nothing is emitted inside
		for _, p := range c.reqs {
			if d := f.overdueNs(p); d > 0 {
				at = min(at, d)
			}
		}
	}
	if j := f.janitorTimer(); j > 0 {
		at = min(at, j)
	}
	if at != math.MaxInt64 && at != f.timerAt {
		f.timerAt = at
		f.out = append(f.out, Effect{Kind: EfTimer, AtNs: at})
	}
	return f.out
}

// Accept starts connection id, accepted from peer.
func (f *Front) Accept(nowNs int64, id ConnID, peer conn.Peer) []Effect {
	f.begin(nowNs)
	if f.conns[id] != nil {
		panic(fmt.Sprintf("front: connection %d accepted twice", id))
	}
	m, err := conn.New(f.cfg.Conn, peer)
	if err != nil {
		panic("front: " + err.Error()) // validated by New
	}
	c := &connState{id: id, m: m, reqs: map[uint64]*pending{},
		held: map[heldKey]seam.ClientID{}, resolving: map[string][]conn.Effect{},
		inflight: map[seam.QueueID]int{}, routing: map[string]bool{}, fans: map[conn.PublishID]*fan{},
		accepting: map[seam.QueueID]bool{}}
	c.client = f.newClient(id, 0)
	f.conns[id] = c
	at, _ := slices.BinarySearch(f.ids, id)
	f.ids = slices.Insert(f.ids, at, id)
	f.step(c, conn.InAccept{NowNs: nowNs})
	return f.finish()
}

// Bytes passes a chunk read from connection id's socket.
func (f *Front) Bytes(nowNs int64, id ConnID, b []byte) []Effect {
	f.begin(nowNs)
	if c := f.conns[id]; c != nil {
		f.step(c, conn.InBytes{NowNs: nowNs, Bytes: b})
	}
	return f.finish()
}

// SocketGone says connection id's socket ended (EOF, an error) without
// the front closing it: its session ends as if it had.
func (f *Front) SocketGone(nowNs int64, id ConnID) []Effect {
	f.begin(nowNs)
	if c := f.conns[id]; c != nil {
		f.end(c, "socket gone")
	}
	return f.finish()
}

// Shutdown tells every connection the broker is going away (amqp/conn's
// InBrokerLost: connection.close 320 CONNECTION_FORCED with reason). The
// driver then ends their sockets (SocketGone) without waiting for the
// clients' close-ok.
func (f *Front) Shutdown(nowNs int64, reason string) []Effect {
	f.begin(nowNs)
	for _, id := range slices.Clone(f.ids) {
		if c := f.conns[id]; c != nil {
			f.step(c, conn.InBrokerLost{NowNs: nowNs, Reason: reason})
		}
	}
	return f.finish()
}

// Tick is the timer firing.
func (f *Front) Tick(nowNs int64) []Effect {
	f.begin(nowNs)
	f.timerAt = 0
	for _, id := range slices.Clone(f.ids) {
		c := f.conns[id]
		if c == nil {
			continue
		}
		if c.timerAt > 0 && c.timerAt <= nowNs {
			c.timerAt = 0
			f.step(c, conn.InTime{NowNs: nowNs})
		}
		if f.conns[id] == nil {
			continue
		}
		if len(c.retry) > 0 && c.retryAtNs <= nowNs {
			f.retryPublishes(c)
		}
		var due []*declare
		c.timed, due = takeDue(c.timed, nowNs, func(d *declare) int64 { return d.atNs })
		for _, d := range due {
			f.declareAsk(c, d)
		}
		var catDue []*catalogOp
		c.catalogTimed, catDue = takeDue(c.catalogTimed, nowNs, func(o *catalogOp) int64 { return o.atNs })
		for _, o := range catDue {
			f.catalogAsk(c, o)
		}
		f.resendRoutesDue(c)
		f.getsDue(c)
		f.purgesDue(c)
		f.unpark(c)
		f.awaitDue(c)
		f.answerOverdue(c)
		f.reaskDue(c)
	}
	return f.finish()
}

// Core passes a reply, delivery or cancel of the core (an EfReply,
// EfDeliver or EfCancel effect).
func (f *Front) Core(nowNs int64, e *seam.Effect) []Effect {
	f.begin(nowNs)
	f.core(e)
	return f.finish()
}

// CoreBatch passes replies and deliveries of the core, in the order the
// core emitted them. Publish outcomes of one connection that follow each
// other become one input, so a group commit's confirms leave as one
// basic.ack with multiple where amqp/conn can.
func (f *Front) CoreBatch(nowNs int64, effects []seam.Effect) []Effect {
	f.begin(nowNs)
	for i := range effects {
		f.core(&effects[i])
	}
	return f.finish()
}

func (f *Front) core(e *seam.Effect) {
	if e.Client == f.jan.client {
		if e.Kind == seam.EfReply {
			f.janitorReply(e)
		}
		return
	}
	ref, ok := f.clients[e.Client]
	c := f.conns[ref.conn]
	if !ok || c == nil {
		return // the connection is gone: drop it (contract point 7)
	}
	if ref.get && e.Kind != seam.EfReply {
		if g := c.getOf(e.Client); g != nil {
			if e.Kind == seam.EfDeliver {
				f.getDelivered(c, g, f.message(g.name, e), e.Offset)
			} else if !g.delivered { // cancelled: the queue's group fenced or went
				f.getEnd(c, g)
				f.input(c, conn.InResult{NowNs: f.nowNs, Op: g.op})
			} else {
				f.getEnd(c, g)
			}
		}
		return
	}
	switch e.Kind {
	case seam.EfReply:
		f.reply(c, e)
	case seam.EfDeliver:
		f.deliver(c, ref, e)
	case seam.EfCancel:
		f.cancelled(c, ref, e)
	default:
		panic("front: core effect " + e.String())
	}
}

func (f *Front) newClient(id ConnID, s conn.SubID) seam.ClientID {
	f.lastClient++
	f.clients[f.lastClient] = clientRef{conn: id, sub: s}
	return f.lastClient
}

// request emits a core request of client cl on connection c, for the
// core of broker node (this one's id or 0: the local core).
func (f *Front) request(c *connState, cl seam.ClientID, req seam.Request, p *pending, node seam.NodeID) {
	c.lastReq++
	req.ID = c.lastReq
	if node == f.cfg.Node {
		node = 0
	}
	if p != nil {
		p.node = node
		c.reqs[req.ID] = p
	}
	if node != 0 {
		f.stats.Forwarded++
		if cl == c.client && !slices.Contains(c.nodes, node) {
			c.nodes = append(c.nodes, node)
		}
	}
	f.out = append(f.out, Effect{Kind: EfRequest, Conn: c.id, Client: cl, Req: req, Node: node})
}

// route returns the broker to send queue q's publishes and subscriptions
// to: this one without Forward; with it, the owner the topology last
// named, if any.
func (f *Front) route(q seam.QueueID) (seam.NodeID, bool) {
	if !f.cfg.Forward {
		return f.cfg.Node, true
	}
	n, ok := f.routes[q]
	return n, ok
}

// input queues an input for connection c's machine; publish outcomes
// right after the connection's last queued ones join them.
func (f *Front) input(c *connState, in conn.Input) {
	if p, ok := in.(conn.InPublished); ok && len(c.fans) > 0 {
		p.Results = c.foldFans(p.Results)
		if len(p.Results) == 0 {
			return
		}
		in = p
	}
	if p, ok := in.(conn.InPublished); ok {
		for i := range p.Results {
			f.countOutcome(&p.Results[i])
		}
	}
	if p, ok := in.(conn.InPublished); ok && len(f.work) > 0 {
		last := &f.work[len(f.work)-1]
		if q, ok := last.in.(conn.InPublished); ok && last.c == c.id {
			q.Results = append(q.Results, p.Results...)
			last.in = q
			return
		}
	}
	f.work = append(f.work, work{c: c.id, in: in})
}

// step steps connection c's machine with in and carries out its effects.
func (f *Front) step(c *connState, in conn.Input) {
	for _, e := range c.m.Step(in) {
		if f.conns[c.id] == nil {
			return
		}
		switch x := e.(type) {
		case conn.EfWrite:
			f.out = append(f.out, Effect{Kind: EfWrite, Conn: c.id, Bytes: x.Bytes})
		case conn.EfClose:
			f.end(c, x.Reason)
			if x.ClientCloses {
				for i := len(f.out) - 1; i >= 0; i-- {
					if f.out[i].Kind == EfClose && f.out[i].Conn == c.id {
						f.out[i].ClientCloses = true
						break
					}
				}
			}
		case conn.EfTimer:
			c.timerAt = x.AtNs
		case conn.EfRead:
			k := EfResumeRead
			if x.Paused {
				k = EfPauseRead
			}
			f.out = append(f.out, Effect{Kind: k, Conn: c.id})
		default:
			f.broker(c, e)
		}
	}
}

// end closes connection c and ends its core session: every client gone.
func (f *Front) end(c *connState, reason string) {
	f.out = append(f.out, Effect{Kind: EfClose, Conn: c.id, Reason: reason})
	delete(f.clients, c.client)
	f.out = append(f.out, Effect{Kind: EfClientGone, Client: c.client})
	for _, n := range c.nodes {
		f.out = append(f.out, Effect{Kind: EfClientGone, Client: c.client, Node: n})
	}
	for _, s := range c.subs {
		delete(f.clients, s.client)
		f.out = append(f.out, Effect{Kind: EfClientGone, Client: s.client, Node: s.node})
	}
	for _, g := range c.gets {
		delete(f.clients, g.client)
		f.out = append(f.out, Effect{Kind: EfClientGone, Client: g.client, Node: g.node})
	}
	for _, s := range c.subs {
		f.subscriptionEnded(s.queue)
	}
	f.connectionEnded(c)
	delete(f.conns, c.id)
	i, _ := slices.BinarySearch(f.ids, c.id)
	f.ids = slices.Delete(f.ids, i, i+1)
}

// broker handles one of the machine's broker requests.
func (f *Front) broker(c *connState, e conn.Effect) {
	switch x := e.(type) {
	case conn.EfDeclareQueue:
		f.declareStart(c, x)
	case conn.EfPublish:
		f.enqueuePublish(c, x)
	case conn.EfSubscribe:
		f.resolve(c, x.Queue, x)
	case conn.EfCancel:
		f.cancel(c, x)
	case conn.EfSettle:
		f.settle(c, x)
	case conn.EfGet:
		f.resolve(c, x.Queue, x)
	case conn.EfDeleteQueue:
		f.declareAsk(c, &declare{op: x.Op, spec: conn.QueueSpec{Name: x.Queue}, del: &x, untilNs: f.nowNs + f.cfg.DeclareTimeoutNs})
	case conn.EfPurgeQueue:
		f.resolve(c, x.Queue, x)
	case conn.EfDeclareExchange:
		f.exchangeDeclare(c, x)
	case conn.EfDeleteExchange:
		f.exchangeDelete(c, x)
	case conn.EfBind:
		f.bind(c, x)
	default:
		panic("front: unknown broker request " + e.String())
	}
}

// resolve runs op (a publish or subscribe naming queue name) once the
// name's queue id is known, asking the topology first if it is not.
func (f *Front) resolve(c *connState, name string, op conn.Effect) {
	if q, ok := f.names[name]; ok && len(c.resolving[name]) == 0 {
		f.resolved(c, q, name, op)
		return
	}
	w, asked := c.resolving[name]
	c.resolving[name] = append(w, op)
	if !asked {
		f.request(c, c.client, seam.Request{Kind: seam.ReqTopology, Body: []byte(name)}, &pending{kind: pTopology, name: name}, 0)
	}
}

// resolved runs op on queue q, named name.
func (f *Front) resolved(c *connState, q seam.QueueID, name string, op conn.Effect) {
	switch x := op.(type) {
	case conn.EfPublish:
		body, err := encodeBody(nil, x.Exchange, x.RoutingKey, &x.Content)
		if err != nil {
			f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{{ID: x.ID, Outcome: conn.Failed, Text: err.Error()}}})
			return
		}
		f.publish(c, pubItem{id: x.ID, firstNs: f.nowNs, queue: q, name: name, body: body, mandatory: x.Mandatory, content: x.Content})
	case conn.EfSubscribe:
		if f.lockedFor(c, name) {
			f.refuseLocked(c, x.Op, name)
			return
		}
		f.subscribe(c, q, x)
	case conn.EfGet:
		f.getStart(c, q, name, x)
	case conn.EfPurgeQueue:
		f.purgeStart(c, q, name, x)
	default:
		panic("front: resolved " + op.String())
	}
}

// unresolved answers op, whose queue the topology cannot give: why says.
func (f *Front) unresolved(c *connState, op conn.Effect, noSuchQueue bool, why string) {
	switch x := op.(type) {
	case conn.EfPublish:
		r := conn.PublishResult{ID: x.ID, Outcome: conn.Failed, Text: why}
		if noSuchQueue {
			r = conn.PublishResult{ID: x.ID, Outcome: conn.Unroutable}
			if x.Mandatory {
				content := x.Content
				r.Returned = &content
			}
		}
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{r}})
	case conn.EfSubscribe:
		f.unresolvedOp(c, x.Op, x.Queue, noSuchQueue, why)
	case conn.EfGet:
		f.unresolvedOp(c, x.Op, x.Queue, noSuchQueue, why)
	case conn.EfPurgeQueue:
		f.unresolvedOp(c, x.Op, x.Queue, noSuchQueue, why)
	}
}

// publish sends p to the core of its queue's owner, unless earlier
// publishes to its queue wait for a retry: then it waits behind them. With
// Forward, a publish whose queue has no serving owner known waits for one.
func (f *Front) publish(c *connState, p pubItem) {
	for _, r := range c.retry {
		if r.queue == p.queue {
			f.retryLater(c, p, 0)
			return
		}
	}
	if c.inflight[p.queue] > 0 && !c.accepting[p.queue] {
		// Until its owner confirmed one of this connection's publishes,
		// one at a time: an owner whose epoch is not ready refuses
		// what comes before it is and takes what comes after, and two
		// in flight then would land out of order.
		f.retryLater(c, p, 0)
		return
	}
	node, ok := f.route(p.queue)
	if !ok {
		f.deferPublish(c, p)
		return
	}
	c.publishing++
	c.inflight[p.queue]++
	f.request(c, c.client, seam.Request{Kind: seam.ReqPublish, Queue: p.queue, Body: p.body}, &pending{kind: pPublish, pub: p}, node)
}

// retryLater holds p in the connection's retry list, in publish order
// (so that a publish refused after a later one was held goes back ahead
// of it), to be sent again after waitNs (0: whenever the list is next
// tried).
func (f *Front) retryLater(c *connState, p pubItem, waitNs int64) {
	i, _ := slices.BinarySearchFunc(c.retry, p.id, func(r pubItem, id conn.PublishID) int {
		switch {
		case r.id < id:
			return -1
		case r.id > id:
			return 1
		}
		return 0
	})
	c.retry = slices.Insert(c.retry, i, p)
	if waitNs > 0 && (len(c.retry) == 1 || f.nowNs+waitNs < c.retryAtNs) {
		c.retryAtNs = f.nowNs + waitNs
	} else if len(c.retry) == 1 {
		c.retryAtNs = f.nowNs + f.cfg.RetryNs
	}
}

// retryPublishes sends the held publishes again, in order; those of a
// queue with publishes still in flight wait for their answers first.
func (f *Front) retryPublishes(c *connState) {
	items := c.retry
	c.retry = nil
	// Queues with publishes in flight before this pass wait; those this
	// pass sends are in order behind each other.
	var busy []seam.QueueID
	for _, p := range items {
		if c.inflight[p.queue] > 0 && !slices.Contains(busy, p.queue) {
			busy = append(busy, p.queue)
		}
	}
	for _, p := range items {
		if slices.Contains(busy, p.queue) {
			f.retryLater(c, p, f.cfg.RetryNs)
			continue
		}
		f.publish(c, p)
	}
}

// deferPublish holds p until the topology names a serving owner for its
// queue (Forward), asking it every RouteRetryNs; past RouteWaitNs since
// p was first sent it is nacked.
func (f *Front) deferPublish(c *connState, p pubItem) {
	if f.nowNs-p.firstNs > f.cfg.RouteWaitNs {
		why := f.unrouted[p.queue]
		if why == "" {
			why = "no owner known"
		}
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{{ID: p.id, Outcome: conn.Failed,
			Text: fmt.Sprintf("queue '%s' has had no serving owner for %d ms: %s", p.name, f.cfg.RouteWaitNs/1e6, why)}}})
		return
	}
	f.retryLater(c, p, f.cfg.RouteRetryNs)
	f.askRoute(c, p.name)
}

// countWaitNs bounds the wait for a declaration's count (ReqCount): the
// owner answers from memory, so a count not answered by then went to a
// broker that is gone, and the topology is asked again.
const countWaitNs = 500_000_000

// overdueNs is when a request in flight must have its answer, or the
// front answers its client itself (0: no bound): a declaration at its
// DeclareTimeoutNs, a subscription RouteWaitNs after its first try. A
// broker that stopped without closing its connections (a paused process,
// a link that went silent) would otherwise leave the client's method
// without a reply for good.
func (f *Front) overdueNs(p *pending) int64 {
	switch p.kind {
	case pDeclare:
		if p.decl.counting {
			return p.untilNs
		}
		return p.decl.untilNs
	case pSubscribe:
		return p.firstNs + f.cfg.RouteWaitNs
	case pCatalog:
		return p.cat.untilNs
	}
	return 0
}

// answerOverdue answers the requests of c whose answer did not come in
// time (overdueNs); an answer that comes after finds no request waiting.
func (f *Front) answerOverdue(c *connState) {
	var ids []uint64
	//detguard:order-independent collects request ids, sorted below before anything is emitted
	for id, p := range c.reqs {
		if d := f.overdueNs(p); d > 0 && d <= f.nowNs {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := c.reqs[id]
		delete(c.reqs, id)
		switch p.kind {
		case pDeclare:
			if d := p.decl; d.counting {
				// The owner the topology named did not answer (gone,
				// its loss not yet in the metadata): ask again where
				// the queue lives, until the declaration's own time.
				f.declareLater(c, d, fmt.Sprintf("no count from n%d within %d ms", f.nodeOf(p), countWaitNs/1_000_000))
				continue
			}
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.decl.op, Code: wire.ResourceLocked,
				Text: fmt.Sprintf("queue '%s' not ready in time: no answer from n%d within %d ms", p.decl.spec.Name, f.nodeOf(p), f.cfg.DeclareTimeoutNs/1e6)})
		case pCatalog:
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.cat.op, Code: wire.ResourceLocked,
				Text: fmt.Sprintf("exchange '%s': no answer from n%d within %d ms", p.cat.exchange, f.nodeOf(p), f.cfg.DeclareTimeoutNs/1e6)})
		case pSubscribe:
			if s := c.sub(p.sub); s != nil {
				// Its broker may yet set it up: end it there.
				f.dropSub(c, s)
			}
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.op, Code: wire.ResourceLocked,
				Text: fmt.Sprintf("cannot consume from queue '%s': no answer from n%d within %d ms", p.subReq.Queue, f.nodeOf(p), f.cfg.RouteWaitNs/1e6)})
		}
	}
}

// nodeOf names the broker a request went to.
func (f *Front) nodeOf(p *pending) seam.NodeID {
	if p.node == 0 {
		return f.cfg.Node
	}
	return p.node
}

// askRoute asks the topology who serves queue name now, unless c asks
// already: the one route lookup of every operation that needs an owner
// (publishes, subscriptions, the route a core's cancel leaves stale).
func (f *Front) askRoute(c *connState, name string) {
	if !f.cfg.Forward || c.routing[name] {
		return
	}
	c.routing[name] = true
	f.request(c, c.client, seam.Request{Kind: seam.ReqTopology, Body: []byte(name)}, &pending{kind: pRoute, name: name}, 0)
}

// awaitRoute holds w until the topology names a serving owner of its
// queue, or refuses it past RouteWaitNs from its first try.
func (f *Front) awaitRoute(c *connState, w *routeWait) {
	if f.nowNs-w.firstNs > f.cfg.RouteWaitNs {
		why := f.unrouted[w.queue]
		if why == "" {
			why = "no owner known"
		}
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: w.op.Op, Code: wire.ResourceLocked,
			Text: fmt.Sprintf("queue '%s' has had no serving owner for %d ms: %s", w.op.Queue, f.cfg.RouteWaitNs/1e6, why)})
		return
	}
	w.askNs = f.nowNs + f.cfg.RouteRetryNs
	c.awaiting = append(c.awaiting, w)
	f.askRoute(c, w.op.Queue)
}

// runAwaiting starts, in order, the waiting operations whose queue has a
// serving owner now. It runs on the timer, like a waiting publish's
// retry, so that a topology that names an owner which then refuses costs
// one round trip per RouteRetryNs, not a loop of them.
func (f *Front) runAwaiting(c *connState) {
	if len(c.awaiting) == 0 {
		return
	}
	waits := c.awaiting
	c.awaiting = nil
	for _, w := range waits {
		if _, ok := f.route(w.queue); ok {
			f.subscribeAt(c, w.queue, w.op, w.firstNs)
			continue
		}
		c.awaiting = append(c.awaiting, w)
	}
}

// awaitDue takes the waits whose time to ask again has come: each starts
// if its queue has an owner now, is refused if it waited too long, or
// asks again.
func (f *Front) awaitDue(c *connState) {
	f.runAwaiting(c)
	var due []*routeWait
	c.awaiting = slices.DeleteFunc(c.awaiting, func(w *routeWait) bool {
		if w.askNs <= f.nowNs {
			due = append(due, w)
			return true
		}
		return false
	})
	for _, w := range due {
		f.awaitRoute(c, w)
	}
}

// staleRoute says whether a refusal means that the broker a request went
// to does not serve the queue (any more, or yet): nothing was stored, and
// the topology must be asked again (core/queue, core/node.go).
func staleRoute(reason string) bool {
	return reason == "not the owner" || reason == "no such queue" || recovering(reason)
}

// recovering says whether a refusal means a recovery of the queue is under
// way ("fenced: ...") or about to be (its owner's broker is down in the
// metadata, "owner down: ..."; core/placed.go's topology): the queue
// serves again once it is done.
func recovering(reason string) bool {
	return strings.HasPrefix(reason, "fenced: ") || strings.HasPrefix(reason, "owner down: ")
}

// NodeLost says that broker node is gone for this front (the daemon lost
// its forwarding connection there): every connection with a request in
// flight there or a subscription there is closed with 320
// CONNECTION_FORCED (its publishes' outcomes are unknown to its client;
// its subscriptions ended with the connection to their broker), and no
// queue is routed there until the topology names it again.
func (f *Front) NodeLost(nowNs int64, node seam.NodeID, reason string) []Effect {
	f.begin(nowNs)
	if node == f.cfg.Node {
		node = 0
	}
	//detguard:order-independent the predicate only compares; which entries go does not depend on the order
	maps.DeleteFunc(f.routes, func(_ seam.QueueID, n seam.NodeID) bool { return n == node || (node == 0 && n == f.cfg.Node) })
	for _, id := range slices.Clone(f.ids) {
		c := f.conns[id]
		if c == nil {
			continue
		}
		f.redeclare(c, node)
		if !c.uses(node) {
			continue
		}
		f.stats.NodesLost++
		f.stats.Unknown += uint64(c.publishing)
		f.step(c, conn.InBrokerLost{NowNs: nowNs, Reason: reason})
		if f.conns[id] != nil {
			f.end(c, reason)
		}
	}
	return f.finish()
}

// redeclare takes back c's declarations whose command went to node (a
// leader since lost): idempotent, they are asked again here after RetryNs
// (the answer from node, if one ever comes, finds no request waiting).
func (f *Front) redeclare(c *connState, node seam.NodeID) {
	var ids []uint64
	//detguard:order-independent collects request ids, sorted below before anything is emitted
	for id, p := range c.reqs {
		if p.node == node && p.kind == pDeclare {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		d := c.reqs[id].decl
		delete(c.reqs, id)
		d.leader = 0
		f.declareLater(c, d, "the leader n"+strconv.FormatUint(uint64(node), 10)+" was lost")
	}
}

// NodeUnreachable says that broker node could not be reached at all for
// the requests sent there since the last NodeLost or NodeUnreachable (the
// driver's link there never connected): none of them arrived, so each is
// taken back as definitely not delivered. A publish waits for a serving
// owner again (as after a refusal that stored nothing), a declaration is
// asked again here, a subscription is refused (405, the client may
// consume again); no queue stays routed there. The connection stays open.
func (f *Front) NodeUnreachable(nowNs int64, node seam.NodeID, reason string) []Effect {
	f.begin(nowNs)
	if node == f.cfg.Node {
		node = 0
	}
	//detguard:order-independent the predicate only compares; which entries go does not depend on the order
	maps.DeleteFunc(f.routes, func(_ seam.QueueID, n seam.NodeID) bool { return n == node })
	for _, id := range slices.Clone(f.ids) {
		c := f.conns[id]
		if c == nil {
			continue
		}
		f.redeclare(c, node)
		var ids []uint64
		//detguard:order-independent collects request ids, sorted below before anything is emitted
		for rid, p := range c.reqs {
			if p.node == node {
				ids = append(ids, rid)
			}
		}
		slices.Sort(ids)
		for _, rid := range ids {
			p := c.reqs[rid]
			delete(c.reqs, rid)
			switch p.kind {
			case pPublish:
				c.publishing--
				if c.inflight[p.pub.queue]--; c.inflight[p.pub.queue] == 0 {
					delete(c.inflight, p.pub.queue)
				}
				f.unrouted[p.pub.queue] = reason
				f.stats.Rerouted++
				f.deferPublish(c, p.pub)
			case pSubscribe:
				if s := c.sub(p.sub); s != nil {
					c.dropSubID(s.id)
					delete(f.clients, s.client)
				}
				f.unrouted[p.queue] = reason
				f.awaitRoute(c, &routeWait{op: p.subReq, queue: p.queue, firstNs: p.firstNs})
			}
		}
		if c.uses(node) {
			// A subscription there from before: it ended with that link.
			f.stats.NodesLost++
			f.stats.Unknown += uint64(c.publishing)
			f.step(c, conn.InBrokerLost{NowNs: nowNs, Reason: reason})
			if f.conns[id] != nil {
				f.end(c, reason)
			}
		}
	}
	return f.finish()
}

// uses says whether c has a request in flight at node or a subscription
// there.
func (c *connState) uses(node seam.NodeID) bool {
	for _, s := range c.subs {
		if s.node == node {
			return true
		}
	}
	//detguard:order-independent only asks whether any entry matches; nothing is emitted inside
	for _, p := range c.reqs {
		if p.node == node {
			return true
		}
	}
	return false
}

func (f *Front) subscribe(c *connState, q seam.QueueID, x conn.EfSubscribe) {
	f.subscribeAt(c, q, x, f.nowNs)
}

// subscribeAt runs subscription x at its queue's owner, or waits for one
// (awaitRoute); firstNs is when it first looked for an owner.
func (f *Front) subscribeAt(c *connState, q seam.QueueID, x conn.EfSubscribe, firstNs int64) {
	node, ok := f.route(q)
	if !ok {
		f.awaitRoute(c, &routeWait{op: x, queue: q, firstNs: firstNs})
		return
	}
	if node == f.cfg.Node {
		node = 0
	}
	s := &sub{id: x.Sub, queue: x.Queue, noAck: x.NoAck, node: node}
	s.client = f.newClient(c.id, x.Sub)
	c.subs = append(c.subs, s)
	prefetch := int(x.PrefetchCount)
	if x.NoAck || prefetch == 0 || prefetch > f.cfg.PrefetchMax {
		prefetch = f.cfg.PrefetchMax
	}
	f.request(c, s.client, seam.Request{Kind: seam.ReqSubscribe, Queue: q, Prefetch: prefetch, Exclusive: x.Exclusive, Priority: int(x.Priority)},
		&pending{kind: pSubscribe, op: x.Op, sub: x.Sub, subReq: x, queue: q, firstNs: firstNs}, node)
}

func (f *Front) cancel(c *connState, x conn.EfCancel) {
	if s := c.sub(x.Sub); s != nil {
		f.dropSub(c, s)
		f.subscriptionEnded(s.queue)
	}
	f.input(c, conn.InResult{NowNs: f.nowNs, Op: x.Op})
}

// dropSub ends subscription s: its core client is gone, so its unacked
// deliveries return to the queue.
func (f *Front) dropSub(c *connState, s *sub) {
	c.dropSubID(s.id)
	delete(f.clients, s.client)
	f.out = append(f.out, Effect{Kind: EfClientGone, Client: s.client, Node: s.node})
	// The deliveries it held went back to the queue; their entries in
	// held go when the machine settles them (settle finds the client gone).
}

func (f *Front) settle(c *connState, x conn.EfSettle) {
	k := heldKey{queue: x.Queue, handle: x.Handle}
	cl, ok := c.held[k]
	if ref, live := f.clients[cl]; ok && (!live || ref.conn != c.id) {
		delete(c.held, k)
		ok = false
	}
	if !ok {
		return // its subscription is gone: the delivery went back already
	}
	kind := seam.ReqAck // (basic.nack and basic.reject without requeue drop it: no dead-lettering yet)
	if x.How != conn.SettleAck && x.Requeue {
		kind = seam.ReqRequeue
	}
	delete(c.held, k)
	q, ok := f.names[x.Queue]
	if !ok {
		panic("front: a delivery from a queue whose id is unknown")
	}
	var node seam.NodeID
	g := c.getOf(cl)
	if g != nil {
		node = g.node
	} else if s := c.sub(f.clients[cl].sub); s != nil {
		node = s.node
	}
	f.request(c, cl, seam.Request{Kind: kind, Queue: q, Offset: uint64(x.Handle) - 1}, nil, node)
	if g != nil {
		f.getEnd(c, g) // a get's client ends with its delivery settled
	}
}

// cancelled takes the core's end of a subscription: the queue's group
// there was fenced, replaced or retired, so the subscription goes (its
// unacked deliveries went back to the queue in the core), the client is
// told (basic.cancel), and the topology is asked where the queue lives
// now (Forward), so that a consume that follows goes there.
func (f *Front) cancelled(c *connState, ref clientRef, e *seam.Effect) {
	s := c.sub(ref.sub)
	if ref.sub == 0 || s == nil {
		return // ended here already (basic.cancel, its channel closed)
	}
	c.dropSubID(s.id)
	delete(f.clients, s.client)
	f.stats.Cancelled++
	f.input(c, conn.InCancelled{NowNs: f.nowNs, Sub: s.id})
	f.askRoute(c, s.queue)
}

// deliver hands a core delivery to its subscription.
func (f *Front) deliver(c *connState, ref clientRef, e *seam.Effect) {
	s := c.sub(ref.sub)
	if ref.sub == 0 || s == nil {
		panic(fmt.Sprintf("front: a delivery for client %d, which subscribed to nothing", e.Client))
	}
	msg := f.message(s.queue, e)
	handle := msg.Handle
	if s.noAck {
		q := f.names[s.queue]
		f.request(c, s.client, seam.Request{Kind: seam.ReqAck, Queue: q, Offset: e.Offset}, nil, s.node)
	} else {
		c.held[heldKey{queue: s.queue, handle: handle}] = s.client
	}
	f.input(c, conn.InDelivery{NowNs: f.nowNs, Sub: s.id, Queue: s.queue, Message: msg})
}

// message is the client's form of delivery e from queue name.
func (f *Front) message(name string, e *seam.Effect) conn.Message {
	msg := conn.Message{Handle: conn.Handle(e.Offset + 1), Redelivered: e.Redelivered} // handles are never 0
	ex, rk, content, err := decodeBody(e.Body)
	if err != nil {
		// Not a record this front wrote: deliver its bytes as they are.
		content = conn.Content{Body: e.Body}
		ex, rk = "", name
	}
	msg.Exchange, msg.RoutingKey, msg.Content = ex, rk, content
	return msg
}

// unresolvedOp refuses operation op on queue name, which the topology
// cannot give: 404 when there is no such queue, else 405 with why.
func (f *Front) unresolvedOp(c *connState, op conn.OpID, name string, noSuchQueue bool, why string) {
	if noSuchQueue {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: op, Code: wire.NotFound, Text: fmt.Sprintf("no queue '%s' in vhost '/'", name)})
		return
	}
	f.input(c, conn.InResult{NowNs: f.nowNs, Op: op, Code: wire.ResourceLocked, Text: fmt.Sprintf("queue '%s': %s", name, why)})
}

// reply takes the core's answer to one of connection c's requests.
func (f *Front) reply(c *connState, e *seam.Effect) {
	p := c.reqs[e.ReqID]
	if p == nil {
		return // an ack's refusal (no reply is awaited): nothing to tell
	}
	delete(c.reqs, e.ReqID)
	switch p.kind {
	case pPublish:
		c.publishing--
		if c.inflight[p.pub.queue]--; c.inflight[p.pub.queue] == 0 {
			delete(c.inflight, p.pub.queue)
		}
		r := conn.PublishResult{ID: p.pub.id}
		switch {
		case e.Outcome == seam.Confirmed:
			r.Outcome = conn.Confirmed
			c.accepting[p.pub.queue] = true
			f.latency(f.nowNs - p.pub.firstNs)
		case e.Outcome == seam.Failed && (e.Reason == reasonNotReady || e.Reason == reasonBusy):
			if e.Reason == reasonNotReady {
				delete(c.accepting, p.pub.queue)
			}
			f.stats.Retried++
			f.retryLater(c, p.pub, f.cfg.RetryNs)
			return
		case e.Outcome == seam.Failed && f.cfg.Forward && staleRoute(e.Reason):
			// The broker it went to does not serve the queue (a recovery
			// moved it, or is under way): nothing was stored; ask the
			// topology again and send it where it names.
			if n, ok := f.routes[p.pub.queue]; ok && (n == p.node || (p.node == 0 && n == f.cfg.Node)) {
				delete(f.routes, p.pub.queue)
			}
			f.unrouted[p.pub.queue] = e.Reason
			delete(c.accepting, p.pub.queue)
			f.stats.Rerouted++
			f.deferPublish(c, p.pub)
			return
		case e.Outcome == seam.Failed:
			r.Outcome, r.Text = conn.Failed, e.Reason
		default:
			r.Outcome, r.Text = conn.Unknown, e.Reason
		}
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{r}})
		if r.Outcome == conn.Confirmed && len(c.retry) > 0 {
			// The owner takes this connection's publishes now: those
			// held behind this one go at once.
			f.retryPublishes(c)
		}
		f.unpark(c)
	case pTopology:
		f.topologyAnswer(c, p.name, e, p.untilNs)
	case pRoute:
		delete(c.routing, p.name)
		f.learnRoute(e)
	case pDeclare:
		f.declareAnswer(c, p.decl, e)
	case pCatalog:
		f.catalogAnswer(c, p.cat, e)
	case pPublishRoute:
		f.publishRouteAnswer(c, p.routed, e)
	case pGetCount:
		f.getCounted(c, p.get, e)
	case pGetSub:
		f.getSubscribed(c, p.get, e)
	case pPurge:
		f.purged(c, p.purge, e)
	case pSubscribe:
		s := c.sub(p.sub)
		if e.Outcome == seam.Confirmed {
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.op})
			return
		}
		if s != nil {
			c.dropSubID(s.id)
			delete(f.clients, s.client)
		}
		if e.Refusal == seam.RefusalExclusive {
			// RabbitMQ's answer and words for a queue in exclusive use.
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.op, Code: wire.AccessRefused,
				Text: fmt.Sprintf("queue '%s' in vhost '/' in exclusive use", p.subReq.Queue)})
			return
		}
		if f.cfg.Forward && staleRoute(e.Reason) {
			// The broker it went to does not serve the queue (any more,
			// or yet): nothing was set up there; wait for the owner the
			// topology names next.
			if n, ok := f.routes[p.queue]; ok && (n == p.node || (p.node == 0 && n == f.cfg.Node)) {
				delete(f.routes, p.queue)
			}
			f.unrouted[p.queue] = e.Reason
			f.awaitRoute(c, &routeWait{op: p.subReq, queue: p.queue, firstNs: p.firstNs})
			return
		}
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.op, Code: wire.ResourceLocked, Text: "cannot consume: " + e.Reason})
	}
}

// servable says whether a topology answer lets this broker serve the
// queue: confirmed with this node as the owner.
func (f *Front) servable(e *seam.Effect) (ok bool, why string) {
	if e.Outcome != seam.Confirmed {
		return false, e.Reason
	}
	if seam.NodeID(e.Offset) != f.cfg.Node {
		if f.cfg.Forward {
			return true, "" // its owner serves it; requests are forwarded there
		}
		return false, fmt.Sprintf("its owner is n%d; forwarding to another broker is off (a single broker)", e.Offset)
	}
	if f.cfg.Serves != nil && !f.cfg.Serves(e.Queue) {
		return false, reasonNotServed
	}
	return true, ""
}

// learnRoute takes a topology answer (Forward): the queue's id, and its
// owner while that owner serves it; otherwise why none does.
func (f *Front) learnRoute(e *seam.Effect) {
	if e.Queue == 0 {
		return // no such queue
	}
	ok, why := f.servable(e)
	if ok {
		f.routes[e.Queue] = seam.NodeID(e.Offset)
		delete(f.unrouted, e.Queue)
		return
	}
	delete(f.routes, e.Queue)
	f.unrouted[e.Queue] = why
}

// reaskDue asks the topology again for the names whose time came.
func (f *Front) reaskDue(c *connState) {
	var due []reask
	c.reasks = slices.DeleteFunc(c.reasks, func(r reask) bool {
		if r.atNs <= f.nowNs {
			due = append(due, r)
			return true
		}
		return false
	})
	for _, r := range due {
		f.request(c, c.client, seam.Request{Kind: seam.ReqTopology, Body: []byte(r.name)}, &pending{kind: pTopology, name: r.name, untilNs: r.untilNs}, 0)
	}
}

// topologyAnswer resolves the operations waiting for name.
func (f *Front) topologyAnswer(c *connState, name string, e *seam.Effect, untilNs int64) {
	if e.Outcome == seam.Failed && e.Reason == seam.ReasonCatchingUp {
		// This broker has not applied yet what it held committed before
		// its start: the queue may exist. Its operations wait (a publish
		// acked as unroutable would be lost), asked again every RetryNs.
		if untilNs == 0 {
			untilNs = f.nowNs + f.cfg.RouteWaitNs
		}
		if f.nowNs+f.cfg.RetryNs <= untilNs {
			c.reasks = append(c.reasks, reask{name: name, atNs: f.nowNs + f.cfg.RetryNs, untilNs: untilNs})
			return
		}
	}
	ops := c.resolving[name]
	delete(c.resolving, name)
	if e.Queue != 0 {
		f.learnLife(name, e)
	}
	if f.cfg.Forward && e.Queue != 0 {
		// The queue exists: its publishes wait for a serving owner if it
		// has none now (a recovery), its subscriptions are refused then.
		f.names[name] = e.Queue
		f.learnRoute(e)
		for _, op := range ops {
			f.resolved(c, e.Queue, name, op)
		}
		return
	}
	ok, why := f.servable(e)
	if ok {
		f.names[name] = e.Queue
		for _, op := range ops {
			f.resolved(c, e.Queue, name, op)
		}
		return
	}
	noSuch := e.Outcome == seam.Failed && e.Reason == "no such queue"
	for _, op := range ops {
		f.unresolved(c, op, noSuch, why)
	}
}

// declareStart begins a queue.declare.
func (f *Front) declareStart(c *connState, x conn.EfDeclareQueue) {
	d := &declare{op: x.Op, spec: x.Queue, untilNs: f.nowNs + f.cfg.DeclareTimeoutNs}
	if !x.Queue.Passive {
		cmd, err := f.declareCommand(c, x.Queue)
		if err != nil {
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: x.Op, Code: wire.PreconditionFailed, Text: err.Error()})
			return
		}
		d.cmd, d.meta = cmd.Encode(nil), true
	}
	f.declareAsk(c, d)
}

// declareCommand is the metadata command of a declaration.
func (f *Front) declareCommand(c *connState, q conn.QueueSpec) (metadata.Command, error) {
	cmd := metadata.Command{Kind: metadata.DeclareQueue, Queue: q.Name, Replicas: int(q.Replicas),
		Policy: seam.MajorityDurable, MinInsync: int(q.MinInSync)}
	f.declareLife(c, q, &cmd)
	if cmd.Replicas == 0 {
		// One broker: one replica. A cluster: three, or as many brokers
		// as there are below that (a quorum queue's default size).
		cmd.Replicas = 1
		if f.cfg.Forward {
			cmd.Replicas = min(3, f.cfg.Brokers)
		}
	}
	if cmd.MinInsync == 0 {
		cmd.MinInsync = 1
	}
	if q.Policy != "" {
		// The core's policies decide (isr once the core has it).
		p, err := seam.ParsePolicy(string(q.Policy))
		if err != nil {
			return cmd, fmt.Errorf("x-sluice-policy: %w", err)
		}
		cmd.Policy = p
	}
	if cmd.Replicas > f.cfg.Brokers {
		return cmd, fmt.Errorf("x-sluice-replicas %d: this cluster has %d broker(s)", cmd.Replicas, f.cfg.Brokers)
	}
	if err := cmd.Validate(); err != nil {
		return cmd, err
	}
	return cmd, nil
}

// declareAsk sends a declaration's next request: its command, or a
// topology question.
func (f *Front) declareAsk(c *connState, d *declare) {
	if d.counting {
		f.request(c, c.client, seam.Request{Kind: seam.ReqCount, Queue: d.queue},
			&pending{kind: pDeclare, decl: d, untilNs: min(d.untilNs, f.nowNs+countWaitNs)}, d.node)
		return
	}
	if d.meta {
		f.request(c, c.client, seam.Request{Kind: seam.ReqMeta, Body: d.cmd}, &pending{kind: pDeclare, decl: d}, d.leader)
		return
	}
	f.request(c, c.client, seam.Request{Kind: seam.ReqTopology, Body: []byte(d.spec.Name)}, &pending{kind: pDeclare, decl: d}, 0)
}

// declareLater asks again after RetryNs, or gives up (why) past the
// declaration's time. A count under way is asked again from the topology
// on: the owner it went to may be gone.
func (f *Front) declareLater(c *connState, d *declare, why string) {
	d.counting = false
	if f.nowNs+f.cfg.RetryNs > d.untilNs {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.ResourceLocked,
			Text: fmt.Sprintf("queue '%s' not ready in time: %s", d.spec.Name, why)})
		return
	}
	d.atNs = f.nowNs + f.cfg.RetryNs
	c.timed = append(c.timed, d)
}

func (f *Front) declareAnswer(c *connState, d *declare, e *seam.Effect) {
	if d.counting {
		if e.Outcome != seam.Confirmed {
			// The owner moved or fenced it since the topology answered:
			// ask where it lives again.
			f.declareLater(c, d, e.Reason)
			return
		}
		if d.del != nil {
			f.deleteCounted(c, d, e)
			return
		}
		if d.spec.Exclusive && !d.spec.Passive && !slices.ContainsFunc(c.exclusive, func(x declared) bool { return x.name == d.spec.Name }) {
			c.exclusive = append(c.exclusive, declared{name: d.spec.Name, incarnation: e.Tag})
		}
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, MessageCount: uint32(min(e.Offset, math.MaxUint32)), ConsumerCount: uint32(e.Count),
			Queue: d.spec.Name})
		return
	}
	if d.meta {
		switch {
		case e.Outcome == seam.Confirmed && d.del != nil:
			delete(f.names, d.spec.Name)
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, MessageCount: d.messages})
		case e.Outcome == seam.Failed && d.del != nil && e.Offset != 0:
			// Committed and refused: the queue is no longer the
			// incarnation counted (deleted, or deleted and declared
			// again meanwhile): start over.
			d.meta = false
			f.declareLater(c, d, e.Reason)
		case e.Outcome == seam.Confirmed:
			d.meta = false
			c.seenIndex = max(c.seenIndex, e.Offset)
			if d.spec.ServerNamed && d.spec.Name == "" {
				// The catalogue named it by the entry that declared it.
				d.spec.Name = metadata.ServerName(e.Offset)
			}
			f.declareAsk(c, d)
		case f.cfg.Forward && e.Outcome == seam.Failed && f.leaderMoved(d, e.Reason):
			// Another broker leads: the command goes there at once.
			f.declareAsk(c, d)
		case e.Outcome == seam.Unknown, strings.HasPrefix(e.Reason, "not the leader"):
			// Idempotent: asking again commits it once ("exists" after).
			// A leader named before may be gone: ask this broker again.
			d.leader = 0
			f.declareLater(c, d, e.Reason)
		case e.Offset != 0 && e.Refusal == seam.RefusalLocked:
			f.refuseLocked(c, d.op, d.spec.Name)
		case e.Offset != 0:
			// Committed and refused by the metadata: a conflict.
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.PreconditionFailed,
				Text: fmt.Sprintf("inequivalent arguments for queue '%s': %s", d.spec.Name, e.Reason)})
		default:
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.InternalError,
				Text: fmt.Sprintf("declaring queue '%s': %s", d.spec.Name, e.Reason)})
		}
		return
	}
	if e.Queue != 0 {
		f.learnLife(d.spec.Name, e)
		if f.lockedFor(c, d.spec.Name) {
			f.refuseLocked(c, d.op, d.spec.Name)
			return
		}
	}
	ok, why := f.servable(e)
	if ok {
		f.names[d.spec.Name] = e.Queue
		if f.cfg.Forward {
			f.learnRoute(e)
		}
		// declare-ok reports the queue's ready messages and consumers,
		// which only its owner knows.
		d.counting, d.queue, d.node = true, e.Queue, f.cfg.Node
		if n, ok := f.route(e.Queue); ok {
			d.node = n
		}
		f.declareAsk(c, d)
		return
	} else if e.Outcome == seam.Confirmed && why != reasonNotServed {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.ResourceLocked, Text: fmt.Sprintf("queue '%s': %s", d.spec.Name, why)})
		return
	}
	switch {
	case e.Reason == "not placed yet", e.Reason == seam.ReasonCatchingUp, e.Outcome == seam.Confirmed && why == reasonNotServed:
		f.declareLater(c, d, why)
	case recovering(e.Reason) || (f.cfg.Forward && e.Reason == "no such queue" && !d.spec.Passive):
		// A recovery under way (a restart's, on a single broker too), or
		// a declaration the leader committed that this broker has not
		// applied yet: ask again.
		f.declareLater(c, d, e.Reason)
	case e.Reason == "no such queue" && d.del != nil:
		// queue.delete is idempotent (RabbitMQ's): a queue that does not
		// exist is as deleted, with no message.
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op})
	case e.Reason == "no such queue" && d.spec.Passive:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.NotFound, Text: fmt.Sprintf("no queue '%s' in vhost '/'", d.spec.Name)})
	case e.Reason == "no such queue":
		// Committed, then deleted: say so rather than guess.
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.ResourceLocked, Text: fmt.Sprintf("queue '%s' was deleted while declared", d.spec.Name)})
	default:
		// Fenced (a pending transition that only recovery activates).
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.ResourceLocked, Text: fmt.Sprintf("queue '%s' cannot be served: %s", d.spec.Name, e.Reason)})
	}
}

// deleteCounted takes the owner's count for queue.delete d: its conditions
// are checked on it (406, RabbitMQ's words), then the metadata is asked
// to delete the incarnation the owner serves.
func (f *Front) deleteCounted(c *connState, d *declare, e *seam.Effect) {
	d.counting = false
	switch {
	case d.del.IfUnused && e.Count > 0:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.PreconditionFailed, Text: fmt.Sprintf("queue '%s' in vhost '/' in use", d.spec.Name)})
		return
	case d.del.IfEmpty && e.Offset > 0:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.PreconditionFailed, Text: fmt.Sprintf("queue '%s' in vhost '/' is not empty", d.spec.Name)})
		return
	case e.Tag == 0:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: d.op, Code: wire.NotImplemented, Text: fmt.Sprintf("queue '%s' is configured, not declared: it cannot be deleted", d.spec.Name)})
		return
	}
	d.messages = uint32(min(e.Offset, math.MaxUint32))
	cmd := metadata.Command{Kind: metadata.DeleteQueue, Queue: d.spec.Name, Incarnation: e.Tag}
	d.cmd = cmd.Encode(nil)
	d.meta = true
	f.declareAsk(c, d)
}

// leaderMoved says whether a refusal names a leader other than the broker
// declaration d's command went to, and if so sends d there next.
func (f *Front) leaderMoved(d *declare, reason string) bool {
	return f.leaderMovedTo(&d.leader, reason)
}

// takeDue removes from list, in order, the items whose time (at) came by
// nowNs, and returns what is left and them.
func takeDue[T any](list []T, nowNs int64, at func(T) int64) (left, due []T) {
	left = slices.DeleteFunc(list, func(x T) bool {
		if at(x) <= nowNs {
			due = append(due, x)
			return true
		}
		return false
	})
	return left, due
}

// leaderNamed returns the leader a "not the leader: leader=N" refusal
// names (core/ctrl), 0 if none.
func leaderNamed(reason string) seam.NodeID {
	_, after, ok := strings.Cut(reason, "leader=")
	if !ok || !strings.HasPrefix(reason, "not the leader") {
		return 0
	}
	n := uint64(0)
	for i := 0; i < len(after) && after[i] >= '0' && after[i] <= '9'; i++ {
		n = n*10 + uint64(after[i]-'0')
		if n > math.MaxUint32 {
			return 0
		}
	}
	return seam.NodeID(n)
}

// sub returns subscription id of c, or nil.
func (c *connState) sub(id conn.SubID) *sub {
	i, ok := slices.BinarySearchFunc(c.subs, id, func(s *sub, id conn.SubID) int {
		switch {
		case s.id < id:
			return -1
		case s.id > id:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return c.subs[i]
}

func (c *connState) dropSubID(id conn.SubID) {
	c.subs = slices.DeleteFunc(c.subs, func(s *sub) bool { return s.id == id })
}

// latency counts one confirm latency.
func (f *Front) latency(ns int64) {
	i := 0
	for i < len(LatencyBoundsNs) && ns > LatencyBoundsNs[i] {
		i++
	}
	f.stats.LatencyCounts[i]++
	f.stats.LatencySumNs += ns
}
