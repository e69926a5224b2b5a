package daemon

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/netio"
)

// Client forwarding (docs/daemon.md, "Forwarding"): a client connected to
// a broker that does not own its queue is served by the owner. The front
// (amqp/front, Forward) decides where each core request goes; a request
// for another broker goes on a forwarding link: a netio connection of its
// own from this broker (the client side) to that one (the owner side),
// separate from the core's peer connections, so that a replication
// stream that drops messages never costs a client its session.
//
// On the owner side the connection is a session: each remote client gets
// a core client id of this broker's own (from fwdClientBase up), its
// requests go to the host in the order they came, and the core's replies
// and deliveries for it go back on the same connection, in order. TCP
// keeps both directions in order and loses nothing while the connection
// lives; so a link is all or nothing. Its queues are bounded on both
// sides (fwdQueueMax frames): a side that cannot queue a frame closes the
// link instead of dropping it, because a forwarded request, unlike a
// replication message, is not resent by anyone.
//
// When a link ends (a failed dial, an error, a full queue, the owner's
// process gone), the client side tells the front (Front.NodeLost): every
// AMQP connection with a request in flight there or a subscription
// there is closed with 320 CONNECTION_FORCED, the outcomes of its
// publishes unknown to it, as when its own broker dies; the next request
// for that broker opens a new link. The owner side ends the session's
// clients (InClientGone), so their unacked deliveries return to their
// queues.

// fwdClientBase is the first core client id of forwarded clients on the
// owner side: above the front's (which count up from 1) and below the
// operators' (adminClient).
const fwdClientBase = core.ClientID(1) << 61

// fwdQueueMax and fwdQueueBytesMax bound the frames queued on one side of
// a link, by count and by bytes (a frame holds at most one record, about
// 1 MiB, so the count alone would allow gigabytes).
const (
	fwdQueueMax      = 16384
	fwdQueueBytesMax = 256 << 20
)

// fwdRedialMs is the least time between a link's failed dial and the next
// dial to that broker. A request for that broker meanwhile is handed back
// to the front at once (unreached) rather than held for the redial: the
// front asks the topology again and resends after its RouteRetryNs, and a
// publisher whose queue's owner just died does not wait out the rest of
// fwdRedialMs once the recovery named the next owner.
const fwdRedialMs = 100

// fwdFrame is one frame queued for a link's writer.
type fwdFrame struct {
	op   netio.Opcode
	body []byte
}

// forwarder holds both sides of forwarding. Loop-owned except where noted.
type forwarder struct {
	s *Server
	// The client side: a link per broker requests go to.
	links   map[core.NodeID]*fwdLink // lookup only
	lastGen uint64
	// unreachedAt: when a link to a node last failed to connect; the next
	// one waits until fwdRedialMs after it, so that requests bouncing
	// between a stale leader or owner and this broker cost one dial per
	// fwdRedialMs, not one per request.
	unreachedAt map[core.NodeID]time.Time
	// The owner side: forwarded clients by their local id.
	remote     map[core.ClientID]remoteClient // lookup only
	lastClient core.ClientID
	sessions   map[*fwdSession]bool // open sessions (teardown closes them)
}

// remoteClient is a forwarded client on the owner side.
type remoteClient struct {
	sess *fwdSession
	id   core.ClientID // its id on its own broker
}

func newForwarder(s *Server) *forwarder {
	return &forwarder{s: s, links: map[core.NodeID]*fwdLink{}, unreachedAt: map[core.NodeID]time.Time{}, remote: map[core.ClientID]remoteClient{},
		lastClient: fwdClientBase, sessions: map[*fwdSession]bool{}}
}

// fwdLink is the client side of a link to one broker.
type fwdLink struct {
	queued atomic.Int64 // bytes in out
	node   core.NodeID
	gen    uint64 // which link to that node this is: events of an older one are ignored
	out    chan fwdFrame
	stop   chan struct{} // closed by the loop to end the link
	once   sync.Once
}

func (l *fwdLink) end() { l.once.Do(func() { close(l.stop) }) }

// request forwards client c's req to broker node (loop).
func (fw *forwarder) request(node core.NodeID, c core.ClientID, req *core.Request) {
	fw.queue(node, fwdFrame{op: netio.OpClientRequest, body: appendClientRequest(nil, c, req)}, true)
}

