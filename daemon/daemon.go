package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/front"
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/fsio/metapebble"
	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/seglog"
)

// Config configures one broker process.
type Config struct {
	DataDir  string
	AMQPAddr string // host:port; port 0 picks one (Server.Addr says which)
	Node     uint32 // default 1
	// Users may log in over AMQP (PLAIN); nil means guest/guest, from
	// loopback only.
	Users []conn.User
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// DrainTimeout bounds Shutdown's wait for outstanding confirms.
	// Default 10 s.
	DrainTimeout time.Duration
	// HTTPAddr serves /metrics, /healthz and /readyz (host:port; port 0
	// picks one, Server.HTTPAddr says which); "" serves none.
	HTTPAddr string
	// WriteTimeout bounds one write to a client socket: a client that
	// reads nothing for this long is disconnected. Default 30 s.
	WriteTimeout time.Duration
	// Cluster makes the broker one member of a cluster (cluster.go); nil:
	// a single broker, the sole voter of its metadata group.
	Cluster *ClusterConfig
}

// Server is one running broker.
type Server struct {
	cfg   Config
	log   *slog.Logger
	ln    net.Listener
	start time.Time

	host  *driver.Host
	front *front.Front
	store *metapebble.Store
	node  core.NodeID

	process uint64
	http    *http.Server
	httpLn  net.Listener

	events  chan event
	stopReq chan chan error // Shutdown's request to the loop
	done    chan struct{}   // closed when the loop ends
	doneCtx context.Context // ends when done is closed
	err     error           // why the loop ended (nil: a clean drain)

	cluster *cluster // nil for a single broker
	obs     *observer

	// Loop-owned.
	work      workFIFO
	socks     map[front.ConnID]*sock
	lastConn  atomic.Uint64
	hostTimer *time.Timer
	hostAt    int64
	frontTime *time.Timer
	logsSeen  int    // one past the highest log index the host used
	syncing   int    // sync goroutines running
	lastNow   int64  // the last instant given (loop-owned after Start)
	adminSeq  uint64 // operators' requests proposed
	admin     map[uint64]*adminPending
	toFront   []core.Effect // core replies and deliveries for the front's next batch
	draining  bool
	exitErr   error
	accepting atomic.Bool
	wg        sync.WaitGroup // accept and reader goroutines
}

// event is something from another goroutine for the loop.
type event struct {
	kind      uint8
	id        front.ConnID
	sock      *sock
	bytes     []byte
	log       int
	reply     chan snapshot    // evQuery
	admin     *adminEvent      // evAdmin
	filter    string           // evDescribe
	described chan Description // evDescribe
	// Cluster events.
	node      core.NodeID  // evPeerMsg (from), evPeerLost, evFwdLost, evFwdEffect
	process   uint64       // evPeerLost
	group     core.GroupID // evPeerMsg
	gen       uint64       // evFwdLost, evFwdEffect: the link's generation
	why       string       // evFwdLost
	unreached bool         // evFwdLost: the link never connected (nothing on it arrived)
	effect    *core.Effect // evFwdEffect
	fwd       *fwdSession  // evFwdSessionEnd
	fwdIn     *fwdIn       // evFwdIn
}

const (
	evAccept uint8 = iota + 1
	evBytes
	evGone
	evSynced   // a sync goroutine finished with log
	evQuery    // the HTTP side asks for a snapshot
	evAdmin    // the HTTP side proposes an operator's command
	evDescribe // the HTTP side asks for the catalogue

	evPeerMsg       // a peer's message for the core
	evPeerLost      // eager failover: a peer's process is gone
	evFwdIn         // a forwarded client's request or end (owner side)
	evFwdSessionEnd // a forwarding session ended (owner side)
	evFwdEffect     // a reply or delivery for a client forwarded from here
	evFwdLost       // a forwarding link ended (client side)
)

