package front

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/replycheck"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/metamem"
)

// memWorld is the daemon's world in memory, with simulated time: the front
// and a real core (io/driver's Host over sim/memfs and sim/metamem), the
// broker the sole voter of its metadata group, clients as byte streams.
// One goroutine, no clock: a run is a function of its inputs.
type memWorld struct {
	t       testing.TB
	now     int64
	host    *driver.Host
	f       *Front
	work    []func()
	toFront []seam.Effect
	hostAt  int64
	frontAt int64
	draws   uint64
	out     map[ConnID][]byte // bytes written to each client, not yet read
	closed  map[ConnID]bool
	exited  string
	// replies checks each connection's two byte streams: every method
	// that expects a reply gets one, or a close, within replyBoundNs.
	replies map[ConnID]*replycheck.Checker
	// channels: frames prefixes each method with its channel ("ch2 ")
	channels bool
}

// replyBoundNs is the longest the front may leave a client's method
// without a reply in these worlds: its declaration timeout (what a
// declaration can wait for the metadata group), and a second more.
const replyBoundNs = 10_000_000_000 + 1_000_000_000

type memMetaStore struct {
	s    *metamem.Store
	last metamem.Ticket
}

func (m *memMetaStore) Load() (meta.State, error) { return m.s.Load() }
func (m *memMetaStore) Write(b *meta.Batch) error {
	t, err := m.s.Start(b)
	m.last = t
	return err
}
func (m *memMetaStore) Sync() error { return m.s.Complete(m.last) }

func newMemWorld(t testing.TB) *memWorld {
	w := &memWorld{t: t, now: 1, out: map[ConnID][]byte{}, closed: map[ConnID]bool{}, replies: map[ConnID]*replycheck.Checker{}}
	store, err := metamem.NewDisk().Open()
	if err != nil {
		t.Fatal(err)
	}
	cc := ctrl.DefaultConfig(1, []uint64{1})
	cfg := core.Config{Node: 1, Process: 1, Storage: 1, Ctrl: &cc}
	fs := memfs.New()
	w.host = driver.NewHost(cfg, fs, nil, &memMetaStore{s: store}, (*memEnv)(w), nil, nil, driver.Options{CheckInvariants: true,
		PlacedLog: func(g core.GroupID) driver.LogSpec {
			return driver.LogSpec{Dir: fmt.Sprintf("q%d", g), Opts: seglog.Options{}}
		}})
	if err := w.host.Open(); err != nil {
		t.Fatal(err)
	}
	w.f, err = New(Config{Conn: conn.Config{Users: []conn.User{{Name: "guest", Password: "guest"}}}, Node: 1, Process: 1,
		Serves: func(q seam.QueueID) bool { return w.host.Node().Serves(q) }})
	if err != nil {
		t.Fatal(err)
	}
	w.host.Start(w.now)
	return w
}

// memEnv is the world as the host's Env.
type memEnv memWorld

func (e *memEnv) Send(to core.NodeID, g core.GroupID, msg []byte) {
	w := (*memWorld)(e)
	m := slices.Clone(msg)
	w.work = append(w.work, func() { w.host.Message(w.now, to, g, m) })
}

func (e *memEnv) Client(ef *core.Effect) {
	w := (*memWorld)(e)
	c := *ef
	c.Body = slices.Clone(ef.Body)
	if len(w.toFront) == 0 {
		w.work = append(w.work, func() {
			b := w.toFront
			w.toFront = nil
			w.effects(w.f.CoreBatch(w.now, b))
		})
	}
	w.toFront = append(w.toFront, c)
}

func (e *memEnv) StartStorage(l int, op *core.Effect) bool {
	w := (*memWorld)(e)
	switch op.Op {
	case core.OpAppend, core.OpTruncate, core.OpDiscard, core.OpRepaired:
		return true
	}
	w.work = append(w.work, func() { w.host.Run(w.now, l) })
	return false
}

func (e *memEnv) RunLater(l int) {
	w := (*memWorld)(e)
	w.work = append(w.work, func() { w.host.Run(w.now, l) })
}
func (e *memEnv) Timer(at int64)           { (*memWorld)(e).hostAt = at }
func (e *memEnv) Exit(d *core.StorageDone) { (*memWorld)(e).exited = d.Err }
func (e *memEnv) Draw() uint64             { w := (*memWorld)(e); w.draws++; return w.draws * 0x9e3779b97f4a7c15 }

// effects carries out the front's effects.
func (w *memWorld) effects(effects []Effect) {
	for i := range effects {
		e := effects[i]
		switch e.Kind {
		case EfWrite:
			w.out[e.Conn] = append(w.out[e.Conn], e.Bytes...)
			if err := w.replies[e.Conn].ServerBytes(w.now, e.Bytes); err != nil {
				w.t.Fatalf("connection %d: %v", e.Conn, err)
			}
		case EfClose:
			w.closed[e.Conn] = true
			w.replies[e.Conn].SocketClosed(w.now)
		case EfRequest:
			w.host.Request(w.now, e.Client, e.Req)
		case EfClientGone:
			w.host.ClientGone(w.now, e.Client)
		case EfTimer:
			w.frontAt = e.AtNs
		}
		if err := w.f.CheckInvariants(); err != nil {
			w.t.Fatalf("front invariants: %v", err)
		}
	}
	w.checkReplies()
}

