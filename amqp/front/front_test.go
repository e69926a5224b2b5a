package front

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// client writes what an AMQP client sends, frame by frame.
type client struct {
	buf bytes.Buffer
	fw  *wire.FrameWriter
}

func newClient(t testing.TB) *client {
	c := &client{}
	fw, err := wire.NewFrameWriter(&c.buf, wire.FrameBytesMin)
	if err != nil {
		t.Fatal(err)
	}
	c.fw = fw
	return c
}

func (c *client) method(t testing.TB, ch uint16, m wire.Method) *client {
	t.Helper()
	if err := c.fw.WriteMethod(ch, m); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *client) publish(t testing.TB, ch uint16, rk, body string) *client {
	t.Helper()
	c.method(t, ch, &wire.BasicPublish{RoutingKey: rk})
	if err := c.fw.WriteContentHeader(ch, &wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if err := c.fw.WriteBody(ch, []byte(body)); err != nil {
		t.Fatal(err)
	}
	return c
}

// publishTo writes a basic.publish to exchange ex with its content.
func (c *client) publishTo(t testing.TB, ch uint16, ex, rk string, mandatory bool, headers wire.Table, body string) *client {
	t.Helper()
	c.method(t, ch, &wire.BasicPublish{Exchange: ex, RoutingKey: rk, Mandatory: mandatory})
	h := &wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(body))}
	if headers != nil {
		h.Properties.Flags |= wire.FlagHeaders
		h.Properties.Headers = headers
	}
	if err := c.fw.WriteContentHeader(ch, h); err != nil {
		t.Fatal(err)
	}
	if err := c.fw.WriteBody(ch, []byte(body)); err != nil {
		t.Fatal(err)
	}
	return c
}

// take returns the bytes written so far and forgets them.
func (c *client) take() []byte {
	b := bytes.Clone(c.buf.Bytes())
	c.buf.Reset()
	return b
}