// sock is one client socket, its reader's credit and its writer's queue.
type sock struct {
	id front.ConnID
	c  net.Conn
	// credit lets the reader read its next chunk: it reads one, hands it
	// to the loop and waits for the credit, which the loop gives back once
	// the chunk went to the front, unless the front paused reading (then
	// once it resumes). So at most one chunk is read ahead of a pause, as
	// amqp/conn's contract allows.
	credit     chan struct{}
	paused     bool // loop-owned: the front paused reading
	creditOwed bool // loop-owned: a chunk was taken while paused
	// out is the writer goroutine's queue: bytes to write in order; nil
	// means close the socket once what came before is written.
	out    chan []byte
	closed bool // loop-owned: no more writes are queued
	// clientCloses: set before the close mark is queued: the client
	// closes the socket (it received a close-ok), which the writer waits
	// for (closeLinger)
	clientCloses bool
	outClosed    bool // loop-owned: out is closed
}

// logExtendBytes: a queue's segment files are extended with zeros this
// far ahead of their frames (seglog.Options.ExtendBytes), so that an
// append's fdatasync commits no change of the file's size (about 50 µs
// off each when three logs sync at once on one disk, so off a confirm one
// publish at a time; docs/performance.md). At most this much is read as
// zeros when a log is opened, and a rolled segment is cut back to its
// frames.
const logExtendBytes = 256 << 10

// readChunkBytes is the most one read takes from a socket.
const readChunkBytes = 64 << 10

// writeQueueMax bounds the writes queued for one socket: a client that
// leaves this many unread is disconnected rather than allowed to hold
// memory (the loop never blocks on a socket).
const writeQueueMax = 8192

