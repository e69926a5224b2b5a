package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/netio"
)

// Cluster mode: the broker is one member of a cluster, and the core's
// peer sends travel over netio (authenticated connections, docs/peer-
// transport.md).
//
// Each broker dials every other member once and sends the core's messages
// to it on that connection only (it never reads a message from it); what
// it receives arrives on the connections the others dialed to it. So each
// direction of a pair is one TCP stream, one writer, one reader. Sends
// never block the loop: each peer has a bounded queue (PeerQueueMax
// messages, PeerQueueBytesMax bytes), and a message that does not fit is
// dropped and counted (the core resends what matters, core/doc.go
// point 6). While a peer is unreachable its queue is emptied as it fills.
//
// Eager failover (core/doc.go point 10): when the connection to a peer is
// closed from the peer's side (end of stream or a reset: its process
// died, the kernel closed its sockets) and the reconnect that follows is
// refused (nothing listens at its address), the loop gets InPeerLost with
// the process instance that connection had reached (the handshake carries
// it, bound by the MACs). A reconnect that reaches another process
// reports the old one lost too. A silence is never reported: a paused or
// partitioned peer's connection stays open, or ends by our own write
// timeout, and a reconnect that times out is not a refusal; the metadata
// group's liveness expiry decides those.

// ClusterConfig makes a broker one member of a cluster.
type ClusterConfig struct {
	// Members is every broker of the cluster, this one included: its node
	// id and the address its peers dial. At least two; ids distinct.
	Members []Member
	// Voters are the metadata group's voters: 1, 3 or 5 member ids. Nil:
	// the lowest 1, 3 or 5 member ids (as many as there are members, odd,
	// up to five). Every other member is a raft learner.
	Voters []uint32
	// PeerListen is where this broker listens for peers; "" means its own
	// Members address.
	PeerListen string
	// Secret is the cluster secret (at least netio.SecretBytesMin bytes),
	// the same on every member.
	Secret []byte
	// PeerQueueMax and PeerQueueBytesMax bound the messages queued for one
	// peer (0: 4,096 and 64 MiB).
	PeerQueueMax      int
	PeerQueueBytesMax int64
}

// Member is one broker of a cluster.
type Member struct {
	Node uint32
	Addr string // host:port of its peer listener
}

// Bounds of the peer transport.
const (
	peerQueueMaxDefault      = 4096
	peerQueueBytesMaxDefault = 64 << 20
	// peerRedialMsMin and peerRedialMsMax bound the wait between two
	// dials of an unreachable peer (doubling from the first).
	peerRedialMsMin = 50
	peerRedialMsMax = 1000
	// peerRedialAfterCloseMsMin is the first wait after a connection the
	// peer closed when the redial fails otherwise than refused: a process
	// killed with SIGKILL closes its connections before its listener, so
	// the first redial may reach the dying listener (accepted, then
	// reset). Waiting peerRedialMsMin there made eager failover 50 ms
	// late; the next dials, 1, 2, 4 ms... apart, find the port refused.
	peerRedialAfterCloseMsMin = 1
	// peerDialTimeoutMs bounds one dial with its handshake: a peer that
	// accepts and says nothing (a paused process) costs this much.
	peerDialTimeoutMs = 2000
)

