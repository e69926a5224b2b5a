package driver

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/io/vfs"
)

// Env is a world's side of a host: what only the world knows how to do
// (move bytes, reach clients, keep time, end a process). Everything the
// driver contract asks of a driver is the host's, so both worlds carry it
// out with the same code.
type Env interface {
	// Send starts sending msg, a message of group g, to peer to. msg is
	// valid only during the call: copy what must outlive it.
	Send(to core.NodeID, g core.GroupID, msg []byte)
	// Client passes a reply, delivery or cancel to the client connection it
	// names.
	Client(e *core.Effect)
	// StartStorage says that op, the head of log l's queue, may start. It
	// returns true to have the host run it now, inline (a write into the
	// page cache); otherwise the world calls Host.Run(l) once the device's
	// time has passed.
	StartStorage(l int, op *core.Effect) (inline bool)
	// RunLater asks for Host.Run(l) as a later input at this instant: an
	// inline operation failed, and its completion goes in on its own.
	RunLater(l int)
	// Timer asks for Host.Tick(at) at instant at; only the latest call
	// counts (the host ignores a tick whose instant it no longer expects).
	Timer(at int64)
	// Exit ends the process: storage operation d failed and the core
	// stopped using that log (the failure policy, core/doc.go). The world's
	// supervisor restarts it; the host is not used again.
	Exit(d *core.StorageDone)
	// Draw returns a random value for a tick input (the simulator's PRNG,
	// the daemon's crypto source): the jitter of the metadata group's
	// failure detector.
	Draw() uint64
}

// MetaStore is a node's metadata store (io/meta's contract) as the host
// drives it, in two steps so that a world can give the sync its time:
// Write validates and writes a batch (visible, not yet durable); Sync
// makes every batch written so far durable, or fails, and then the store
// is failed. A store whose Write is already durable (pebble's synced
// batch) has nothing to do in Sync: durable sooner than reported is
// always allowed, the reverse never.
type MetaStore interface {
	Load() (meta.State, error)
	Write(b *meta.Batch) error
	Sync() error
}

// Observer sees what the host does to storage, for the simulator's
// checkers; the daemon passes none.
type Observer interface {
	// Recovered: log l was opened and recovered st.
	Recovered(l int, st core.LogState)
	// Issued: the core issued storage effect op on log l (it may wait in
	// the log's queue before it runs): what the core decided by now.
	Issued(l int, op *core.Effect)
	// Executed: op ran on log l (log) with outcome done, before the core
	// hears of it. For the metadata store (op.Op is OpPersist) log is nil:
	// a persist completes when its batch is durable.
	Executed(l int, op *core.Effect, done *core.StorageDone, log *seglog.Log)
	// Applied: the metadata group applied a committed entry (an EfApplied
	// effect), as a consumer sees a delivery.
	Applied(e *core.Effect)
	// Watermark: a queue's owner moved its high watermark (EfWatermark).
	Watermark(e *core.Effect)
	// Recovery: a stage of a queue's sealed recovery (EfRecovery).
	Recovery(e *core.Effect)
}

// LogSpec says where one log of a group lives.
type LogSpec struct {
	Group core.GroupID
	Log   core.LogID
	Dir   string
	Opts  seglog.Options
	// FS, if set, is the file system the log lives on instead of the
	// host's (the simulator keeps placed queues on a disk of their own).
	FS vfs.FS
}

// Options tune a host.
type Options struct {
	// CheckInvariants runs the core's invariants after every step (the
	// simulator always does).
	CheckInvariants bool
	// PlacedLog says where the log of a group the node starts holding
	// while it runs (a placed queue, OpOpen) lives; nil: such a group
	// cannot be opened (the operation fails).
	PlacedLog func(g core.GroupID) LogSpec
	// LogBuffers, if set, is where the host's logs take their buffers
	// from (seglog.Options.Buffers, unless a spec sets its own); Release
	// gives them back. The simulator keeps one per broker across its
	// processes.
	LogBuffers *seglog.Buffers
}

// storageOpsMax bounds a log's queue of storage effects; the core's own
// limits keep it far below.
const storageOpsMax = 1 << 20

