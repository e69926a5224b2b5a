package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/netio"
)

var testSecret = []byte("a cluster secret of at least thirty-two bytes, for tests")

// reservePorts returns n loopback addresses free a moment ago.
func reservePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// startCluster starts the brokers of members that run (in-process), each
// on a data directory of its own.
func startCluster(t *testing.T, members []Member, run []uint32) map[uint32]*Server {
	t.Helper()
	servers := map[uint32]*Server{}
	dir := t.TempDir()
	for _, n := range run {
		s, err := Start(Config{DataDir: filepath.Join(dir, fmt.Sprintf("n%d", n)), AMQPAddr: "127.0.0.1:0", Node: n, Logger: quietLogger(),
			Cluster: &ClusterConfig{Members: members, Secret: testSecret}})
		if err != nil {
			t.Fatalf("start n%d: %v", n, err)
		}
		servers[n] = s
	}
	t.Cleanup(func() {
		for _, s := range servers {
			select {
			case <-s.Done():
			default:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				s.Shutdown(ctx)
				cancel()
			}
		}
	})
	return servers
}

func members(addrs []string) []Member {
	var ms []Member
	for i, a := range addrs {
		ms = append(ms, Member{Node: uint32(i + 1), Addr: a})
	}
	return ms
}

// waitLeader waits until s knows a metadata leader.
func waitLeader(t *testing.T, s *Server) snapshot {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sn, ok := s.query(ctx)
		cancel()
		if ok && sn.lead != 0 {
			return sn
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no metadata leader in 20 s")
	return snapshot{}
}

func snap(t *testing.T, s *Server) snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sn, ok := s.query(ctx)
	if !ok {
		t.Fatal("the loop does not answer")
	}
	return sn
}

// TestClusterInProcess: three brokers in one process, on loopback. A
// queue of three replicas declared at n1, published to at n2 and consumed
// at n3: whichever owns it, at least two of the three brokers forward.
// Then the owner drains away: its peers see its connections close and its
// address refuse a reconnect and report it lost (eager failover), the
// queue is recovered on the two others, and serves again through both.
func TestClusterInProcess(t *testing.T) {
	addrs := reservePorts(t, 3)
	ss := startCluster(t, members(addrs), []uint32{1, 2, 3})
	for _, s := range ss {
		waitLeader(t, s)
	}
	args := amqp.Table{"x-sluice-replicas": int32(3)}
	c1 := mustDial(t, ss[1])
	ch1, _ := c1.Channel()
	if _, err := ch1.QueueDeclare("orders", true, false, false, false, args); err != nil {
		t.Fatalf("declare at n1: %v", err)
	}
	c1.Close()
	c2 := mustDial(t, ss[2])
	ch2, _ := c2.Channel()
	if _, err := ch2.QueueDeclare("orders", true, false, false, false, args); err != nil {
		t.Fatalf("declare at n2: %v", err)
	}
	publishConfirmed(t, ch2, "orders", 0, 50)
	c2.Close()
	// declare-ok counts the owner's ready messages, wherever it is asked
	// (the owner folds what it confirmed as it reads it: a moment later).
	c3 := mustDial(t, ss[3])
	ch3, _ := c3.Channel()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		q, err := ch3.QueueDeclarePassive("orders", true, false, false, false, nil)
		if err != nil {
			t.Fatalf("a passive declare at n3: %v", err)
		}
		if q.Messages == 50 && q.Consumers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("declare-ok at n3 says %d messages and %d consumers, want 50 and 0", q.Messages, q.Consumers)
		}
	}
	c3.Close()
	got := consume(t, ss[3], "orders", 50)
	for i, b := range got {
		if b != fmt.Sprintf("m%d", i) {
			t.Fatalf("consumed at n3: %v, want m0..m49 in order", got)
		}
	}
	owner := ownerOf(t, ss[1], "orders")
	forwarded := uint64(0)
	for n, s := range ss {
		sn := snap(t, s)
		forwarded += sn.front.Forwarded
		if sn.peersConnected != 2 || sn.peerSent == 0 || sn.peerReceived == 0 {
			t.Errorf("n%d: %d peers connected, %d sent, %d received", n, sn.peersConnected, sn.peerSent, sn.peerReceived)
		}
	}
	if forwarded == 0 {
		t.Error("no request was forwarded, though two of the three brokers do not own the queue")
	}

	// The owner goes: the others report its process lost.
	stopServer(t, ss[owner])
	var rest []uint32
	for n := range ss {
		if n != owner {
			rest = append(rest, n)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range rest {
		for snap(t, ss[n]).peerLostReports == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("n%d never reported n%d lost", n, owner)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The queue serves again, through either survivor.
	for i, n := range rest {
		c := mustDial(t, ss[n])
		ch, _ := c.Channel()
		if _, err := ch.QueueDeclare("orders", true, false, false, false, args); err != nil {
			t.Fatalf("declare at n%d after the owner left: %v", n, err)
		}
		publishConfirmed(t, ch, "orders", 100+10*i, 10)
		c.Close()
	}
	if o := ownerOf(t, ss[rest[0]], "orders"); o == owner {
		t.Fatalf("the owner is still n%d", o)
	}
	// The recovery's stages were seen (and counted for the metrics). The
	// worker marks the activation on its next tick after applying it, which
	// may come after the new owner confirmed the publishes above: wait.
	activated := uint64(0)
	for deadline := time.Now().Add(5 * time.Second); activated == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, n := range rest {
			activated += snap(t, ss[n]).stages[seam.StageActivate]
		}
	}
	if activated == 0 {
		t.Error("no broker counted the recovery's activation within 5 s")
	}
	// Acks are not confirmed to the consumer: those the owner had not made
	// durable on W replicas when it left may come again (at least once).
	// The new publishes come, in order, after whatever does.
	var fresh []string
	for len(fresh) < 20 {
		for _, b := range consume(t, ss[rest[1]], "orders", 1) {
			var k int
			fmt.Sscanf(b, "m%d", &k)
			switch {
			case k >= 100:
				fresh = append(fresh, b)
			case k >= 50 || len(fresh) > 0:
				t.Fatalf("after the recovery: %s after %v", b, fresh)
			}
		}
	}
	if strings.Join(fresh, ",") != "m100,m101,m102,m103,m104,m105,m106,m107,m108,m109,m110,m111,m112,m113,m114,m115,m116,m117,m118,m119" {
		t.Fatalf("after the recovery: %v", fresh)
	}
}

// ownerOf is the queue's owner as s's metadata says.
func ownerOf(t *testing.T, s *Server, queue string) uint32 {
	t.Helper()
	described := make(chan Description, 1)
	s.events <- event{kind: evDescribe, described: described}
	d := <-described
	for _, q := range d.Queues {
		if q.Name == queue {
			return uint32(q.Owner)
		}
	}
	t.Fatalf("no queue %s", queue)
	return 0
}

// consume takes n deliveries of queue from s, acking each, and returns
// their bodies.
func consume(t *testing.T, s *Server, queue string, n int) []string {
	t.Helper()
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	ch.Qos(100, 0, false)
	ds, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	var out []string
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case d := <-ds:
			out = append(out, string(d.Body))
			d.Ack(false)
		case <-timeout:
			t.Fatalf("%d of %d deliveries in 20 s: %v", len(out), n, out)
		}
	}
	return out
}