// harness drives one front with one connection, recording its effects.
type harness struct {
	t   *testing.T
	f   *Front
	now int64
	log []string // every effect's text, for the determinism check
	out []Effect // the effects of the last call
	srv [][]byte // bytes written to the client
	req []Effect // requests not yet looked at
	at  int64    // the timer
	cl  *client  // the client's writer
	ok  func(seam.QueueID) bool
	// closeOK lets the connection close (the test expects it); closed is
	// why it did.
	closeOK bool
	closed  string
	gone    []Effect // EfClientGone effects
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with the front's configuration changed by
// edit first.
func newHarnessWith(t *testing.T, edit func(*Config)) *harness {
	h := &harness{t: t, now: 1, ok: func(seam.QueueID) bool { return true }}
	cfg := Config{Conn: conn.Config{Users: []conn.User{{Name: "guest", Password: "guest"}}}, Node: 1,
		Serves: func(q seam.QueueID) bool { return h.ok(q) }}
	if edit != nil {
		edit(&cfg)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.f = f
	h.cl = newClient(t)
	h.take(f.Accept(h.now, 1, conn.Peer{Loopback: true}))
	h.bytes(append(wire.ProtocolHeader[:], 0)[:8])
	pw := "\x00guest\x00guest"
	caps := wire.Table{{Name: "capabilities", Value: wire.Table{{Name: "consumer_cancel_notify", Value: true}}}}
	h.cl.method(t, 0, &wire.ConnectionStartOk{ClientProperties: caps, Mechanism: "PLAIN", Response: pw, Locale: "en_US"}).
		method(t, 0, &wire.ConnectionTuneOk{ChannelMax: 16, FrameMax: wire.FrameBytesMin, Heartbeat: 0}).
		method(t, 0, &wire.ConnectionOpen{VirtualHost: "/"}).
		method(t, 1, &wire.ChannelOpen{}).
		method(t, 1, &wire.ConfirmSelect{})
	h.send()
	if got := h.methods(); strings.Join(got, ",") != "10.10,10.30,10.41,20.11,85.11" {
		h.t.Fatalf("handshake: the front wrote %v", got)
	}
	h.req = nil
	return h
}

func (h *harness) take(effects []Effect) {
	h.out = append(h.out[:0], effects...)
	for i := range effects {
		e := &effects[i]
		h.log = append(h.log, e.String())
		switch e.Kind {
		case EfWrite:
			h.srv = append(h.srv, bytes.Clone(e.Bytes))
		case EfRequest:
			h.req = append(h.req, *e)
		case EfTimer:
			h.at = e.AtNs
		case EfClose:
			if !h.closeOK {
				h.t.Fatalf("connection closed: %s", e.Reason)
			}
			h.closed = e.Reason
		case EfClientGone:
			h.gone = append(h.gone, *e)
		}
	}
}

func (h *harness) bytes(b []byte) { h.now++; h.take(h.f.Bytes(h.now, 1, b)) }
func (h *harness) send()          { h.bytes(h.cl.take()) }

// reply answers request r.
func (h *harness) reply(r Effect, o seam.Outcome, q seam.QueueID, offset uint64, reason string) {
	h.now++
	e := seam.Effect{Kind: seam.EfReply, Client: r.Client, ReqID: r.Req.ID, Outcome: o, Queue: q, Offset: offset, Reason: reason}
	h.take(h.f.Core(h.now, &e))
}

// next returns the oldest request not looked at, of kind k.
func (h *harness) next(k seam.RequestKind) Effect {
	h.t.Helper()
	if len(h.req) == 0 {
		h.t.Fatalf("no request, want kind %d; effects: %v", k, h.log[max(0, len(h.log)-8):])
	}
	r := h.req[0]
	h.req = h.req[1:]
	if r.Req.Kind != k {
		h.t.Fatalf("request %s, want kind %d", r.String(), k)
	}
	return r
}

func (h *harness) tick() {
	h.t.Helper()
	if h.at == 0 {
		h.t.Fatal("no timer armed")
	}
	h.now = max(h.now+1, h.at)
	h.at = 0
	h.take(h.f.Tick(h.now))
}

// methods returns the methods the front wrote to the client since the
// last call, as "class.method" ids.
func (h *harness) methods() []string {
	var all []byte
	for _, b := range h.srv {
		all = append(all, b...)
	}
	h.srv = nil
	fr, err := wire.NewFrameReader(bytes.NewReader(all), wire.FrameBytesMax)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return out
		}
		if f.Type != wire.FrameMethod {
			continue
		}
		m, err := wire.DecodeMethod(f.Payload)
		if err != nil {
			h.t.Fatal(err)
		}
		cls, id := m.ID()
		s := fmt.Sprintf("%d.%d", cls, id)
		if a, ok := m.(*wire.BasicAck); ok {
			s += fmt.Sprintf(" tag=%d multiple=%t", a.DeliveryTag, a.Multiple)
		}
		if d, ok := m.(*wire.QueueDeclareOk); ok {
			s += fmt.Sprintf(" messages=%d consumers=%d", d.MessageCount, d.ConsumerCount)
		}
		if c, ok := m.(*wire.ChannelClose); ok {
			s += fmt.Sprintf(" %d %s", c.ReplyCode, c.ReplyText)
		}
		out = append(out, s)
	}
}

// TestReasonNotReadyIsTheCores pins the reason the front retries on
// against a real core: an owner whose new epoch record is not yet durable
// refuses a publish with exactly that reason.
func TestReasonNotReadyIsTheCores(t *testing.T) {
	n := core.New(core.Config{Node: 1, Process: 1, Queues: []core.QueueConfig{{Queue: 7, Replicas: []core.NodeID{1}, Owner: 1, Policy: core.LeaderDurable}}})
	n.Step(&core.Input{Kind: core.InStart, NowNs: 1, Logs: []core.LogState{{Group: core.QueueGroup(7)}}})
	effects := n.Step(&core.Input{Kind: core.InClient, NowNs: 2, Client: 1, Req: core.Request{Kind: core.ReqPublish, ID: 1, Queue: 7, Body: []byte("x")}})
	for _, e := range effects {
		if e.Kind == core.EfReply {
			if e.Outcome != core.Failed || e.Reason != reasonNotReady {
				t.Fatalf("a publish before the epoch is durable: %s; the front retries on %q", e.String(), reasonNotReady)
			}
			return
		}
	}
	t.Fatalf("no reply to a publish before the epoch is durable: %v", effects)
}

