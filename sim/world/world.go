package world

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/queue"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/core/wire"
	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/sim/check"
	"github.com/sluicemq/sluice/sim/linear"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/metamem"
	"github.com/sluicemq/sluice/sim/prng"
)

// Options say how to run a world beyond its profile. None of them changes
// what the run does: the same seed and profile give the same trace and
// result whatever the options (Interrupt can only cut the run short).
type Options struct {
	Trace       io.Writer // nil: hash the trace only
	TraceFilter driver.TraceFilter
	// Interrupt, if set, is asked every interruptEvents events whether to
	// stop; when it says yes, Run returns ErrInterrupted and no verdict.
	// A sweep's wall-clock timeout and Ctrl-C use it: they decide only
	// whether a seed is reported at all, never what it found.
	Interrupt func() bool
}

// ErrInterrupted is returned by Run when Options.Interrupt stopped the run.
var ErrInterrupted = errors.New("run interrupted before its end")

// interruptEvents is how often Run asks Options.Interrupt (after the first
// event, then every interruptEvents): rarely enough to cost nothing, often
// enough (a few ms of work) to stop promptly.
const interruptEvents = 1 << 12

// Result is what one run produced.
type Result struct {
	Seed      uint64
	Profile   Profile
	Schedule  []Fault // the timed faults the run drew (or was given)
	Events    uint64  // events processed
	SimNs     int64   // simulated time at the end
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
	ConsumerLosses                            uint64
	// Armed counts the faults put in place, by kind; Struck those that took
	// effect (a read error or sync failure is armed until an operation meets
	// it, and a crash may end it unmet).
	Armed, Struck [faultKinds]uint64
	Coverage      Coverage // protocol states reached (see Mark)
	// InSync: the placed queues' in-sync health by the committed
	// metadata (docs/design/in-sync.md, "Reporting": under-replicated,
	// under min in-sync)
	InSync check.InSyncHealth
	// Recoveries: each queue recovery's time by stage, from its stage
	// marks (recoveries.go); RecoveriesUntimed: the marks of recoveries
	// left untimed (no propose mark seen, or past recoveriesMax)
	Recoveries        []RecoveryTimes
	RecoveriesUntimed uint64
}

type broker struct {
	w   *World
	id  core.NodeID
	up  bool
	inc uint64 // incarnation: bumps on every crash
	// fs holds the logs of the queues the controller placed on it (one
	// directory per queue), and takes the disk faults
	fs   *memfs.FS
	host *driver.Host // the running process; nil while down
	// logBuffers: the buffers of its processes' logs, handed from each
	// process that ends to the next (seglog.Buffers)
	logBuffers seglog.Buffers
	meta       *metamem.Disk // the metadata disk of a voter of the metadata group; nil otherwise
	draws      *prng.Rand    // the randomness its processes' tick inputs carry
	// storage is its storage instance (one per data directory); disks:
	// how many times its data disk was replaced (disk-replaced)
	storage uint64
	disks   int
	// retainIssuedNs: by its process's log index, when the core issued
	// the log's latest retention (it chose the point then)
	retainIssuedNs []int64

	restarting  bool    // a restart is scheduled
	gone        bool    // struck by the gone fault: never restarts
	paused      bool    // a pause holds every event for this broker
	held        []event // events that arrived during the pause
	slowSyncEnd int64
	diskFullEnd int64
	failSync    bool  // the next sync fails
	failRead    bool  // the next log read fails
	armed       uint8 // damage injected into a running log, not yet met (armCorrupt, ...)
	tornDurNs   int64 // armTorn: the restart delay of the power loss
	damageMetNs int64 // when a read of its logs last met damage
	// flushErrNs: when a write of this process last failed as its sync
	// started (a full disk); -1 when none has
	flushErrNs int64
}

type clientKind uint8

const (
	publisher clientKind = 1
	consumer  clientKind = 2
	// asker: a connection that asks one topology request for a client
	asker clientKind = 3
)

type inflightPub struct {
	reqID uint64
	key   uint64
	op    int // index of its operation in the queue's history, -1 if none
}

// A client knows its queue by name only, as an application does: it asks
// a random broker where the queue lives (a topology request, on a
// connection of its own), connects to the owner named, and asks again
// when that connection dies or the broker answers that it no longer owns
// the queue (moved, fenced, sealed, or gone).
type client struct {
	kind  clientKind
	idx   int32
	name  string       // the queue's name in the catalogue
	queue core.QueueID // the queue's id, from the topology answer (0: not yet)
	owner int32        // broker index of the owner the last answer named (-1: not known)
	// at: the broker index the open connection goes to (the owner, or
	// while asking, the broker asked); -1 when none is open
	at       int32
	conn     core.ClientID
	connInc  uint64 // the connected broker's incarnation when connected
	asking   bool   // conn is a topology request's connection
	reqID    uint64
	seq      uint64
	inflight []inflightPub
	probeKey uint64   // the drain phase's probe publish in flight, 0 if none
	probed   bool     // a probe publish was confirmed after the heal
	held     []uint64 // consumer: offsets received on this connection, not yet acked
	// reqAt, replyAt: when the last request and reply of the connection
	// arrive; later ones may not overtake them.
	reqAt, replyAt int64
	r              *prng.Rand // the stream the client's draws come from
}

