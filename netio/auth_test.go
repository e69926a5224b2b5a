package netio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicemq/sluice/core/seam"
)

var (
	secretA = bytes.Repeat([]byte("a"), SecretBytesMin)
	secretB = bytes.Repeat([]byte("b"), SecretBytesMin)
)

const waitMax = 5 * time.Second // bound on every wait of these tests

func config(node seam.NodeID, secret []byte) Config {
	return Config{NodeID: node, Secret: secret, HandshakeTimeoutMs: 2_000}
}

type got struct {
	peer seam.NodeID
	f    Frame
}

// server is a listener whose accepted connections dispatch every frame to
// one bounded channel, and whose refusals go to another.
type server struct {
	l       *Listener
	frames  chan got
	refused chan error
}

func startServer(t *testing.T, cfg Config) *server {
	t.Helper()
	s := &server{frames: make(chan got, 64), refused: make(chan error, 64)}
	cfg.OnRefused = func(_ net.Addr, err error) {
		select {
		case s.refused <- err:
		default:
			t.Errorf("refusal queue full, dropped: %v", err)
		}
	}
	l, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.l = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go c.Serve(func(peer seam.NodeID, f Frame) { s.frames <- got{peer, f} })
		}
	}()
	t.Cleanup(func() { l.Close() })
	return s
}

func (s *server) addr() string { return s.l.Addr().String() }

func (s *server) waitRefused(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.refused:
		return err
	case <-time.After(waitMax):
		t.Fatal("no refusal")
		return nil
	}
}

// raw is a hand-driven peer: it speaks frames without the handshake code.
type raw struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitMax)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(waitMax))
	t.Cleanup(func() { nc.Close() })
	return &raw{t, nc}
}

func (r *raw) send(op Opcode, body []byte) { r.sendBytes(AppendFrame(nil, op, body)) }

func (r *raw) sendBytes(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raw) recv() (Frame, error) { return ReadFrame(r.nc, nil) }