// TestReasonBusyIsTheCores pins the other retried reason: an owner at its
// limit of unconfirmed publishes refuses one more with exactly that reason.
func TestReasonBusyIsTheCores(t *testing.T) {
	n := core.New(core.Config{Node: 1, Process: 1, Limits: core.Limits{PendingPublishesMax: 2},
		Queues: []core.QueueConfig{{Queue: 7, Replicas: []core.NodeID{1}, Owner: 1, Policy: core.LeaderDurable}}})
	var syncAt uint64
	for _, e := range n.Step(&core.Input{Kind: core.InStart, NowNs: 1, Logs: []core.LogState{{Group: core.QueueGroup(7)}}}) {
		if e.Kind == core.EfStorage && e.Op == core.OpSync {
			syncAt = e.Offset
		}
	}
	// The epoch record is durable: the owner is ready.
	n.Step(&core.Input{Kind: core.InStorage, NowNs: 2, Done: core.StorageDone{Op: core.OpSync, Group: core.QueueGroup(7), Offset: syncAt}})
	for id := uint64(1); id <= 3; id++ {
		for _, e := range n.Step(&core.Input{Kind: core.InClient, NowNs: 3, Client: 1, Req: core.Request{Kind: core.ReqPublish, ID: id, Queue: 7, Body: []byte("x")}}) {
			if e.Kind != core.EfReply {
				continue
			}
			if id < 3 || e.Outcome != core.Failed || e.Reason != reasonBusy {
				t.Fatalf("publish %d: %s; the front retries on %q", id, e.String(), reasonBusy)
			}
			return
		}
	}
	t.Fatal("no refusal of a publish beyond the limit")
}

// publishRetryScript: until the queue's owner confirmed one of the
// connection's publishes, one goes at a time (an owner whose epoch is not
// ready refuses what comes before it is and takes what comes after: two in
// flight could land out of order). A is refused while the epoch is not
// ready, B and C wait behind it; A goes again, alone, and once it is
// confirmed B and C go at once, in order; their confirms become
// basic.acks. It returns the effect log.
func publishRetryScript(t *testing.T) []string {
	h := newHarness(t)
	h.cl.publish(t, 1, "q", "A").publish(t, 1, "q", "B")
	h.send()
	topo := h.next(seam.ReqTopology)
	if string(topo.Req.Body) != "q" {
		t.Fatalf("topology of %q", topo.Req.Body)
	}
	if len(h.req) != 0 {
		t.Fatalf("publishes left before their queue resolved: %v", h.req)
	}
	h.reply(topo, seam.Confirmed, 7, 1, "owner=n1")
	a := h.next(seam.ReqPublish)
	if len(h.req) != 0 {
		t.Fatalf("B went out before the owner confirmed any publish: %v", h.req[0].String())
	}
	h.reply(a, seam.Failed, 7, 0, reasonNotReady)
	if m := h.methods(); len(m) != 0 {
		t.Fatalf("a refusal the front retries reached the client: %v", m)
	}
	h.cl.publish(t, 1, "q", "C")
	h.send()
	if len(h.req) != 0 {
		t.Fatalf("C overtook the publishes waiting for a retry: %v", h.req[0].String())
	}
	h.tick()
	a = h.next(seam.ReqPublish)
	if len(h.req) != 0 {
		t.Fatalf("%s went out beside A, whose owner confirmed nothing yet", h.req[0].String())
	}
	h.reply(a, seam.Confirmed, 7, 0, "")
	bodies := []string{bodyOf(t, a)}
	var reqs []Effect
	for i := 0; i < 2; i++ {
		r := h.next(seam.ReqPublish)
		reqs = append(reqs, r)
		bodies = append(bodies, bodyOf(t, r))
	}
	if strings.Join(bodies, "") != "ABC" {
		t.Fatalf("resent in order %v, want A B C", bodies)
	}
	for _, r := range reqs {
		h.reply(r, seam.Confirmed, 7, 0, "")
	}
	acks := h.methods()
	if strings.Join(acks, ",") != "60.80 tag=1 multiple=false,60.80 tag=2 multiple=false,60.80 tag=3 multiple=false" {
		t.Fatalf("client got %v, want three basic.acks", acks)
	}
	if h.f.Publishing() != 0 {
		t.Fatalf("%d publishes still counted in flight", h.f.Publishing())
	}
	return h.log
}

