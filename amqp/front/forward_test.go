package front

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// The front with Forward, as broker n1 of three: requests for a queue
// another broker owns carry that broker's id (EfRequest.Node).

func forwardHarness(t *testing.T) *harness {
	return newHarnessWith(t, func(c *Config) { c.Forward, c.Brokers = true, 3 })
}

func bodyOf(t *testing.T, r Effect) string {
	t.Helper()
	_, _, c, err := decodeBody(r.Req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(c.Body)
}

// TestForwardPublish: a queue owned by n2 gets its publishes forwarded
// there; its confirm is a basic.ack here.
func TestForwardPublish(t *testing.T) {
	h := forwardHarness(t)
	h.cl.publish(t, 1, "q", "A")
	h.send()
	tp := h.next(seam.ReqTopology)
	if tp.Node != 0 {
		t.Fatalf("the topology is asked of this broker, not n%d", tp.Node)
	}
	h.reply(tp, seam.Confirmed, 7, 2, "owner=n2")
	p := h.next(seam.ReqPublish)
	if p.Node != 2 || p.Req.Queue != 7 {
		t.Fatalf("publish %s, want it forwarded to n2", p.String())
	}
	h.reply(p, seam.Confirmed, 7, 0, "")
	if got := h.methods(); len(got) != 1 || got[0] != "60.80 tag=1 multiple=false" {
		t.Fatalf("client got %v, want basic.ack 1", got)
	}
	if st := h.f.Stats(); st.Forwarded != 1 || st.Confirmed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestForwardReroute: the owner a publish went to refuses it without
// storing it (a recovery moved the queue): the publish waits, in order with
// the later ones, until the topology names a serving owner, and goes there.
func TestForwardReroute(t *testing.T) {
	h := forwardHarness(t)
	h.cl.publish(t, 1, "q", "W")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 2, "owner=n2")
	// The owner confirmed one: the connection's publishes go pipelined.
	h.reply(h.next(seam.ReqPublish), seam.Confirmed, 7, 0, "")
	h.methods()
	h.cl.publish(t, 1, "q", "A").publish(t, 1, "q", "B")
	h.send()
	a, b := h.next(seam.ReqPublish), h.next(seam.ReqPublish)
	h.reply(a, seam.Failed, 7, 0, "fenced: pending transition to epoch 2")
	// The refusal asks the topology again; while it says fenced, A waits.
	tp := h.next(seam.ReqTopology)
	h.reply(tp, seam.Failed, 7, 0, "fenced: pending transition to epoch 2")
	h.cl.publish(t, 1, "q", "C")
	h.send()
	if len(h.req) != 0 {
		t.Fatalf("C went out while A waits: %s", h.req[0].String())
	}
	h.tick()
	// B is still in flight to n2: nothing goes again before its answer.
	for _, r := range h.req {
		if r.Req.Kind == seam.ReqPublish {
			t.Fatalf("a held publish overtook B, in flight: %s", r.String())
		}
	}
	h.req = nil
	h.reply(b, seam.Failed, 7, 0, "not the owner")
	tp = h.next(seam.ReqTopology)
	h.reply(tp, seam.Confirmed, 7, 3, "owner=n3")
	h.tick()
	// At the new owner, one at a time until it confirmed one, then the
	// rest at once: A, then B and C.
	var got []string
	for i := 0; i < 3; i++ {
		r := h.next(seam.ReqPublish)
		if r.Node != 3 {
			t.Fatalf("%s: want it sent to the new owner n3", r.String())
		}
		if i == 0 && len(h.req) != 0 {
			t.Fatalf("%s went to n3 beside the first, before n3 confirmed any", h.req[0].String())
		}
		got = append(got, bodyOf(t, r))
		h.reply(r, seam.Confirmed, 7, 0, "")
	}
	if strings.Join(got, "") != "ABC" {
		t.Fatalf("sent to n3 in the order %v, want A B C", got)
	}
	if m := h.methods(); len(m) == 0 || !strings.HasPrefix(m[len(m)-1], "60.80 tag=4") {
		t.Fatalf("client got %v, want acks up to 4", m)
	}
	if st := h.f.Stats(); st.Rerouted != 2 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestForwardRouteWait: a publish whose queue has no serving owner for
// RouteWaitNs is nacked, saying why.
func TestForwardRouteWait(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) { c.Forward, c.Brokers, c.RouteWaitNs = true, 3, 50e6 })
	h.cl.publish(t, 1, "q", "A")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Failed, 7, 0, "fenced: pending transition to epoch 2")
	for i := 0; i < 20 && h.f.Stats().Failed == 0; i++ {
		h.tick()
		for len(h.req) > 0 {
			h.reply(h.next(seam.ReqTopology), seam.Failed, 7, 0, "fenced: pending transition to epoch 2")
		}
	}
	if got := h.methods(); len(got) != 1 || !strings.HasPrefix(got[0], "60.120") {
		t.Fatalf("client got %v, want basic.nack (60.120)", got)
	}
}