// Start opens the data directory, recovers the node's state, listens for
// AMQP clients and starts the loop.
func Start(cfg Config) (*Server, error) {
	if cfg.Node == 0 {
		cfg.Node = 1
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Users == nil {
		cfg.Users = []conn.User{{Name: "guest", Password: "guest", LoopbackOnly: true}}
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.Default()
	}
	if cfg.Cluster != nil {
		cc, err := cfg.Cluster.validate(cfg.Node)
		if err != nil {
			return nil, err
		}
		cfg.Cluster = &cc
	}
	s := &Server{cfg: cfg, log: lg, start: time.Now(), node: core.NodeID(cfg.Node),
		events: make(chan event, 1024), stopReq: make(chan chan error), done: make(chan struct{}),
		socks: map[front.ConnID]*sock{}, admin: map[uint64]*adminPending{}}
	var cancelDone context.CancelFunc
	s.doneCtx, cancelDone = context.WithCancel(context.Background())
	go func() { <-s.done; cancelDone() }()

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	// The metadata store's lock comes first: a second process on the same
	// directory stops here, before it touches anything.
	var err error
	s.store, err = metapebble.Open(filepath.Join(cfg.DataDir, "meta"), metapebble.Options{})
	if err != nil {
		return nil, err
	}
	id, process, err := openDataDir(cfg.DataDir, cfg.Node)
	s.process = process
	if err != nil {
		s.store.Close()
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	qdir := filepath.Join(cfg.DataDir, "queues")
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		s.store.Close()
		return nil, err
	}
	fs, err := fsio.New(qdir)
	if err != nil {
		s.store.Close()
		return nil, err
	}
	cc := ctrl.DefaultConfig(uint64(cfg.Node), []uint64{uint64(cfg.Node)})
	brokers := 1
	if cfg.Cluster != nil {
		voters := make([]uint64, len(cfg.Cluster.Voters))
		for i, v := range cfg.Cluster.Voters {
			voters[i] = uint64(v)
		}
		cc = ctrl.DefaultConfig(uint64(cfg.Node), voters)
		cc.Learners = cfg.Cluster.learners()
		// Raft over real sockets between processes that share cores with
		// fsyncs: a leader heartbeat every 40 ms, and a campaign after
		// 500 to 1000 ms without one, so that a slow disk or a busy
		// scheduler does not unseat a live leader (one broker alone has
		// nobody to lose touch with, and keeps the faster default).
		cc.TickNs, cc.HeartbeatTicks, cc.CampaignTimeoutNs = 20_000_000, 2, 500_000_000
		brokers = len(cfg.Cluster.Members)
	}
	ccfg := core.Config{Node: s.node, Process: process, Storage: id.Storage, Ctrl: &cc}
	s.obs = &observer{s: s}
	s.host = driver.NewHost(ccfg, fs, nil, metaStore{s.store}, &env{s: s}, s.obs, nil, driver.Options{
		PlacedLog: func(g core.GroupID) driver.LogSpec {
			return driver.LogSpec{Dir: fmt.Sprintf("q%d", g), Opts: seglog.Options{ExtendBytes: logExtendBytes}}
		},
	})
	if err := s.host.Open(); err != nil {
		s.store.Close()
		return nil, err
	}
	s.front, err = front.New(front.Config{Conn: conn.Config{Users: cfg.Users,
		// One connection alone never meets the owner's own limit.
		PublishesInFlightMax: core.DefaultLimits.PendingPublishesMax}, Node: s.node, Process: process, Brokers: brokers,
		Forward: cfg.Cluster != nil,
		// A publish waiting for its queue's next owner asks the (local)
		// topology every 2 ms, not every 10: a recovery on one host takes
		// about 10 ms, and the wait after its activation is the rest of
		// a retry.
		RouteRetryNs: 2_000_000,
		Serves:       func(q core.QueueID) bool { return s.host.Node().Serves(q) }})
	if err != nil {
		s.store.Close()
		return nil, err
	}
	if cfg.Cluster != nil {
		if err := s.startCluster(*cfg.Cluster); err != nil {
			s.store.Close()
			return nil, fmt.Errorf("peer listener: %w", err)
		}
	}
	s.ln, err = net.Listen("tcp", cfg.AMQPAddr)
	if err != nil {
		if s.cluster != nil {
			s.cluster.close()
		}
		s.store.Close()
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		if err := s.startHTTP(cfg.HTTPAddr); err != nil {
			s.ln.Close()
			if s.cluster != nil {
				s.cluster.close()
			}
			s.store.Close()
			return nil, fmt.Errorf("http: %w", err)
		}
	}
	s.hostTimer = time.NewTimer(time.Hour)
	s.hostTimer.Stop()
	s.frontTime = time.NewTimer(time.Hour)
	s.frontTime.Stop()
	lg.Info("starting", "node", cfg.Node, "process", process, "storage", id.Storage,
		"data_dir", cfg.DataDir, "amqp", s.ln.Addr().String(), "http", s.HTTPAddr(), "peers", s.PeerAddr())
	s.host.Start(s.now())
	s.accepting.Store(true)
	s.wg.Add(1)
	go s.acceptLoop()
	if s.cluster != nil {
		s.runCluster()
	}
	go s.loop()
	return s, nil
}

// Addr is the AMQP listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// PeerAddr is the peer listener's address, "" for a single broker.
func (s *Server) PeerAddr() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.ln.Addr().String()
}

// HTTPAddr is the metrics listener's address, "" without one.
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Done is closed when the broker stopped (a drain, or a storage failure).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err says why the broker stopped: nil after a clean drain.
func (s *Server) Err() error {
	<-s.done
	return s.err
}

// Shutdown drains the broker (doc.go, "Drain") and waits for it to stop.
func (s *Server) Shutdown(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case s.stopReq <- reply:
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// now is the loop's instant: nanoseconds of the monotonic clock since the
// process started, never 0, and never below an instant already given (a
// tick input may carry its timer's instant, a hair ahead of the clock).
func (s *Server) now() int64 {
	s.lastNow = max(s.lastNow, int64(time.Since(s.start))+1)
	return s.lastNow
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !s.accepting.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		k := &sock{id: front.ConnID(s.lastConn.Add(1)), c: c, credit: make(chan struct{}, 1), out: make(chan []byte, writeQueueMax)}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		select {
		case s.events <- event{kind: evAccept, id: k.id, sock: k}:
		case <-s.done:
			c.Close()
			return
		}
	}
}

// closeLinger bounds how long a socket the broker closed waits for its
// client to close its end.
const closeLinger = time.Second