// logQueue is one log's storage: the log and the effects queued on it, in
// order; the head is running when busy.
type logQueue struct {
	spec   LogSpec
	log    *seglog.Log
	meta   MetaStore // the metadata store's queue (then log is nil)
	ops    []core.Effect
	head   int
	busy   bool
	failed *core.StorageDone // an inline failure waiting for Run
	// retired: the index holds no log (a published stage's, or one not
	// yet opened); it is reused by the next open.
	retired bool
	// cur and done hold the operation running and its outcome, so that
	// passing them on by pointer costs no allocation.
	cur  core.Effect
	done core.StorageDone
	// Effects are valid only until the core's next step: an append that
	// must wait in the queue gets a copy of its records and bodies here.
	// The arenas are reused once the queue is empty.
	recArena  []record.Record
	bodyArena []byte
}

// own copies the records of a queued append into the log's arenas.
func (q *logQueue) own(e *core.Effect) {
	n := 0
	for i := range e.Records {
		n += len(e.Records[i].Body)
	}
	start := len(q.recArena)
	bodies := slices.Grow(q.bodyArena, n)
	for _, r := range e.Records {
		k := len(bodies)
		bodies = append(bodies, r.Body...)
		r.Body = bodies[k:len(bodies):len(bodies)]
		q.recArena = append(q.recArena, r)
	}
	q.bodyArena = bodies
	e.Records = q.recArena[start:len(q.recArena):len(q.recArena)]
}

// Host runs one node process: it carries out the driver contract of
// core/doc.go for any world. It feeds the core one input at a time, traces
// every input and effect, runs each log's storage effects strictly in order
// and returns their completions in that order, runs nothing queued behind a
// failed operation, ends the process after a failure (the failure policy),
// keeps one timer for the latest deadline, and builds the start input from
// the logs it recovers. It is not safe for concurrent use.
type Host struct {
	cfg   core.Config
	node  *core.Node
	env   Env
	obs   Observer
	trace *Trace
	opts  Options
	fs    vfs.FS
	logs  []logQueue
	start []core.LogState
	// metaLog is the index in logs of the metadata store's queue, -1
	// without one; metaState what it loaded.
	metaLog   int
	metaState meta.State

	deadline int64 // the core's latest deadline
	timerAt  int64 // the instant of the one timer asked for; 0: none
	exited   bool
}

// NewHost returns the host of a new process of cfg.Node, whose logs live
// on fs and whose metadata lives in ms (nil for a node without the
// metadata group; required with one). trace and obs may be nil.
func NewHost(cfg core.Config, fs vfs.FS, logs []LogSpec, ms MetaStore, env Env, obs Observer, trace *Trace, opts Options) *Host {
	h := &Host{cfg: cfg, env: env, obs: obs, trace: trace, opts: opts, fs: fs, metaLog: -1}
	for _, s := range logs {
		h.logs = append(h.logs, logQueue{spec: s})
	}
	if (ms == nil) != (cfg.Ctrl == nil) {
		panic("driver: a metadata store goes with a metadata group, and only with one")
	}
	if ms != nil {
		h.metaLog = len(h.logs)
		h.logs = append(h.logs, logQueue{spec: LogSpec{Group: core.GroupCtrl}, meta: ms})
	}
	return h
}

// logOpts returns o with the host's log buffers, unless o has its own.
func (h *Host) logOpts(o seglog.Options) seglog.Options {
	if o.Buffers == nil {
		o.Buffers = h.opts.LogBuffers
	}
	return o
}

// Release ends a host whose process is gone (a power loss, a kill): its
// logs are released as they are (seglog.Log.Release: nothing written,
// their buffers back to Options.LogBuffers). The host is not used again.
func (h *Host) Release() {
	h.exited = true
	for i := range h.logs {
		if l := h.logs[i].log; l != nil {
			l.Release()
		}
	}
}

// Open opens and recovers every log; the first step of a process. A log
// that cannot be opened is an error of the environment (the file system),
// not of the logs' contents: damage is reported in the start input.
func (h *Host) Open() error {
	for i := range h.logs {
		q := &h.logs[i]
		if q.meta != nil {
			st, err := q.meta.Load()
			if err != nil {
				// Corrupt or unreadable metadata: the node does not run
				// on a guess (io/meta rule 5); its operator (or, later,
				// a rebuild from its peers) decides.
				return fmt.Errorf("load the metadata store: %w", err)
			}
			h.metaState = st
			continue
		}
		l, st, err := OpenLog(h.fs, q.spec.Dir, q.spec.Group, h.logOpts(q.spec.Opts))
		if err != nil {
			return fmt.Errorf("open log of group %d in %s: %w", q.spec.Group, q.spec.Dir, err)
		}
		st.Log = q.spec.Log
		q.log = l
		h.start = append(h.start, st)
		if h.obs != nil {
			h.obs.Recovered(i, st)
		}
	}
	return nil
}