// TestForwardNodeLost: a broker with a publish in flight is lost: the
// connection closes (320), its outcome unknown to the client; nothing is
// routed there any more.
func TestForwardNodeLost(t *testing.T) {
	h := forwardHarness(t)
	h.cl.publish(t, 1, "q", "A")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 2, "owner=n2")
	h.next(seam.ReqPublish)
	// A loss of another broker changes nothing here.
	h.take(h.f.NodeLost(h.now+1, 3, "n3 lost"))
	if h.f.Conns() != 1 {
		t.Fatal("a connection with nothing at n3 was closed")
	}
	h.closeOK = true
	h.take(h.f.NodeLost(h.now+2, 2, "broker connection lost (n2)"))
	if h.closed == "" || h.f.Conns() != 0 {
		t.Fatal("the connection with a publish in flight at n2 stayed open")
	}
	if got := h.methods(); len(got) != 1 || !strings.HasPrefix(got[0], "10.50") {
		t.Fatalf("client got %v, want connection.close (10.50)", got)
	}
	if _, ok := h.f.routes[7]; ok {
		t.Fatal("queue 7 still routed to the lost n2")
	}
	var nodes []seam.NodeID
	for _, g := range h.gone {
		nodes = append(nodes, g.Node)
	}
	if len(nodes) != 2 || nodes[0] != 0 || nodes[1] != 2 {
		t.Fatalf("client-gone to %v, want this broker and n2", nodes)
	}
	if st := h.f.Stats(); st.Unknown != 1 || st.NodesLost != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// consumingAtN2 returns a harness whose client consumes queue "q" (id 7,
// owned by n2, by the topology's answer) as "c1", and the subscribe request
// the front forwarded.
func consumingAtN2(t *testing.T) (*harness, Effect) {
	h := forwardHarness(t)
	h.cl.method(t, 1, &wire.BasicConsume{Queue: "q", ConsumerTag: "c1"})
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 2, "owner=n2")
	return h, h.next(seam.ReqSubscribe)
}

// TestForwardSubscribe: a subscription to a queue owned by n2 runs there;
// its acks and its end go there too.
func TestForwardSubscribe(t *testing.T) {
	h, sr := consumingAtN2(t)
	if sr.Node != 2 {
		t.Fatalf("subscribe %s, want it at n2", sr.String())
	}
	h.reply(sr, seam.Confirmed, 7, 0, "")
	h.now++
	body, err := encodeBody(nil, "", "q", &conn.Content{Body: []byte("m")})
	if err != nil {
		t.Fatal(err)
	}
	h.take(h.f.Core(h.now, &seam.Effect{Kind: seam.EfDeliver, Client: sr.Client, Queue: 7, Offset: 4, Body: body}))
	h.methods()
	h.cl.method(t, 1, &wire.BasicAck{DeliveryTag: 1})
	h.send()
	ack := h.next(seam.ReqAck)
	if ack.Node != 2 || ack.Req.Offset != 4 || ack.Client != sr.Client {
		t.Fatalf("ack %s, want offset 4 at n2 by the subscription", ack.String())
	}
	h.cl.method(t, 1, &wire.BasicCancel{ConsumerTag: "c1"})
	h.send()
	if len(h.gone) != 1 || h.gone[0].Node != 2 || h.gone[0].Client != sr.Client {
		t.Fatalf("cancel: client-gone %v, want the subscription's at n2", h.gone)
	}
}

