package conn

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestInteropAmqp091 runs the amqp091-go client, unchanged, against the
// machine over net.Pipe: a tiny in-test driver (goroutines live only in
// this test) and an in-test broker that keeps queues as slices, confirms
// every publish and delivers within the prefetch window.
func TestInteropAmqp091(t *testing.T) {
	server, client := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- runPipeDriver(server) }()
	defer func() {
		client.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("driver: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("driver did not stop")
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := amqp.Open(client, amqp.Config{SASL: []amqp.Authentication{&amqp.PlainAuth{Username: "guest", Password: "guest"}},
		Vhost: "/", Heartbeat: 10 * time.Second, Locale: "en_US"})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 16))
	q, err := ch.QueueDeclare("orders", true, false, false, false, amqp.Table{"x-queue-type": "quorum", "x-sluice-replicas": int32(3)})
	if err != nil || q.Name != "orders" {
		t.Fatalf("declare: %v %+v", err, q)
	}
	const n = 10
	for i := 1; i <= n; i++ {
		if err := ch.PublishWithContext(ctx, "", "orders", false, false, amqp.Publishing{Body: []byte(fmt.Sprintf("m%d", i))}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	for i := 1; i <= n; i++ {
		select {
		case c := <-confirms:
			if !c.Ack || c.DeliveryTag != uint64(i) {
				t.Fatalf("confirm %d: %+v", i, c)
			}
		case <-ctx.Done():
			t.Fatalf("confirm %d: timed out", i)
		}
	}
	if err := ch.Qos(3, 0, false); err != nil {
		t.Fatalf("qos: %v", err)
	}
	msgs, err := ch.Consume("orders", "", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	for i := 1; i <= n-1; i++ {
		select {
		case d := <-msgs:
			if string(d.Body) != fmt.Sprintf("m%d", i) || d.DeliveryTag != uint64(i) {
				t.Fatalf("delivery %d: tag %d body %q", i, d.DeliveryTag, d.Body)
			}
			if i == n-1 {
				// Reject the last: it goes back and comes again, redelivered.
				if err := d.Reject(true); err != nil {
					t.Fatal(err)
				}
			} else if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("delivery %d: timed out", i)
		}
	}
	for _, want := range []string{"m10", "m9"} {
		select {
		case d := <-msgs:
			if string(d.Body) != want {
				t.Fatalf("got %q, want %q", d.Body, want)
			}
			if want == "m9" && !d.Redelivered {
				t.Fatalf("a rejected message comes back redelivered")
			}
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("delivery %s: timed out", want)
		}
	}
	if _, ok, err := ch.Get("orders", false); err != nil || ok {
		t.Fatalf("get on an empty queue: ok %t err %v", ok, err)
	}
	if err := ch.ExchangeDeclare("fan", "fanout", true, false, false, false, nil); err != nil {
		t.Fatalf("a fanout exchange: %v", err)
	}
	if err := ch.ExchangeDeclare("odd", "x-weird", true, false, false, false, nil); err == nil {
		t.Fatalf("an exchange of an unknown type was accepted")
	} else if e, ok := err.(*amqp.Error); !ok || e.Code != 503 {
		t.Fatalf("an unknown type refused with %v, want 503", err)
	}
	conn.Close()
}

// runPipeDriver is a minimal driver: one goroutine reads the socket, this
// one steps the machine and plays the broker.
func runPipeDriver(sock net.Conn) error {
	defer sock.Close()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	reads := make(chan []byte, 16)
	go func() {
		defer close(reads)
		for {
			buf := make([]byte, 4096)
			k, err := sock.Read(buf)
			if k > 0 {
				reads <- buf[:k]
			}
			if err != nil {
				return
			}
		}
	}()
	m, err := New(Config{Users: []User{{Name: "guest", Password: "guest", LoopbackOnly: true}}}, Peer{Loopback: true})
	if err != nil {
		return err
	}
	b := newPipeBroker()
	timer := time.NewTimer(time.Hour)
	pending := []Input{InAccept{NowNs: now()}}
	for {
		var in Input
		if len(pending) > 0 {
			in, pending = pending[0], pending[1:]
		} else {
			select {
			case chunk, ok := <-reads:
				if !ok {
					return nil // the client went away
				}
				in = InBytes{NowNs: now(), Bytes: chunk}
			case <-timer.C:
				in = InTime{NowNs: now()}
			}
		}
		for _, e := range m.Step(in) {
			switch x := e.(type) {
			case EfWrite:
				if _, err := sock.Write(x.Bytes); err != nil {
					return nil
				}
			case EfClose:
				return nil
			case EfTimer:
				timer.Reset(time.Duration(max(x.AtNs-now(), 0)))
			case EfRead:
			default:
				pending = append(pending, b.take(e, now())...)
			}
		}
		if err := m.CheckInvariants(); err != nil {
			return err
		}
	}
}

// pipeBroker keeps queues as slices of messages, confirms every publish,
// and delivers to subscriptions in SubID order within their windows.
type pipeBroker struct {
	queues map[string][]Message
	subs   []*pipeSub
	out    map[Handle]*pipeSub
	msgs   map[Handle]Message
	handle Handle
}

type pipeSub struct {
	id        SubID
	queue     string
	prefetch  int
	unsettled int
}

func newPipeBroker() *pipeBroker {
	return &pipeBroker{queues: map[string][]Message{}, out: map[Handle]*pipeSub{}, msgs: map[Handle]Message{}}
}

func (b *pipeBroker) take(e Effect, now int64) []Input {
	var ins []Input
	switch x := e.(type) {
	case EfDeclareQueue:
		if _, ok := b.queues[x.Queue.Name]; !ok {
			b.queues[x.Queue.Name] = nil
		}
		ins = append(ins, InResult{NowNs: now, Op: x.Op, MessageCount: uint32(len(b.queues[x.Queue.Name]))})
	case EfPublish:
		r := PublishResult{ID: x.ID, Outcome: Confirmed}
		if _, ok := b.queues[x.RoutingKey]; x.Exchange == "" && ok {
			b.handle++
			b.queues[x.RoutingKey] = append(b.queues[x.RoutingKey], Message{Handle: b.handle, RoutingKey: x.RoutingKey, Content: x.Content})
		} else {
			r.Outcome = Unroutable
			r.Returned = &x.Content
		}
		ins = append(ins, InPublished{NowNs: now, Results: []PublishResult{r}})
	case EfDeclareExchange:
		ins = append(ins, InResult{NowNs: now, Op: x.Op})
	case EfSubscribe:
		ins = append(ins, InResult{NowNs: now, Op: x.Op})
		b.subs = append(b.subs, &pipeSub{id: x.Sub, queue: x.Queue, prefetch: int(x.PrefetchCount)})
	case EfCancel:
		b.subs = slices.DeleteFunc(b.subs, func(s *pipeSub) bool { return s.id == x.Sub })
		ins = append(ins, InResult{NowNs: now, Op: x.Op})
	case EfGet:
		r := InResult{NowNs: now, Op: x.Op}
		if q := b.queues[x.Queue]; len(q) > 0 {
			r.Message = &q[0]
			b.queues[x.Queue] = q[1:]
		}
		ins = append(ins, r)
	case EfSettle:
		s := b.out[x.Handle]
		delete(b.out, x.Handle)
		if s != nil {
			s.unsettled--
		}
		if x.How != SettleAck && x.Requeue {
			msg := b.msgs[x.Handle]
			msg.Redelivered = true
			b.queues[x.Queue] = append([]Message{msg}, b.queues[x.Queue]...)
		}
		delete(b.msgs, x.Handle)
	default:
		panic(fmt.Sprintf("pipe broker: %s", e))
	}
	// Deliver what the windows allow.
	for _, s := range b.subs {
		for s.unsettled < s.prefetch && len(b.queues[s.queue]) > 0 {
			msg := b.queues[s.queue][0]
			b.queues[s.queue] = b.queues[s.queue][1:]
			s.unsettled++
			b.out[msg.Handle] = s
			b.msgs[msg.Handle] = msg
			ins = append(ins, InDelivery{NowNs: now, Sub: s.id, Queue: s.queue, Message: msg})
		}
	}
	return ins
}