// Start creates the core and gives it the start input: what the logs
// recovered.
func (h *Host) Start(nowNs int64) {
	h.node = core.New(h.cfg)
	in := &core.Input{Kind: core.InStart, NowNs: nowNs, Logs: h.start}
	if h.metaLog >= 0 {
		in.Meta = &h.metaState
	}
	h.step(in)
}

// Node returns the running core.
func (h *Host) Node() *core.Node { return h.node }

// MetaLog is the index of the metadata store's queue (the l of StartStorage
// and Run for persists), -1 without one.
func (h *Host) MetaLog() int { return h.metaLog }

// Log returns log l (for a world that must look at it, as the simulator's
// disks do when a sync starts); nil for the metadata store.
func (h *Host) Log(l int) *seglog.Log { return h.logs[l].log }

// Exited reports whether the host ended its process.
func (h *Host) Exited() bool { return h.exited }

// Message passes a peer message of group g from peer from.
func (h *Host) Message(nowNs int64, from core.NodeID, g core.GroupID, msg []byte) {
	h.step(&core.Input{Kind: core.InMessage, NowNs: nowNs, From: from, Group: g, Data: msg})
}

// Request passes a client request.
func (h *Host) Request(nowNs int64, c core.ClientID, req core.Request) {
	h.step(&core.Input{Kind: core.InClient, NowNs: nowNs, Client: c, Req: req})
}

// PeerLost says that the connection to peer from closed and a reconnect
// failed: its process instance process is gone (eager failover).
func (h *Host) PeerLost(nowNs int64, from core.NodeID, process uint64) {
	h.step(&core.Input{Kind: core.InPeerLost, NowNs: nowNs, From: from, Process: process})
}

// ClientGone says that connection c closed.
func (h *Host) ClientGone(nowNs int64, c core.ClientID) {
	h.step(&core.Input{Kind: core.InClientGone, NowNs: nowNs, Client: c})
}

// Tick is the timer asked for at instant at firing at nowNs. A tick of a
// timer since replaced is ignored; one that fires before the deadline
// (which moved later) asks for the deadline again.
func (h *Host) Tick(nowNs, at int64) {
	if at != h.timerAt {
		return // superseded by an earlier timer
	}
	h.timerAt = 0
	if nowNs < h.deadline {
		h.setTimer(h.deadline)
		return
	}
	h.step(&core.Input{Kind: core.InTick, NowNs: nowNs, Draw: h.env.Draw()})
}

// ResetTimer forgets the timer (a world that held its events, as a paused
// process does) and asks again for the latest deadline, at nowNs at the
// earliest.
func (h *Host) ResetTimer(nowNs int64) {
	h.timerAt = 0
	if h.deadline != 0 {
		h.setTimer(max(h.deadline, nowNs))
	}
}

func (h *Host) setTimer(at int64) {
	h.timerAt = at
	h.env.Timer(at)
}

// Run runs the head storage effect of log l now and hands its completion
// to the core (or hands over the completion of an inline operation that
// failed), then starts what follows it.
func (h *Host) Run(nowNs int64, l int) {
	if h.exited {
		return
	}
	q := &h.logs[l]
	if d := q.failed; d != nil {
		q.failed = nil
		if d.Op == core.OpOpen {
			// An open's completion: the log's queue starts now.
			q.busy = false
			h.complete(nowNs, d)
			if !h.exited {
				h.kick(l)
			}
			return
		}
		h.complete(nowNs, d)
		return
	}
	q.busy = false
	done := h.exec(l)
	h.complete(nowNs, done)
	if !h.exited {
		h.kick(l)
	}
}

// exec runs the head effect of log l on the log and tells the observer.
// The outcome it returns is valid until the log's next operation runs.
func (h *Host) exec(l int) *core.StorageDone {
	q := &h.logs[l]
	q.cur = q.ops[q.head]
	q.ops[q.head] = core.Effect{}
	q.head++
	switch {
	case q.meta != nil:
		q.done = execSync(q.meta, &q.cur)
	case q.cur.Op == core.OpOpen:
		h.reopen(l)
	default:
		q.done = Exec(q.log, &q.cur)
	}
	if h.obs != nil {
		h.obs.Executed(l, &q.cur, &q.done, q.log)
	}
	if q.head == len(q.ops) {
		// The queue is empty: nothing refers to the arenas any more (the
		// operation that just ran was the last to, and the log copied
		// what it appended).
		q.ops, q.head = q.ops[:0], 0
		clear(q.recArena)
		q.recArena, q.bodyArena = q.recArena[:0], q.bodyArena[:0]
		q.cur.Records = nil
	}
	if q.cur.Op == core.OpPublish && q.done.Err == "" {
		d := q.done
		h.published(l)
		h.logs[l].done = d
	}
	return &h.logs[l].done
}

