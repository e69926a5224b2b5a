package netio

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// pair returns both ends of an authenticated loopback connection.
func pair(t *testing.T, server, client Config) (srv, cli *Conn) {
	t.Helper()
	// Every read of these tests is bounded, so a broken build fails, not hangs.
	for _, c := range []*Config{&server, &client} {
		if c.ReadIdleMs == 0 {
			c.ReadIdleMs = waitMax.Milliseconds()
		}
	}
	l, err := Listen("127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cli, err = Dial(context.Background(), l.Addr().String(), client)
	if err != nil {
		t.Fatal(err)
	}
	srv, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return srv, cli
}

func TestConnRoundTripEveryOpcode(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	sc, cc := config(1, secretA), config(2, secretA)
	sc.Process, cc.Process = 7, 1<<40
	srv, cli := pair(t, sc, cc)
	if srv.Peer() != 2 || cli.Peer() != 1 {
		t.Fatalf("peers %d %d", srv.Peer(), cli.Peer())
	}
	// Each end learns the process instance the other reached it from.
	if srv.PeerProcess() != 1<<40 || cli.PeerProcess() != 7 {
		t.Fatalf("peer processes %d %d", srv.PeerProcess(), cli.PeerProcess())
	}
	for _, op := range Opcodes() {
		if op.Handshake() {
			continue
		}
		sizes := []int{0, 1, 1000, op.BodyBytesMax()}
		if op.Class() == ClassData {
			sizes[3] = 1 << 20 // the full 64 MiB is exercised by the header tests
		}
		for _, n := range sizes {
			body := sampleBody(rng, op, n)
			errc := make(chan error, 1)
			go func() { errc <- cli.WriteFrame(op, body) }()
			f, err := srv.ReadFrame()
			if err != nil || f.Op != op || !bytes.Equal(f.Body, body) {
				t.Fatalf("%s of %d bytes: %v %v", op, n, f.Op, err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	}
	// GroupMessage without a copy of the message, in the other direction.
	go srv.WriteGroupMessage(1<<33, []byte("msg"))
	f, err := cli.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	g, msg, err := DecodeGroupMessage(f.Body)
	if err != nil || g != 1<<33 || string(msg) != "msg" {
		t.Fatalf("GroupMessage: %d %q %v", g, msg, err)
	}
}

func TestWriteOverLimitRefusedWritesNothing(t *testing.T) {
	srv, cli := pair(t, config(1, secretA), config(2, secretA))
	if err := cli.WriteFrame(OpSeal, make([]byte, ControlBodyBytesMax+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized Seal: %v", err)
	}
	if err := cli.WriteGroupMessage(1, make([]byte, DataBodyBytesMax-GroupIDBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized GroupMessage: %v", err)
	}
	// The connection is still in step: the next frame is the next one read.
	go cli.WriteFrame(OpRead, []byte("r"))
	if f, err := srv.ReadFrame(); err != nil || f.Op != OpRead {
		t.Fatalf("after refused writes: %v %v", f.Op, err)
	}
}

func TestConnRefusesBadFrames(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"oversized data", header(OpGroupMessage, DataBodyBytesMax+1), ErrTooLarge},
		{"oversized control", header(OpRead, ControlBodyBytesMax+1), ErrTooLarge},
		{"bad checksum", func() []byte { b := AppendFrame(nil, OpSeal, []byte("x")); b[12] ^= 1; return b }(), ErrChecksum},
		{"unknown opcode", header(Opcode(77), 0), ErrOpcode},
		{"handshake after auth", AppendFrame(nil, OpChallenge, make([]byte, ChallengeBytes)), ErrHandshake},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := pair(t, config(1, secretA), config(2, secretA))
			cli.nc.Write(c.b)
			if _, err := srv.ReadFrame(); !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			// The reader closed the connection: the stream lost its framing.
			if _, err := srv.ReadFrame(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("after the error: %v", err)
			}
		})
	}
}

func TestReadIdle(t *testing.T) {
	scfg := config(1, secretA)
	scfg.ReadIdleMs = 50
	srv, _ := pair(t, scfg, config(2, secretA))
	start := time.Now()
	if _, err := srv.ReadFrame(); err == nil || time.Since(start) > waitMax {
		t.Fatalf("idle read: %v after %v", err, time.Since(start))
	}
}

// TestHandshakesPendingBounded: with one pending slot, a silent dialer holds
// it until its handshake times out; a good dialer waits in the kernel's
// backlog meanwhile and is served after.
func TestHandshakesPendingBounded(t *testing.T) {
	cfg := config(1, secretA)
	cfg.HandshakesPendingMax = 1
	cfg.HandshakeTimeoutMs = 300
	s := startServer(t, cfg)
	dialRaw(t, s.addr()) // silent
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	c, err := Dial(context.Background(), s.addr(), config(2, secretA))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("served after %v while the only slot was held", d)
	}
	if err := s.waitRefused(t); !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("silent dialer: %v", err)
	}
}

func TestListenerClose(t *testing.T) {
	l, err := Listen("127.0.0.1:0", config(1, secretA))
	if err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, l.Addr().String()) // a handshake in progress
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
	case <-time.After(waitMax):
		t.Fatal("Accept still blocked after Close")
	}
	if !r.closed() {
		t.Fatal("a pending handshake survived Close")
	}
}
