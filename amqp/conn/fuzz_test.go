package conn

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/replycheck"
	"github.com/sluicemq/sluice/amqp/wire"
)

// FuzzConn feeds arbitrary bytes, in arbitrary chunks, to a machine after a
// valid handshake, with an in-test broker that answers every request (its
// choices drawn from the same bytes) and delivers to every subscription
// within its prefetch. It checks: no panic, the invariants after every
// Step, every write is whole frames within the negotiated frame_max, and
// the output stays within a bound linear in the input.
//
//	go test -run '^$' -fuzz FuzzConn -fuzztime 60s ./amqp/conn/
func FuzzConn(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runFuzz(t, data, nil)
	})
}

func fuzzSeeds() [][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	open := methodFrame(1, &wire.ChannelOpen{})
	pubFrames := func(ch uint16, rk string, body string, mandatory bool) []byte {
		hd := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(body))}
		p, _ := wire.AppendContentHeader(nil, &hd)
		b := cat(methodFrame(ch, &wire.BasicPublish{RoutingKey: rk, Mandatory: mandatory}), frame(wire.FrameHeader, ch, p, -1))
		if body != "" {
			b = append(b, frame(wire.FrameBody, ch, []byte(body), -1)...)
		}
		return b
	}
	return [][]byte{
		{},
		open,
		cat(open, methodFrame(1, &wire.ConfirmSelect{}), pubFrames(1, "q", "hello", false), pubFrames(1, "q", "", true)),
		cat(open, methodFrame(1, &wire.BasicQos{PrefetchCount: 2}), methodFrame(1, &wire.BasicConsume{Queue: "q"}),
			methodFrame(1, &wire.BasicAck{DeliveryTag: 1, Multiple: true}), methodFrame(1, &wire.BasicNack{Requeue: true, Multiple: true})),
		cat(open, methodFrame(1, &wire.QueueDeclare{Queue: "q", Durable: true, NoWait: true,
			Arguments: wire.Table{{Name: "x-queue-type", Value: "quorum"}}}), pubFrames(1, "q", "x", false),
			methodFrame(1, &wire.BasicGet{Queue: "q"}), methodFrame(1, &wire.BasicReject{DeliveryTag: 1})),
		cat(open, methodFrame(1, &wire.ChannelClose{}), methodFrame(1, &wire.ChannelOpen{}), methodFrame(2, &wire.ChannelOpen{}),
			methodFrame(2, &wire.BasicConsume{ConsumerTag: "t", Queue: "q"}), methodFrame(2, &wire.BasicCancel{ConsumerTag: "t"})),
		cat(open, methodFrame(1, &wire.ExchangeDeclare{Exchange: "e", Type: "direct"}),
			methodFrame(1, &wire.QueueBind{Queue: "q", Exchange: "e", RoutingKey: "k"}), methodFrame(0, &wire.ConnectionClose{})),
		cat(open, frame(wire.FrameBody, 1, []byte("x"), -1)),
		cat(open, []byte{1, 0, 1, 0, 0, 0x40, 0, 0}),
		cat(open, frame(wire.FrameHeartbeat, 0, nil, -1), methodFrame(1, &wire.BasicRecover{Requeue: true})),
		// Transactions, exchange bindings, server-named and exclusive
		// queues, purge.
		cat(open, methodFrame(1, &wire.TxSelect{}), methodFrame(1, &wire.BasicConsume{Queue: "q"}), pubFrames(1, "q", "t", false),
			methodFrame(1, &wire.BasicAck{DeliveryTag: 1}), methodFrame(1, &wire.TxCommit{}), pubFrames(1, "q", "u", true),
			methodFrame(1, &wire.TxRollback{}), methodFrame(1, &wire.ConfirmSelect{})),
		cat(open, methodFrame(1, &wire.QueueDeclare{Queue: "", Exclusive: true, AutoDelete: true}),
			methodFrame(1, &wire.QueueBind{Queue: "", Exchange: "amq.topic", RoutingKey: "a.#"}),
			methodFrame(1, &wire.ExchangeBind{Destination: "e", Source: "amq.fanout"}), methodFrame(1, &wire.QueuePurge{Queue: ""}),
			methodFrame(1, &wire.ExchangeUnbind{Destination: "e", Source: "amq.fanout"})),
	}
}