// complete hands a completion to the core; a failure ends the process.
func (h *Host) complete(nowNs int64, d *core.StorageDone) {
	h.step(&core.Input{Kind: core.InStorage, NowNs: nowNs, Done: *d})
	if d.Err != "" && !h.exited {
		// The core stopped using the log; the process exits and its
		// supervisor restarts it, whose recovery then judges the disk.
		h.exited = true
		h.env.Exit(d)
	}
}

// kick starts the next storage effects of log l: inline ones run at once,
// in order, until one must wait for the world or fails (then nothing after
// it runs).
func (h *Host) kick(l int) {
	q := &h.logs[l]
	for !q.busy && q.head < len(q.ops) && q.failed == nil {
		if q.meta != nil {
			// Point 10: the batch is written as it starts, and its sync
			// (the completion) is what the world times.
			if d := execWrite(q.meta, &q.ops[q.head]); d.Err != "" {
				q.ops[q.head] = core.Effect{}
				q.head++
				q.busy = true
				q.failed = &d
				h.env.RunLater(l)
				return
			}
		}
		if !h.env.StartStorage(l, &q.ops[q.head]) {
			q.busy = true
			return
		}
		done := h.exec(l)
		if done.Err != "" || done.Op == core.OpOpen {
			// The failure comes back as an input of its own; nothing
			// queued after it runs. (So does a stage's reopen, which
			// reports what it recovered; what follows it runs after.)
			q.busy = true
			f := *done
			q.failed = &f
			h.env.RunLater(l)
			return
		}
	}
}

// step passes one input to the core and carries out its effects in order.
func (h *Host) step(in *core.Input) {
	if h.exited {
		return
	}
	if h.trace != nil {
		h.trace.Input(in.NowNs, h.cfg.Node, in)
	}
	effects := h.node.Step(in)
	if h.opts.CheckInvariants {
		h.node.Invariants()
	}
	for i := range effects {
		e := &effects[i]
		if h.trace != nil {
			h.trace.Effect(in.NowNs, h.cfg.Node, e)
		}
		switch e.Kind {
		case core.EfSend:
			h.env.Send(e.To, e.Group, e.Data)
		case core.EfStorage:
			h.storage(e)
		case core.EfReply, core.EfDeliver, core.EfCancel:
			h.env.Client(e)
		case core.EfApplied:
			if h.obs != nil {
				h.obs.Applied(e)
			}
		case core.EfNote:
			// Traced above; nothing to do.
		case core.EfWatermark:
			if h.obs != nil {
				h.obs.Watermark(e)
			}
		case core.EfRecovery:
			if h.obs != nil {
				h.obs.Recovery(e)
			}
		case core.EfDeadline:
			h.deadline = max(e.AtNs, in.NowNs)
			if h.timerAt == 0 || h.deadline < h.timerAt {
				h.setTimer(h.deadline)
			}
		default:
			panic("driver: unknown effect kind")
		}
	}
}

// open opens the log of a group the node starts holding (OpOpen), or a
// group's stage (OpOpen of log LogStage): the log joins the host's
// queues, and its recovery comes back as the open's completion, an input
// of its own (RunLater).
func (h *Host) open(e *core.Effect) {
	if e.Log == core.LogStage {
		h.openStage(e)
		return
	}
	for i := range h.logs {
		if q := &h.logs[i]; !q.retired && q.spec.Group == e.Group && q.spec.Log == 0 {
			panic(fmt.Sprintf("driver: open of group %d, whose log is open", e.Group))
		}
	}
	d := core.StorageDone{Op: core.OpOpen, Group: e.Group}
	var spec LogSpec
	if h.opts.PlacedLog == nil {
		d.Err = "no place for placed logs"
	} else {
		spec = h.opts.PlacedLog(e.Group)
		spec.Group = e.Group
	}
	q := logQueue{spec: spec}
	if d.Err == "" {
		l, st, err := OpenLog(h.fsOf(&spec), spec.Dir, e.Group, h.logOpts(spec.Opts))
		if err != nil {
			d.Err = "open: " + errKind(err)
		} else {
			st.Log = spec.Log
			q.log = l
			d.State = &st
		}
	}
	h.opened(h.slot(), q, &d)
}