// World is one simulated cluster.
type World struct {
	seed     uint64
	prof     Profile
	now      int64
	endAllNs int64 // when the run ends at the latest: the drain's bound
	events   eventHeap
	brokers  []*broker
	clients  []*client
	conns    map[core.ClientID]int32      // open connections
	connKind map[core.ClientID]clientKind // every connection ever opened
	nextCID  core.ClientID
	checker  *check.Checker
	trace    *driver.Trace
	stats    Stats
	nEvents  uint64
	// recoveries: the queue recoveries being timed by their stage marks
	recoveries []recoveryTimed
	working    bool  // workload phase
	healNs     int64 // when the drain began
	stop       bool  // the drain finished early
	// interrupt: Options.Interrupt; interrupted: it stopped the run
	interrupt   func() bool
	interrupted bool
	schedule    []Fault
	// The fault schedule's order and the next of it to push, and the
	// first of the sequence numbers reserved for it (scheduleFaults).
	faultOrder []int32
	faultNext  int
	faultSeq0  uint64

	// candidateDies: the candidate-dies fault armed, waiting for a
	// recovery stage (candidateAt) to strike (Kind 0: none); candidates: per queue, the
	// broker that last reported taking up its recovery (detect)
	candidateDies Fault
	candidateAt   seam.RecoveryStage
	candidates    map[core.QueueID]core.NodeID
	// unsound: the copies (broker, queue) whose log last reported damage
	// or an unrepaired loss, or sealed damaged: no complete witness, by
	// the system's own account (the permanent losses' budget counts them)
	unsound map[unsoundKey]bool
	// sealedLost: the copies whose seal said they lost what they
	// acknowledged, until an activation names them members: a seal
	// stands for its transition (a retry answers it again), so an
	// installation since does not make the copy a witness of it
	sealedLost map[unsoundKey]bool

	// network faults in force: until when
	isolated []int64   // per broker
	oneWay   [][]int64 // [from][to]
	clogged  [][]int64 // [from][to]
	spikeEnd int64
	// history: per queue, the clients' operations for the linearizability
	// check (publishes as appends, deliveries as reads)
	history      map[core.QueueID][]linear.Op
	historyFull  map[core.QueueID]bool // reached linearOpsMax: not checked
	internalKeys uint64
	// internalSeen: per queue, by offset, the epoch of the internal record
	// (ack or epoch) the history took there (0: none)
	internalSeen map[core.QueueID][]uint64

	// lostHeld: deliveries a lost consumer held unacked (coverage only)
	lostHeld map[lostKey]bool

	frames framePool
	// replyScratch decodes append-replies for the checker's evidence
	replyScratch queue.Msg

	// voters: the metadata group's voters; admin: the operator's client
	voters     []uint64
	admin      admin
	leaderTerm uint64 // the highest term a leader's message was seen in
	// exited: per broker, its last process that exited (eager failover's
	// signal), for coverage
	exited map[core.NodeID]uint64
	// placed: the queues the controller placed, by name (the current
	// incarnation's) and by id
	placed     map[string]*placedQueue
	placedByID map[core.QueueID]*placedQueue
	// heardNs: per placed queue, when its owner last took in a message
	// from each member's named process (index as members): a member
	// heard within the retention window protects its owner's log
	// (check's retention-held)
	heardNs    map[core.QueueID][]int64
	placedIDs  []core.QueueID  // the keys of placedByID, ascending
	placedIncs map[uint64]bool // the incarnations whose placement was followed
	// fencedNs: per queue, when the world last saw its assignment fenced
	// (or the queue deleted)
	fencedNs map[core.QueueID]int64
	// metaFollowed: the index of the last metadata entry the world
	// followed (its first application by any broker)
	metaFollowed uint64
	pubs         []*placedPub // the placed queues' publishers (placedpub.go)
	// deletedNames: queue names deleted at least once (coverage)
	deletedNames map[string]bool
	// inSyncSeen: the last metadata index whose in-sync meaning was
	// followed; inSyncOf: per queue name, its assignment's members and
	// committed in-sync set, for the in-sync coverage rows
	inSyncSeen uint64
	inSyncOf   map[string]inSyncTruth
	// publishAppendedNs: when each queue's owner last appended a publish
	// (one entry a placed queue)
	publishAppendedNs map[core.QueueID]int64
	// hold: what the world followed of the follower-loss hold's inputs
	// (hold.go)
	hold holdTruth
	// script: the scripted operator's steps (Profile.Operator; nil: the
	// swarm's random operator)
	script []operatorStep

	rNet, rDisk, rCli, rFault *prng.Rand
	// rCtrl draws for the metadata group (its network, its operator, its
	// disks' power losses), apart from the queues' streams.
	rCtrl *prng.Rand
	// rDrain draws for the drain fault (operator.go), apart from the
	// other faults' streams; drainKill: per broker, the restart delay of
	// the maintenance restart its drain fault drew (0: none)
	rDrain    *prng.Rand
	drainKill []int64
	// rTail draws for the stale-tail fault, tail its state (inject.go)
	rTail *prng.Rand
	tail  staleTail
}

// Run runs one world for seed with profile p.
func Run(seed uint64, p Profile, opts Options) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	w := newWorld(seed, p, opts)
	err := w.runGuarded()
	if w.interrupted {
		// No verdict: a run cut short has not been judged (failures seen
		// so far are not a verdict either; replaying the seed gives it).
		r := w.result()
		r.Failures, r.Failed = nil, 0
		return r, ErrInterrupted
	}
	if err != "" {
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
		seed:              seed,
		prof:              p,
		conns:             map[core.ClientID]int32{},
		connKind:          map[core.ClientID]clientKind{},
		trace:             driver.NewTrace(opts.Trace, opts.TraceFilter),
		interrupt:         opts.Interrupt,
		rNet:              prng.New(prng.Derive(seed, "net")),
		rDisk:             prng.New(prng.Derive(seed, "disk")),
		rCli:              prng.New(prng.Derive(seed, "clients")),
		rFault:            prng.New(prng.Derive(seed, "faults")),
		rCtrl:             prng.New(prng.Derive(seed, "ctrl")),
		rDrain:            prng.New(prng.Derive(seed, "drain")),
		rTail:             prng.New(prng.Derive(seed, "tail")),
		drainKill:         make([]int64, p.Brokers),
		working:           true,
		isolated:          make([]int64, p.Brokers),
		history:           map[core.QueueID][]linear.Op{},
		historyFull:       map[core.QueueID]bool{},
		internalSeen:      map[core.QueueID][]uint64{},
		lostHeld:          map[lostKey]bool{},
		exited:            map[core.NodeID]uint64{},
		placed:            map[string]*placedQueue{},
		placedByID:        map[core.QueueID]*placedQueue{},
		publishAppendedNs: map[core.QueueID]int64{},
		placedIncs:        map[uint64]bool{},
		fencedNs:          map[core.QueueID]int64{},
		deletedNames:      map[string]bool{},
		candidates:        map[core.QueueID]core.NodeID{},
		unsound:           map[unsoundKey]bool{},
		sealedLost:        map[unsoundKey]bool{},
		inSyncOf:          map[string]inSyncTruth{},
		hold:              newHoldTruth(p.Brokers),
	}
	w.script, _ = parseOperator(p.Operator) // validated by Run
	for i := 0; i < p.Brokers; i++ {
		w.oneWay = append(w.oneWay, make([]int64, p.Brokers))
		w.clogged = append(w.clogged, make([]int64, p.Brokers))
	}
	if p.Schedule != nil {
		w.schedule = p.Schedule
	} else {
		w.schedule = drawSchedule(prng.New(prng.Derive(seed, "schedule")), p.Faults, p.Brokers, p.DurationMs*1e6)
	}
	// The checkers learn each queue as the controller places it.
	w.checker = check.New(nil, func(n core.NodeID) check.Disk { return w.brokers[n-1].fs })
	w.checker.SetAway(w.away)
	w.heardNs = map[core.QueueID][]int64{}
	silentMs := w.prof.RetainSilentMs
	if silentMs == 0 {
		silentMs = core.DefaultLimits.RetainSilentMs
	}
	w.checker.SetHeard(w.heard, silentMs*1e6)
	w.checker.SetLines(w.trace.Lines)
	for i := 0; i < p.Brokers; i++ {
		b := &broker{w: w, id: core.NodeID(i + 1), fs: memfs.New()}
		b.fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error { return w.diskAccess(b, a) }))
		b.fs.SetSyncFailureDropsPages(w.rFault)
		w.brokers = append(w.brokers, b)
	}
	w.ctrlSetup()
	w.placedStart()
	for i := range p.Queues {
		name := QueueName(i)
		for range p.PublishersPerQueue {
			w.addClient(publisher, name)
		}
		for range p.ConsumersPerQueue {
			w.addClient(consumer, name)
		}
	}
	return w
}