func TestPublishRetryKeepsOrder(t *testing.T) { publishRetryScript(t) }

// TestDeterministic: the same inputs give the same effects.
func TestDeterministic(t *testing.T) {
	a, b := publishRetryScript(t), publishRetryScript(t)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("two runs of one script differ")
	}
}

// TestDeclare: queue.declare commits a DeclareQueue command, asks again
// while the node is not the leader, then asks the topology until the queue
// is placed and served here, then its owner for its counts (asking the
// topology again when the owner no longer serves it), and only then
// answers declare-ok, with the owner's counts.
func TestDeclare(t *testing.T) {
	h := newHarness(t)
	served := false
	h.ok = func(seam.QueueID) bool { return served }
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "orders", Durable: true})
	h.send()
	m := h.next(seam.ReqMeta)
	cmd, err := metadata.Decode(m.Req.Body)
	if err != nil || cmd.Kind != metadata.DeclareQueue || cmd.Queue != "orders" || cmd.Replicas != 1 || cmd.Policy != seam.MajorityDurable || cmd.MinInsync != 1 {
		t.Fatalf("command %+v %v", cmd, err)
	}
	h.reply(m, seam.Failed, 0, 0, "not the leader: none known")
	h.tick()
	m = h.next(seam.ReqMeta)
	h.reply(m, seam.Confirmed, 0, 3, `declared "orders" id=1 incarnation=3`)
	tp := h.next(seam.ReqTopology)
	h.reply(tp, seam.Failed, 0, 0, "not placed yet")
	h.tick()
	tp = h.next(seam.ReqTopology)
	h.reply(tp, seam.Confirmed, 1, 1, "owner=n1")
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("answered before the node serves the queue: %v", got)
	}
	h.tick()
	served = true
	tp = h.next(seam.ReqTopology)
	h.reply(tp, seam.Confirmed, 1, 1, "owner=n1")
	cnt := h.next(seam.ReqCount)
	if cnt.Req.Queue != 1 || cnt.Node != 0 {
		t.Fatalf("%s: want a count of queue 1 here", cnt.String())
	}
	h.reply(cnt, seam.Failed, 1, 0, "not the owner")
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("answered on a refused count: %v", got)
	}
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 1, "owner=n1")
	cnt = h.next(seam.ReqCount)
	h.now++
	h.take(h.f.Core(h.now, &seam.Effect{Kind: seam.EfReply, Client: cnt.Client, ReqID: cnt.Req.ID, Outcome: seam.Confirmed, Queue: 1, Offset: 1200, Count: 2}))
	if got := h.methods(); len(got) != 1 || got[0] != "50.11 messages=1200 consumers=2" {
		t.Fatalf("client got %v, want queue.declare-ok (50.11) with 1200 messages and 2 consumers", got)
	}
}

// TestDeclareRefusals: arguments the metadata cannot take are 406 before
// anything is committed; a conflict the metadata refuses is 406; a fenced
// queue is 405.
func TestDeclareRefusals(t *testing.T) {
	cases := []struct {
		args wire.Table
		want string
	}{
		{wire.Table{{Name: "x-sluice-replicas", Value: int32(3)}}, "406"},
		{wire.Table{{Name: "x-sluice-policy", Value: "fastest"}}, "406"}, // no such policy
	}
	for _, c := range cases {
		h := newHarness(t)
		h.cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true, Arguments: c.args})
		h.send()
		if len(h.req) != 0 {
			t.Fatalf("%v: a request went to the core: %v", c.args, h.req[0].String())
		}
		if got := h.methods(); len(got) != 1 || !strings.HasPrefix(got[0], "20.40 "+c.want) {
			t.Fatalf("%v: client got %v, want channel.close %s", c.args, got, c.want)
		}
	}
	h := newHarness(t)
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true})
	h.send()
	h.reply(h.next(seam.ReqMeta), seam.Failed, 0, 9, `refused: queue "q" exists with replicas=3`)
	if got := h.methods(); len(got) != 1 || !strings.HasPrefix(got[0], "20.40 406") {
		t.Fatalf("conflict: client got %v, want channel.close 406", got)
	}
	// Fenced (a recovery under way, a restart's on a single broker): the
	// declaration waits, asking again, and is refused with 405 only past
	// its timeout.
	h = newHarnessWith(t, func(c *Config) { c.DeclareTimeoutNs = 20e6 })
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true})
	h.send()
	h.reply(h.next(seam.ReqMeta), seam.Confirmed, 0, 9, "exists")
	h.reply(h.next(seam.ReqTopology), seam.Failed, 1, 0, "fenced: pending transition to epoch 2")
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("fenced: client got %v at once, want the declaration to wait", got)
	}
	var got []string
	for i := 0; i < 50 && len(got) == 0; i++ {
		h.tick()
		for len(h.req) > 0 {
			h.reply(h.next(seam.ReqTopology), seam.Failed, 1, 0, "fenced: pending transition to epoch 2")
		}
		got = h.methods()
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "20.40 405") || !strings.Contains(got[0], "not ready in time") {
		t.Fatalf("fenced past the timeout: client got %v, want channel.close 405", got)
	}
}