// TestCoreCancel: the core ends a subscription (its group at the owner was
// fenced): the client gets basic.cancel, the front asks the topology where
// the queue lives now, and consuming again goes there.
func TestCoreCancel(t *testing.T) {
	h, sr := consumingAtN2(t)
	h.reply(sr, seam.Confirmed, 7, 0, "")
	h.methods()
	h.now++
	h.take(h.f.Core(h.now, &seam.Effect{Kind: seam.EfCancel, Client: sr.Client, Queue: 7, Reason: "fenced: pending transition to epoch 2"}))
	if got := h.methods(); len(got) != 1 || got[0] != "60.30" {
		t.Fatalf("after the core's cancel the client got %v, want basic.cancel (60.30)", got)
	}
	if h.f.Stats().Cancelled != 1 {
		t.Fatalf("cancelled %d, want 1", h.f.Stats().Cancelled)
	}
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 3, "owner=n3")
	h.cl.method(t, 1, &wire.BasicConsume{Queue: "q", ConsumerTag: "c2"})
	h.send()
	if sr2 := h.next(seam.ReqSubscribe); sr2.Node != 3 {
		t.Fatalf("the second subscribe went to n%d, want n3 (the topology asked again)", sr2.Node)
	}
}

// TestForwardDeclare: a declaration goes to the leader a refusal names,
// waits while the queue this broker applied is not there yet or fenced,
// and survives the loss of the leader it went to (asked again here). Its
// default is three replicas in a cluster of three.
func TestForwardDeclare(t *testing.T) {
	h := forwardHarness(t)
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "orders", Durable: true})
	h.send()
	m := h.next(seam.ReqMeta)
	if cmd, err := metadata.Decode(m.Req.Body); err != nil || cmd.Replicas != 3 {
		t.Fatalf("command %+v %v, want 3 replicas", cmd, err)
	}
	h.reply(m, seam.Failed, 0, 0, "not the leader: leader=3")
	m = h.next(seam.ReqMeta)
	if m.Node != 3 {
		t.Fatalf("%s: want it sent to the leader n3", m.String())
	}
	// n3 is lost before it answers: the declaration is asked again here.
	h.take(h.f.NodeLost(h.now+1, 3, "n3 lost"))
	if h.f.Conns() != 1 {
		t.Fatal("the loss of the leader a declaration went to closed the connection")
	}
	h.tick()
	m = h.next(seam.ReqMeta)
	if m.Node != 0 {
		t.Fatalf("%s: want it asked of this broker again", m.String())
	}
	h.reply(m, seam.Failed, 0, 0, "not the leader: leader=2")
	m = h.next(seam.ReqMeta)
	if m.Node != 2 {
		t.Fatalf("%s: want it sent to n2", m.String())
	}
	h.reply(m, seam.Confirmed, 0, 5, "declared")
	// This broker has not applied the declaration yet, then it is fenced.
	h.reply(h.next(seam.ReqTopology), seam.Failed, 0, 0, "no such queue")
	h.tick()
	// Its owner's broker down in the metadata, the transition to follow;
	// then the transition, fenced.
	h.reply(h.next(seam.ReqTopology), seam.Failed, 1, 0, "owner down: n3, its recovery follows")
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Failed, 1, 0, "fenced: pending transition to epoch 2")
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 2, "owner=n2")
	// The counts are the owner's: asked of n2.
	cnt := h.next(seam.ReqCount)
	if cnt.Node != 2 {
		t.Fatalf("%s: want the count asked of the owner n2", cnt.String())
	}
	h.reply(cnt, seam.Confirmed, 1, 0, "")
	if got := h.methods(); len(got) != 1 || got[0] != "50.11 messages=0 consumers=0" {
		t.Fatalf("client got %v, want queue.declare-ok", got)
	}
	if n, ok := h.f.routes[1]; !ok || n != 2 {
		t.Fatalf("route %d %v, want n2", n, ok)
	}
}