// closed reports whether the other end closed the connection (after
// anything it still had to say).
func (r *raw) closed() bool {
	for {
		_, err := ReadFrame(r.nc, nil)
		if err == nil {
			continue
		}
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
			isReset(err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read"
}

// hello sends a Hello and returns the Challenge and the nonce it used.
func (r *raw) hello(node seam.NodeID, nonceC [NonceBytes]byte) Challenge {
	r.t.Helper()
	r.send(OpHello, AppendHello(nil, Hello{Node: node, Nonce: nonceC}))
	f, err := r.recv()
	if err != nil || f.Op != OpChallenge {
		r.t.Fatalf("no Challenge: %v %v", f.Op, err)
	}
	ch, err := DecodeChallenge(f.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return ch
}

func TestHandshake(t *testing.T) {
	s := startServer(t, config(1, secretA))
	c, err := Dial(context.Background(), s.addr(), config(2, secretA))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Peer() != 1 {
		t.Fatalf("dialer sees peer %d, want 1", c.Peer())
	}
	if err := c.WriteGroupMessage(9, []byte("m")); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-s.frames:
		if g.peer != 2 || g.f.Op != OpGroupMessage {
			t.Fatalf("handler got %+v, want GroupMessage from node 2", g)
		}
	case <-time.After(waitMax):
		t.Fatal("nothing dispatched")
	}
	if st := s.l.Stats(); st.Authenticated != 1 || st.Refused != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSecretTooShort(t *testing.T) {
	short := config(1, secretA[:SecretBytesMin-1])
	if _, err := Listen("127.0.0.1:0", short); !errors.Is(err, ErrConfig) {
		t.Fatalf("Listen: %v", err)
	}
	if _, err := Dial(context.Background(), "127.0.0.1:1", short); !errors.Is(err, ErrConfig) {
		t.Fatalf("Dial: %v", err)
	}
	bad := config(1, secretA)
	bad.HandshakeTimeoutMs = -1
	if _, err := Listen("127.0.0.1:0", bad); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative timeout: %v", err)
	}
}

func TestWrongSecret(t *testing.T) {
	s := startServer(t, config(1, secretA))
	// The dialer finds the listener's MAC wrong and stops before its Proof.
	_, err := Dial(context.Background(), s.addr(), config(2, secretB))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("dialer with the wrong secret: %v", err)
	}
	s.waitRefused(t)

	// A dialer that sends its Proof anyway is refused by the listener.
	r := dialRaw(t, s.addr())
	var nc [NonceBytes]byte
	ch := r.hello(2, nc)
	r.send(OpProof, AppendProof(nil, Proof{MAC: mac(secretB, labelClient, 2, ch.Node, 0, ch.Process, &nc, &ch.Nonce)}))
	if err := s.waitRefused(t); !errors.Is(err, ErrAuth) {
		t.Fatalf("listener: %v", err)
	}
	if !r.closed() {
		t.Fatal("connection left open")
	}
	if st := s.l.Stats(); st.Authenticated != 0 || st.Refused != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// replay records a whole authenticated session as a man in the middle would
// see it, then replays the dialer's Hello and Proof on a new connection. It
// returns the listener's verdict on the replay (nil: accepted).
func replay(t *testing.T, cfg Config) error {
	s := startServer(t, cfg)
	var nc [NonceBytes]byte
	copy(nc[:], "recorded dialer nonce")
	r := dialRaw(t, s.addr())
	ch := r.hello(2, nc)
	proof := Proof{MAC: mac(secretA, labelClient, 2, ch.Node, 0, ch.Process, &nc, &ch.Nonce)}
	r.send(OpProof, AppendProof(nil, proof))
	if f, err := r.recv(); err != nil || f.Op != OpWelcome {
		t.Fatalf("recorded session not welcomed: %v %v", f.Op, err)
	}

	r2 := dialRaw(t, s.addr())
	r2.hello(2, nc)
	r2.send(OpProof, AppendProof(nil, proof))
	f, err := r2.recv()
	if err == nil && f.Op == OpWelcome {
		return nil
	}
	return s.waitRefused(t)
}

func TestReplayedProofRefused(t *testing.T) {
	if err := replay(t, config(1, secretA)); !errors.Is(err, ErrAuth) {
		t.Fatalf("replayed Proof: %v, want ErrAuth", err)
	}
}

// zeros is a nonce source that never changes: the planted bug below.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestReplayCheckCanFail plants a listener whose nonce is not fresh: the
// same replay is then accepted, so the test above depends on freshness.
func TestReplayCheckCanFail(t *testing.T) {
	cfg := config(1, secretA)
	cfg.rand = zeros{}
	if err := replay(t, cfg); err != nil {
		t.Fatalf("with a constant listener nonce the replay should pass, got %v", err)
	}
}

// TestProcessBound: the process instances are inside both MACs, so a man
// in the middle who alters one (to have a live process reported gone by
// eager failover) breaks the handshake.
func TestProcessBound(t *testing.T) {
	cfg := config(1, secretA)
	cfg.Process = 41
	s := startServer(t, cfg)
	r := dialRaw(t, s.addr())
	var nc [NonceBytes]byte
	r.send(OpHello, AppendHello(nil, Hello{Node: 2, Process: 5, Nonce: nc}))
	f, err := r.recv()
	if err != nil || f.Op != OpChallenge {
		t.Fatalf("no Challenge: %v %v", f.Op, err)
	}
	ch, err := DecodeChallenge(f.Body)
	if err != nil || ch.Process != 41 {
		t.Fatalf("challenge %+v %v", ch, err)
	}
	// The listener's MAC covers its process: another value would not verify.
	if mac(secretA, labelServer, 2, 1, 5, 42, &nc, &ch.Nonce) == ch.MAC || mac(secretA, labelServer, 2, 1, 5, 41, &nc, &ch.Nonce) != ch.MAC {
		t.Fatal("MAC_s does not bind the listener's process")
	}
	// A Proof for another dialer process than the Hello said is refused.
	r.send(OpProof, AppendProof(nil, Proof{MAC: mac(secretA, labelClient, 2, 1, 6, 41, &nc, &ch.Nonce)}))
	if err := s.waitRefused(t); !errors.Is(err, ErrAuth) {
		t.Fatalf("altered process: %v", err)
	}
}

func TestReflectedMACRefused(t *testing.T) {
	s := startServer(t, config(1, secretA))
	r := dialRaw(t, s.addr())
	var nc [NonceBytes]byte
	ch := r.hello(2, nc)
	// The attacker cannot compute MAC_c; it sends back the listener's MAC_s.
	r.send(OpProof, AppendProof(nil, Proof{MAC: ch.MAC}))
	if err := s.waitRefused(t); !errors.Is(err, ErrAuth) {
		t.Fatalf("reflected MAC: %v", err)
	}
	// It fails only because of the direction label: the listener's MAC is
	// exactly the Proof a listener without domain separation would expect.
	if undivided := mac(secretA, labelServer, 2, 1, 0, ch.Process, &nc, &ch.Nonce); undivided != ch.MAC {
		t.Fatal("reflection would fail even without the labels; the test shows nothing")
	}
}

func TestHandshakeFrameSizes(t *testing.T) {
	for _, c := range []struct {
		name string
		send func(r *raw)
		want error
	}{
		{"truncated Hello", func(r *raw) {
			r.sendBytes(AppendFrame(nil, OpHello, make([]byte, HelloBytes))[:HeaderBytes+10])
			r.nc.(*net.TCPConn).CloseWrite()
		}, ErrTruncatedBody},
		{"truncated header", func(r *raw) {
			r.sendBytes([]byte("SL\x01"))
			r.nc.(*net.TCPConn).CloseWrite()
		}, ErrTruncatedHeader},
		{"Hello one byte long", func(r *raw) {
			r.sendBytes(header(OpHello, HelloBytes+1)) // refused from the header
		}, ErrHandshake},
		{"Hello over the control limit", func(r *raw) {
			r.sendBytes(header(OpHello, ControlBodyBytesMax+1))
		}, ErrTooLarge},
		{"Proof first", func(r *raw) { r.send(OpProof, make([]byte, ProofBytes)) }, ErrHandshake},
		{"not a sluice peer", func(r *raw) { r.sendBytes([]byte("AMQP\x00\x00\x09\x01xxxx")) }, ErrMagic},
		{"short Proof", func(r *raw) {
			r.hello(2, [NonceBytes]byte{})
			r.sendBytes(header(OpProof, ProofBytes-1))
		}, ErrHandshake},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServer(t, config(1, secretA))
			r := dialRaw(t, s.addr())
			c.send(r)
			if err := s.waitRefused(t); !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			if !r.closed() {
				t.Fatal("connection left open")
			}
		})
	}
}