// gone tells broker node that client c is gone (loop); nothing if no link
// is open there (a link that ended ended its clients there).
func (fw *forwarder) gone(node core.NodeID, c core.ClientID) {
	if fw.links[node] == nil {
		return
	}
	fw.queue(node, fwdFrame{op: netio.OpClientGone, body: binary.LittleEndian.AppendUint64(nil, uint64(c))}, false)
}

// queue puts f on the link to node, opening one if open is set and none
// is; a full queue ends the link (loop).
func (fw *forwarder) queue(node core.NodeID, f fwdFrame, open bool) {
	s := fw.s
	l := fw.links[node]
	if l == nil {
		if !open {
			return
		}
		addr := s.cluster.cfg.addr(node)
		if addr == "" {
			// Not a member: the topology named a broker this one does not
			// know (a configuration that differs between brokers).
			// Told after this effect (the front is mid-call).
			s.log.Warn("a request for a broker that is not a member", "node", node)
			s.work.push(func() {
				fw.lost(node, 0, "broker n"+itoa(uint64(node))+" is not a member of this broker's cluster configuration", true)
			})
			return
		}
		if since := time.Since(fw.unreachedAt[node]); since < fwdRedialMs*time.Millisecond {
			// Told after this effect (the front is mid-call); the dial
			// failure's instant stays, so the next dial is paced by it.
			why := fmt.Sprintf("broker n%d unreachable: its last dial failed %d ms ago", node, since.Milliseconds())
			s.work.push(func() {
				s.adminUnreached(node)
				s.frontEffects(s.front.NodeUnreachable(s.now(), node, why))
			})
			return
		}
		fw.lastGen++
		l = &fwdLink{node: node, gen: fw.lastGen, out: make(chan fwdFrame, fwdQueueMax), stop: make(chan struct{})}
		fw.links[node] = l
		s.wg.Add(1)
		go fw.runLink(l, addr)
	}
	if l.queued.Load()+int64(len(f.body)) > fwdQueueBytesMax {
		l.end()
		gen := l.gen
		s.work.push(func() { fw.lost(node, gen, "forwarding to broker n"+itoa(uint64(node))+" fell behind", false) })
		return
	}
	select {
	case l.out <- f:
		l.queued.Add(int64(len(f.body)))
	default:
		// Ended now (nothing more goes on it); the front is told after
		// this effect (it is mid-call).
		s.log.Warn("forwarding link full; ending it", "node", node, "frames", fwdQueueMax)
		l.end()
		gen := l.gen
		s.work.push(func() { fw.lost(node, gen, "forwarding to broker n"+itoa(uint64(node))+" fell behind", false) })
	}
}

// lost ends the link to node of generation gen (0: whatever is open) and
// tells the front (loop): unreached, the link never connected, so nothing
// sent on it arrived (the front takes its requests back); otherwise their
// outcomes are unknown.
func (fw *forwarder) lost(node core.NodeID, gen uint64, reason string, unreached bool) {
	s := fw.s
	if l := fw.links[node]; l != nil {
		if gen != 0 && l.gen != gen {
			return // an older link's news
		}
		l.end()
		delete(fw.links, node)
	}
	if unreached {
		fw.unreachedAt[node] = time.Now()
		s.adminUnreached(node)
		s.frontEffects(s.front.NodeUnreachable(s.now(), node, reason))
		return
	}
	s.adminLost(node)
	s.frontEffects(s.front.NodeLost(s.now(), node, reason))
}

// runLink dials broker node for link l, writes its queue and reads the
// replies and deliveries coming back, until either side fails.
func (fw *forwarder) runLink(l *fwdLink, addr string) {
	s := fw.s
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), peerDialTimeoutMs*time.Millisecond)
	stop := context.AfterFunc(s.doneCtx, cancel)
	c, err := netio.Dial(ctx, addr, s.cluster.netio)
	stop()
	cancel()
	if err != nil {
		// Never connected: nothing queued on it was delivered.
		s.post(event{kind: evFwdLost, node: l.node, gen: l.gen, unreached: true, why: "broker n" + itoa(uint64(l.node)) + " unreachable: " + err.Error()})
		return
	}
	if c.Peer() != l.node {
		c.Close()
		s.post(event{kind: evFwdLost, node: l.node, gen: l.gen, why: fmt.Sprintf("forwarding: %s is n%d, not n%d", addr, c.Peer(), l.node)})
		return
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			f, err := c.ReadFrame()
			if err == nil && f.Op != netio.OpClientEffect {
				err = fmt.Errorf("unexpected %s on a forwarding link", f.Op)
			}
			var e core.Effect
			if err == nil {
				e, err = decodeClientEffect(f.Body)
			}
			if err != nil {
				c.Close()
				readErr <- err
				return
			}
			if !s.post(event{kind: evFwdEffect, node: l.node, gen: l.gen, effect: &e}) {
				readErr <- errors.New("stopped")
				return
			}
		}
	}()
	why := ""
