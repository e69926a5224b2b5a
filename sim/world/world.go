package world

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/sim/check"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// Options say how to run a world beyond its profile.
type Options struct {
	Trace       io.Writer // nil: hash the trace only
	TraceFromNs int64
}

// Result is what one run produced.
type Result struct {
	Seed      uint64
	Profile   Profile
	Events    uint64 // events processed
	SimNs     int64  // simulated time at the end
	TraceHash string
	Lines     uint64
	Failures  []check.Failure
	Failed    int // failures found in all
	Stats     Stats
}

// Stats counts what happened in a run.
type Stats struct {
	Publishes, Confirmed, FailedPubs, Unknown uint64
	Deliveries, Redeliveries, Acks            uint64
	Crashes, ConsumerLosses                   uint64
}

// storageQueue holds one log's storage effects in order; the head runs.
type storageQueue struct {
	ops  []core.Effect
	head int
	busy bool
}

type broker struct {
	id      core.NodeID
	up      bool
	inc     uint64 // incarnation: bumps on every crash
	fs      *memfs.FS
	queues  []core.QueueConfig
	logs    []*seglog.Log
	storage []storageQueue
	drv     *driver.Driver
	restart bool // a restart is scheduled
}

type clientKind uint8

const (
	publisher clientKind = 1
	consumer  clientKind = 2
)

type inflightPub struct {
	reqID uint64
	key   uint64
}

type client struct {
	kind     clientKind
	idx      int32
	q        core.QueueConfig
	owner    int32 // broker index of the queue's owner
	conn     core.ClientID
	connInc  uint64 // the owner's incarnation when connected
	reqID    uint64
	seq      uint64
	inflight []inflightPub
}

// World is one simulated cluster.
type World struct {
	seed    uint64
	prof    Profile
	now     int64
	events  eventHeap
	brokers []*broker
	clients []*client
	conns   map[core.ClientID]int32 // open connections
	// connKind: the kind of client behind every connection ever opened
	connKind map[core.ClientID]clientKind
	nextCID  core.ClientID
	checker  *check.Checker
	trace    *driver.Trace
	stats    Stats
	nEvents  uint64
	working  bool // workload phase

	rNet, rDisk, rCli, rFault *prng.Rand
	epochBuf                  []core.EpochStart
	note                      []byte
}

// Run runs one world for seed with profile p.
func Run(seed uint64, p Profile, opts Options) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	w := newWorld(seed, p, opts)
	if err := w.runGuarded(); err != "" {
		r := w.result()
		r.Failures = append(r.Failures, check.Failure{Checker: "panic", AtNs: w.now, Detail: err})
		r.Failed++
		return r, nil
	}
	return w.result(), nil
}

// runGuarded runs the world and turns a panic (a broken assertion in the
// core, the storage code or the simulator) into a reported failure, so a
// sweep names the seed instead of dying.
func (w *World) runGuarded() (panicked string) {
	defer func() {
		if v := recover(); v != nil {
			panicked = fmt.Sprint(v)
		}
	}()
	w.run()
	return ""
}

func newWorld(seed uint64, p Profile, opts Options) *World {
	w := &World{
		seed:     seed,
		prof:     p,
		conns:    map[core.ClientID]int32{},
		connKind: map[core.ClientID]clientKind{},
		trace:    driver.NewTrace(opts.Trace, opts.TraceFromNs),
		rNet:     prng.New(prng.Derive(seed, "net")),
		rDisk:    prng.New(prng.Derive(seed, "disk")),
		rCli:     prng.New(prng.Derive(seed, "clients")),
		rFault:   prng.New(prng.Derive(seed, "faults")),
		working:  true,
	}
	var specs []check.QueueSpec
	for _, q := range p.Queues {
		specs = append(specs, check.QueueSpec{Queue: q.Queue, Replicas: q.Replicas, Owner: q.Owner, W: q.Policy.WriteQuorum(len(q.Replicas))})
	}
	w.checker = check.New(specs)
	for i := 0; i < p.Brokers; i++ {
		b := &broker{id: core.NodeID(i + 1), fs: memfs.New()}
		for _, q := range p.Queues {
			for _, n := range q.Replicas {
				if n == b.id {
					b.queues = append(b.queues, q)
				}
			}
		}
		w.brokers = append(w.brokers, b)
	}
	for _, q := range p.Queues {
		for i := 0; i < p.PublishersPerQueue; i++ {
			w.clients = append(w.clients, &client{kind: publisher, q: q, owner: int32(q.Owner - 1)})
		}
		for i := 0; i < p.ConsumersPerQueue; i++ {
			w.clients = append(w.clients, &client{kind: consumer, q: q, owner: int32(q.Owner - 1)})
		}
	}
	for i, c := range w.clients {
		c.idx = int32(i)
	}
	return w
}