// fuzzBroker answers a machine's requests, as a broker would, with
// choices from a byte stream.
type fuzzBroker struct {
	choices   []byte
	now       int64
	pending   []Input
	subs      map[SubID]*fuzzSub
	handle    Handle
	outstands map[Handle]SubID
}

type fuzzSub struct {
	queue     string
	prefetch  int
	noAck     bool
	unsettled int
	live      bool
}

func (b *fuzzBroker) choose(n byte) byte {
	if len(b.choices) == 0 {
		return 0
	}
	c := b.choices[0]
	b.choices = b.choices[1:]
	return c % n
}

func (b *fuzzBroker) take(effects []Effect) {
	for _, e := range effects {
		switch x := e.(type) {
		case EfPublish:
			r := PublishResult{ID: x.ID}
			switch b.choose(6) {
			case 0, 1:
				r.Outcome = Confirmed
			case 2:
				r.Outcome = Unroutable
				if x.Mandatory {
					r.Returned = &Content{Properties: x.Properties, Body: x.Body}
				}
			case 3:
				r.Outcome = Failed
			case 4:
				r.Outcome, r.Code = Refused, wire.NotFound
			case 5:
				r.Outcome = Unknown
			}
			b.pending = append(b.pending, InPublished{NowNs: b.now, Results: []PublishResult{r}})
		case EfDeclareQueue:
			b.answer(x.Op, nil)
			if r, ok := b.pending[len(b.pending)-1].(InResult); ok && x.Queue.ServerNamed && r.Code == 0 {
				r.Queue = fmt.Sprintf("amq.gen-%d", x.Op) // the broker names it
				b.pending[len(b.pending)-1] = r
			}
		case EfDeleteQueue:
			b.answer(x.Op, nil)
		case EfPurgeQueue:
			b.answer(x.Op, nil)
		case EfDeclareExchange:
			b.answer(x.Op, nil)
		case EfDeleteExchange:
			b.answer(x.Op, nil)
		case EfBind:
			b.answer(x.Op, nil)
		case EfSubscribe:
			ok := b.answer(x.Op, nil)
			if ok {
				b.subs[x.Sub] = &fuzzSub{queue: x.Queue, prefetch: int(x.PrefetchCount), noAck: x.NoAck, live: true}
				b.deliver(x.Sub)
				b.deliver(x.Sub)
			}
		case EfCancel:
			if s := b.subs[x.Sub]; s != nil {
				s.live = false
			}
			b.answer(x.Op, nil)
		case EfGet:
			var m *Message
			if b.choose(2) == 0 {
				b.handle++
				m = &Message{Handle: b.handle, Exchange: "", RoutingKey: x.Queue, Content: Content{Body: []byte("got")}}
			}
			b.answer(x.Op, m)
		case EfSettle:
			if sub, ok := b.outstands[x.Handle]; ok {
				delete(b.outstands, x.Handle)
				if s := b.subs[sub]; s != nil {
					s.unsettled--
					b.deliver(sub)
				}
			}
		}
	}
}

// answer queues a result: success mostly, sometimes a refusal.
func (b *fuzzBroker) answer(op OpID, m *Message) bool {
	r := InResult{NowNs: b.now, Op: op, Message: m}
	if b.choose(8) == 0 {
		r.Code, r.Text, r.Message = wire.NotFound, "no such thing", nil
	}
	b.pending = append(b.pending, r)
	return r.Code == 0
}

// deliver sends one message to a subscription if its window allows.
func (b *fuzzBroker) deliver(sub SubID) {
	s := b.subs[sub]
	if s == nil || !s.live || (!s.noAck && s.unsettled >= s.prefetch) {
		return
	}
	b.handle++
	if !s.noAck {
		s.unsettled++
		b.outstands[b.handle] = sub
	}
	b.pending = append(b.pending, InDelivery{NowNs: b.now, Sub: sub, Queue: s.queue,
		Message: Message{Handle: b.handle, RoutingKey: s.queue, Content: Content{Body: []byte("msg")}}})
}