// checkReplies fails the test if any connection left a method without
// its reply past the bound.
func (w *memWorld) checkReplies() {
	for _, id := range slices.Sorted(maps.Keys(w.replies)) {
		if err := w.replies[id].Check(w.now); err != nil {
			w.t.Fatalf("connection %d: %v", id, err)
		}
	}
}

// requireAnswered fails the test if any open connection still waits for
// a reply: call it after settling for longer than replyBoundNs.
func (w *memWorld) requireAnswered() {
	for _, id := range slices.Sorted(maps.Keys(w.replies)) {
		if left := w.replies[id].Outstanding(); len(left) > 0 {
			w.t.Fatalf("connection %d still waits for: %s", id, strings.Join(left, "; "))
		}
	}
}

// settle runs work until none is left, then time to the next timer, for
// at most durNs of simulated time.
func (w *memWorld) settle(durNs int64) {
	end := w.now + durNs
	for steps := 0; ; steps++ {
		if w.exited != "" {
			w.t.Fatalf("the broker exited: %s", w.exited)
		}
		if steps > 200_000 {
			w.t.Fatalf("no quiescence in 200,000 steps (now %d, host timer %d, front timer %d, work %d)", w.now, w.hostAt, w.frontAt, len(w.work))
		}
		if len(w.work) > 0 {
			f := w.work[0]
			w.work = w.work[1:]
			f()
			continue
		}
		next := int64(0)
		if w.hostAt > 0 {
			next = w.hostAt
		}
		if w.frontAt > 0 && (next == 0 || w.frontAt < next) {
			next = w.frontAt
		}
		if next == 0 || next > end {
			w.now = max(w.now, end)
			return
		}
		w.now = max(w.now, next)
		if next == w.frontAt {
			w.frontAt = 0
			w.effects(w.f.Tick(w.now))
		} else {
			at := w.hostAt
			w.hostAt = 0
			w.host.Tick(w.now, at)
		}
	}
}

func (w *memWorld) accept(id ConnID) {
	w.replies[id] = replycheck.New(replyBoundNs)
	w.effects(w.f.Accept(w.now, id, conn.Peer{Loopback: true}))
}

func (w *memWorld) send(id ConnID, b []byte) {
	w.now++
	if !w.closed[id] {
		if err := w.replies[id].ClientBytes(w.now, b); err != nil {
			w.t.Fatalf("connection %d: %v", id, err)
		}
	}
	w.effects(w.f.Bytes(w.now, id, b))
}

// frames reads what connection id was written since the last call, as
// text: methods by class.method with a few fields, and bodies.
func (w *memWorld) frames(id ConnID) []string {
	all := w.out[id]
	w.out[id] = nil
	fr, err := wire.NewFrameReader(bytes.NewReader(all), wire.FrameBytesMax)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return out
		}
		switch f.Type {
		case wire.FrameMethod:
			m, err := wire.DecodeMethod(f.Payload)
			if err != nil {
				w.t.Fatal(err)
			}
			cls, mid := m.ID()
			s := fmt.Sprintf("%d.%d", cls, mid)
			switch x := m.(type) {
			case *wire.BasicAck:
				s += fmt.Sprintf(" ack tag=%d multiple=%t", x.DeliveryTag, x.Multiple)
			case *wire.BasicDeliver:
				s += fmt.Sprintf(" deliver tag=%d redelivered=%t", x.DeliveryTag, x.Redelivered)
			case *wire.BasicGetOk:
				s += fmt.Sprintf(" get-ok tag=%d redelivered=%t messages=%d", x.DeliveryTag, x.Redelivered, x.MessageCount)
			case *wire.QueuePurgeOk:
				s += fmt.Sprintf(" purged=%d", x.MessageCount)
			case *wire.QueueDeleteOk:
				if x.MessageCount != 0 {
					s += fmt.Sprintf(" messages=%d", x.MessageCount)
				}
			case *wire.QueueDeclareOk:
				if strings.HasPrefix(x.Queue, metadata.ServerNamePrefix) {
					s += " " + x.Queue
				}
				if x.MessageCount != 0 || x.ConsumerCount != 0 { // (an empty queue's reads as before)
					s += fmt.Sprintf(" messages=%d consumers=%d", x.MessageCount, x.ConsumerCount)
				}
			case *wire.ChannelClose:
				s += fmt.Sprintf(" close %d", x.ReplyCode)
			case *wire.ConnectionClose:
				s += fmt.Sprintf(" close %d", x.ReplyCode)
			}
			if w.channels {
				s = fmt.Sprintf("ch%d %s", f.Channel, s)
			}
			out = append(out, s)
		case wire.FrameBody:
			out = append(out, "body "+string(f.Payload))
		}
	}
}