// read is a socket's reader: each chunk goes to the loop, and the next is
// read once the loop gives the credit back. It reads into one buffer of
// its own and hands the loop a copy of what it read: a fresh 64 KiB buffer
// a read made one publish at a time a collection every few milliseconds,
// each a pause in front of the confirms (the tail of confirm latency).
func (s *Server) read(k *sock) {
	defer s.wg.Done()
	defer k.c.Close() // (closed already, or half-closed by the writer)
	buf := make([]byte, readChunkBytes)
	for {
		n, err := k.c.Read(buf)
		if n > 0 {
			select {
			case s.events <- event{kind: evBytes, id: k.id, bytes: slices.Clone(buf[:n])}:
			case <-s.done:
				return
			}
			select {
			case <-k.credit:
			case <-s.done:
				return
			}
		}
		if err != nil {
			select {
			case s.events <- event{kind: evGone, id: k.id}:
			case <-s.done:
			}
			return
		}
	}
}

// write is a socket's writer: it writes what the loop queued, in order,
// and closes the socket at the queue's close mark, or on a failed write.
func (s *Server) write(k *sock) {
	defer s.wg.Done()
	for b := range k.out {
		if b == nil {
			if k.clientCloses {
				// The client closes the socket once it has read the
				// close-ok (AMQP: its receiver closes); the reader waits
				// for that, at most closeLinger, then closes it. Closing
				// first would race the client's own shutdown.
				k.c.SetReadDeadline(time.Now().Add(closeLinger))
				return
			}
			k.c.Close()
			return
		}
		k.c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := k.c.Write(b); err != nil {
			// The reader sees the closed socket and reports it gone.
			k.c.Close()
			return
		}
	}
}

// runWork empties the loop's FIFO of work, and what that work queues.
func (s *Server) runWork() {
	for s.work.pending() > 0 {
		s.work.runBatch()
	}
}

// runWorkBatch runs one batch of the loop's work (workFIFO.runBatch).
func (s *Server) runWorkBatch() { s.work.runBatch() }

// await takes the loop's next input, waiting for one unless wait is false.
// Not waiting, it takes a ready event (the sockets', the syncs', the
// peers') if there is one, else perhaps a ready timer: with one ready,
// Go's select picks it or going on at random, so a chain of work yields
// to the timers every other batch on average. It returns the reply
// channel of a stop request.
func (s *Server) await(wait bool) chan error {
	var now <-chan struct{} // nil: never ready
	if !wait {
		select {
		case ev := <-s.events:
			s.onEvent(ev)
			return nil
		default:
		}
		now = closedChan
	}
	select {
	case ev := <-s.events:
		s.onEvent(ev)
	case <-s.hostTimer.C:
		s.hostTick()
	case <-s.frontTime.C:
		s.frontEffects(s.front.Tick(s.now()))
	case r := <-s.stopReq:
		return r
	case <-now:
	}
	return nil
}

// closedChan is always ready: await's case for not waiting.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (s *Server) hostTick() {
	at := s.hostAt
	s.lastNow = max(s.lastNow, at)
	s.host.Tick(s.now(), at)
}

// loop is the one goroutine that owns the host, the core and the front.
func (s *Server) loop() {
	var stopReply chan error
	defer func() {
		if r := recover(); r != nil {
			s.err = fmt.Errorf("panic: %v", r)
			s.log.Error("broker stopped", "panic", r)
			s.teardown()
			close(s.done)
			panic(r)
		}
	}()
	for s.exitErr == nil {
		// One batch of work, then an event if one is ready, before the
		// work that batch queued: a chain of work (a seal's
		// reads, each completion asking the next) would otherwise keep the
		// loop from its sockets and timers for as long as the chain runs
		// (a 20,001-record seal held a follower's appends, and an
		// owner-kill pause, 26 ms).
		s.runWorkBatch()
		if s.exitErr != nil {
			break
		}
		if stopReply = s.await(s.work.pending() == 0); stopReply != nil {
			s.err = s.drain()
			s.teardown()
			close(s.done)
			stopReply <- s.err
			return
		}
	}
	s.err = s.exitErr
	s.log.Error("broker stopped: storage failed (a supervisor restarts it; recovery judges the disk)", "err", s.exitErr)
	s.teardown()
	close(s.done)
}