func TestLeaderNamed(t *testing.T) {
	for reason, want := range map[string]seam.NodeID{
		"not the leader: leader=3":           3,
		"not the leader: leader=0":           0,
		"not the leader: none":               0,
		"refused: leader=3":                  0,
		"not the leader: leader=12":          12,
		"not the leader: leader=99999999999": 0,
	} {
		if got := leaderNamed(reason); got != want {
			t.Errorf("%q: %d, want %d", reason, got, want)
		}
	}
}

// TestForwardNodeUnreachable: the owner the topology still names could not
// be reached at all (it died a moment ago): the publish sent there is taken
// back, not lost in doubt; it waits for the new owner and goes there, and
// the connection stays open.
func TestForwardNodeUnreachable(t *testing.T) {
	h := forwardHarness(t)
	h.cl.publish(t, 1, "q", "A")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 2, "owner=n2")
	h.next(seam.ReqPublish)
	h.take(h.f.NodeUnreachable(h.now+1, 2, "broker n2 unreachable"))
	if h.f.Conns() != 1 || h.closed != "" {
		t.Fatal("an unreachable owner closed the connection")
	}
	h.reply(h.next(seam.ReqTopology), seam.Failed, 7, 0, "owner down: n2, its recovery follows")
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Failed, 7, 0, "fenced: pending transition to epoch 2")
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 3, "owner=n3")
	h.tick()
	p := h.next(seam.ReqPublish)
	if p.Node != 3 || bodyOf(t, p) != "A" {
		t.Fatalf("%s: want A sent to n3", p.String())
	}
	h.reply(p, seam.Confirmed, 7, 0, "")
	if got := h.methods(); len(got) != 1 || got[0] != "60.80 tag=1 multiple=false" {
		t.Fatalf("client got %v, want basic.ack 1", got)
	}
	if st := h.f.Stats(); st.Unknown != 0 || st.Rerouted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// answerRoutes answers every topology question outstanding with o, owner
// and reason, for queue 7.
func (h *harness) answerRoutes(o seam.Outcome, owner uint64, reason string) int {
	n := 0
	for len(h.req) > 0 && h.req[0].Req.Kind == seam.ReqTopology {
		h.reply(h.next(seam.ReqTopology), o, 7, owner, reason)
		n++
	}
	return n
}

// TestSubscribeAfterFailover: the sequence of a consumer refused for good
// after a failover. The broker the queue was routed to (n2) is lost, which
// drops its route; the queue is recovered with this broker (n1) its new
// owner. A consume here waits for the topology instead of a 405, asks it
// again while the recovery is under way, and runs here once the topology
// names this broker.
func TestSubscribeAfterFailover(t *testing.T) {
	h := forwardHarness(t)
	h.cl.publish(t, 1, "q", "A")
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 7, 2, "owner=n2")
	h.reply(h.next(seam.ReqPublish), seam.Confirmed, 7, 0, "")
	h.methods()
	h.take(h.f.NodeLost(h.now+1, 2, "broker connection lost (n2)"))
	if h.f.Conns() != 1 {
		t.Fatal("a connection with nothing in flight at n2 was closed")
	}
	h.cl.method(t, 1, &wire.BasicConsume{Queue: "q", ConsumerTag: "c1"})
	h.send()
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("the consume was answered %v before any owner was known", got)
	}
	if h.answerRoutes(seam.Failed, 0, "owner down: n2, its recovery follows") != 1 {
		t.Fatal("the consume did not ask the topology")
	}
	h.tick()
	h.answerRoutes(seam.Failed, 0, "fenced: pending transition to epoch 2")
	h.tick()
	h.answerRoutes(seam.Confirmed, 1, "owner=n1")
	h.tick()
	sr := h.next(seam.ReqSubscribe)
	if sr.Node != 0 || sr.Req.Queue != 7 {
		t.Fatalf("subscribe %s, want it at this broker (the new owner)", sr.String())
	}
	h.reply(sr, seam.Confirmed, 7, 0, "")
	if got := h.methods(); len(got) != 1 || got[0] != "60.21" {
		t.Fatalf("client got %v, want basic.consume-ok", got)
	}
}