// login runs a client's handshake and opens channel 1.
func (w *memWorld) login(t testing.TB, id ConnID) {
	w.accept(id)
	cl := newClient(t)
	cl.buf.Write(wire.ProtocolHeader[:])
	cl.method(t, 0, &wire.ConnectionStartOk{Mechanism: "PLAIN", Response: "\x00guest\x00guest", Locale: "en_US"}).
		method(t, 0, &wire.ConnectionTuneOk{ChannelMax: 16, FrameMax: wire.FrameBytesDefault, Heartbeat: 0}).
		method(t, 0, &wire.ConnectionOpen{VirtualHost: "/"}).
		method(t, 1, &wire.ChannelOpen{})
	w.send(id, cl.take())
	w.settle(1e6)
	w.frames(id)
}

// TestWorldRoundTrip runs the front with a real core in simulated time:
// the broker elects itself, a declare commits and is placed, publishes
// are confirmed (as basic.acks), a consumer with prefetch 2 gets them in
// order, acks them, and a consumer of a closed channel's unacked delivery
// gets it again, redelivered. Deterministic: two runs give the same bytes.
func TestWorldRoundTrip(t *testing.T) {
	a, b := worldRoundTrip(t), worldRoundTrip(t)
	if a != b {
		t.Fatal("two runs of the same inputs differ")
	}
}

func worldRoundTrip(t *testing.T) string {
	w := newMemWorld(t)
	w.settle(1e9) // the election
	var transcript []string
	w.login(t, 1)
	cl := newClient(t)
	cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true}).method(t, 1, &wire.ConfirmSelect{})
	for i := 0; i < 5; i++ {
		cl.publish(t, 1, "q", fmt.Sprintf("m%d", i))
	}
	w.send(1, cl.take())
	w.settle(1e9)
	got := w.frames(1)
	transcript = append(transcript, got...)
	acked := uint64(0)
	for _, f := range got {
		var tag uint64
		var multiple bool
		if _, err := fmt.Sscanf(f, "60.80 ack tag=%d multiple=%t", &tag, &multiple); err == nil {
			acked = tag
		}
	}
	if len(got) < 3 || got[0] != "50.11" || got[1] != "85.11" || acked != 5 {
		t.Fatalf("declare, confirm.select, 5 acks: got %v", got)
	}

	// A consumer on channel 2 with prefetch 2.
	cl.method(t, 0+2, &wire.ChannelOpen{}).
		method(t, 2, &wire.BasicQos{PrefetchCount: 2}).
		method(t, 2, &wire.BasicConsume{Queue: "q", ConsumerTag: "c"})
	w.send(1, cl.take())
	w.settle(1e8)
	got = w.frames(1)
	transcript = append(transcript, got...)
	want := []string{"20.11", "60.11", "60.21", "60.60 deliver tag=1 redelivered=false", "body m0", "60.60 deliver tag=2 redelivered=false", "body m1"}
	if !slices.Equal(got, want) {
		t.Fatalf("consume: got %v, want %v", got, want)
	}
	// Ack the first: the third comes.
	cl.method(t, 2, &wire.BasicAck{DeliveryTag: 1})
	w.send(1, cl.take())
	w.settle(1e8)
	got = w.frames(1)
	transcript = append(transcript, got...)
	if !slices.Equal(got, []string{"60.60 deliver tag=3 redelivered=false", "body m2"}) {
		t.Fatalf("after an ack: %v", got)
	}
	// Close channel 2 with m1 and m2 unacked; a consumer on channel 3 gets
	// them again, redelivered, then m3 and m4.
	cl.method(t, 2, &wire.ChannelClose{ReplyCode: 200}).
		method(t, 3, &wire.ChannelOpen{}).
		method(t, 3, &wire.BasicConsume{Queue: "q", ConsumerTag: "d", NoAck: true})
	w.send(1, cl.take())
	w.settle(1e8)
	got = w.frames(1)
	transcript = append(transcript, got...)
	want = []string{"20.41", "20.11", "60.21",
		"60.60 deliver tag=1 redelivered=true", "body m1", "60.60 deliver tag=2 redelivered=true", "body m2",
		"60.60 deliver tag=3 redelivered=false", "body m3", "60.60 deliver tag=4 redelivered=false", "body m4"}
	if !slices.Equal(got, want) {
		t.Fatalf("redelivery: got %v, want %v", got, want)
	}
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
	return fmt.Sprint(transcript)
}

// queueWorld is a logged-in connection on a one-broker world with queue q
// declared and the bodies published to it, confirmed; step sends what the
// client queued, lets settleNs pass and wants exactly the frames given.
func queueWorld(t *testing.T, settleNs int64, bodies ...string) (*memWorld, *client, func(what string, want ...string)) {
	t.Helper()
	w := newMemWorld(t)
	w.settle(1e9)
	w.login(t, 1)
	cl := newClient(t)
	cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true}).method(t, 1, &wire.ConfirmSelect{})
	for _, b := range bodies {
		cl.publish(t, 1, "q", b)
	}
	w.send(1, cl.take())
	w.settle(1e9)
	w.frames(1)
	step := func(what string, want ...string) {
		t.Helper()
		w.send(1, cl.take())
		w.settle(settleNs)
		if got := w.frames(1); !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
	return w, cl, step
}