// validate checks cc for node and fills defaults in a copy.
func (cc ClusterConfig) validate(node uint32) (ClusterConfig, error) {
	if len(cc.Members) < 2 {
		return cc, fmt.Errorf("cluster: %d member(s); a cluster has at least 2 (run without a cluster for one broker)", len(cc.Members))
	}
	cc.Members = slices.Clone(cc.Members)
	slices.SortFunc(cc.Members, func(a, b Member) int { return int(int64(a.Node) - int64(b.Node)) })
	self := false
	for i, m := range cc.Members {
		if m.Node == 0 {
			return cc, fmt.Errorf("cluster: member node id 0")
		}
		if i > 0 && cc.Members[i-1].Node == m.Node {
			return cc, fmt.Errorf("cluster: member n%d listed twice", m.Node)
		}
		if _, _, err := net.SplitHostPort(m.Addr); err != nil {
			return cc, fmt.Errorf("cluster: member n%d address %q: %v", m.Node, m.Addr, err)
		}
		if m.Node == node {
			self = true
		}
	}
	if len(cc.Members) > int(metadata.BrokersMax) {
		return cc, fmt.Errorf("cluster: %d members, at most %d", len(cc.Members), metadata.BrokersMax)
	}
	if !self {
		return cc, fmt.Errorf("cluster: this broker (n%d) is not among the members", node)
	}
	if cc.Voters == nil {
		k := 1
		switch n := len(cc.Members); {
		case n >= 5:
			k = 5
		case n >= 3:
			k = 3
		}
		for _, m := range cc.Members[:k] {
			cc.Voters = append(cc.Voters, m.Node)
		}
	}
	switch len(cc.Voters) {
	case 1, 3, 5:
	default:
		return cc, fmt.Errorf("cluster: %d voters, want 1, 3 or 5", len(cc.Voters))
	}
	for i, v := range cc.Voters {
		if !slices.ContainsFunc(cc.Members, func(m Member) bool { return m.Node == v }) {
			return cc, fmt.Errorf("cluster: voter n%d is not a member", v)
		}
		if slices.Contains(cc.Voters[:i], v) {
			return cc, fmt.Errorf("cluster: voter n%d listed twice", v)
		}
	}
	if len(cc.Secret) < netio.SecretBytesMin {
		return cc, fmt.Errorf("cluster: secret of %d bytes, need at least %d", len(cc.Secret), netio.SecretBytesMin)
	}
	if cc.PeerQueueMax <= 0 {
		cc.PeerQueueMax = peerQueueMaxDefault
	}
	if cc.PeerQueueBytesMax <= 0 {
		cc.PeerQueueBytesMax = peerQueueBytesMaxDefault
	}
	return cc, nil
}

// addr returns member n's address.
func (cc *ClusterConfig) addr(n core.NodeID) string {
	for _, m := range cc.Members {
		if core.NodeID(m.Node) == n {
			return m.Addr
		}
	}
	return ""
}

// learners are the members that are not voters.
func (cc *ClusterConfig) learners() []uint64 {
	var ls []uint64
	for _, m := range cc.Members {
		if !slices.Contains(cc.Voters, m.Node) {
			ls = append(ls, uint64(m.Node))
		}
	}
	return ls
}

// cluster is the peer transport of a broker in cluster mode.
type cluster struct {
	cfg   ClusterConfig
	netio netio.Config
	ln    *netio.Listener
	links []*peerLink // one per other member, by node id
	fwd   *forwarder
	// accepted are the peer connections being read, closed at teardown
	// (a broker that stops closes its end of every connection, so that
	// its peers see it gone even when the process lives on).
	mu       sync.Mutex
	accepted map[*netio.Conn]bool
	closed   bool
	// Counters for the metrics; written by the goroutines that count.
	dropped     atomic.Uint64 // messages dropped at a full queue
	sent        atomic.Uint64 // messages written
	received    atomic.Uint64 // messages received
	lostReports atomic.Uint64 // InPeerLost passed to the core
}

// peerLink is the outgoing side towards one peer: its bounded queue and
// the goroutine that dials and writes.
type peerLink struct {
	node        core.NodeID
	addr        string
	out         chan peerMsg
	queuedBytes atomic.Int64
	connected   atomic.Bool
	process     atomic.Uint64 // the process instance the connection reached (0: none)
}

type peerMsg struct {
	g   core.GroupID
	msg []byte
}

// startCluster listens for peers and starts a link to every other member.
func (s *Server) startCluster(cc ClusterConfig) error {
	cl := &cluster{cfg: cc, accepted: map[*netio.Conn]bool{}}
	cl.netio = netio.Config{NodeID: s.node, Process: s.process, Secret: cc.Secret,
		OnRefused: func(remote net.Addr, err error) {
			s.log.Warn("peer connection refused", "remote", remote.String(), "err", err)
		}}
	addr := cc.PeerListen
	if addr == "" {
		addr = cc.addr(s.node)
	}
	ln, err := netio.Listen(addr, cl.netio)
	if err != nil {
		return err
	}
	cl.ln = ln
	for _, m := range cc.Members {
		if core.NodeID(m.Node) == s.node {
			continue
		}
		cl.links = append(cl.links, &peerLink{node: core.NodeID(m.Node), addr: m.Addr, out: make(chan peerMsg, cc.PeerQueueMax)})
	}
	cl.fwd = newForwarder(s)
	s.cluster = cl
	return nil
}