// expectedPublishes is about how many publishes a profile queue's
// publishers make: a hint that presizes tables.
func (w *World) expectedPublishes() int {
	return w.prof.PublishersPerQueue * w.prof.PublishesPerSec * int(w.prof.DurationMs/1000+1)
}

// addClient adds a client of the queue named name.
func (w *World) addClient(kind clientKind, name string) *client {
	c := &client{kind: kind, idx: int32(len(w.clients)), name: name, owner: -1, at: -1, r: w.rCli}
	w.clients = append(w.clients, c)
	return c
}

// profileQueue reports whether name is one of the profile's queues.
func (w *World) profileQueue(name string) bool {
	for i := range w.prof.Queues {
		if QueueName(i) == name {
			return true
		}
	}
	return false
}

func (w *World) schedule1(at int64, kind evKind) *event {
	i, e := w.events.alloc()
	e.at, e.kind = at, kind
	w.events.push(i)
	return e
}

// scheduleFaults schedules the fault schedule: one fault in the heap at a
// time, the next pushed as one strikes, so that the tens of a run do not
// sit in the heap all run long and deepen every other event's push and
// pop. Each keeps the sequence number it would have had pushed at the
// start with the others (reserved here, in the schedule's order), so the
// events pop in the same order as if it had been.
func (w *World) scheduleFaults() {
	n := len(w.schedule)
	w.faultOrder = make([]int32, n)
	for i := range w.faultOrder {
		w.faultOrder[i] = int32(i)
	}
	// The order the heap pops them in: by instant, then index (their
	// reserved sequence numbers follow the index).
	slices.SortStableFunc(w.faultOrder, func(a, b int32) int { return cmp.Compare(w.schedule[a].AtNs, w.schedule[b].AtNs) })
	w.faultSeq0 = w.events.reserve(n)
	w.faultNext = 0
	w.nextFault()
}

// nextFault pushes the next fault of the schedule, if any is left.
func (w *World) nextFault() {
	if w.faultNext >= len(w.faultOrder) {
		return
	}
	k := w.faultOrder[w.faultNext]
	w.faultNext++
	i, e := w.events.alloc()
	e.at, e.kind, e.q = w.schedule[k].AtNs, evFault, k
	w.events.pushSeq(i, w.faultSeq0+uint64(k))
}

func (w *World) run() {
	for _, q := range w.prof.Queues {
		if q.W() >= 2 {
			w.mark(MarkQueueW2)
			break
		}
	}
	for _, b := range w.brokers {
		w.startBroker(b)
	}
	for _, c := range w.clients {
		from := w.now
		if c.kind == consumer {
			from = max(from, w.prof.ConsumersFromMs*1e6)
		}
		w.schedule1(from+c.r.Range(0, 1e6), evConnect).cli = c.idx
		if c.kind == publisher && w.prof.PublishesPerSec > 0 {
			w.schedule1(from+w.publishGap(), evPublish).cli = c.idx
		}
		if c.kind == consumer && w.prof.ConsumerLossPerMin.On() {
			w.schedule1(from+expGap(c.r, w.prof.ConsumerLossPerMin), evConsumerLoss).cli = c.idx
		}
	}
	w.scheduleFaults()
	endWork := w.prof.DurationMs * 1e6
	w.schedule1(endWork, evPhase)
	w.endAllNs = endWork + w.prof.DrainMs*1e6
	for len(w.events.heap) > 0 && !w.stop {
		i := w.events.pop()
		e := &w.events.slab[i]
		if e.at > w.endAllNs {
			w.events.release(i)
			break
		}
		w.now = e.at
		w.nEvents++
		w.handle(e)
		w.events.release(i)
		if w.interrupt != nil && w.nEvents%interruptEvents == 1 && w.interrupt() {
			w.interrupted = true
			return
		}
	}
	w.finish()
}

// expGap draws the exponential gap before the next event at rate (which
// must be on), in integer nanoseconds and at least 1: integer arithmetic
// only, so a seed draws the same gaps on every machine.
func expGap(r *prng.Rand, rate Rate) int64 {
	return r.ExpNs(rate.MeanGapNs())
}

func (w *World) publishGap() int64 {
	mean := int64(1e9) / int64(w.prof.PublishesPerSec)
	return mean/2 + w.rCli.Int63n(mean+1)
}

func (w *World) netDelay() int64 {
	d := w.rNet.Range(w.prof.NetLatencyUsMin, w.prof.NetLatencyUsMax) * 1000
	if w.now < w.spikeEnd {
		d *= SpikeFactor
	}
	return d
}

func (w *World) notef(format string, args ...any) {
	w.trace.Note(w.now, fmt.Sprintf(format, args...))
}

// target returns the broker an event is for, or nil.
func (w *World) target(e *event) *broker {
	switch e.kind {
	case evMsg, evStorage, evTick, evRequest, evClientGone, evPeerLost:
		return w.brokers[e.node]
	}
	return nil
}