// TestWorldRequeue: basic.nack and basic.reject with requeue return the
// delivery to the queue while its consumer lives, its prefetch slot free
// again: a prefetch-1 consumer that requeues gets the message again,
// redelivered, ahead of the rest, and after its ack the next one; a
// reject without requeue drops the message.
func TestWorldRequeue(t *testing.T) {
	w, cl, step := queueWorld(t, 1e8, "m0", "m1", "m2")
	cl.method(t, 2, &wire.ChannelOpen{}).
		method(t, 2, &wire.BasicQos{PrefetchCount: 1}).
		method(t, 2, &wire.BasicConsume{Queue: "q", ConsumerTag: "c"})
	step("consume", "20.11", "60.11", "60.21", "60.60 deliver tag=1 redelivered=false", "body m0")
	cl.method(t, 2, &wire.BasicNack{DeliveryTag: 1, Requeue: true})
	step("nack with requeue", "60.60 deliver tag=2 redelivered=true", "body m0")
	cl.method(t, 2, &wire.BasicReject{DeliveryTag: 2, Requeue: true})
	step("reject with requeue", "60.60 deliver tag=3 redelivered=true", "body m0")
	cl.method(t, 2, &wire.BasicAck{DeliveryTag: 3})
	step("ack", "60.60 deliver tag=4 redelivered=false", "body m1")
	cl.method(t, 2, &wire.BasicReject{DeliveryTag: 4, Requeue: false})
	step("reject without requeue", "60.60 deliver tag=5 redelivered=false", "body m2")
	cl.method(t, 2, &wire.BasicNack{DeliveryTag: 5, Requeue: true}).
		method(t, 2, &wire.BasicCancel{ConsumerTag: "c"}).
		method(t, 2, &wire.BasicConsume{Queue: "q", ConsumerTag: "d"})
	step("requeued, cancelled, consumed again", "60.31", "60.21", "60.60 deliver tag=6 redelivered=true", "body m2")
	// declare-ok counts the owner's ready messages (not the one delivered
	// and unacked) and its consumers, as RabbitMQ does.
	cl.publish(t, 1, "q", "m3").publish(t, 1, "q", "m4")
	step("two publishes more", "60.80 ack tag=4 multiple=false", "60.80 ack tag=5 multiple=false")
	cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Passive: true})
	step("a passive declare", "50.11 messages=2 consumers=1")
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
}

// TestWorldExclusiveConsumer: an exclusive consumer is the queue's only
// one: a second consumer, exclusive or not, is refused with 403 on its
// channel (RabbitMQ's words), and an exclusive one asked of a queue that
// has a consumer too; once the exclusive one is cancelled, another may
// consume and gets what is ready.
func TestWorldExclusiveConsumer(t *testing.T) {
	w, cl, step := queueWorld(t, 1e8, "m0")
	cl.method(t, 2, &wire.ChannelOpen{}).method(t, 2, &wire.BasicQos{PrefetchCount: 1}).
		method(t, 2, &wire.BasicConsume{Queue: "q", ConsumerTag: "x", Exclusive: true})
	step("an exclusive consumer", "20.11", "60.11", "60.21", "60.60 deliver tag=1 redelivered=false", "body m0")
	cl.method(t, 3, &wire.ChannelOpen{}).method(t, 3, &wire.BasicConsume{Queue: "q", ConsumerTag: "y"})
	step("a second consumer", "20.11", "20.40 close 403")
	cl.method(t, 3, &wire.ChannelCloseOk{}).method(t, 2, &wire.BasicCancel{ConsumerTag: "x"})
	step("the exclusive one cancelled", "60.31")
	cl.method(t, 4, &wire.ChannelOpen{}).method(t, 4, &wire.BasicConsume{Queue: "q", ConsumerTag: "z"})
	step("a consumer after it", "20.11", "60.21", "60.60 deliver tag=1 redelivered=true", "body m0")
	cl.method(t, 5, &wire.ChannelOpen{}).method(t, 5, &wire.BasicConsume{Queue: "q", ConsumerTag: "e", Exclusive: true})
	step("an exclusive one beside it", "20.11", "20.40 close 403")
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
}

