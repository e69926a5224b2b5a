package netio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/core/seam"
)

// Defaults of Config's zero values.
const (
	HandshakeTimeoutMsDefault   = 5_000
	WriteTimeoutMsDefault       = 10_000
	HandshakesPendingMaxDefault = 64
	AcceptQueueMaxDefault       = 16
)

// Config configures both ends of a peer connection.
type Config struct {
	// NodeID is this broker's stable id, sent in the handshake.
	NodeID seam.NodeID
	// Process is this broker's process instance, sent in the handshake
	// (bound by both MACs): the other end learns which process it reached,
	// which is what eager failover reports once that process is gone
	// (core/doc.go point 10). 0 for a peer that has none (tests).
	Process uint64
	// Secret is the cluster secret, at least SecretBytesMin bytes. Every
	// broker of a cluster holds the same one.
	Secret []byte
	// HandshakeTimeoutMs bounds the whole handshake on either side (0:
	// HandshakeTimeoutMsDefault). A dial also ends at its context's deadline.
	HandshakeTimeoutMs int64
	// WriteTimeoutMs bounds each WriteFrame (0: WriteTimeoutMsDefault).
	WriteTimeoutMs int64
	// ReadIdleMs bounds each ReadFrame, header and body together (0: no
	// bound; the caller's heartbeats decide when a silent peer is gone).
	// Set it above the time a 64 MiB body takes on the slowest link.
	ReadIdleMs int64
	// HandshakesPendingMax bounds a listener's connections between accept
	// and Accept: handshakes in progress plus authenticated connections
	// waiting for room in the accept queue (0: default). At the limit the
	// listener stops accepting, and the kernel's backlog holds the rest.
	HandshakesPendingMax int
	// AcceptQueueMax bounds authenticated connections not yet taken by
	// Accept (0: default).
	AcceptQueueMax int
	// OnRefused, when set, is called (from a listener goroutine) with every
	// connection the listener refuses and why; the daemon logs it.
	OnRefused func(remote net.Addr, err error)

	rand     io.Reader // nonce source; nil is crypto/rand. Tests only.
	skipGate bool      // planted bug: skip the authentication gate. Tests only.
}

// validate checks cfg and fills defaults in a copy.
func (cfg Config) validate() (Config, error) {
	if len(cfg.Secret) < SecretBytesMin {
		return cfg, fmt.Errorf("%w: cluster secret of %d bytes, need at least %d", ErrConfig, len(cfg.Secret), SecretBytesMin)
	}
	cfg.Secret = append([]byte(nil), cfg.Secret...) // the caller may reuse its slice
	for _, v := range []struct {
		name string
		p    *int64
		def  int64
	}{
		{"HandshakeTimeoutMs", &cfg.HandshakeTimeoutMs, HandshakeTimeoutMsDefault},
		{"WriteTimeoutMs", &cfg.WriteTimeoutMs, WriteTimeoutMsDefault},
		{"ReadIdleMs", &cfg.ReadIdleMs, 0},
	} {
		if *v.p < 0 {
			return cfg, fmt.Errorf("%w: %s is %d", ErrConfig, v.name, *v.p)
		}
		if *v.p == 0 {
			*v.p = v.def
		}
	}
	if cfg.HandshakesPendingMax < 0 || cfg.AcceptQueueMax < 0 {
		return cfg, fmt.Errorf("%w: negative queue limit", ErrConfig)
	}
	if cfg.HandshakesPendingMax == 0 {
		cfg.HandshakesPendingMax = HandshakesPendingMaxDefault
	}
	if cfg.AcceptQueueMax == 0 {
		cfg.AcceptQueueMax = AcceptQueueMaxDefault
	}
	return cfg, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// Conn is an authenticated peer connection. Reads are serialised among
// themselves, and so are writes; one reader and one writer may run at once.
// After any read or write error the connection is closed: a stream that
// lost its place in the framing cannot be trusted again, and the caller
// redials.
type Conn struct {
	nc          net.Conn
	cfg         Config
	peer        seam.NodeID
	peerProcess uint64

	rmu     sync.Mutex
	rhead   [HeaderBytes]byte
	pending *Frame // only with the skipGate bug

	wmu   sync.Mutex
	whead [HeaderBytes + GroupIDBytes]byte

	closeOnce sync.Once
	closeErr  error
}

// Peer returns the authenticated node id of the other end.
func (c *Conn) Peer() seam.NodeID { return c.peer }

// PeerProcess returns the other end's process instance, as its handshake
// sent it (bound by the MACs).
func (c *Conn) PeerProcess() uint64 { return c.peerProcess }

// RemoteAddr returns the other end's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Close closes the connection; it unblocks a pending ReadFrame or WriteFrame.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.nc.Close() })
	return c.closeErr
}