// TestSubscribeRerouted: the owner a subscription went to no longer
// serves the queue (not the owner): nothing was set up there; the
// subscription waits and goes to the owner the topology names next. An
// unreachable owner is the same.
func TestSubscribeRerouted(t *testing.T) {
	h, sr := consumingAtN2(t)
	h.reply(sr, seam.Failed, 7, 0, "not the owner")
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("a stale owner's refusal reached the client: %v", got)
	}
	h.answerRoutes(seam.Confirmed, 3, "owner=n3")
	h.tick()
	sr = h.next(seam.ReqSubscribe)
	if sr.Node != 3 {
		t.Fatalf("subscribe %s, want it at n3", sr.String())
	}
	h.take(h.f.NodeUnreachable(h.now+1, 3, "broker n3 unreachable"))
	h.answerRoutes(seam.Confirmed, 2, "owner=n2")
	h.tick()
	if sr = h.next(seam.ReqSubscribe); sr.Node != 2 {
		t.Fatalf("subscribe %s, want it at n2 after n3 was unreachable", sr.String())
	}
	h.reply(sr, seam.Confirmed, 7, 0, "")
	if got := h.methods(); len(got) != 1 || got[0] != "60.21" {
		t.Fatalf("client got %v, want basic.consume-ok", got)
	}
}

// TestSubscribeRouteWait: a subscription whose queue has no serving owner
// for RouteWaitNs is refused with 405, saying why.
func TestSubscribeRouteWait(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) { c.Forward, c.Brokers, c.RouteWaitNs = true, 3, 50e6 })
	h.cl.method(t, 1, &wire.BasicConsume{Queue: "q", ConsumerTag: "c1"})
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Failed, 7, 0, "fenced: pending transition to epoch 2")
	var got []string
	for i := 0; i < 20 && len(got) == 0; i++ {
		h.answerRoutes(seam.Failed, 0, "fenced: pending transition to epoch 2")
		h.tick()
		got = h.methods()
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "20.40 405") || !strings.Contains(got[0], "no serving owner for 50 ms: fenced") {
		t.Fatalf("client got %v, want channel.close 405 after the route wait", got)
	}
}