func (w *World) handle(e *event) {
	if b := w.target(e); b != nil {
		if !b.up || (e.kind != evMsg && b.inc != e.inc) {
			w.frames.put(e.data)
			w.putPublishBody(e)
			return // for a process that is gone
		}
		if b.paused {
			if len(b.held) >= eventsMax {
				panic("world: too many events held for a paused broker")
			}
			b.held = append(b.held, *e)
			return
		}
	}
	if e.kind == evMsg {
		// The core keeps nothing of a message beyond its step: the frame
		// goes back to the pool once handled.
		defer w.frames.put(e.data)
	}
	switch e.kind {
	case evMsg:
		b := w.brokers[e.node]
		g, msg, _, err := wire.Decode(e.data)
		if err != nil {
			w.notef("n%d refuses a frame from n%d: %v", b.id, e.from, err)
			return
		}
		w.noteHeard(b, e, g)
		b.host.Message(w.now, e.from, g, msg)
	case evStorage:
		w.brokers[e.node].host.Run(w.now, int(e.q))
	case evTick:
		w.brokers[e.node].host.Tick(w.now, e.at)
	case evRequest:
		w.brokers[e.node].host.Request(w.now, core.ClientID(e.from), e.req)
		w.putPublishBody(e) // the core kept a copy of what it keeps
	case evClientGone:
		w.brokers[e.node].host.ClientGone(w.now, core.ClientID(e.from))
	case evReply:
		w.clientReceive(e)
		if e.eff.Kind == core.EfDeliver {
			w.frames.put(e.eff.Body) // the copy the connection carried (Client)
		}
	case evPublish:
		w.publish(w.clients[e.cli])
	case evAck:
		c := w.clients[e.cli]
		if c.conn == core.ClientID(e.inc) {
			c.reqID++
			w.request(c, core.Request{Kind: core.ReqAck, ID: c.reqID, Queue: c.queue, Offset: e.eff.Offset})
			w.checker.AckSent(c.queue, e.eff.Offset, c.conn)
			c.held = removeOffset(c.held, e.eff.Offset)
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
				w.schedule1(w.now+c.r.Range(1e6, 100e6), evConnect).cli = c.idx
			}
			w.schedule1(w.now+expGap(c.r, w.prof.ConsumerLossPerMin), evConsumerLoss).cli = c.idx
		}
	case evFault:
		w.nextFault()
		if w.working {
			w.inject(w.schedule[e.q])
		}
	case evRestart:
		b := w.brokers[e.node]
		b.restarting = false
		if !b.up {
			w.startBroker(b)
		}
	case evResume:
		b := w.brokers[e.node]
		if e.inc == diskEvent {
			if w.now >= b.diskFullEnd {
				b.fs.SetCapacity(0)
			}
		} else if b.up && b.inc == e.inc && b.paused {
			w.resume(b)
		}
	case evPhase:
		w.heal()
	case evDrainCheck:
		w.drainCheck()
	case evAdmin:
		w.adminTimer(e)
	case evPeerLost:
		w.peerLost(e)
	case evPlaced:
		w.placedTimer(e)
	case evTear:
		if b := w.brokers[e.node]; b.up && b.inc == e.inc {
			w.tearSector(b, b.tornDurNs)
		}
	case evClose:
		if c := w.clients[e.cli]; c.conn == core.ClientID(e.inc) {
			w.closeConn(c)
		}
	case evCandidateKill:
		w.candidateKill(e)
	case evDrainKill:
		w.drainKilled(e)
	case evStaleTail:
		if e.inc == 0 {
			w.staleTailTry(Fault{AtNs: e.t0, Kind: FaultStaleTail}, e.q)
		} else {
			w.staleTailStep(e.inc)
		}
	case evAskTimeout:
		if c := w.clients[e.cli]; c.asking && c.conn == core.ClientID(e.inc) {
			// No answer (the broker paused, or its answer lost with a
			// process that stopped): ask again, elsewhere.
			w.disconnect(c, true)
			w.schedule1(w.now+c.r.Range(10e6, 100e6), evConnect).cli = c.idx
		}
	default:
		panic("world: unknown event")
	}
}

// linearOutcome maps a reply's outcome to the history's.
var linearOutcome = [...]linear.Outcome{core.Confirmed: linear.Confirmed, core.Failed: linear.Failed, core.Unknown: linear.Unknown}

// linearOpsMax bounds the history checked for linearizability per queue.
const linearOpsMax = 200_000

// noFaults are the network's rates once healed.
var noFaults FaultRates

// diskEvent marks an evResume that ends a disk-full window, which outlives
// the process it struck.
const diskEvent = math.MaxUint64

// crash is a power loss of b: its process dies and its disk keeps only what
// a power loss leaves; it restarts after restartNs.
func (w *World) crash(b *broker, restartNs int64) {
	if w.crashMayTear(b) {
		w.mayHaveTorn(b)
		b.fs.Crash(w.rFault)
	} else {
		b.fs.CrashClean()
	}
	w.powerLossCtrl(b)
	w.checker.DiskChanged(b.id)
	w.stopProcess(b, restartNs, false)
}

// crashMayTear reports whether a power loss of b may lose, keep or tear
// its unsynced writes as it falls out: not when a queue b holds a copy of
// lost another member's for good (a gone broker, a replaced disk) and has
// no copy to spare, counting b's: a torn tail makes b's seal a damaged
// one, no witness (the log cannot tell a torn unsynced write from a lost
// synced one), and such a queue could then never gather its witnesses.
// Its unsynced writes are then dropped whole (CrashClean): the power loss
// still ends the process and loses what was not synced.
func (w *World) crashMayTear(b *broker) bool {
	for _, id := range w.placedIDs {
		p := w.placedByID[id]
		if p.deleted || !slices.Contains(p.members, b.id) {
			continue
		}
		if w.lostForGood(p, b.id) && !w.permanentLossAllowed(b, p) {
			return false
		}
	}
	return true
}

// mayHaveTorn notes every copy b holds unsound until its restart's open
// says otherwise: a power loss or a failed sync may have torn it, and the
// next broker a power cycle takes is judged with it.
func (w *World) mayHaveTorn(b *broker) {
	for _, id := range w.placedIDs {
		if p := w.placedByID[id]; !p.deleted && slices.Contains(p.members, b.id) {
			w.noteSound(b.id, id, false)
		}
	}
}