// runCluster starts the cluster's goroutines (after the loop's state is
// ready for their events).
func (s *Server) runCluster() {
	cl := s.cluster
	s.wg.Add(1)
	go s.acceptPeers()
	for _, l := range cl.links {
		s.wg.Add(1)
		go s.dialPeer(l)
	}
}

func (cl *cluster) link(n core.NodeID) *peerLink {
	for _, l := range cl.links {
		if l.node == n {
			return l
		}
	}
	return nil
}

func (cl *cluster) member(n core.NodeID) bool {
	return slices.ContainsFunc(cl.cfg.Members, func(m Member) bool { return core.NodeID(m.Node) == n })
}

// send queues msg for peer to, or drops it: never blocks (loop).
func (cl *cluster) send(s *Server, to core.NodeID, g core.GroupID, msg []byte) {
	l := cl.link(to)
	if l == nil {
		cl.dropped.Add(1)
		return
	}
	if l.queuedBytes.Load()+int64(len(msg)) > cl.cfg.PeerQueueBytesMax {
		cl.dropped.Add(1)
		return
	}
	m := peerMsg{g: g, msg: slices.Clone(msg)}
	select {
	case l.out <- m:
		l.queuedBytes.Add(int64(len(msg)))
	default:
		cl.dropped.Add(1)
	}
}

// post hands an event to the loop unless the broker stopped; false if it
// did.
func (s *Server) post(ev event) bool {
	select {
	case s.events <- ev:
		return true
	case <-s.done:
		return false
	}
}

// dialPeer keeps a connection to peer l and writes its queue there.
func (s *Server) dialPeer(l *peerLink) {
	defer s.wg.Done()
	cl := s.cluster
	var reached uint64    // the process the last connection reached, until replaced
	closedByPeer := false // the last connection ended from the peer's side
	reported := false     // reached was reported lost
	wait := time.Duration(peerRedialMsMin) * time.Millisecond
	for {
		select {
		case <-s.done:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), peerDialTimeoutMs*time.Millisecond)
		stop := context.AfterFunc(s.doneCtx, cancel)
		c, err := netio.Dial(ctx, l.addr, cl.netio)
		stop()
		cancel()
		if err != nil {
			if reached != 0 && closedByPeer && errors.Is(err, syscall.ECONNREFUSED) {
				// Closed from its side, and nothing listens there now:
				// that process is gone (eager failover).
				if !reported {
					s.log.Info("peer lost: its connection closed and a reconnect was refused", "peer", l.node, "process", reached)
					reported = true
				}
				// Reported again at each refused redial while it stays
				// down: only the metadata leader acts on it, and a leader
				// elected after the first report (the lost process may
				// have led) learns it this way. The core ignores repeats.
				if !s.post(event{kind: evPeerLost, node: l.node, process: reached}) {
					return
				}
			}
			l.drain()
			if closedByPeer && !reported && wait == time.Duration(peerRedialMsMin)*time.Millisecond {
				wait = time.Duration(peerRedialAfterCloseMsMin) * time.Millisecond
			}
			select {
			case <-time.After(wait):
			case <-s.done:
				return
			}
			wait = min(2*wait, time.Duration(peerRedialMsMax)*time.Millisecond)
			continue
		}
		wait = time.Duration(peerRedialMsMin) * time.Millisecond
		if reached != 0 && c.PeerProcess() != reached {
			s.log.Info("peer restarted: the reconnect reached another process", "peer", l.node, "process", reached, "now", c.PeerProcess())
			if !s.post(event{kind: evPeerLost, node: l.node, process: reached}) {
				c.Close()
				return
			}
		}
		reached, reported = c.PeerProcess(), false
		l.process.Store(reached)
		l.connected.Store(true)
		s.log.Info("peer connected", "peer", l.node, "process", reached)
		closedByPeer = s.writePeer(l, c)
		l.connected.Store(false)
		s.log.Info("peer connection ended", "peer", l.node, "process", reached, "closed_by_peer", closedByPeer)
	}
}

// drain empties l's queue (its peer is unreachable: the core resends).
func (l *peerLink) drain() {
	for {
		select {
		case m := <-l.out:
			l.queuedBytes.Add(-int64(len(m.msg)))
		default:
			return
		}
	}
}