// TestWorldQueueDelete: queue.delete through the metadata, of the
// incarnation the owner serves: if-empty and if-unused are checked on the
// owner's count (406, RabbitMQ's words); a delete reports the ready
// messages, ends the queue's consumers (basic.cancel to a client that
// announced consumer_cancel_notify; this one did not) and makes the name
// unknown (a passive declare is 404); deleting a queue that does not exist
// is delete-ok (idempotent, as RabbitMQ's).
func TestWorldQueueDelete(t *testing.T) {
	w, cl, step := queueWorld(t, 1e9, "m0", "m1")
	cl.method(t, 2, &wire.ChannelOpen{}).method(t, 2, &wire.QueueDelete{Queue: "q", IfEmpty: true})
	step("if-empty of a queue with 2 messages", "20.11", "20.40 close 406")
	cl.method(t, 2, &wire.ChannelCloseOk{}).
		method(t, 3, &wire.ChannelOpen{}).method(t, 3, &wire.BasicQos{PrefetchCount: 1}).
		method(t, 3, &wire.BasicConsume{Queue: "q", ConsumerTag: "c"})
	step("a consumer", "20.11", "60.11", "60.21", "60.60 deliver tag=1 redelivered=false", "body m0")
	cl.method(t, 4, &wire.ChannelOpen{}).method(t, 4, &wire.QueueDelete{Queue: "q", IfUnused: true})
	step("if-unused of a queue with a consumer", "20.11", "20.40 close 406")
	cl.method(t, 4, &wire.ChannelCloseOk{}).method(t, 5, &wire.ChannelOpen{}).method(t, 5, &wire.QueueDelete{Queue: "q"})
	step("a delete", "20.11", "50.41 messages=1")
	if c := w.f.Stats().Cancelled; c != 1 {
		t.Fatalf("%d subscriptions ended by the core, want the deleted queue's consumer's", c)
	}
	cl.method(t, 5, &wire.QueueDeclare{Queue: "q", Passive: true})
	step("a passive declare after it", "20.40 close 404")
	cl.method(t, 5, &wire.ChannelCloseOk{}).method(t, 6, &wire.ChannelOpen{}).method(t, 6, &wire.QueueDelete{Queue: "q"})
	step("a delete of a queue that does not exist", "20.11", "50.41")
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
}

// FuzzFront feeds arbitrary client bytes, in arbitrary chunks, to a
// logged-in connection with a declared queue and a consumer, through the
// front and a real core in simulated time: no panic anywhere, the
// connection machines' invariants after every effect, the broker never
// exits, and every method that expects a reply gets it, or a close of its
// channel or connection, within replyBoundNs (amqp/replycheck).
func FuzzFront(f *testing.F) {
	seed := newClient(f)
	seed.method(f, 1, &wire.ConfirmSelect{}).publish(f, 1, "q", "x").publish(f, 1, "nowhere", "y").
		method(f, 1, &wire.BasicAck{DeliveryTag: 1}).method(f, 1, &wire.BasicNack{DeliveryTag: 2, Requeue: true}).
		method(f, 1, &wire.QueueDeclare{Queue: "r", Durable: true, Arguments: wire.Table{{Name: "x-sluice-replicas", Value: int32(2)}}})
	f.Add(seed.take(), uint8(7))
	f.Add([]byte{1, 0, 1, 0, 0, 0, 4, 0, 60, 0, 40, 0xce}, uint8(3))
	// Exchanges, bindings (headers ones too) and publishes through them.
	ex := newClient(f)
	ex.method(f, 1, &wire.ConfirmSelect{}).
		method(f, 1, &wire.ExchangeDeclare{Exchange: "t", Type: "topic", Durable: true}).
		method(f, 1, &wire.QueueBind{Queue: "q", Exchange: "t", RoutingKey: "a.#"}).
		method(f, 1, &wire.QueueBind{Queue: "q", Exchange: "amq.match", Arguments: wire.Table{{Name: "x-match", Value: "any"}, {Name: "k", Value: int32(1)}}}).
		publishTo(f, 1, "t", "a.b", true, nil, "x").publishTo(f, 1, "amq.match", "", false, wire.Table{{Name: "k", Value: int64(1)}}, "y").
		method(f, 1, &wire.QueueUnbind{Queue: "q", Exchange: "t", RoutingKey: "a.#"}).
		method(f, 1, &wire.ExchangeDelete{Exchange: "t", IfUnused: true}).
		method(f, 1, &wire.ExchangeDeclare{Exchange: "t", Passive: true})
	f.Add(ex.take(), uint8(11))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		w := newMemWorld(t)
		w.settle(1e9)
		w.login(t, 1)
		cl := newClient(t)
		cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true}).
			method(t, 1, &wire.BasicConsume{Queue: "q", ConsumerTag: "c"})
		w.send(1, cl.take())
		w.settle(1e8)
		w.frames(1)
		size := int(chunk)%64 + 1
		for len(data) > 0 && !w.closed[1] {
			n := min(size, len(data))
			w.send(1, data[:n])
			data = data[n:]
			w.settle(1e7)
			w.frames(1)
		}
		// Every method that expects a reply has had it (or a close) once
		// the bound has passed.
		w.settle(replyBoundNs + 1e9)
		w.requireAnswered()
	})
}

// TestWorldPause: a single-node broker paused for longer than the
// liveness expiry (a stopped process, a laptop asleep) does not take
// itself out of the live set and fence its own queues: a publish after the
// pause is confirmed.
func TestWorldPause(t *testing.T) {
	w := newMemWorld(t)
	w.settle(1e9)
	w.login(t, 1)
	cl := newClient(t)
	cl.method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true}).method(t, 1, &wire.ConfirmSelect{}).publish(t, 1, "q", "a")
	w.send(1, cl.take())
	w.settle(1e9)
	if got := w.frames(1); !slices.Equal(got, []string{"50.11", "85.11", "60.80 ack tag=1 multiple=false"}) {
		t.Fatalf("before the pause: %v", got)
	}
	w.now += 60e9 // no input for 60 s; the default liveness expiry is 9 s
	w.settle(1e9)
	cl.publish(t, 1, "q", "b")
	w.send(1, cl.take())
	w.settle(1e9)
	if got := w.frames(1); !slices.Equal(got, []string{"60.80 ack tag=2 multiple=false"}) {
		t.Fatalf("after the pause: %v", got)
	}
}