// ReadFrame reads the next frame. Its body is a new slice the caller owns.
// A handshake opcode after the handshake is refused (ErrHandshake). A clean
// close by the peer between frames is io.EOF.
func (c *Conn) ReadFrame() (Frame, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.pending != nil {
		f := *c.pending
		c.pending = nil
		return f, nil
	}
	if c.cfg.ReadIdleMs > 0 {
		if err := c.nc.SetReadDeadline(time.Now().Add(ms(c.cfg.ReadIdleMs))); err != nil {
			return Frame{}, c.fail(err)
		}
	}
	hd, err := readHeader(c.nc, &c.rhead)
	if err != nil {
		return Frame{}, c.fail(err)
	}
	if hd.Op.Handshake() {
		return Frame{}, c.fail(fmt.Errorf("%w: %s from node %d after authentication", ErrHandshake, hd.Op, c.peer))
	}
	f, err := readBody(c.nc, &c.rhead, hd, nil)
	if err != nil {
		return Frame{}, c.fail(err)
	}
	return f, nil
}

// WriteFrame writes one frame of op with body. A body over op's limit is
// refused with ErrTooLarge, before anything is written. Writing a handshake
// or unknown opcode is a programmer error and panics.
func (c *Conn) WriteFrame(op Opcode, body []byte) error {
	return c.write(op, nil, body)
}

// WriteGroupMessage writes a GroupMessage of group g without copying msg.
func (c *Conn) WriteGroupMessage(g seam.GroupID, msg []byte) error {
	return c.write(OpGroupMessage, &g, msg)
}

func (c *Conn) write(op Opcode, g *seam.GroupID, body []byte) error {
	if !op.Known() || op.Handshake() {
		panic(fmt.Sprintf("netio: WriteFrame of %s", op))
	}
	n := len(body)
	if g != nil {
		n += GroupIDBytes
	}
	if n > op.BodyBytesMax() {
		return fmt.Errorf("%w: writing %s of %d bytes, limit %d", ErrTooLarge, op, n, op.BodyBytesMax())
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h := c.whead[:HeaderBytes]
	var gid []byte
	if g != nil {
		gid = AppendGroupMessage(c.whead[HeaderBytes:HeaderBytes], *g, nil)
	}
	h[0], h[1], h[2], h[3] = Magic[0], Magic[1], Version, byte(op)
	binary.LittleEndian.PutUint32(h[4:], uint32(n))
	binary.LittleEndian.PutUint32(h[8:], crc32.Update(checksum(h[:8], gid), castagnoli, body))
	if err := c.nc.SetWriteDeadline(time.Now().Add(ms(c.cfg.WriteTimeoutMs))); err != nil {
		return c.fail(err)
	}
	// One writev of header (and group id) and body: no copy of the body.
	bufs := net.Buffers{c.whead[:HeaderBytes+len(gid)], body}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		return c.fail(fmt.Errorf("netio: writing %s to node %d: %w", op, c.peer, err))
	}
	return nil
}

func (c *Conn) fail(err error) error {
	c.Close()
	return err
}

// Handler receives every frame of an authenticated connection with the
// peer's authenticated node id: the core's authority checks use that id,
// never an id a body claims.
type Handler func(peer seam.NodeID, f Frame)

// Serve reads frames and passes each to h until an error, which it returns
// (io.EOF on a clean close). The connection is closed when Serve returns.
func (c *Conn) Serve(h Handler) error {
	defer c.Close()
	for {
		f, err := c.ReadFrame()
		if err != nil {
			return err
		}
		h(c.peer, f)
	}
}

// Dial connects to a listener at addr and authenticates both ends. The
// handshake ends at HandshakeTimeoutMs or at ctx's end, whichever is first.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(ms(cfg.HandshakeTimeoutMs))
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netio: dial %s: %w", addr, err)
	}
	if err := nc.SetDeadline(deadline); err != nil {
		nc.Close()
		return nil, err
	}
	// A cancelled context ends the handshake by moving the deadline to now.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	peer, process, err := clientHandshake(nc, &cfg)
	if !stop() && err == nil {
		err = ctx.Err() // cancelled just as the handshake ended
	}
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("netio: handshake with %s: %w (%w)", addr, ctx.Err(), err)
		}
		return nil, fmt.Errorf("netio: handshake with %s: %w", addr, timeoutErr(err, cfg.HandshakeTimeoutMs))
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, err
	}
	return &Conn{nc: nc, cfg: cfg, peer: peer, peerProcess: process}, nil
}