// TestClusterPeerGate: on a broker's peer port, an unauthenticated
// connection's peer operation is refused from its header and reaches
// nothing; a connection authenticated with the secret by a node that is
// not a member is closed before any of its frames is read.
func TestClusterPeerGate(t *testing.T) {
	addrs := reservePorts(t, 2)
	// n2 never runs: n1's only traffic is what this test sends.
	ss := startCluster(t, members(addrs), []uint32{1})
	s := ss[1]

	raw, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	raw.Write(netio.AppendFrame(nil, netio.OpGroupMessage, netio.AppendGroupMessage(nil, core.GroupCtrl, []byte("vote for me"))))
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("unauthenticated connection: read %v, want it closed", err)
	}
	raw.Close()
	// The listener counts the refusal just after it closes the connection.
	deadline := time.Now().Add(5 * time.Second)
	for s.cluster.ln.Stats().RefusedBeforeAuth != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("listener stats %+v, want 1 refused before authentication", s.cluster.ln.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}

	c, err := netio.Dial(context.Background(), addrs[0], netio.Config{NodeID: 9, Process: 1, Secret: testSecret})
	if err != nil {
		t.Fatalf("dial as n9: %v", err)
	}
	c.WriteGroupMessage(core.GroupCtrl, []byte("vote for me"))
	if _, err := c.ReadFrame(); err == nil {
		t.Fatal("a non-member's connection stayed open")
	}
	c.Close()
	if sn := snap(t, s); sn.peerReceived != 0 {
		t.Fatalf("%d peer messages reached the core", sn.peerReceived)
	}
}