func (w *World) schedule(at int64, kind evKind) *event {
	i, e := w.events.alloc()
	e.at, e.kind = at, kind
	w.events.push(i)
	return e
}

func (w *World) run() {
	for _, b := range w.brokers {
		w.startBroker(b)
	}
	for _, c := range w.clients {
		w.schedule(w.now+w.rCli.Range(0, 1e6), evConnect).cli = c.idx
		if c.kind == publisher && w.prof.PublishesPerSec > 0 {
			w.schedule(w.now+w.publishGap(), evPublish).cli = c.idx
		}
		if c.kind == consumer && w.prof.ConsumerLossPerMin > 0 {
			w.schedule(w.now+expGap(w.rFault, w.prof.ConsumerLossPerMin), evConsumerLoss).cli = c.idx
		}
	}
	if w.prof.CrashesPerMin > 0 {
		w.schedule(expGap(w.rFault, w.prof.CrashesPerMin), evCrash).node = -1
	}
	endWork := w.prof.DurationMs * 1e6
	w.schedule(endWork, evPhase)
	endAll := endWork + w.prof.DrainMs*1e6
	for len(w.events.heap) > 0 {
		i := w.events.pop()
		e := &w.events.slab[i]
		if e.at > endAll {
			w.events.release(i)
			break
		}
		w.now = e.at
		w.nEvents++
		w.handle(e)
		w.events.release(i)
	}
	w.finish()
}

// expGap draws an exponential gap for a rate of perMin events a minute.
func expGap(r *prng.Rand, perMin float64) int64 {
	u := r.Float64()
	if u < 1e-12 {
		u = 1e-12
	}
	return int64(-math.Log(u) * 60e9 / perMin)
}

func (w *World) publishGap() int64 {
	mean := int64(1e9) / int64(w.prof.PublishesPerSec)
	return mean/2 + w.rCli.Int63n(mean+1)
}

func (w *World) netDelay() int64 {
	return w.rNet.Range(w.prof.NetLatencyUsMin, w.prof.NetLatencyUsMax) * 1000
}

func (w *World) notef(format string, args ...any) {
	w.trace.Note(w.now, fmt.Sprintf(format, args...))
}

func (w *World) handle(e *event) {
	switch e.kind {
	case evMsg:
		b := w.brokers[e.node]
		if b.up {
			w.step(b, &core.Input{Kind: core.InMessage, NowNs: w.now, From: e.from, Msg: e.msg})
		}
	case evStorage:
		b := w.brokers[e.node]
		if b.up && b.inc == e.inc {
			w.completeStorage(b, int(e.q))
		}
	case evTick:
		b := w.brokers[e.node]
		if b.up && b.inc == e.inc {
			w.step(b, &core.Input{Kind: core.InTick, NowNs: w.now})
		}
	case evRequest:
		b := w.brokers[e.node]
		if b.up && b.inc == e.inc {
			w.step(b, &core.Input{Kind: core.InClient, NowNs: w.now, Client: core.ClientID(e.from), Req: e.req})
		}
	case evClientGone:
		b := w.brokers[e.node]
		if b.up && b.inc == e.inc {
			w.step(b, &core.Input{Kind: core.InClientGone, NowNs: w.now, Client: core.ClientID(e.from)})
		}
	case evReply:
		w.clientReceive(e)
	case evPublish:
		w.publish(w.clients[e.cli])
	case evAck:
		c := w.clients[e.cli]
		if c.conn == core.ClientID(e.inc) {
			c.reqID++
			w.request(c, core.Request{Kind: core.ReqAck, ID: c.reqID, Queue: c.q.Queue, Offset: e.eff.Offset})
			w.stats.Acks++
		}
	case evConnect:
		w.connect(w.clients[e.cli])
	case evConsumerLoss:
		c := w.clients[e.cli]
		if w.working {
			if c.conn != 0 {
				w.stats.ConsumerLosses++
				w.notef("consumer-loss c=%d", c.conn)
				w.disconnect(c, true)
				w.schedule(w.now+w.rFault.Range(1e6, 100e6), evConnect).cli = c.idx
			}
			w.schedule(w.now+expGap(w.rFault, w.prof.ConsumerLossPerMin), evConsumerLoss).cli = c.idx
		}
	case evCrash:
		if w.working {
			w.crashSome()
			w.schedule(w.now+expGap(w.rFault, w.prof.CrashesPerMin), evCrash).node = -1
		}
	case evRestart:
		b := w.brokers[e.node]
		b.restart = false
		if !b.up {
			w.startBroker(b)
		}
	case evPhase:
		w.working = false
		w.notef("drain: faults off, every broker up, publishers stop")
		for _, b := range w.brokers {
			if !b.up && !b.restart {
				w.startBroker(b)
			}
		}
	default:
		panic("world: unknown event")
	}
}