// TestForwardedRequestsBounded: a broker that stops answering without
// closing its connections (a paused process) leaves no method without a
// reply: a declaration whose command went to it is refused at
// DeclareTimeoutNs, a subscription forwarded to it after RouteWaitNs
// (and ended there), each with 405; answers that come later find nothing.
// A declaration's count at a silent owner asks the topology again, and a
// queue.delete refused for a changed incarnation starts over.
func TestForwardedRequestsBounded(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) {
		c.Forward, c.Brokers, c.DeclareTimeoutNs, c.RouteWaitNs = true, 3, 100e6, 200e6
	})
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "orders", Durable: true})
	h.send()
	m := h.next(seam.ReqMeta)
	h.reply(m, seam.Failed, 0, 0, "not the leader: leader=2")
	m = h.next(seam.ReqMeta)
	if m.Node != 2 {
		t.Fatalf("the command went to n%d, want the leader n2", m.Node)
	}
	for i := 0; i < 50 && len(h.srv) == 0; i++ {
		h.tick()
	}
	if got := h.methods(); len(got) != 1 || !strings.HasPrefix(got[0], "20.40 405") || !strings.Contains(got[0], "no answer from n2") {
		t.Fatalf("a declaration at a silent leader: the client got %v", got)
	}
	h.reply(m, seam.Confirmed, 7, 0, "") // late: nothing waits for it
	if got := h.methods(); len(got) != 0 {
		t.Fatalf("a late answer reached the client: %v", got)
	}

	// A count asked of an owner that is gone (the topology still names it)
	// is asked again where the queue lives after countWaitNs, within the
	// declaration's time: the client gets declare-ok from the new owner.
	h = newHarnessWith(t, func(c *Config) { c.Forward, c.Brokers = true, 3 })
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "orders", Passive: true})
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 2, "owner=n2")
	cnt := h.next(seam.ReqCount)
	if cnt.Node != 2 {
		t.Fatalf("%s: want the count asked of n2", cnt.String())
	}
	for i := 0; i < 1000 && len(h.req) == 0; i++ {
		h.tick()
	}
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 3, "owner=n3")
	if cnt = h.next(seam.ReqCount); cnt.Node != 3 {
		t.Fatalf("%s: want the count asked of the new owner n3", cnt.String())
	}
	h.reply(cnt, seam.Confirmed, 1, 4, "")
	if got := h.methods(); len(got) != 1 || got[0] != "50.11 messages=4 consumers=0" {
		t.Fatalf("a count at a silent owner, then at the new one: the client got %v", got)
	}
	// The same when the owner's link reports it unreachable: the topology
	// is asked again, not the unreachable owner.
	h.cl.method(t, 1, &wire.QueueDeclare{Queue: "orders", Passive: true})
	h.send()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 3, "owner=n3")
	if cnt = h.next(seam.ReqCount); cnt.Node != 3 {
		t.Fatalf("%s: want the count asked of n3", cnt.String())
	}
	h.take(h.f.NodeUnreachable(h.now+1, 3, "n3 unreachable"))
	h.tick()
	h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 2, "owner=n2")
	if cnt = h.next(seam.ReqCount); cnt.Node != 2 {
		t.Fatalf("%s: want the count asked of n2 after n3 was unreachable", cnt.String())
	}
	h.reply(cnt, seam.Confirmed, 1, 5, "")
	if got := h.methods(); len(got) != 1 || got[0] != "50.11 messages=5 consumers=0" {
		t.Fatalf("a count at an unreachable owner, then at the new one: the client got %v", got)
	}

	// queue.delete: the count (and the incarnation) of the owner n2, then
	// the metadata's delete of that incarnation; refused because the
	// queue was declared again meanwhile, it starts over and deletes the
	// new incarnation.
	h = newHarnessWith(t, func(c *Config) { c.Forward, c.Brokers = true, 3 })
	h.cl.method(t, 1, &wire.QueueDelete{Queue: "orders"})
	h.send()
	for _, inc := range []uint64{5, 7} {
		h.reply(h.next(seam.ReqTopology), seam.Confirmed, 1, 2, "owner=n2")
		cnt = h.next(seam.ReqCount)
		if cnt.Node != 2 {
			t.Fatalf("%s: want the count asked of the owner n2", cnt.String())
		}
		h.now++
		h.take(h.f.Core(h.now, &seam.Effect{Kind: seam.EfReply, Client: cnt.Client, ReqID: cnt.Req.ID, Outcome: seam.Confirmed, Queue: 1, Offset: 3, Tag: inc}))
		m := h.next(seam.ReqMeta)
		cmd, err := metadata.Decode(m.Req.Body)
		if err != nil || cmd.Kind != metadata.DeleteQueue || cmd.Queue != "orders" || cmd.Incarnation != inc {
			t.Fatalf("command %+v %v, want the delete of incarnation %d", cmd, err, inc)
		}
		if inc == 5 {
			h.reply(m, seam.Failed, 0, 9, `refused: queue "orders" is incarnation 7`)
			h.tick()
			continue
		}
		h.reply(m, seam.Confirmed, 0, 10, "deleted")
	}
	if got := h.methods(); len(got) != 1 || got[0] != "50.41" {
		t.Fatalf("a delete: the client got %v, want queue.delete-ok", got)
	}

	h2, sr := consumingAtN2(t)
	for i := 0; i < 100 && len(h2.srv) == 0; i++ {
		h2.tick()
	}
	if got := h2.methods(); len(got) != 1 || !strings.HasPrefix(got[0], "20.40 405") || !strings.Contains(got[0], "no answer from n2") {
		t.Fatalf("a subscription at a silent owner: the client got %v", got)
	}
	if len(h2.gone) != 1 || h2.gone[0].Node != 2 || h2.gone[0].Client != sr.Client {
		t.Fatalf("client-gone %v, want the subscription ended at n2", h2.gone)
	}
}