// stopProcess ends b's process (its memory is gone; its disk and page cache
// stay as they are) and restarts it after restartNs (never when restartNs
// is restartNever). After a power loss its
// connections die at once; after an exit, the replies it already sent (in
// the kernel's socket buffers) still arrive, then the connections close.
func (w *World) stopProcess(b *broker, restartNs int64, exited bool) {
	// Every process end has a note of its own, so that a trace (and the
	// timeline drawn from it) says when each process lived.
	how := "power-loss"
	if exited {
		how = "exit"
	}
	w.notef("stop n%d inc=%d %s", b.id, b.inc, how)
	w.noteDown(b)
	if exited {
		w.peersLost(b, b.inc+1)
	}
	b.up = false
	b.inc++
	b.paused = false
	if b.meta != nil {
		b.meta.Kill() // the process's store dies; its page cache stays
	}
	b.held = b.held[:0]
	if b.host != nil {
		b.host.Release() // its logs' buffers serve the next process
	}
	b.host = nil
	b.failSync, b.failRead = false, false
	for _, c := range w.clients {
		if c.conn != 0 && c.at == int32(b.id-1) {
			if exited && c.replyAt > w.now {
				e := w.schedule1(c.replyAt, evClose)
				e.cli, e.inc = c.idx, uint64(c.conn)
				continue
			}
			w.closeConn(c)
		}
	}
	w.placedBrokerGone(b.id)
	if restartNs == restartNever {
		return
	}
	b.restarting = true
	w.schedule1(w.now+restartNs, evRestart).node = int32(b.id - 1)
}

// restartNever is the restart delay of a process that never restarts (the
// gone fault's).
const restartNever = -1

// closeConn closes c's connection to a dead process; c reconnects later,
// asking first where its queue lives now.
func (w *World) closeConn(c *client) {
	w.disconnect(c, false)
	c.owner = -1
	w.schedule1(w.now+c.r.Range(10e6, 200e6), evConnect).cli = c.idx
}

// relearn closes c's connection to a broker that answered that it does
// not (or no longer) serve c's queue: c asks where it lives, soon.
func (w *World) relearn(c *client) {
	w.disconnect(c, true)
	c.owner = -1
	w.schedule1(w.now+c.r.Range(20e6, 200e6), evConnect).cli = c.idx
}

// servesNot reports whether a refusal says that the broker does not serve
// the queue (any more): the client must ask where it lives.
func servesNot(reason string) bool {
	return reason == "not the owner" || reason == "no such queue" ||
		strings.HasPrefix(reason, "fenced") || strings.HasPrefix(reason, "sealed")
}

func (w *World) resume(b *broker) {
	w.notef("resume n%d", b.id)
	b.paused = false
	held := b.held
	b.held = nil
	b.host.ResetTimer(w.now)
	for i := range held {
		if held[i].kind == evTick {
			continue // replaced by the tick just scheduled
		}
		i2, e := w.events.alloc()
		*e = held[i]
		e.at = w.now
		w.events.push(i2)
	}
}

// heal ends the workload phase: faults stop, partitions heal, every broker
// runs but the gone ones, publishers stop after one probe each.
func (w *World) heal() {
	w.working = false
	w.healNs = w.now
	w.notef("drain: faults off, network healed, every broker up, publishers probe then stop")
	if slices.ContainsFunc(w.brokers, func(b *broker) bool { return b.gone }) {
		// A broker that never returns leaves the live set only when its
		// liveness expires, counted from the metadata leader's last word
		// from it (a leader elected in the drain starts that count
		// afresh): the drain's bound starts after that.
		w.endAllNs += w.hold.expiryMs * 1e6
		w.notef("drain: a broker is gone for good, the drain's bound grows by the liveness expiry of %d ms", w.hold.expiryMs)
	}
	for i := range w.isolated {
		w.isolated[i] = 0
		clear(w.oneWay[i])
		clear(w.clogged[i])
	}
	w.spikeEnd = 0
	for _, b := range w.brokers {
		b.slowSyncEnd, b.diskFullEnd = 0, 0
		b.failSync, b.failRead = false, false
		// An armed torn-sector power loss is a fault yet to strike: it
		// never does after the heal. (Damage already on the disk, armed
		// until a read meets it, stays: it is the disk's state.)
		b.armed &^= armTorn
		b.fs.SetCapacity(0)
		if b.up && b.paused {
			w.resume(b)
		}
		if !b.up && !b.restarting && !b.gone {
			w.startBroker(b)
		}
	}
	w.drainHeal()
	for _, c := range w.clients {
		if c.kind == publisher {
			w.schedule1(w.now+1e9, evPublish).cli = c.idx
		}
	}
	w.schedule1(w.now+100e6, evDrainCheck)
	w.schedule1(w.now+1e9, evAdmin)
}

// drainCheck ends the run once the drain's work is done: every probe
// confirmed, no publish in flight, every confirmed record delivered, and
// every replica holding exactly its owner's log.
func (w *World) drainCheck() {
	if ok, _ := w.checker.MetaLiveSet(w.brokerTruth()); !w.admin.probed || !ok {
		w.schedule1(w.now+100e6, evDrainCheck)
		return
	}
	for _, c := range w.clients {
		if c.kind == publisher && (!c.probed || len(c.inflight) > 0) {
			w.schedule1(w.now+100e6, evDrainCheck)
			return
		}
	}
	for i := range w.prof.Queues {
		p, ok := w.placed[QueueName(i)]
		if !ok || w.checker.Fenced(p.id) {
			w.schedule1(w.now+100e6, evDrainCheck)
			return // not placed yet, or not recovered yet
		}
	}
	if !w.placedSettled() {
		w.schedule1(w.now+100e6, evDrainCheck)
		return
	}
	w.stop = true
}

// --- brokers ---

func logDir(q core.QueueID) string { return "q" + strconv.FormatUint(uint64(q), 10) }

func (w *World) startBroker(b *broker) {
	b.up = true
	b.flushErrNs = -1
	env := &brokerEnv{w: w, b: b}
	cfg := core.Config{Node: b.id, Process: b.inc + 1, Storage: b.storage, Bugs: w.prof.Bugs}
	cfg.Limits.RetainSilentMs, cfg.Limits.RetainRecordsMin = w.prof.RetainSilentMs, w.prof.RetainRecordsMin
	var ms driver.MetaStore
	if ctrlCfg, store := w.ctrlConfig(b); ctrlCfg != nil {
		cfg.Ctrl, ms = ctrlCfg, store
	}
	b.host = driver.NewHost(cfg, b.fs, nil, ms, env, env, w.trace, driver.Options{CheckInvariants: true, LogBuffers: &b.logBuffers,
		PlacedLog: func(g core.GroupID) driver.LogSpec {
			return driver.LogSpec{Dir: logDir(queueOf(g)), FS: b.fs,
				Opts: seglog.Options{SegmentBytesMax: 8 << 20, SlotsPerSegment: segmentSlots, ExtendBytes: segmentExtendBytes, Bugs: w.prof.Bugs}}
		}})
	if err := b.host.Open(); err != nil {
		panic(fmt.Sprintf("world: n%d: %v", b.id, err))
	}
	w.notef("start n%d inc=%d", b.id, b.inc)
	b.host.Start(w.now)
}