loop:
	for {
		select {
		case f := <-l.out:
			l.queued.Add(-int64(len(f.body)))
			if err := c.WriteFrame(f.op, f.body); err != nil {
				why = err.Error()
				break loop
			}
		case err := <-readErr:
			why = err.Error()
			readErr <- err
			break loop
		case <-l.stop:
			why = "ended"
			break loop
		case <-s.done:
			why = "stopped"
			break loop
		}
	}
	c.Close()
	<-readErr
	s.post(event{kind: evFwdLost, node: l.node, gen: l.gen, why: "forwarding to broker n" + itoa(uint64(l.node)) + " ended: " + why})
}

// fwdSession is the owner side of one link: an accepted connection.
type fwdSession struct {
	queued  atomic.Int64 // bytes in out
	c       *netio.Conn
	out     chan fwdFrame
	dead    chan struct{}
	once    sync.Once
	clients []core.ClientID // local ids of its clients, in order of arrival (loop)
	ids     map[core.ClientID]core.ClientID
}

func (ss *fwdSession) close() {
	ss.once.Do(func() {
		close(ss.dead)
		ss.c.Close()
	})
}

// serve makes accepted connection c a session and starts its writer
// (called on c's reader goroutine, before its first request is posted).
func (fw *forwarder) serve(c *netio.Conn) *fwdSession {
	ss := &fwdSession{c: c, out: make(chan fwdFrame, fwdQueueMax), dead: make(chan struct{}), ids: map[core.ClientID]core.ClientID{}}
	fw.s.wg.Add(1)
	go func() {
		defer fw.s.wg.Done()
		for {
			select {
			case f := <-ss.out:
				ss.queued.Add(-int64(len(f.body)))
				if err := c.WriteFrame(f.op, f.body); err != nil {
					ss.close()
					return
				}
			case <-ss.dead:
				return
			}
		}
	}()
	return ss
}

// fwdIn is a forwarded request or client end, decoded by a session's
// reader.
type fwdIn struct {
	sess   *fwdSession
	gone   bool
	client core.ClientID // the client's id on its broker
	req    core.Request
}

// in carries a forwarded request or end to the host (loop).
func (fw *forwarder) in(in *fwdIn) {
	s := fw.s
	ss := in.sess
	// Its end comes after its requests (one reader posts both, in order).
	fw.sessions[ss] = true
	local, ok := ss.ids[in.client]
	if in.gone {
		if ok {
			delete(ss.ids, in.client)
			delete(fw.remote, local)
			s.host.ClientGone(s.now(), local)
		}
		return
	}
	if !ok {
		fw.lastClient++
		local = fw.lastClient
		ss.ids[in.client] = local
		ss.clients = append(ss.clients, local)
		fw.remote[local] = remoteClient{sess: ss, id: in.client}
	}
	s.host.Request(s.now(), local, in.req)
}

// isRemote says whether c is a forwarded client of this (owner) side.
func isRemote(c core.ClientID) bool { return c > fwdClientBase && c < adminClient }

// effect sends a core reply or delivery for forwarded client ef.Client
// back on its session (loop). A session that cannot queue it ends.
func (fw *forwarder) effect(ef *core.Effect) {
	rc, ok := fw.remote[ef.Client]
	if !ok {
		return // its session ended: drop it (contract point 7)
	}
	body := appendClientEffect(nil, rc.id, ef)
	if rc.sess.queued.Load()+int64(len(body)) > fwdQueueBytesMax {
		fw.s.log.Warn("forwarding session full; ending it", "peer", rc.sess.c.Peer(), "bytes", fwdQueueBytesMax)
		rc.sess.close()
		return
	}
	select {
	case rc.sess.out <- fwdFrame{op: netio.OpClientEffect, body: body}:
		rc.sess.queued.Add(int64(len(body)))
	default:
		fw.s.log.Warn("forwarding session full; ending it", "peer", rc.sess.c.Peer(), "frames", fwdQueueMax)
		rc.sess.close()
	}
}

// sessionEnd ends every client of session ss (loop).
func (fw *forwarder) sessionEnd(ss *fwdSession) {
	s := fw.s
	delete(fw.sessions, ss)
	for _, local := range ss.clients {
		if _, ok := fw.remote[local]; ok {
			delete(fw.remote, local)
			s.host.ClientGone(s.now(), local)
		}
	}
	ss.clients = nil
	clear(ss.ids)
}