// ListenerStats counts a listener's connections.
type ListenerStats struct {
	Accepted      int64 // TCP connections accepted
	Authenticated int64 // handshakes completed
	Refused       int64 // connections closed without authentication, for any reason
	// RefusedBeforeAuth counts connections that sent a peer operation (any
	// non-handshake opcode) before authentication; also counted in Refused.
	RefusedBeforeAuth int64
}

// Listener accepts peer connections and authenticates them. Handshakes run
// concurrently (HandshakesPendingMax at most), so a slow or silent dialer
// delays nobody else; only authenticated connections reach Accept.
type Listener struct {
	ln    net.Listener
	cfg   Config
	ready chan *Conn    // authenticated, not yet accepted; cap AcceptQueueMax
	slots chan struct{} // one per pending connection; cap HandshakesPendingMax
	done  chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	inflight map[net.Conn]struct{} // closed by Close; never iterated for order

	closeOnce sync.Once
	closeErr  error

	accepted, authenticated, refused, refusedBeforeAuth atomic.Int64
}

// Listen listens on a TCP address (e.g. "127.0.0.1:0").
func Listen(addr string, cfg Config) (*Listener, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netio: listen %s: %w", addr, err)
	}
	l := &Listener{
		ln:       ln,
		cfg:      cfg,
		ready:    make(chan *Conn, cfg.AcceptQueueMax),
		slots:    make(chan struct{}, cfg.HandshakesPendingMax),
		done:     make(chan struct{}),
		inflight: make(map[net.Conn]struct{}),
	}
	l.wg.Add(1)
	go l.loop()
	return l, nil
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	return ListenerStats{
		Accepted:          l.accepted.Load(),
		Authenticated:     l.authenticated.Load(),
		Refused:           l.refused.Load(),
		RefusedBeforeAuth: l.refusedBeforeAuth.Load(),
	}
}

// Accept returns the next authenticated connection, or net.ErrClosed once
// the listener is closed.
func (l *Listener) Accept() (*Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("netio: accept: %w", net.ErrClosed)
	}
}

// Close stops listening, ends handshakes in progress and closes connections
// not yet accepted. It returns when the listener's goroutines have ended.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.closeErr = l.ln.Close()
		l.mu.Lock()
		for nc := range l.inflight {
			nc.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
		for {
			select {
			case c := <-l.ready:
				c.Close()
				continue
			default:
			}
			break
		}
	})
	return l.closeErr
}

func (l *Listener) loop() {
	defer l.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return
		}
		nc, err := l.ln.Accept()
		if err != nil {
			<-l.slots
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. out of file descriptors): back off, retry.
			select {
			case <-time.After(backoff):
			case <-l.done:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		l.accepted.Add(1)
		l.mu.Lock()
		select {
		case <-l.done: // Close already swept inflight
			l.mu.Unlock()
			nc.Close()
			<-l.slots
			return
		default:
		}
		l.inflight[nc] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(1)
		go l.handshake(nc)
	}
}

func (l *Listener) handshake(nc net.Conn) {
	defer l.wg.Done()
	defer func() { <-l.slots }()
	defer func() {
		l.mu.Lock()
		delete(l.inflight, nc)
		l.mu.Unlock()
	}()
	err := nc.SetDeadline(time.Now().Add(ms(l.cfg.HandshakeTimeoutMs)))
	var peer seam.NodeID
	var process uint64
	var pending *Frame
	if err == nil {
		peer, process, pending, err = serverHandshake(nc, &l.cfg)
	}
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		nc.Close()
		l.refused.Add(1)
		if errors.Is(err, ErrUnauthenticated) {
			l.refusedBeforeAuth.Add(1)
		}
		if l.cfg.OnRefused != nil {
			l.cfg.OnRefused(nc.RemoteAddr(), timeoutErr(err, l.cfg.HandshakeTimeoutMs))
		}
		return
	}
	l.authenticated.Add(1)
	c := &Conn{nc: nc, cfg: l.cfg, peer: peer, peerProcess: process, pending: pending}
	select {
	case l.ready <- c:
	case <-l.done:
		c.Close()
	}
}