// TestPeerQueueBounded: messages for a peer beyond its queue's limits
// (count, bytes) are dropped and counted; the loop never waits.
func TestPeerQueueBounded(t *testing.T) {
	cl := &cluster{cfg: ClusterConfig{PeerQueueMax: 3, PeerQueueBytesMax: 100}}
	l := &peerLink{node: 2, out: make(chan peerMsg, 3)}
	cl.links = []*peerLink{l}
	for i := 0; i < 5; i++ {
		cl.send(nil, 2, 1, []byte("ten bytes!"))
	}
	if len(l.out) != 3 || cl.dropped.Load() != 2 || l.queuedBytes.Load() != 30 {
		t.Fatalf("queued %d (%d bytes), dropped %d; want 3, 30, 2", len(l.out), l.queuedBytes.Load(), cl.dropped.Load())
	}
	l.drain()
	cl.send(nil, 2, 1, make([]byte, 101))
	if len(l.out) != 0 || cl.dropped.Load() != 3 {
		t.Fatalf("a message over the byte limit was queued")
	}
	cl.send(nil, 7, 1, []byte("x")) // not a member
	if cl.dropped.Load() != 4 {
		t.Fatal("a message for a non-member was not counted as dropped")
	}
}

func TestClusterConfigRefused(t *testing.T) {
	ms := []Member{{1, "127.0.0.1:1"}, {2, "127.0.0.1:2"}, {3, "127.0.0.1:3"}}
	for _, c := range []struct {
		name string
		cc   ClusterConfig
		node uint32
		want string
	}{
		{"one member", ClusterConfig{Members: ms[:1], Secret: testSecret}, 1, "at least 2"},
		{"not a member", ClusterConfig{Members: ms, Secret: testSecret}, 4, "not among the members"},
		{"twice", ClusterConfig{Members: append(ms, ms[0]), Secret: testSecret}, 1, "listed twice"},
		{"bad address", ClusterConfig{Members: []Member{{1, "nowhere"}, {2, "127.0.0.1:2"}}, Secret: testSecret}, 1, "address"},
		{"two voters", ClusterConfig{Members: ms, Voters: []uint32{1, 2}, Secret: testSecret}, 1, "2 voters"},
		{"voter not a member", ClusterConfig{Members: ms, Voters: []uint32{4}, Secret: testSecret}, 1, "not a member"},
		{"short secret", ClusterConfig{Members: ms, Secret: testSecret[:31]}, 1, "secret of 31 bytes"},
	} {
		_, err := c.cc.validate(c.node)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	cc, err := (&ClusterConfig{Members: []Member{ms[2], ms[0], ms[1], {4, "127.0.0.1:4"}}, Secret: testSecret}).validate(4)
	if err != nil || fmt.Sprint(cc.Voters) != "[1 2 3]" || fmt.Sprint(cc.learners()) != "[4]" {
		t.Fatalf("default voters %v, learners %v, %v; want [1 2 3] and [4]", cc.Voters, cc.learners(), err)
	}
}

func TestForwardCodec(t *testing.T) {
	req := core.Request{Kind: core.ReqPublish, ID: 9, Queue: 1 << 20, Offset: 3, Prefetch: 16, Body: []byte("body")}
	b := appendClientRequest(nil, 42, &req)
	c, r, err := decodeClientRequest(b)
	if err != nil || c != 42 || r.Kind != req.Kind || r.ID != 9 || r.Queue != req.Queue || r.Offset != 3 || r.Prefetch != 16 || string(r.Body) != "body" {
		t.Fatalf("request round trip: %d %+v %v", c, r, err)
	}
	sub := core.Request{Kind: core.ReqSubscribe, ID: 2, Queue: 7, Prefetch: 1, Exclusive: true}
	if _, r, err = decodeClientRequest(appendClientRequest(nil, 42, &sub)); err != nil || !r.Exclusive || r.Prefetch != 1 {
		t.Fatalf("an exclusive subscribe's round trip: %+v %v", r, err)
	}
	refused := core.Effect{Kind: core.EfReply, Client: 42, ReqID: 2, Outcome: core.Failed, Queue: 7, Refusal: seam.RefusalExclusive, Reason: "exclusive"}
	if d, err := decodeClientEffect(appendClientEffect(nil, 42, &refused)); err != nil || d.Refusal != seam.RefusalExclusive || d.Reason != "exclusive" {
		t.Fatalf("a typed refusal's round trip: %+v %v", d, err)
	}
	e := core.Effect{Kind: core.EfReply, Client: 42, ReqID: 9, Outcome: core.Failed, Queue: 7, Offset: 5, Reason: "not the owner"}
	d, err := decodeClientEffect(appendClientEffect(nil, 42, &e))
	if err != nil || d.Client != 42 || d.Kind != e.Kind || d.ReqID != 9 || d.Outcome != e.Outcome || d.Queue != 7 || d.Offset != 5 || d.Reason != e.Reason || d.Body != nil {
		t.Fatalf("effect round trip: %+v %v", d, err)
	}
	counts := core.Effect{Kind: core.EfReply, Client: 42, ReqID: 10, Outcome: core.Confirmed, Queue: 7, Offset: 1200, Count: 3, Tag: 11}
	d, err = decodeClientEffect(appendClientEffect(nil, 42, &counts))
	if err != nil || d.Offset != 1200 || d.Count != 3 || d.Tag != 11 {
		t.Fatalf("a count's reply round trip: %+v %v", d, err)
	}
	del := core.Effect{Kind: core.EfDeliver, Client: 3, Queue: 7, Offset: 11, Body: []byte("m"), Redelivered: true}
	d, err = decodeClientEffect(appendClientEffect(nil, 3, &del))
	if err != nil || d.Kind != core.EfDeliver || !d.Redelivered || string(d.Body) != "m" || d.Offset != 11 {
		t.Fatalf("delivery round trip: %+v %v", d, err)
	}
	cancel := core.Effect{Kind: core.EfCancel, Client: 3, Queue: 7, Reason: "fenced: pending transition to epoch 2"}
	d, err = decodeClientEffect(appendClientEffect(nil, 3, &cancel))
	if err != nil || d.Kind != core.EfCancel || d.Queue != 7 || d.Reason != cancel.Reason || d.Body != nil {
		t.Fatalf("cancel round trip: %+v %v", d, err)
	}
	for name, bad := range map[string][]byte{
		"request truncated":         b[:clientRequestHead-1],
		"request kind":              append(append([]byte{}, b[:8]...), append([]byte{99}, b[9:]...)...),
		"request client 0":          appendClientRequest(nil, 0, &req),
		"effect truncated":          appendClientEffect(nil, 42, &e)[:clientEffectHead-1],
		"effect reason short":       appendClientEffect(nil, 42, &e)[:clientEffectHead+3],
		"effect kind":               appendClientEffect(nil, 42, &core.Effect{Kind: core.EfSend}),
		"effect outcome":            appendClientEffect(nil, 42, &core.Effect{Kind: core.EfReply, Outcome: 7}),
		"cancel with a body":        appendClientEffect(nil, 42, &core.Effect{Kind: core.EfCancel, Queue: 7, Body: []byte("x")}),
		"cancel with outcome":       appendClientEffect(nil, 42, &core.Effect{Kind: core.EfCancel, Queue: 7, Outcome: core.Confirmed}),
		"delivery with count":       appendClientEffect(nil, 42, &core.Effect{Kind: core.EfDeliver, Queue: 7, Count: 2}),
		"confirmed refusal":         appendClientEffect(nil, 42, &core.Effect{Kind: core.EfReply, Outcome: core.Confirmed, Refusal: seam.RefusalExclusive}),
		"unknown refusal":           appendClientEffect(nil, 42, &core.Effect{Kind: core.EfReply, Outcome: core.Failed, Refusal: seam.RefusalMax + 1}),
		"request exclusive publish": appendClientRequest(nil, 42, &core.Request{Kind: core.ReqPublish, Exclusive: true}),
	} {
		var err error
		if strings.HasPrefix(name, "request") {
			_, _, err = decodeClientRequest(bad)
		} else {
			_, err = decodeClientEffect(bad)
		}
		if !errors.Is(err, errForwarded) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if _, err := decodeClientGone([]byte{1, 2, 3}); !errors.Is(err, errForwarded) {
		t.Errorf("ClientGone of 3 bytes: %v", err)
	}
}

// The forwarding decoders' fuzz targets: never a panic, and whatever they
// accept re-encodes to the very bytes.
func FuzzDecodeClientRequest(f *testing.F) {
	f.Add(appendClientRequest(nil, 42, &core.Request{Kind: core.ReqPublish, ID: 9, Queue: 7, Body: []byte("b")}))
	f.Add(appendClientRequest(nil, 1, &core.Request{Kind: core.ReqTopology, Body: []byte("orders")}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, r, err := decodeClientRequest(b)
		if err != nil {
			return
		}
		if got := appendClientRequest(nil, c, &r); !bytes.Equal(got, b) {
			t.Fatalf("accepted %x, re-encodes as %x", b, got)
		}
	})
}

func FuzzDecodeClientEffect(f *testing.F) {
	f.Add(appendClientEffect(nil, 42, &core.Effect{Kind: core.EfReply, ReqID: 9, Outcome: core.Confirmed, Queue: 7, Offset: 5}))
	f.Add(appendClientEffect(nil, 3, &core.Effect{Kind: core.EfDeliver, Queue: 7, Offset: 11, Body: []byte("m"), Redelivered: true}))
	f.Add(appendClientEffect(nil, 3, &core.Effect{Kind: core.EfReply, Outcome: core.Failed, Reason: "not the owner"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeClientEffect(b)
		if err != nil {
			return
		}
		if got := appendClientEffect(nil, e.Client, &e); !bytes.Equal(got, b) {
			t.Fatalf("accepted %x, re-encodes as %x", b, got)
		}
	})
}

func FuzzDecodeClientGone(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeClientGone(b)
		if err != nil {
			return
		}
		if c == 0 || len(b) != 8 {
			t.Fatalf("accepted %x", b)
		}
	})
}