// record adds op to q's history and returns its index, or -1 once the
// history is full (the check is then skipped, and memory stays bounded).
// Only the profile's queues keep one (their clients' histories).
func (w *World) record(q core.QueueID, op linear.Op) int {
	h, ok := w.history[q]
	if !ok {
		return -1
	}
	if len(h) >= linearOpsMax {
		w.historyFull[q] = true
		return -1
	}
	w.history[q] = append(h, op)
	return len(h)
}

// internalAppended takes an ack or epoch record as some replica of q
// appends it: it takes an offset too, so to the log model it is an append
// whose outcome no client learns. It joins q's history once per (offset,
// epoch), at its first append anywhere: an owner sends its records to its
// followers as it issues them, so a follower may hold one its owner never
// wrote (the owner's process ended with the append queued behind a sync),
// and a recovery may then keep it.
func (w *World) internalAppended(q core.QueueID, r *record.Record) {
	h, ok := w.history[q]
	if !ok {
		return
	}
	if len(h) >= linearOpsMax {
		return // full: not checked (record says so)
	}
	seen := w.internalSeen[q]
	if r.Offset < uint64(len(seen)) && seen[r.Offset] == r.Epoch {
		return
	}
	if r.Offset >= internalOffsetsMax {
		w.historyFull[q] = true // beyond what the check keeps: not checked
		return
	}
	for uint64(len(seen)) <= r.Offset {
		seen = append(seen, 0)
	}
	seen[r.Offset] = r.Epoch
	w.internalSeen[q] = seen
	w.internalKeys++
	w.record(q, linear.Op{Kind: linear.Append, Client: -1, CallNs: w.now, Key: 1<<63 | w.internalKeys, Outcome: linear.Unknown})
}

// ownerOf returns the owner of q's assignment as the world followed the
// committed metadata (0 for a queue never placed).
func (w *World) ownerOf(q core.QueueID) core.NodeID {
	if p := w.placedByID[q]; p != nil {
		return p.owner
	}
	return 0
}

// internalOffsetsMax bounds the offsets whose internal records a queue's
// history tracks (as linearOpsMax bounds the history).
const internalOffsetsMax = 4 * linearOpsMax

// storageDelay draws a storage operation's time on b's device, from r.
func (w *World) storageDelay(r *prng.Rand, b *broker, op core.StorageOp) int64 {
	switch op {
	case core.OpSync, core.OpSeal, core.OpPublish, core.OpRetain: // a receipt, a pointer or a start: a file synced, then its directory
		d := r.Range(w.prof.SyncUsMin, w.prof.SyncUsMax) * 1000
		if w.now < b.slowSyncEnd {
			d *= SlowSyncFactor
		}
		return d
	case core.OpRead, core.OpVerify:
		// A slow device is slow to read too: an owner that starts on a
		// long log then takes its time re-applying it, and clients meet
		// it meanwhile.
		d := r.Range(10, 100) * 1000
		if w.now < b.slowSyncEnd {
			d *= SlowSyncFactor
		}
		return d
	}
	return r.Range(1, 10) * 1000
}

// controlled reports whether group g is one of the controller's own: its
// draws come from the controller's stream (rCtrl).
func controlled(g core.GroupID) bool {
	return g >= seam.GroupReservedMin
}

// --- clients ---

// connect opens c's connection: to its queue's owner when an answer named
// one, else to a random broker to ask where the queue lives.
func (w *World) connect(c *client) {
	if c.conn != 0 {
		return
	}
	to, asking := c.owner, c.owner < 0
	if asking {
		// A connection to a broker whose process is gone is refused at
		// once (a reset): try the next one up.
		to = int32(c.r.Intn(len(w.brokers)))
		for k := 0; k < len(w.brokers) && !w.brokers[to].up; k++ {
			to = (to + 1) % int32(len(w.brokers))
		}
	}
	b := w.brokers[to]
	if !b.up {
		c.owner = -1
		w.schedule1(w.now+c.r.Range(10e6, 100e6), evConnect).cli = c.idx
		return
	}
	if w.nextCID+1 >= placedConnBase {
		panic("world: client connection ids exhausted")
	}
	w.nextCID++
	c.conn, c.connInc, c.at, c.asking = w.nextCID, b.inc, to, asking
	c.reqAt, c.replyAt = 0, 0
	w.conns[c.conn] = c.idx
	c.reqID++
	if asking {
		w.connKind[c.conn] = asker
		w.request(c, core.Request{Kind: core.ReqTopology, ID: c.reqID, Body: []byte(c.name)})
		t := w.schedule1(w.now+placedTimeoutNs, evAskTimeout)
		t.cli, t.inc = c.idx, uint64(c.conn)
		return
	}
	w.connKind[c.conn] = c.kind
	if c.kind == consumer {
		w.request(c, core.Request{Kind: core.ReqSubscribe, ID: c.reqID, Queue: c.queue, Prefetch: w.prof.Prefetch})
	}
}

// disconnect closes c's connection; in-flight publishes end unknown.
func (w *World) disconnect(c *client, notify bool) {
	if c.conn == 0 {
		return
	}
	h := w.history[c.queue]
	for _, p := range c.inflight {
		w.checker.PublishEnded(w.now, p.key, core.Unknown, c.queue, 0)
		if p.op >= 0 {
			h[p.op].Outcome = linear.Unknown
		}
		w.stats.Unknown++
	}
	c.inflight = c.inflight[:0]
	c.probeKey = 0
	if c.kind == consumer && !c.asking {
		w.checker.ConsumerLost(c.queue, c.conn, c.held)
		for _, o := range c.held {
			if len(w.lostHeld) < heldMax {
				w.lostHeld[lostKey{c.queue, o}] = true
			}
		}
	}
	c.held = c.held[:0]
	delete(w.conns, c.conn)
	if notify {
		e := w.schedule1(max(w.now+w.netDelay(), c.reqAt), evClientGone)
		e.node, e.inc, e.from = c.at, c.connInc, core.NodeID(c.conn)
	}
	c.conn, c.at, c.asking = 0, -1, false
}