// closeAll ends every link and session (teardown).
func (fw *forwarder) closeAll() {
	for _, l := range fw.links {
		l.end()
	}
	for ss := range fw.sessions {
		ss.close()
	}
}

// The bodies, little-endian like the frame:
//
//	ClientRequest  u64 client, u8 kind, u64 request id, u64 queue,
//	               u64 offset, u32 prefetch, u8 flags (bit 0: an
//	               exclusive subscribe), then the request body
//	ClientGone     u64 client (exactly 8 bytes)
//	ClientEffect   u64 client, u8 kind (3 reply, 4 delivery), u64 request
//	               id, u8 outcome, u64 queue, u64 offset, u8 redelivered,
//	               u32 count (a reply's: a count's consumers), u64 tag (a
//	               count's: the queue's incarnation), u8 refusal
//	               (a failed reply's typed cause), u16 reason length, the
//	               reason, then the body
//
// Decoding is strict: a field out of its range or a reason longer than
// the body is refused with why; the body takes the rest.
const (
	clientRequestHead = 8 + 1 + 8 + 8 + 8 + 4 + 1 + 4
	clientEffectHead  = 8 + 1 + 8 + 1 + 8 + 8 + 1 + 4 + 8 + 1 + 2
)

var errForwarded = errors.New("daemon: malformed forwarded frame")

func appendClientRequest(dst []byte, c core.ClientID, r *core.Request) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(c))
	dst = append(dst, byte(r.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, r.ID)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Queue))
	dst = binary.LittleEndian.AppendUint64(dst, r.Offset)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.Prefetch))
	flags := byte(0)
	if r.Exclusive {
		flags |= 1
	}
	if r.Once {
		flags |= 2
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(r.Priority)))
	return append(dst, r.Body...)
}

func decodeClientRequest(b []byte) (core.ClientID, core.Request, error) {
	var r core.Request
	if len(b) < clientRequestHead {
		return 0, r, fmt.Errorf("%w: ClientRequest of %d bytes, want at least %d", errForwarded, len(b), clientRequestHead)
	}
	c := core.ClientID(binary.LittleEndian.Uint64(b))
	r.Kind = core.RequestKind(b[8])
	switch r.Kind {
	case core.ReqPublish, core.ReqSubscribe, core.ReqAck, core.ReqRequeue, core.ReqCount, core.ReqMeta, core.ReqTopology, seam.ReqPurge:
	default:
		return 0, r, fmt.Errorf("%w: request kind %d", errForwarded, b[8])
	}
	r.ID = binary.LittleEndian.Uint64(b[9:])
	q := binary.LittleEndian.Uint64(b[17:])
	if q > math.MaxUint32 {
		// (The wire keeps 8 bytes; a queue id is 32 bits: never truncated.)
		return 0, r, fmt.Errorf("%w: queue id %d out of range", errForwarded, q)
	}
	r.Queue = core.QueueID(q)
	r.Offset = binary.LittleEndian.Uint64(b[25:])
	p := binary.LittleEndian.Uint32(b[33:])
	if p > math.MaxInt32 {
		return 0, r, fmt.Errorf("%w: prefetch %d", errForwarded, p)
	}
	r.Prefetch = int(p)
	if flags := b[37]; flags > 3 || (flags != 0 && r.Kind != core.ReqSubscribe) {
		return 0, r, fmt.Errorf("%w: flags %#x on request kind %d", errForwarded, flags, b[8])
	}
	r.Exclusive, r.Once = b[37]&1 != 0, b[37]&2 != 0
	if r.Priority = int(int32(binary.LittleEndian.Uint32(b[38:]))); r.Priority != 0 && r.Kind != core.ReqSubscribe {
		return 0, r, fmt.Errorf("%w: priority %d on request kind %d", errForwarded, r.Priority, b[8])
	}
	if body := b[clientRequestHead:]; len(body) > 0 {
		r.Body = body
	}
	if c == 0 {
		return 0, r, fmt.Errorf("%w: client 0", errForwarded)
	}
	return c, r, nil
}

func decodeClientGone(b []byte) (core.ClientID, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: ClientGone of %d bytes, want 8", errForwarded, len(b))
	}
	c := core.ClientID(binary.LittleEndian.Uint64(b))
	if c == 0 {
		return 0, fmt.Errorf("%w: client 0", errForwarded)
	}
	return c, nil
}