// TestWorldExchanges: exchanges and bindings through the metadata group,
// and publishes routed by them with a real core: fanout to every bound
// queue, topic by pattern, headers by arguments (amq.match), a message
// routed to several queues confirmed once (every queue confirmed it), an
// unroutable mandatory one returned, RabbitMQ's refusals on the channel
// (406 for other attributes or a source in use, 404 for a missing
// exchange, 403 for a reserved name), and declare-ok counting what each
// queue received.
func TestWorldExchanges(t *testing.T) {
	w := newMemWorld(t)
	w.settle(1e9)
	w.login(t, 1)
	cl := newClient(t)
	step := func(what string, want ...string) {
		t.Helper()
		w.send(1, cl.take())
		w.settle(1e9)
		if got := w.frames(1); !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
	for _, q := range []string{"qa", "qb", "qc"} {
		cl.method(t, 1, &wire.QueueDeclare{Queue: q, Durable: true})
	}
	cl.method(t, 1, &wire.ConfirmSelect{})
	step("three queues", "50.11", "50.11", "50.11", "85.11")
	cl.method(t, 1, &wire.ExchangeDeclare{Exchange: "logs", Type: "fanout", Durable: true}).
		method(t, 1, &wire.ExchangeDeclare{Exchange: "topics", Type: "topic", Durable: true}).
		method(t, 1, &wire.ExchangeDeclare{Exchange: "logs", Type: "fanout", Durable: true}).
		method(t, 1, &wire.ExchangeDeclare{Exchange: "logs", Passive: true})
	step("exchanges declared, again, and checked", "40.11", "40.11", "40.11", "40.11")
	cl.method(t, 1, &wire.QueueBind{Queue: "qa", Exchange: "logs"}).
		method(t, 1, &wire.QueueBind{Queue: "qb", Exchange: "logs"}).
		method(t, 1, &wire.QueueBind{Queue: "qa", Exchange: "topics", RoutingKey: "*.orange.*"}).
		method(t, 1, &wire.QueueBind{Queue: "qc", Exchange: "topics", RoutingKey: "lazy.#"}).
		method(t, 1, &wire.QueueBind{Queue: "qc", Exchange: "amq.match", Arguments: wire.Table{
			{Name: "x-match", Value: "any"}, {Name: "format", Value: "pdf"}, {Name: "size", Value: int32(7)}}})
	step("bindings", "50.21", "50.21", "50.21", "50.21", "50.21")
	cl.publishTo(t, 1, "logs", "", false, nil, "fan").
		publishTo(t, 1, "topics", "quick.orange.rabbit", false, nil, "orange").
		publishTo(t, 1, "topics", "lazy.brown.fox", false, nil, "lazy").
		publishTo(t, 1, "topics", "quick.brown.fox", true, nil, "nowhere").
		publishTo(t, 1, "amq.match", "", false, wire.Table{{Name: "size", Value: int64(7)}}, "seven").
		publishTo(t, 1, "amq.match", "", false, wire.Table{{Name: "size", Value: int64(8)}}, "eight")
	// The unroutable ones are acked at once (the returned one after its
	// basic.return), the others once stored: the fanned-out one (tag 1)
	// once both of its queues confirmed it.
	step("six publishes: one unroutable and returned, one unroutable",
		"60.50", "body nowhere", "60.80 ack tag=4 multiple=false", "60.80 ack tag=6 multiple=false",
		"60.80 ack tag=1 multiple=false", "60.80 ack tag=3 multiple=false", "60.80 ack tag=5 multiple=true")
	cl.method(t, 1, &wire.QueueDeclare{Queue: "qa", Passive: true}).
		method(t, 1, &wire.QueueDeclare{Queue: "qb", Passive: true}).
		method(t, 1, &wire.QueueDeclare{Queue: "qc", Passive: true})
	step("what each queue holds", "50.11 messages=2 consumers=0", "50.11 messages=1 consumers=0", "50.11 messages=2 consumers=0")

	cl.method(t, 2, &wire.ChannelOpen{}).method(t, 2, &wire.ExchangeDeclare{Exchange: "logs", Type: "direct", Durable: true})
	step("other attributes", "20.11", "20.40 close 406")
	cl.method(t, 2, &wire.ChannelCloseOk{}).method(t, 2, &wire.ChannelOpen{}).
		method(t, 2, &wire.ExchangeDelete{Exchange: "logs", IfUnused: true})
	step("if-unused of a source", "20.11", "20.40 close 406")
	cl.method(t, 2, &wire.ChannelCloseOk{}).method(t, 2, &wire.ChannelOpen{}).
		method(t, 2, &wire.ExchangeDeclare{Exchange: "amq.mine", Type: "direct"})
	step("a reserved name", "20.11", "20.40 close 403")
	cl.method(t, 2, &wire.ChannelCloseOk{}).method(t, 2, &wire.ChannelOpen{}).
		method(t, 2, &wire.QueueUnbind{Queue: "qa", Exchange: "logs"}).
		method(t, 2, &wire.QueueUnbind{Queue: "qb", Exchange: "logs"}).
		method(t, 2, &wire.ExchangeDelete{Exchange: "logs", IfUnused: true}).
		method(t, 2, &wire.ExchangeDelete{Exchange: "logs"})
	step("unbound, deleted, deleted again", "20.11", "50.51", "50.51", "40.21", "40.21")
	cl.method(t, 2, &wire.ExchangeDeclare{Exchange: "logs", Passive: true})
	step("a deleted exchange", "20.40 close 404")
	cl.method(t, 2, &wire.ChannelCloseOk{}).method(t, 2, &wire.ChannelOpen{}).
		method(t, 2, &wire.ConfirmSelect{}).
		publishTo(t, 2, "logs", "", false, nil, "gone")
	step("a publish to it", "20.11", "85.11", "20.40 close 404")
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
	w.requireAnswered()
}

// TestWorldTransientQueues: RabbitMQ's queues that end with their
// consumers or connection, with a real core. A server-named exclusive
// queue is named by the catalogue (amq.gen-...), refused to another
// connection (405, also a consume) but for publishes, and deleted when
// its connection closes; an auto-delete queue goes when its last consumer
// is cancelled, and one never consumed stays.
func TestWorldTransientQueues(t *testing.T) {
	w := newMemWorld(t)
	w.settle(1e9)
	w.login(t, 1)
	w.login(t, 2)
	c1, c2 := newClient(t), newClient(t)
	step := func(id ConnID, cl *client, what string, want ...string) []string {
		t.Helper()
		w.send(id, cl.take())
		w.settle(1e9)
		got := w.frames(id)
		if len(want) > 0 && !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
		return got
	}
	c1.method(t, 1, &wire.QueueDeclare{Queue: "", Exclusive: true, AutoDelete: true})
	got := step(1, c1, "a server-named exclusive queue")
	if len(got) != 1 || !strings.HasPrefix(got[0], "50.11 "+metadata.ServerNamePrefix) {
		t.Fatalf("a server-named declare: %v", got)
	}
	name := strings.TrimPrefix(got[0], "50.11 ")
	c2.method(t, 1, &wire.QueueDeclare{Queue: name, Passive: true})
	step(2, c2, "another connection's passive declare", "20.40 close 405")
	c2.method(t, 1, &wire.ChannelCloseOk{}).method(t, 1, &wire.ChannelOpen{}).
		method(t, 1, &wire.BasicConsume{Queue: name, ConsumerTag: "x"})
	step(2, c2, "another connection's consume", "20.11", "20.40 close 405")
	c2.method(t, 1, &wire.ChannelCloseOk{}).method(t, 1, &wire.ChannelOpen{}).method(t, 1, &wire.ConfirmSelect{}).
		publish(t, 1, name, "reply")
	step(2, c2, "another connection's publish", "20.11", "85.11", "60.80 ack tag=1 multiple=false")
	c1.method(t, 1, &wire.QueueDeclare{Queue: name, Passive: true})
	step(1, c1, "its own connection's passive declare", "50.11 "+name+" messages=1 consumers=0")

	c2.method(t, 1, &wire.QueueDeclare{Queue: "ad", AutoDelete: true}).
		method(t, 1, &wire.QueueDeclare{Queue: "never-consumed", AutoDelete: true}).
		method(t, 1, &wire.BasicConsume{Queue: "ad", ConsumerTag: "c"})
	step(2, c2, "auto-delete queues, one consumed", "50.11", "50.11", "60.21")
	c2.method(t, 1, &wire.BasicCancel{ConsumerTag: "c"})
	step(2, c2, "the last consumer cancelled", "60.31")
	c2.method(t, 1, &wire.QueueDeclare{Queue: "never-consumed", Passive: true})
	step(2, c2, "the one never consumed stays", "50.11")
	c2.method(t, 1, &wire.QueueDeclare{Queue: "ad", Passive: true})
	step(2, c2, "the consumed one went with its consumer", "20.40 close 404")

	// Connection 1 closes: its exclusive queue goes.
	c1.method(t, 0, &wire.ConnectionClose{ReplyCode: 200, ReplyText: "bye"})
	step(1, c1, "connection 1 closes", "10.51")
	c2.method(t, 1, &wire.ChannelCloseOk{}).method(t, 1, &wire.ChannelOpen{}).
		method(t, 1, &wire.QueueDeclare{Queue: name, Passive: true})
	step(2, c2, "the exclusive queue after its connection", "20.11", "20.40 close 404")
	w.requireAnswered()
}

// TestWorldGetAndPurge: basic.get through the owner (get-empty on an empty
// queue; get-ok with the count left; an unacked get's message comes again,
// redelivered, once its channel closes; a no-ack get settles it at once)
// and queue.purge of what is ready (with the count; a delivery outstanding
// stays).
func TestWorldGetAndPurge(t *testing.T) {
	w, cl, step := queueWorld(t, 1e9)
	cl.method(t, 1, &wire.BasicGet{Queue: "q"})
	step("a get of an empty queue", "60.72")
	for _, b := range []string{"m0", "m1", "m2", "m3"} {
		cl.publish(t, 1, "q", b)
	}
	step("four publishes", "60.80 ack tag=1 multiple=false", "60.80 ack tag=2 multiple=false", "60.80 ack tag=4 multiple=true")
	cl.method(t, 2, &wire.ChannelOpen{}).method(t, 2, &wire.BasicGet{Queue: "q"})
	step("a get", "20.11", "60.71 get-ok tag=1 redelivered=false messages=3", "body m0")
	cl.method(t, 2, &wire.ChannelClose{ReplyCode: 200}).method(t, 2, &wire.ChannelOpen{}).method(t, 2, &wire.BasicGet{Queue: "q", NoAck: true})
	step("its channel closed, a no-ack get", "20.41", "20.11", "60.71 get-ok tag=1 redelivered=true messages=3", "body m0")
	cl.method(t, 2, &wire.BasicGet{Queue: "q"})
	step("a get held unacked", "60.71 get-ok tag=2 redelivered=false messages=2", "body m1")
	cl.method(t, 2, &wire.QueuePurge{Queue: "q"})
	step("a purge", "50.31 purged=2")
	cl.method(t, 2, &wire.BasicAck{DeliveryTag: 2}).method(t, 2, &wire.BasicGet{Queue: "q"}).
		method(t, 2, &wire.QueueDeclare{Queue: "q", Passive: true})
	step("after the purge", "60.72", "50.11")
	// A get right behind a publish to its queue finds it (the channel's
	// order), as does a purge.
	cl.publish(t, 1, "q", "m4").method(t, 1, &wire.BasicGet{Queue: "q", NoAck: true}).
		publish(t, 1, "q", "m5").method(t, 1, &wire.QueuePurge{Queue: "q"})
	step("a publish, a get; a publish, a purge", "60.80 ack tag=5 multiple=false", "60.71 get-ok tag=1 redelivered=false messages=0", "body m4",
		"60.80 ack tag=6 multiple=false", "50.31 purged=1")
	cl.method(t, 2, &wire.BasicGet{Queue: "nope"})
	step("a get of a missing queue", "20.40 close 404")
	// Any UTF-8 name, as RabbitMQ: a missing one is 404, not a syntax error.
	cl.method(t, 2, &wire.ChannelCloseOk{}).method(t, 2, &wire.ChannelOpen{}).
		method(t, 2, &wire.QueueDeclare{Queue: "tenant/é=1", Durable: true}).
		method(t, 2, &wire.QueueDeclare{Queue: "tenant/é=1", Passive: true}).
		method(t, 2, &wire.QueueDeclare{Queue: "no/such=queue", Passive: true})
	step("names with '/', '=' and UTF-8", "20.11", "50.11", "50.11", "20.40 close 404")
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
	w.requireAnswered()
}

// TestWorldConsumerPriority: a delivery goes to a consumer of the highest
// priority with credit (x-priority); one of lower priority gets what the
// higher ones have no credit for.
func TestWorldConsumerPriority(t *testing.T) {
	w, cl, step := queueWorld(t, 1e9)
	frames := func() []string {
		w.send(1, cl.take())
		w.settle(1e9)
		return w.frames(1)
	}
	cl.method(t, 2, &wire.ChannelOpen{}).method(t, 2, &wire.BasicQos{PrefetchCount: 10}).
		method(t, 2, &wire.BasicConsume{Queue: "q", ConsumerTag: "low"})
	step("a consumer of priority 0", "20.11", "60.11", "60.21")
	cl.method(t, 3, &wire.ChannelOpen{}).method(t, 3, &wire.BasicQos{PrefetchCount: 1}).
		method(t, 3, &wire.BasicConsume{Queue: "q", ConsumerTag: "high", Arguments: wire.Table{{Name: "x-priority", Value: int32(5)}}})
	step("a consumer of priority 5 with prefetch 1", "20.11", "60.11", "60.21")
	w.channels = true
	cl.publish(t, 1, "q", "m0")
	step("one publish: the high one gets it", "ch1 60.80 ack tag=1 multiple=false", "ch3 60.60 deliver tag=1 redelivered=false", "body m0")
	cl.publish(t, 1, "q", "m1").publish(t, 1, "q", "m2")
	got := frames() // two more, the high one without credit
	if d := strings.Join(got, " "); strings.Count(d, "ch2 60.60 deliver") != 2 || strings.Contains(d, "ch3 60.60") {
		t.Fatalf("got %v, want both delivered to the low one", got)
	}
	cl.method(t, 3, &wire.BasicAck{DeliveryTag: 1}).publish(t, 1, "q", "m3")
	got = frames() // the high one acks: the next is its again
	if !slices.Contains(got, "ch3 60.60 deliver tag=2 redelivered=false") {
		t.Fatalf("after the ack: %v, want m3 delivered to the high one", got)
	}
	w.channels = false
	cl.method(t, 4, &wire.ChannelOpen{}).method(t, 4, &wire.BasicConsume{Queue: "q", ConsumerTag: "bad", Arguments: wire.Table{{Name: "x-priority", Value: "high"}}})
	step("a priority that is no integer", "20.11", "20.40 close 406")
	if w.closed[1] {
		t.Fatal("the connection closed")
	}
}