// request sends req on c's connection. A connection is a TCP stream: what
// the client sends reaches the broker in order, and its close comes last.
func (w *World) request(c *client, req core.Request) {
	at := max(w.now+w.netDelay(), c.reqAt)
	c.reqAt = at
	e := w.schedule1(at, evRequest)
	e.node, e.inc, e.from, e.req = c.at, c.connInc, core.NodeID(c.conn), req
}

type lostKey struct {
	q core.QueueID
	o uint64
}

// heldMax bounds the deliveries a simulated consumer tracks as unacked;
// the core's prefetch limit keeps it far below.
const heldMax = 1 << 16

func removeOffset(s []uint64, o uint64) []uint64 {
	for i, v := range s {
		if v == o {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

func publishKey(c *client, seq uint64) uint64 { return uint64(c.idx+1)<<40 | seq }

// KeyOf returns the publish key a simulated body carries.
func KeyOf(body []byte) uint64 {
	if len(body) < 8 {
		return math.MaxUint64
	}
	return binary.LittleEndian.Uint64(body)
}

func (w *World) publish(c *client) {
	if !w.working {
		// The drain: one probe at a time until one is confirmed.
		if c.probed {
			return
		}
		w.schedule1(w.now+200e6, evPublish).cli = c.idx
		if c.conn == 0 || c.probeKey != 0 {
			return
		}
	} else {
		w.schedule1(w.now+w.publishGap(), evPublish).cli = c.idx
		if c.conn == 0 || c.asking || len(c.inflight) >= w.prof.InflightMax {
			return
		}
	}
	if c.asking {
		return
	}
	c.seq++
	key := publishKey(c, c.seq)
	n := int(w.rCli.Range(int64(w.prof.BodyBytesMin), int64(w.prof.BodyBytesMax)))
	body := w.publishBody(n)
	binary.LittleEndian.PutUint64(body, key)
	c.reqID++
	op := w.record(c.queue, linear.Op{Kind: linear.Append, Client: c.idx, CallNs: w.now, Key: key, Outcome: linear.Unknown})
	c.inflight = append(c.inflight, inflightPub{reqID: c.reqID, key: key, op: op})
	if !w.working {
		c.probeKey = key
	}
	w.checker.PublishStarted(key, n)
	w.stats.Publishes++
	w.request(c, core.Request{Kind: core.ReqPublish, ID: c.reqID, Queue: c.queue, Body: body})
}

func (w *World) clientReceive(e *event) {
	ci, ok := w.conns[core.ClientID(e.inc)]
	if !ok {
		return // the connection closed: the reply is lost with it
	}
	c := w.clients[ci]
	switch e.eff.Kind {
	case core.EfReply:
		if c.asking {
			w.topologyAnswer(c, &e.eff)
			return
		}
		if c.kind != publisher {
			if e.eff.Outcome != core.Confirmed {
				// Its subscribe was refused (the log still opening, the
				// queue fenced or gone): ask again later.
				w.disconnect(c, true)
				c.owner = -1
				w.schedule1(w.now+c.r.Range(100e6, 500e6), evConnect).cli = c.idx
			}
			return
		}
		for i, p := range c.inflight {
			if p.reqID != e.eff.ReqID {
				continue
			}
			c.inflight = append(c.inflight[:i], c.inflight[i+1:]...)
			w.checker.PublishEnded(w.now, p.key, e.eff.Outcome, e.eff.Queue, e.eff.Offset)
			if p.op >= 0 {
				op := &w.history[c.queue][p.op]
				op.ReturnNs, op.Offset = w.now, e.eff.Offset
				op.Outcome = linearOutcome[e.eff.Outcome]
			}
			switch e.eff.Outcome {
			case core.Confirmed:
				w.stats.Confirmed++
			case core.Failed:
				w.stats.FailedPubs++
			default:
				w.stats.Unknown++
				ob := w.brokers[c.at]
				flushFailedBeforeHeal := ob.flushErrNs >= 0 && ob.flushErrNs < w.healNs
				if !w.working && e.t0 >= w.healNs && ob.damageMetNs < w.healNs && !flushFailedBeforeHeal && !w.checker.Fenced(c.queue) && w.fencedNs[c.queue] < w.healNs &&
					w.ownerOf(c.queue) == ob.id {
					// After the heal an outcome may be unknown only where
					// the client's own connection died, where damage
					// injected before the heal (latent until read) made
					// the owner's log fail, where a write failed before
					// the heal (a full disk) and its sync, under way at the
					// heal, reported it after (seed 11909), or where the
					// queue is fenced or was fenced after the heal (its
					// owner sealed its log for recovery with the publish
					// in flight), or where the broker no longer owns it
					// (recovered elsewhere while it was cut off: it retires
					// its group as it learns so).
					w.checker.Liveness(w.now, fmt.Sprintf("publish %#x ended unknown on a live connection after the heal: %s", p.key, e.eff.Reason))
				}
			}
			if p.key == c.probeKey {
				c.probeKey = 0
				c.probed = e.eff.Outcome == core.Confirmed
			}
			if e.eff.Outcome != core.Confirmed && servesNot(e.eff.Reason) {
				w.relearn(c)
			}
			return
		}
	case core.EfCancel:
		// The broker ended the subscription (its group fenced, replaced or
		// retired), as AMQP's basic.cancel tells a consumer: ask where the
		// queue lives now.
		if c.kind == consumer && !c.asking {
			w.mark(MarkConsumerCancelled)
			w.relearn(c)
		}
	case core.EfDeliver:
		// A delivery is a read of the log at its offset, from the instant
		// the broker sent it to the instant the consumer had it.
		w.record(c.queue, linear.Op{Kind: linear.Read, Client: c.idx,
			CallNs: e.t0, ReturnNs: w.now, Key: KeyOf(e.eff.Body), Offset: e.eff.Offset})
		w.checker.DeliveryReceived(w.now, c.queue, e.eff.Offset, c.conn, e.eff.Body)
		if len(c.held) < heldMax {
			c.held = append(c.held, e.eff.Offset)
		}
		w.stats.Deliveries++
		if e.eff.Redelivered {
			w.stats.Redeliveries++
			if w.lostHeld[lostKey{c.queue, e.eff.Offset}] {
				w.mark(MarkRedeliveryAfterLoss)
			}
		}
		a := w.schedule1(w.now+c.r.Int63n(w.prof.AckDelayUsMax*1000+1), evAck)
		a.cli, a.inc = c.idx, uint64(c.conn)
		a.eff.Offset = e.eff.Offset
	}
}

// topologyAnswer takes the answer to c's topology request: connect to the
// owner it names, or ask again later (not placed yet, fenced, or gone).
func (w *World) topologyAnswer(c *client, eff *core.Effect) {
	w.disconnect(c, true)
	if eff.Outcome != core.Confirmed {
		w.schedule1(w.now+c.r.Range(50e6, 250e6), evConnect).cli = c.idx
		return
	}
	c.queue, c.owner = eff.Queue, int32(eff.Offset)-1
	if c.owner < 0 || int(c.owner) >= len(w.brokers) {
		panic(fmt.Sprintf("world: topology names owner %d", eff.Offset))
	}
	w.connect(c)
}

// --- the end ---

func (w *World) finish() {
	w.notef("end")
	var pending uint64
	var unserved []string
	for _, c := range w.clients {
		pending += uint64(len(c.inflight))
		if c.kind == publisher && !c.probed && !slices.Contains(unserved, c.name) {
			unserved = append(unserved, c.name)
		}
	}
	consumed := map[core.QueueID]bool{}
	for _, c := range w.clients {
		if c.kind == consumer && c.queue != 0 {
			consumed[c.queue] = true
		}
	}
	if !w.stop {
		// The drain ran out of time: say what was still outstanding.
		w.checker.Liveness(w.now, "the drain ran out after "+strconv.FormatInt((w.endAllNs-w.healNs)/1e6, 10)+" ms with work outstanding: "+w.outstanding())
	}
	w.checker.Final(w.now, func(q core.QueueID) bool { return w.stop && consumed[q] })
	for _, q := range slices.Sorted(maps.Keys(w.history)) {
		if w.historyFull[q] {
			w.notef("q%d: history over %d operations, linearizability not checked", q, linearOpsMax)
			continue
		}
		if ok, detail := linear.Check(w.history[q]); !ok {
			w.checker.Linearizability(w.now, q, detail)
		}
	}
	if pending > 0 {
		w.checker.Liveness(w.now, fmt.Sprintf("%d publishes still unresolved after the drain", pending))
	}
	if len(unserved) > 0 {
		w.checker.Liveness(w.now, "no probe publish confirmed after the heal on "+strings.Join(unserved, " "))
	}
	w.ctrlFinal()
}

// shortListedMax bounds the queues short of full health outstanding names
// one by one (a world of many queues would print a line per queue).
const shortListedMax = 8

// outstanding describes the drain's unfinished work: what drainCheck waits
// for.
func (w *World) outstanding() string {
	var parts []string
	short, up, gone := 0, w.upBrokers(), w.goneBrokers()
	for _, c := range w.clients {
		if c.kind != publisher {
			continue
		}
		if !c.probed {
			parts = append(parts, fmt.Sprintf("%s publisher %d has no confirmed probe", c.name, c.idx))
		}
		if len(c.inflight) > 0 {
			parts = append(parts, fmt.Sprintf("%s publisher %d has %d publishes unresolved", c.name, c.idx, len(c.inflight)))
		}
	}
	for i := range w.prof.Queues {
		p, ok := w.placed[QueueName(i)]
		switch {
		case !ok:
			parts = append(parts, QueueName(i)+" never placed")
		case w.checker.Fenced(p.id):
			parts = append(parts, fmt.Sprintf("%s (q=%d) fenced, not recovered", QueueName(i), p.id))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.placed)) {
		p := w.placed[name]
		if w.checker.Fenced(p.id) {
			continue
		}
		if ok, why := w.checker.Converged(p.id); !ok {
			parts = append(parts, fmt.Sprintf("placed %s (q=%d) not converged (%s)", name, p.id, why))
		}
		if why := w.checker.MetaShort(name, up, gone); why != "" {
			short++
			if short <= shortListedMax {
				parts = append(parts, fmt.Sprintf("placed %s (q=%d) short of full health: %s", name, p.id, why))
			}
		}
		if w.placedConsumed(p.id) {
			if n, first := w.checker.UndeliveredFirst(p.id); n > 0 {
				parts = append(parts, fmt.Sprintf("placed %s (q=%d) has %d confirmed publishes no live consumer holds (%s)", name, p.id, n, first))
			}
		}
	}
	if short > shortListedMax {
		parts = append(parts, fmt.Sprintf("%d more placed queues short of full health", short-shortListedMax))
	}
	for _, b := range w.brokers {
		if !b.up && !b.gone {
			parts = append(parts, fmt.Sprintf("n%d is down", b.id))
		}
	}
	if !w.admin.probed {
		parts = append(parts, "the metadata group confirmed no command after the heal")
	}
	if ok, why := w.checker.MetaLiveSet(w.brokerTruth()); !ok {
		parts = append(parts, "the live set is not the world's: "+why)
	}
	if len(parts) == 0 {
		return "none that the drain check sees"
	}
	return strings.Join(parts, "; ")
}

func (w *World) result() Result {
	w.stats.InSync = w.checker.InSyncHealth(w.now)
	w.stats.Recoveries = w.recoveryTimes()
	return Result{
		Seed:      w.seed,
		Profile:   w.prof,
		Schedule:  w.schedule,
		Events:    w.nEvents,
		SimNs:     w.now,
		TraceHash: w.trace.Hash(),
		Lines:     w.trace.Lines(),
		Failures:  w.checker.Failures(),
		Failed:    w.checker.FailureCount(),
		Stats:     w.stats,
	}
}

// segmentSlots is the simulated logs' records per segment: small, so that
// runs roll segments often (the real default is larger).
const segmentSlots = 512

// segmentExtendBytes: the logs extend their segment files with zeros this
// far ahead of their frames, as the daemon's do (seglog.Options.ExtendBytes),
// in steps small enough that a run crosses many of them and trims every
// rolled segment, under every disk fault.
const segmentExtendBytes = 16 << 10

// queueOf returns the queue whose replica group g is.
func queueOf(g core.GroupID) core.QueueID {
	if g >= seam.GroupReservedMin {
		panic(fmt.Sprintf("world: group %d is not a queue's", g))
	}
	return core.QueueID(g)
}