func (s *Server) onEvent(ev event) {
	switch ev.kind {
	case evAccept:
		k := ev.sock
		s.socks[k.id] = k
		peer := conn.Peer{}
		if a, ok := k.c.RemoteAddr().(*net.TCPAddr); ok {
			peer.Loopback = a.IP.IsLoopback()
		}
		s.log.Debug("accepted", "conn", k.id, "peer", k.c.RemoteAddr().String())
		s.wg.Add(2)
		go s.read(k)
		go s.write(k)
		s.frontEffects(s.front.Accept(s.now(), k.id, peer))
	case evBytes:
		if k := s.socks[ev.id]; k != nil && !k.closed {
			s.frontEffects(s.front.Bytes(s.now(), ev.id, ev.bytes))
			switch {
			case k.outClosed:
				// Closed by what the chunk caused: the reader was released.
			case k.paused:
				k.creditOwed = true
			default:
				k.credit <- struct{}{}
			}
		}
	case evGone:
		if k := s.socks[ev.id]; k != nil {
			s.closeSock(k)
			s.frontEffects(s.front.SocketGone(s.now(), ev.id))
		}
	case evSynced:
		s.syncing--
		s.host.Run(s.now(), ev.log)
	case evQuery:
		ev.reply <- s.snapshot()
	case evAdmin:
		s.propose(ev.admin)
	case evDescribe:
		ev.described <- s.describe(ev.filter)
	case evPeerMsg:
		s.host.Message(s.now(), ev.node, ev.group, ev.bytes)
	case evPeerLost:
		s.cluster.lostReports.Add(1)
		s.host.PeerLost(s.now(), ev.node, ev.process)
	case evFwdIn:
		s.cluster.fwd.in(ev.fwdIn)
	case evFwdSessionEnd:
		s.cluster.fwd.sessionEnd(ev.fwd)
	case evFwdEffect:
		if l := s.cluster.fwd.links[ev.node]; l != nil && l.gen == ev.gen {
			s.toClient(ev.effect)
		}
	case evFwdLost:
		s.cluster.fwd.lost(ev.node, ev.gen, ev.why, ev.unreached)
	}
}

// closeSock closes k once the writes queued before are written, and
// forgets it.
func (s *Server) closeSock(k *sock) {
	if !k.closed {
		k.closed = true
		select {
		case k.out <- nil:
		default:
			k.c.Close() // the queue is full: its client reads nothing
		}
	}
	s.endQueue(k)
	delete(s.socks, k.id)
}

// closeNow closes k at once, dropping the writes still queued.
func (s *Server) closeNow(k *sock) {
	k.closed = true
	k.c.Close()
	s.endQueue(k)
	delete(s.socks, k.id)
}

// endQueue ends k's writer (after what is queued) and releases its
// reader from waiting for a credit: its next read fails on the closed
// socket and it reports the socket gone, which the loop ignores.
func (s *Server) endQueue(k *sock) {
	if !k.outClosed {
		k.outClosed = true
		close(k.out)
		close(k.credit)
	}
}