// runFuzz drives one machine with data; trace, when not nil, receives every
// input and effect line.
func runFuzz(t *testing.T, data []byte, trace *strings.Builder) {
	c, err := New(Config{Users: []User{{Name: "guest", Password: "guest"}}, FrameMaxBytes: 8192, PublishesInFlightMax: 64,
		QueuedRequestsMax: 16, MessageBytesMax: 1 << 16, AssemblyBytesMax: 1 << 18, QueuedBytesMax: 1 << 18}, Peer{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	// The stream is data as is; chunk sizes and the broker's choices come
	// from data read backwards, so seeds stay readable frame streams.
	choices := make([]byte, len(data))
	for i, x := range data {
		choices[len(data)-1-i] = x
	}
	b := &fuzzBroker{choices: choices, subs: map[SubID]*fuzzSub{}, outstands: map[Handle]SubID{}}
	var writtenBytes, steps int
	rc := replycheck.New(transcriptBoundNs)
	step := func(in Input) {
		steps++
		if steps > 100_000 {
			t.Fatalf("over %d steps for %d input bytes: a loop between the machine and the broker (%s)", steps, len(data), in)
		}
		if b, ok := in.(InBytes); ok {
			rc.ClientBytes(b.NowNs, b.Bytes)
		}
		effects := c.Step(in)
		for _, e := range effects {
			switch x := e.(type) {
			case EfWrite:
				rc.ServerBytes(in.nowNs(), x.Bytes)
			case EfClose:
				rc.SocketClosed(in.nowNs())
			}
		}
		if err := rc.Check(in.nowNs()); err != nil {
			t.Fatalf("after %s: %v", in, err)
		}
		if trace != nil {
			trace.WriteString(in.String() + "\n")
			for _, e := range effects {
				trace.WriteString("  " + e.String() + "\n")
			}
		}
		if err := c.CheckInvariants(); err != nil {
			t.Fatalf("after %s: %v", in, err)
		}
		for _, e := range effects {
			if w, ok := e.(EfWrite); ok {
				writtenBytes += len(w.Bytes)
				s := framesText(w.Bytes)
				if strings.Contains(s, "partial") || strings.Contains(s, "bad-") {
					t.Fatalf("after %s: bad write %s", in, s)
				}
				if c.state >= stOpen && len(w.Bytes) > 0 && w.Bytes[0] != 'A' {
					checkFrameSizes(t, w.Bytes, c.frameMaxBytes)
				}
			}
			_ = e.String()
		}
		b.take(effects)
	}
	step(InAccept{NowNs: 0})
	hs := bytes.Join([][]byte{wire.ProtocolHeader[:],
		methodFrame(0, &wire.ConnectionStartOk{Mechanism: "PLAIN", Response: "\x00guest\x00guest"}),
		methodFrame(0, &wire.ConnectionTuneOk{ChannelMax: 16, FrameMax: 8192, Heartbeat: 10}),
		methodFrame(0, &wire.ConnectionOpen{VirtualHost: "/"})}, nil)
	step(InBytes{NowNs: 1, Bytes: hs})
	if c.state != stOpened {
		t.Fatalf("handshake failed: state %s", c.state)
	}
	rest := data
	now := int64(1)
	for len(rest) > 0 && !c.Closed() {
		n := min(int(b.choose(64))+1, len(rest))
		chunk := rest[:n]
		rest = rest[n:]
		now += 1_000_000
		b.now = now
		step(InBytes{NowNs: now, Bytes: chunk})
		// The broker answers what it was asked, a few at a time.
		for i := 0; i < 8 && len(b.pending) > 0 && !c.Closed(); i++ {
			in := b.pending[0]
			b.pending = b.pending[1:]
			step(in)
		}
	}
	for len(b.pending) > 0 && !c.Closed() {
		in := b.pending[0]
		b.pending = b.pending[1:]
		step(in)
	}
	// The broker answered everything: nothing the client asked may wait.
	if left := rc.Outstanding(); len(left) > 0 {
		t.Fatalf("with every request answered by the broker, the client still waits for: %s", strings.Join(left, "; "))
	}
	step(InTime{NowNs: now + 30_000_000_000})
	// Output bound: the handshake, plus per input byte at most one small
	// reply and one of the broker's tiny deliveries or returns.
	if bound := 4096 + 256*len(data); writtenBytes > bound {
		t.Fatalf("wrote %d bytes for %d input bytes, over %d", writtenBytes, len(data), bound)
	}
}

func checkFrameSizes(t *testing.T, b []byte, frameMax uint32) {
	for len(b) > 0 {
		size := int(b[3])<<24 | int(b[4])<<16 | int(b[5])<<8 | int(b[6])
		if size+wire.FrameOverheadBytes > int(frameMax) {
			t.Fatalf("wrote a frame of %d payload bytes over frame_max %d", size, frameMax)
		}
		b = b[size+wire.FrameOverheadBytes:]
	}
}