func (w *World) step(b *broker, in *core.Input) {
	b.drv.Step(in)
}

// --- brokers ---

func logDir(q core.QueueID) string { return "q" + strconv.FormatUint(uint64(q), 10) }

func (w *World) startBroker(b *broker) {
	b.up = true
	b.logs = b.logs[:0]
	b.storage = make([]storageQueue, len(b.queues))
	var logs []core.LogState
	for _, q := range b.queues {
		l, st, err := driver.OpenLog(b.fs, logDir(q.Queue), q.Queue, seglog.Options{SegmentBytesMax: 8 << 20})
		if err != nil {
			panic(fmt.Sprintf("world: n%d cannot open log of queue %d: %v", b.id, q.Queue, err))
		}
		b.logs = append(b.logs, l)
		logs = append(logs, st)
		w.checker.Durable(b.id, q.Queue, st.End, st.Epochs)
	}
	w.notef("start n%d inc=%d", b.id, b.inc)
	b.drv = driver.New(core.Config{Node: b.id, Queues: b.queues}, (*worldEnv)(w), w.trace)
	b.drv.Step(&core.Input{Kind: core.InStart, NowNs: w.now, Logs: logs})
}

// crashSome crashes one running broker, if more than none run.
func (w *World) crashSome() {
	var up []*broker
	for _, b := range w.brokers {
		if b.up {
			up = append(up, b)
		}
	}
	if len(up) == 0 {
		return
	}
	b := up[w.rFault.Intn(len(up))]
	w.stats.Crashes++
	w.notef("crash n%d (power loss)", b.id)
	b.up = false
	b.inc++
	b.fs.Crash(w.rFault)
	b.logs = b.logs[:0]
	b.storage = nil
	b.drv = nil
	for _, c := range w.clients {
		if c.conn != 0 && c.owner == int32(b.id-1) {
			w.disconnect(c, false)
			w.schedule(w.now+w.rCli.Range(10e6, 200e6), evConnect).cli = c.idx
		}
	}
	b.restart = true
	w.schedule(w.now+w.rFault.Range(1e6, w.prof.RestartDelayMsMax*1e6), evRestart).node = int32(b.id - 1)
}

func (w *World) queueIndex(b *broker, q core.QueueID) int {
	for i := range b.queues {
		if b.queues[i].Queue == q {
			return i
		}
	}
	panic("world: broker has no such queue")
}

func (w *World) storageDelay(op core.StorageOp) int64 {
	switch op {
	case core.OpSync:
		return w.rDisk.Range(w.prof.SyncUsMin, w.prof.SyncUsMax) * 1000
	case core.OpRead:
		return w.rDisk.Range(10, 100) * 1000
	}
	return w.rDisk.Range(1, 10) * 1000
}