// writePeer writes l's queue on c until c fails; it reports whether the
// connection ended from the peer's side.
func (s *Server) writePeer(l *peerLink, c *netio.Conn) (closedByPeer bool) {
	cl := s.cluster
	// The peer never writes on this connection: a read ends only when it
	// closes (end of stream, a reset) or when we close it.
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, err := c.ReadFrame(); err != nil {
				readErr <- err
				return
			}
			// A frame on an outgoing connection: not what a peer sends.
			s.log.Warn("a frame on an outgoing peer connection; closing it", "peer", l.node)
			c.Close()
		}
	}()
	defer c.Close()
	for {
		select {
		case m := <-l.out:
			l.queuedBytes.Add(-int64(len(m.msg)))
			if err := c.WriteGroupMessage(m.g, m.msg); err != nil {
				// A reset or broken pipe is the peer's side closing; a
				// timeout is a silence (a paused peer): not its close.
				c.Close()
				rerr := <-readErr
				return peerClosed(err) || peerClosed(rerr)
			}
			cl.sent.Add(1)
		case err := <-readErr:
			return peerClosed(err)
		case <-s.done:
			c.Close()
			<-readErr
			return false
		}
	}
}

// peerClosed says whether err means the other end closed the connection
// (end of stream, reset, broken pipe), as opposed to our own close or a
// timeout.
func peerClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) == false &&
		(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// acceptPeers accepts authenticated peer connections and reads each.
func (s *Server) acceptPeers() {
	defer s.wg.Done()
	for {
		c, err := s.cluster.ln.Accept()
		if err != nil {
			return // closed
		}
		if !s.cluster.member(c.Peer()) || c.Peer() == s.node {
			// Authenticated with the secret, and not a member: refuse it
			// any operation.
			s.log.Warn("an authenticated peer that is not a member; closing", "peer", c.Peer(), "remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		cl := s.cluster
		cl.mu.Lock()
		if cl.closed {
			cl.mu.Unlock()
			c.Close()
			return
		}
		cl.accepted[c] = true
		cl.mu.Unlock()
		s.wg.Add(1)
		go s.readPeer(c)
	}
}

// readPeer reads one accepted peer connection: the core's messages go to
// the loop; forwarded clients' requests go to the forwarder's session of
// this connection.
func (s *Server) readPeer(c *netio.Conn) {
	defer s.wg.Done()
	cl := s.cluster
	defer func() {
		c.Close()
		cl.mu.Lock()
		delete(cl.accepted, c)
		cl.mu.Unlock()
	}()
	var sess *fwdSession
	defer func() {
		if sess != nil {
			sess.close()
			s.post(event{kind: evFwdSessionEnd, fwd: sess})
		}
	}()
	for {
		f, err := c.ReadFrame()
		if err != nil {
			return
		}
		switch f.Op {
		case netio.OpGroupMessage:
			g, msg, err := netio.DecodeGroupMessage(f.Body)
			if err != nil {
				s.log.Warn("a malformed message from a peer; closing", "peer", c.Peer(), "err", err)
				return
			}
			cl.received.Add(1)
			if !s.post(event{kind: evPeerMsg, node: c.Peer(), group: g, bytes: msg}) {
				return
			}
		case netio.OpClientRequest, netio.OpClientGone:
			if sess == nil {
				sess = cl.fwd.serve(c)
			}
			in, err := decodeForwarded(f)
			if err != nil {
				s.log.Warn("a malformed forwarded request; closing", "peer", c.Peer(), "err", err)
				return
			}
			in.sess = sess
			if !s.post(event{kind: evFwdIn, fwdIn: &in}) {
				return
			}
		default:
			s.log.Warn("an unexpected frame from a peer; closing", "peer", c.Peer(), "op", f.Op.String())
			return
		}
	}
}

// closeCluster stops the transport (teardown).
func (cl *cluster) close() {
	cl.ln.Close()
	cl.mu.Lock()
	cl.closed = true
	for c := range cl.accepted {
		c.Close()
	}
	cl.mu.Unlock()
	cl.fwd.closeAll()
}

// peersConnected counts the links with a connection.
func (cl *cluster) peersConnected() int {
	n := 0
	for _, l := range cl.links {
		if l.connected.Load() {
			n++
		}
	}
	return n
}