func TestHandshakeTimeout(t *testing.T) {
	cfg := config(1, secretA)
	cfg.HandshakeTimeoutMs = 100
	s := startServer(t, cfg)
	r := dialRaw(t, s.addr())
	r.send(OpHello, make([]byte, HelloBytes)) // then silence instead of a Proof
	if err := s.waitRefused(t); !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("listener: %v", err)
	}

	// The dialer's side: a listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	cfg.NodeID = 2
	start := time.Now()
	if _, err := Dial(context.Background(), ln.Addr().String(), cfg); !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("dialer: %v", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > waitMax {
		t.Fatalf("dialer gave up after %v, want about 100ms", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	cfg.HandshakeTimeoutMs = 10_000
	if _, err := Dial(ctx, ln.Addr().String(), cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled dial: %v", err)
	}
}

// TestDialerRefusesBadChallenge: a listener that answers a Hello with a
// peer operation, or with an oversized Challenge, is refused by the dialer.
func TestDialerRefusesBadChallenge(t *testing.T) {
	for _, c := range []struct {
		answer []byte
		want   error
	}{
		{AppendFrame(nil, OpSeal, []byte("seal")), ErrUnauthenticated},
		{header(OpChallenge, ChallengeBytes+1), ErrHandshake},
		{AppendFrame(nil, OpWelcome, nil), ErrHandshake},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			ReadFrame(nc, nil)
			nc.Write(c.answer)
			io.Copy(io.Discard, nc)
		}()
		_, err = Dial(context.Background(), ln.Addr().String(), config(2, secretA))
		ln.Close()
		if !errors.Is(err, c.want) {
			t.Fatalf("answer %x: %v, want %v", c.answer[:4], err, c.want)
		}
	}
}

// gateProbe connects without authenticating, sends op (first, or in place
// of the Proof when afterHello), and returns what the listener dispatched
// to its handler and whether it closed the connection.
func gateProbe(t *testing.T, cfg Config, op Opcode, afterHello bool) (dispatched []got, closed bool, st ListenerStats) {
	s := startServer(t, cfg)
	r := dialRaw(t, s.addr())
	if afterHello {
		r.hello(2, [NonceBytes]byte{})
	}
	body := []byte("unauthenticated " + op.String())
	if op == OpGroupMessage {
		body = AppendGroupMessage(nil, 7, body)
	}
	r.send(op, body)
	if !cfg.skipGate {
		s.waitRefused(t)
		closed = r.closed()
	}
	// A refused connection never reached Accept, so nothing can arrive
	// later; the short wait is for the planted bug, which dispatches at once.
	wait := 50 * time.Millisecond
	if cfg.skipGate {
		wait = waitMax
	}
	select {
	case g := <-s.frames:
		dispatched = append(dispatched, g)
	case <-time.After(wait):
	}
	return dispatched, closed, s.l.Stats()
}

var peerOps = []Opcode{OpGroupMessage, OpSeal, OpSealReply, OpRead, OpReadReply, OpInstall, OpInstallReply}

func TestUnauthenticatedGetsNothing(t *testing.T) {
	for _, op := range peerOps {
		for _, afterHello := range []bool{false, true} {
			d, closed, st := gateProbe(t, config(1, secretA), op, afterHello)
			if len(d) != 0 || !closed || st.RefusedBeforeAuth != 1 || st.Authenticated != 0 {
				t.Errorf("%s (after Hello %v): dispatched %v, closed %v, stats %+v", op, afterHello, d, closed, st)
			}
		}
	}
}

// TestGateCheckCanFail plants the bug the gate exists against (skipGate: a
// peer operation before authentication is passed on): the probe then sees
// the operation dispatched, so TestUnauthenticatedGetsNothing would fail.
func TestGateCheckCanFail(t *testing.T) {
	for _, op := range peerOps {
		cfg := config(1, secretA)
		cfg.skipGate = true
		d, _, _ := gateProbe(t, cfg, op, false)
		if len(d) != 1 || d[0].f.Op != op {
			t.Errorf("%s with the gate skipped: dispatched %v, want the operation", op, d)
		}
	}
}

func TestHandshakeOpAfterAuthRefused(t *testing.T) {
	s := startServer(t, config(1, secretA))
	c, err := Dial(context.Background(), s.addr(), config(2, secretA))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.nc.SetDeadline(time.Now().Add(waitMax))
	c.nc.Write(AppendFrame(nil, OpHello, make([]byte, HelloBytes)))
	if _, err := ReadFrame(c.nc, nil); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("listener kept the connection after a second Hello: %v", err)
	}
	select {
	case g := <-s.frames:
		t.Fatalf("dispatched %+v", g)
	default:
	}
}