func (w *World) kickStorage(b *broker, qi int) {
	s := &b.storage[qi]
	if s.busy || s.head == len(s.ops) {
		return
	}
	s.busy = true
	e := w.schedule(w.now+w.storageDelay(s.ops[s.head].Op), evStorage)
	e.node, e.q, e.inc = int32(b.id-1), int32(qi), b.inc
}

func (w *World) completeStorage(b *broker, qi int) {
	s := &b.storage[qi]
	op := s.ops[s.head]
	s.ops[s.head] = core.Effect{}
	s.head++
	if s.head == len(s.ops) {
		s.ops, s.head = s.ops[:0], 0
	}
	s.busy = false
	l := b.logs[qi]
	done := driver.Exec(l, &op)
	if done.Err == "" {
		switch op.Op {
		case core.OpSync:
			w.epochBuf = w.epochBuf[:0]
			for _, e := range l.Epochs() {
				w.epochBuf = append(w.epochBuf, core.EpochStart{Epoch: e.Epoch, Offset: e.Offset})
			}
			w.checker.Durable(b.id, op.Queue, l.End(), w.epochBuf)
		case core.OpTruncate:
			w.checker.Truncated(b.id, op.Queue, op.Offset)
		}
	}
	w.step(b, &core.Input{Kind: core.InStorage, NowNs: w.now, Done: done})
	if b.up && b.storage != nil {
		w.kickStorage(b, qi)
	}
}

// --- clients ---

func (w *World) connect(c *client) {
	if c.conn != 0 {
		return
	}
	b := w.brokers[c.owner]
	if !b.up {
		w.schedule(w.now+w.rCli.Range(10e6, 100e6), evConnect).cli = c.idx
		return
	}
	w.nextCID++
	c.conn, c.connInc = w.nextCID, b.inc
	w.conns[c.conn] = c.idx
	w.connKind[c.conn] = c.kind
	if c.kind == consumer {
		c.reqID++
		w.request(c, core.Request{Kind: core.ReqSubscribe, ID: c.reqID, Queue: c.q.Queue, Prefetch: w.prof.Prefetch})
	}
}

// disconnect closes c's connection; in-flight publishes end unknown.
func (w *World) disconnect(c *client, notify bool) {
	for _, p := range c.inflight {
		w.checker.PublishEnded(w.now, p.key, core.Unknown, c.q.Queue, 0)
		w.stats.Unknown++
	}
	c.inflight = c.inflight[:0]
	delete(w.conns, c.conn)
	if notify {
		e := w.schedule(w.now+w.netDelay(), evClientGone)
		e.node, e.inc, e.from = c.owner, c.connInc, core.NodeID(c.conn)
	}
	c.conn = 0
}

func (w *World) request(c *client, req core.Request) {
	e := w.schedule(w.now+w.netDelay(), evRequest)
	e.node, e.inc, e.from, e.req = c.owner, c.connInc, core.NodeID(c.conn), req
}

func publishKey(c *client, seq uint64) uint64 { return uint64(c.idx)<<40 | seq }

// KeyOf returns the publish key a simulated body carries.
func KeyOf(body []byte) uint64 {
	if len(body) < 8 {
		return math.MaxUint64
	}
	return binary.LittleEndian.Uint64(body)
}

func (w *World) publish(c *client) {
	if !w.working {
		return
	}
	w.schedule(w.now+w.publishGap(), evPublish).cli = c.idx
	if c.conn == 0 || len(c.inflight) >= w.prof.InflightMax {
		return
	}
	c.seq++
	key := publishKey(c, c.seq)
	n := int(w.rCli.Range(int64(w.prof.BodyBytesMin), int64(w.prof.BodyBytesMax)))
	body := make([]byte, n)
	binary.LittleEndian.PutUint64(body, key)
	c.reqID++
	c.inflight = append(c.inflight, inflightPub{reqID: c.reqID, key: key})
	w.checker.PublishStarted(key)
	w.stats.Publishes++
	w.request(c, core.Request{Kind: core.ReqPublish, ID: c.reqID, Queue: c.q.Queue, Body: body})
}