// openStage opens the stage of generation e.Offset of a group whose log
// is open. A stage of the group open before is reopened in its queue,
// once every operation issued before on it ran (an installation that
// ended may have left some): the open is then one of its ordered
// operations (reopen).
func (h *Host) openStage(e *core.Effect) {
	for i := range h.logs {
		if q := &h.logs[i]; !q.retired && q.spec.Group == e.Group && q.spec.Log == core.LogStage {
			if len(q.ops)-q.head >= storageOpsMax {
				panic("driver: storage queue over its limit")
			}
			q.ops = append(q.ops, *e)
			h.kick(i)
			return
		}
	}
	live := &h.logs[h.logIndex(e.Group, 0)]
	q := logQueue{spec: live.spec}
	q.spec.Log = core.LogStage
	d := h.stageOpen(&q, e)
	h.opened(h.slot(), q, &d)
}

// stageOpen opens the stage that open e names on q, closing the one q had.
func (h *Host) stageOpen(q *logQueue, e *core.Effect) core.StorageDone {
	if q.log != nil {
		q.log.Close()
		q.log = nil
	}
	d := core.StorageDone{Op: core.OpOpen, Group: e.Group, Log: core.LogStage, Offset: e.Offset}
	l, st, err := OpenStage(h.fsOf(&q.spec), q.spec.Dir, e.Group, e.Offset, h.logOpts(q.spec.Opts))
	if err != nil {
		d.Err = "open: " + errKind(err)
	} else {
		q.log = l
		d.State = &st
	}
	return d
}

// reopen runs a stage's queued open: the completion comes back as an
// input of its own, like any open's.
func (h *Host) reopen(l int) {
	q := &h.logs[l]
	d := h.stageOpen(q, &q.cur)
	if h.obs != nil && d.State != nil {
		h.obs.Recovered(l, *d.State)
	}
	q.done = d
}

func (h *Host) fsOf(spec *LogSpec) vfs.FS {
	if spec.FS != nil {
		return spec.FS
	}
	return h.fs
}

// slot returns the index for a log that opens: a retired one's (a
// published stage's, idle), or a new one. Indices of logs in use never
// change: the world refers to them.
func (h *Host) slot() int {
	for i := range h.logs {
		if h.logs[i].retired {
			return i
		}
	}
	h.logs = append(h.logs, logQueue{retired: true})
	return len(h.logs) - 1
}

// opened installs log queue q at index l and hands its open's completion
// d back as an input of its own.
func (h *Host) opened(l int, q logQueue, d *core.StorageDone) {
	h.logs[l] = q
	if h.obs != nil && d.State != nil {
		h.obs.Recovered(l, *d.State)
	}
	q2 := &h.logs[l]
	q2.busy, q2.failed = true, d
	h.env.RunLater(l)
}

// published makes the stage at index l, just published, the log of its
// group: the live log's queue runs on it from now on (what is queued there
// runs on the new generation), and the stage's index is retired.
func (h *Host) published(l int) {
	st := &h.logs[l]
	if st.head < len(st.ops) {
		panic(fmt.Sprintf("driver: operations queued behind the publish of group %d's stage", st.spec.Group))
	}
	live := &h.logs[h.logIndex(st.spec.Group, 0)]
	if live.log != nil {
		live.log.Close()
	}
	live.log = st.log
	*st = logQueue{retired: true}
}

// storage queues a storage effect on its log and starts it if it is next.
func (h *Host) storage(e *core.Effect) {
	if e.Op == core.OpOpen {
		h.open(e)
		return
	}
	l := h.logIndex(e.Group, e.Log)
	q := &h.logs[l]
	if len(q.ops)-q.head >= storageOpsMax {
		panic("driver: storage queue over its limit")
	}
	if h.obs != nil {
		h.obs.Issued(l, e)
	}
	q.ops = append(q.ops, *e)
	at := len(q.ops) - 1
	h.kick(l)
	// Still queued (the kick stopped before it): it must own its records,
	// which point into the core's memory, valid until its next step.
	if len(q.ops) > at && q.head <= at && len(q.ops[at].Records) > 0 {
		q.own(&q.ops[at])
	}
}

func (h *Host) logIndex(g core.GroupID, id core.LogID) int {
	if g == core.GroupCtrl && h.metaLog >= 0 {
		return h.metaLog
	}
	for i := range h.logs {
		if q := &h.logs[i]; !q.retired && q.spec.Group == g && q.spec.Log == id {
			return i
		}
	}
	panic(fmt.Sprintf("driver: no log %d of group %d", id, g))
}