// TestBody: a record body round-trips; every truncation and a padded one
// are refused.
func TestBody(t *testing.T) {
	c := conn.Content{Properties: wire.Properties{Flags: wire.FlagContentType, ContentType: "text/plain"}, Body: []byte("hello")}
	b, err := encodeBody(nil, "ex", "rk", &c)
	if err != nil {
		t.Fatal(err)
	}
	ex, rk, got, err := decodeBody(b)
	if err != nil || ex != "ex" || rk != "rk" || string(got.Body) != "hello" || got.Properties.ContentType != "text/plain" {
		t.Fatalf("round trip: %q %q %+v %v", ex, rk, got, err)
	}
	for i := 0; i < len(b); i++ {
		if _, _, _, err := decodeBody(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
	if _, _, _, err := decodeBody(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("padded: accepted")
	}
}

// TestCoreBatchOneAck: confirms the core emits together leave as one
// basic.ack with multiple.
func TestCoreBatchOneAck(t *testing.T) {
	h := newHarness(t)
	h.cl.publish(t, 1, "q", "A").publish(t, 1, "q", "B").publish(t, 1, "q", "C")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 1, "owner=n1")
	// The first goes alone until the owner confirmed it (publishRetryScript).
	h.reply(h.next(seam.ReqPublish), seam.Confirmed, 7, 1, "")
	var batch []seam.Effect
	for i := 0; i < 2; i++ {
		r := h.next(seam.ReqPublish)
		batch = append(batch, seam.Effect{Kind: seam.EfReply, Client: r.Client, ReqID: r.Req.ID, Outcome: seam.Confirmed, Queue: 7, Offset: uint64(i + 2)})
	}
	h.now++
	h.take(h.f.CoreBatch(h.now, batch))
	if got := h.methods(); strings.Join(got, ",") != "60.80 tag=1 multiple=false,60.80 tag=3 multiple=true" {
		t.Fatalf("client got %v, want basic.ack tag=1, then one basic.ack tag=3 multiple", got)
	}
}

// TestTopologyCatchingUp: right after a broker's start its metadata may
// not yet hold a queue it declared before (the log is re-applied): the
// topology says so, and a publish to the queue waits, asked again every
// RetryNs, instead of being acked as unroutable (and lost).
func TestTopologyCatchingUp(t *testing.T) {
	h := newHarness(t)
	h.cl.publish(t, 1, "q", "A")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Failed, 0, 0, seam.ReasonCatchingUp)
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("the client got %v while the metadata catches up", got)
	}
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 1, "owner=n1")
	p := h.next(seam.ReqPublish)
	h.reply(p, seam.Confirmed, 7, 0, "")
	if got := h.methods(); len(got) != 1 || got[0] != "60.80 tag=1 multiple=false" {
		t.Fatalf("client got %v, want basic.ack 1 of a stored publish", got)
	}
	if st := h.f.Stats(); st.Unroutable != 0 || st.Confirmed != 1 {
		t.Fatalf("stats %+v", st)
	}
}