func (w *World) clientReceive(e *event) {
	ci, ok := w.conns[core.ClientID(e.inc)]
	if !ok {
		return // the connection closed: the reply is lost with it
	}
	c := w.clients[ci]
	switch e.eff.Kind {
	case core.EfReply:
		if c.kind != publisher {
			return
		}
		for i, p := range c.inflight {
			if p.reqID == e.eff.ReqID {
				c.inflight = append(c.inflight[:i], c.inflight[i+1:]...)
				w.checker.PublishEnded(w.now, p.key, e.eff.Outcome, e.eff.Queue, e.eff.Offset)
				switch e.eff.Outcome {
				case core.Confirmed:
					w.stats.Confirmed++
				case core.Failed:
					w.stats.FailedPubs++
				default:
					w.stats.Unknown++
				}
				return
			}
		}
	case core.EfDeliver:
		w.stats.Deliveries++
		if e.eff.Redelivered {
			w.stats.Redeliveries++
		}
		a := w.schedule(w.now+w.rCli.Int63n(w.prof.AckDelayUsMax*1000+1), evAck)
		a.cli, a.inc = c.idx, uint64(c.conn)
		a.eff.Offset = e.eff.Offset
	}
}

// --- the driver's environment ---

type worldEnv World

func (env *worldEnv) Send(from, to core.NodeID, m *core.Message) {
	w := (*World)(env)
	e := w.schedule(w.now+w.netDelay(), evMsg)
	e.node, e.from, e.msg = int32(to-1), from, *m
}

func (env *worldEnv) Client(from core.NodeID, eff *core.Effect) {
	w := (*World)(env)
	// Judge every reply and delivery as it leaves the broker, whether or not
	// its connection is still open to receive it.
	switch eff.Kind {
	case core.EfReply:
		if w.connKind[eff.Client] == publisher && eff.Outcome == core.Confirmed {
			w.checker.ConfirmEmitted(w.now, eff.Queue, eff.Offset)
		}
	case core.EfDeliver:
		w.checker.DeliverEmitted(w.now, eff.Queue, eff.Offset, KeyOf(eff.Body), eff.Redelivered)
	}
	if _, ok := w.conns[eff.Client]; !ok {
		return
	}
	e := w.schedule(w.now+w.netDelay(), evReply)
	e.inc, e.eff = uint64(eff.Client), *eff
}

func (env *worldEnv) Storage(node core.NodeID, eff *core.Effect) {
	w := (*World)(env)
	b := w.brokers[node-1]
	qi := w.queueIndex(b, eff.Queue)
	b.storage[qi].ops = append(b.storage[qi].ops, *eff)
	w.kickStorage(b, qi)
}

func (env *worldEnv) Deadline(node core.NodeID, atNs int64) {
	w := (*World)(env)
	b := w.brokers[node-1]
	e := w.schedule(max(atNs, w.now), evTick)
	e.node, e.inc = int32(node-1), b.inc
}

// --- the end ---

func (w *World) finish() {
	w.notef("end")
	var pending uint64
	consumed := map[core.QueueID]bool{}
	for _, c := range w.clients {
		pending += uint64(len(c.inflight))
		if c.kind == consumer {
			consumed[c.q.Queue] = true
		}
	}
	drained := func(q core.QueueID) bool { return pending == 0 && consumed[q] }
	read := func(n core.NodeID, q core.QueueID, o uint64) (record.Record, bool) {
		b := w.brokers[n-1]
		if !b.up {
			return record.Record{}, false
		}
		l := b.logs[w.queueIndex(b, q)]
		if o < l.Start() || o >= l.End() {
			return record.Record{}, false
		}
		recs, err := l.Read(o, 1, 1<<20)
		if err != nil || len(recs) == 0 {
			return record.Record{}, false
		}
		return recs[0], true
	}
	w.checker.Final(w.now, read, KeyOf, drained)
	if pending > 0 {
		w.checker.Liveness(w.now, fmt.Sprintf("%d publishes still unresolved after the drain", pending))
	}
}

func (w *World) result() Result {
	return Result{
		Seed:      w.seed,
		Profile:   w.prof,
		Events:    w.nEvents,
		SimNs:     w.now,
		TraceHash: w.trace.Hash(),
		Lines:     w.trace.Lines(),
		Failures:  w.checker.Failures(),
		Failed:    w.checker.FailureCount(),
		Stats:     w.stats,
	}
}