func appendClientEffect(dst []byte, c core.ClientID, e *core.Effect) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(c))
	dst = append(dst, byte(e.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, e.ReqID)
	dst = append(dst, byte(e.Outcome))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.Queue))
	dst = binary.LittleEndian.AppendUint64(dst, e.Offset)
	red := byte(0)
	if e.Redelivered {
		red = 1
	}
	dst = append(dst, red)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(max(e.Count, 0)))
	dst = binary.LittleEndian.AppendUint64(dst, e.Tag)
	dst = append(dst, byte(e.Refusal))
	reason := e.Reason
	if len(reason) > math.MaxUint16 {
		reason = reason[:math.MaxUint16]
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(reason)))
	dst = append(dst, reason...)
	return append(dst, e.Body...)
}

func decodeClientEffect(b []byte) (core.Effect, error) {
	var e core.Effect
	if len(b) < clientEffectHead {
		return e, fmt.Errorf("%w: ClientEffect of %d bytes, want at least %d", errForwarded, len(b), clientEffectHead)
	}
	e.Client = core.ClientID(binary.LittleEndian.Uint64(b))
	e.Kind = core.EffectKind(b[8])
	e.ReqID = binary.LittleEndian.Uint64(b[9:])
	e.Outcome = core.Outcome(b[17])
	q := binary.LittleEndian.Uint64(b[18:])
	e.Queue = core.QueueID(q)
	e.Offset = binary.LittleEndian.Uint64(b[26:])
	red := b[34]
	count := binary.LittleEndian.Uint32(b[35:])
	tag := binary.LittleEndian.Uint64(b[39:])
	refusal := seam.Refusal(b[47])
	n := int(binary.LittleEndian.Uint16(b[48:]))
	switch {
	case e.Client == 0:
		return e, fmt.Errorf("%w: client 0", errForwarded)
	case q > math.MaxUint32:
		return e, fmt.Errorf("%w: queue id %d out of range", errForwarded, q)
	case e.Kind != core.EfReply && e.Kind != core.EfDeliver && e.Kind != core.EfCancel:
		return e, fmt.Errorf("%w: effect kind %d", errForwarded, b[8])
	case e.Kind == core.EfCancel && (e.Outcome != 0 || red != 0 || len(b) != clientEffectHead+n):
		return e, fmt.Errorf("%w: a cancel with outcome %d, redelivered %d, %d bytes", errForwarded, b[17], red, len(b))
	case e.Kind == core.EfReply && (e.Outcome < core.Confirmed || e.Outcome > core.Unknown):
		return e, fmt.Errorf("%w: outcome %d", errForwarded, b[17])
	case e.Kind == core.EfDeliver && e.Outcome != 0:
		return e, fmt.Errorf("%w: a delivery with outcome %d", errForwarded, b[17])
	case red > 1:
		return e, fmt.Errorf("%w: redelivered %d", errForwarded, red)
	case count > math.MaxInt32 || ((count != 0 || tag != 0) && e.Kind != core.EfReply):
		return e, fmt.Errorf("%w: count %d, tag %d on effect kind %d", errForwarded, count, tag, b[8])
	case refusal > seam.RefusalMax || (refusal != seam.RefusalNone && (e.Kind != core.EfReply || e.Outcome != core.Failed)):
		return e, fmt.Errorf("%w: refusal %d on effect kind %d outcome %d", errForwarded, refusal, b[8], b[17])
	case len(b) < clientEffectHead+n:
		return e, fmt.Errorf("%w: reason of %d bytes in %d", errForwarded, n, len(b)-clientEffectHead)
	}
	e.Redelivered, e.Count, e.Tag, e.Refusal = red == 1, int(count), tag, refusal
	e.Reason = string(b[clientEffectHead : clientEffectHead+n])
	if body := b[clientEffectHead+n:]; len(body) > 0 {
		e.Body = body
	}
	return e, nil
}

// decodeForwarded decodes a frame of the owner side.
func decodeForwarded(f netio.Frame) (fwdIn, error) {
	switch f.Op {
	case netio.OpClientRequest:
		c, r, err := decodeClientRequest(f.Body)
		return fwdIn{client: c, req: r}, err
	case netio.OpClientGone:
		c, err := decodeClientGone(f.Body)
		return fwdIn{client: c, gone: true}, err
	}
	return fwdIn{}, fmt.Errorf("%w: opcode %s", errForwarded, f.Op)
}