// frontEffects carries out the front's effects.
func (s *Server) frontEffects(effects []front.Effect) {
	for i := range effects {
		e := &effects[i]
		switch e.Kind {
		case front.EfWrite:
			k := s.socks[e.Conn]
			if k == nil || k.closed {
				continue
			}
			select {
			case k.out <- e.Bytes:
			default:
				// A client that leaves this much unread: its session ends.
				s.log.Warn("client reads nothing; closing", "conn", e.Conn, "writes_queued", writeQueueMax)
				s.closeNow(k)
				id := e.Conn
				s.work.push(func() { s.frontEffects(s.front.SocketGone(s.now(), id)) })
			}
		case front.EfClose:
			if k := s.socks[e.Conn]; k != nil {
				k.clientCloses = e.ClientCloses
				s.log.Debug("closed", "conn", e.Conn, "reason", e.Reason)
				s.closeSock(k)
			}
		case front.EfPauseRead:
			if k := s.socks[e.Conn]; k != nil {
				k.paused = true
			}
		case front.EfResumeRead:
			if k := s.socks[e.Conn]; k != nil && k.paused && !s.draining {
				k.paused = false
				if k.creditOwed {
					k.creditOwed = false
					k.credit <- struct{}{}
				}
			}
		case front.EfRequest:
			if e.Node != 0 {
				s.cluster.fwd.request(e.Node, e.Client, &e.Req)
				continue
			}
			s.host.Request(s.now(), e.Client, e.Req)
		case front.EfClientGone:
			if e.Node != 0 {
				s.cluster.fwd.gone(e.Node, e.Client)
				continue
			}
			s.host.ClientGone(s.now(), e.Client)
		case front.EfTimer:
			s.frontTime.Reset(time.Duration(max(e.AtNs-s.now(), 0)))
		}
	}
}

// drain is Shutdown's work, on the loop.
func (s *Server) drain() error {
	s.log.Info("draining")
	s.accepting.Store(false)
	s.ln.Close()
	s.draining = true
	for _, k := range s.socks {
		k.paused = true // no new requests; a chunk already read still counts
	}
	deadline := time.Now().Add(s.cfg.DrainTimeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		s.runWork()
		if s.exitErr != nil {
			return s.exitErr
		}
		if s.front.Publishing() == 0 && s.syncing == 0 && s.work.pending() == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.log.Warn("drain timed out; outcomes of the publishes left are unknown to their clients", "publishes", s.front.Publishing())
			break
		}
		select {
		case ev := <-s.events:
			if ev.kind != evAccept {
				s.onEvent(ev)
			} else {
				ev.sock.c.Close()
			}
		case <-s.hostTimer.C:
			s.hostTick()
		case <-s.frontTime.C:
			s.frontEffects(s.front.Tick(s.now()))
		case <-tick.C:
		}
	}
	// Every outcome is answered: tell the clients (320 CONNECTION_FORCED),
	// end the sessions (their deliveries return) and finish the storage
	// work they cause.
	s.frontEffects(s.front.Shutdown(s.now(), "the broker is shutting down"))
	for id, k := range s.socks {
		s.closeSock(k)
		s.frontEffects(s.front.SocketGone(s.now(), id))
	}
	for s.exitErr == nil {
		s.runWork()
		if s.syncing == 0 || time.Now().After(deadline) {
			break
		}
		switch ev := <-s.events; ev.kind {
		case evSynced:
			s.onEvent(ev)
		case evAccept:
			ev.sock.c.Close()
		}
	}
	s.log.Info("drained")
	return s.exitErr
}

// teardown closes what the loop owned, once no sync goroutine uses a log.
func (s *Server) teardown() {
	s.accepting.Store(false)
	s.ln.Close()
	if s.http != nil {
		s.http.Close()
	}
	if s.cluster != nil {
		s.cluster.close()
	}
	for _, k := range s.socks {
		s.closeNow(k)
	}
	wait := time.After(30 * time.Second)
	for s.syncing > 0 {
		select {
		case ev := <-s.events:
			switch ev.kind {
			case evSynced:
				s.syncing--
			case evAccept:
				ev.sock.c.Close()
			}
		case <-wait:
			s.log.Error("a sync did not finish in 30 s; closing anyway", "syncing", s.syncing)
			s.syncing = 0
		}
	}
	s.hostTimer.Stop()
	s.frontTime.Stop()
	for l := 0; l < s.logsSeen; l++ {
		if lg := s.host.Log(l); lg != nil {
			if err := lg.Close(); err != nil {
				s.log.Warn("closing a log", "log", l, "err", err)
			}
		}
	}
	if err := s.store.Close(); err != nil && !errors.Is(err, meta.ErrClosed) {
		s.log.Warn("closing the metadata store", "err", err)
	}
}
