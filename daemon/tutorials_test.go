package daemon

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RabbitMQ's seven Go tutorials (https://www.rabbitmq.com/tutorials) as
// tests with the amqp091-go client, each run twice: against one broker
// ("single") and against a three-broker cluster ("cluster") where the
// producer connects to one broker and the consumers to the two others, so
// that every message crosses brokers at least once.
//
// They keep the tutorials' shapes (declare, bind, publish, consume) with
// these departures, each because of what Sluice is or what a test needs:
//
//   - Queues are durable and named but the RPC client's reply queue
//     (exclusive and server-named, as the tutorial's): with named queues
//     a test can check what each holds afterwards.
//   - Consumers get explicit tags, so that a test can cancel them and
//     check that nothing beyond the expected deliveries came.
//   - The producers of tutorials 1 to 5 publish on a confirm channel: once
//     every publish is confirmed, what each queue holds is settled, and
//     what each consumer got can be checked exactly.
//   - Bodies and correlation ids are fixed strings, not random ones.

// tutWait bounds every wait of these tests.
const tutWait = 20 * time.Second

// tutWorld is where a tutorial's programs connect: the producer to prod,
// the consumers to cons[0] and cons[1] (the same broker as prod when
// single, the two other brokers of the cluster otherwise).
type tutWorld struct {
	prod *Server
	cons [2]*Server
}

// tutRun runs tutorial against one broker, then against a cluster of
// three.
func tutRun(t *testing.T, tutorial func(t *testing.T, w tutWorld)) {
	t.Helper()
	t.Run("single", func(t *testing.T) {
		s := startServer(t, t.TempDir())
		t.Cleanup(func() { stopServer(t, s) })
		tutorial(t, tutWorld{prod: s, cons: [2]*Server{s, s}})
	})
	t.Run("cluster", func(t *testing.T) {
		ss := startCluster(t, members(reservePorts(t, 3)), []uint32{1, 2, 3})
		for _, s := range ss {
			waitLeader(t, s)
		}
		tutorial(t, tutWorld{prod: ss[1], cons: [2]*Server{ss[2], ss[3]}})
	})
}

// tutChannel dials s and opens a channel; the connection closes when the
// test ends (before its brokers stop).
func tutChannel(t *testing.T, s *Server) (*amqp.Connection, *amqp.Channel) {
	t.Helper()
	c := mustDial(t, s)
	t.Cleanup(func() { c.Close() })
	ch, err := c.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	return c, ch
}

// tutConfirming is a channel of s in confirm mode.
func tutConfirming(t *testing.T, s *Server) *amqp.Channel {
	t.Helper()
	_, ch := tutChannel(t, s)
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm.select: %v", err)
	}
	return ch
}

// tutPublish publishes each body to exchange ex with routing key key on
// ch, a channel in confirm mode, and waits until all are acked.
func tutPublish(t *testing.T, ch *amqp.Channel, ex, key string, bodies ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tutWait)
	defer cancel()
	var pending []*amqp.DeferredConfirmation
	for _, b := range bodies {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, ex, key, false, false, amqp.Publishing{
			ContentType: "text/plain", DeliveryMode: amqp.Persistent, Body: []byte(b)})
		if err != nil {
			t.Fatalf("publish %q to %q with key %q: %v", b, ex, key, err)
		}
		pending = append(pending, dc)
	}
	for i, dc := range pending {
		acked, err := dc.WaitContext(ctx)
		if err != nil {
			t.Fatalf("the confirm of %q (to %q, key %q): %v", bodies[i], ex, key, err)
		}
		if !acked {
			t.Fatalf("%q (to %q, key %q) nacked", bodies[i], ex, key)
		}
	}
}

// tutConsume declares the durable queue q on a new channel of s, binds it
// to ex with each key (none for the default exchange) and consumes it
// with the tag q, acking automatically as the tutorials' receivers do.
func tutConsume(t *testing.T, s *Server, q, ex string, keys ...string) (*amqp.Channel, <-chan amqp.Delivery) {
	t.Helper()
	_, ch := tutChannel(t, s)
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatalf("declare %s: %v", q, err)
	}
	for _, k := range keys {
		if err := ch.QueueBind(q, k, ex, false, nil); err != nil {
			t.Fatalf("bind %s to %s with key %q: %v", q, ex, k, err)
		}
	}
	ds, err := ch.Consume(q, q, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume %s: %v", q, err)
	}
	return ch, ds
}

// tutExpect takes len(want) deliveries from ds and wants their bodies to
// be want, in order.
func tutExpect(t *testing.T, q string, ds <-chan amqp.Delivery, want ...string) []amqp.Delivery {
	t.Helper()
	var got []amqp.Delivery
	var bodies []string
	timeout := time.After(tutWait)
	for len(got) < len(want) {
		select {
		case d, ok := <-ds:
			if !ok {
				t.Fatalf("%s: the deliveries ended after %q, want %q", q, bodies, want)
			}
			got = append(got, d)
			bodies = append(bodies, string(d.Body))
			if string(d.Body) != want[len(got)-1] {
				t.Fatalf("%s: got %q, want %q", q, bodies, want)
			}
		case <-timeout:
			t.Fatalf("%s: got %q in %v, want %q", q, bodies, tutWait, want)
		}
	}
	return got
}

// tutNoMore cancels the consumer tag on ch and wants no delivery of ds
// beyond those already taken (the client hands over what came before
// cancel-ok, then closes ds).
func tutNoMore(t *testing.T, ch *amqp.Channel, ds <-chan amqp.Delivery, tag string) {
	t.Helper()
	if err := ch.Cancel(tag, false); err != nil {
		t.Fatalf("cancel %s: %v", tag, err)
	}
	timeout := time.After(tutWait)
	for {
		select {
		case d, ok := <-ds:
			if !ok {
				return
			}
			t.Fatalf("%s: %q (key %q) beyond the expected deliveries", tag, d.Body, d.RoutingKey)
		case <-timeout:
			t.Fatalf("%s: the deliveries did not end within %v of the cancel", tag, tutWait)
		}
	}
}

// tutEmpty wants queue q to have no ready message (polled: a broker may
// fold a settle into its count a moment after it answered).
func tutEmpty(t *testing.T, ch *amqp.Channel, q string) {
	t.Helper()
	deadline := time.Now().Add(tutWait)
	for {
		st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		if err != nil {
			t.Fatalf("a passive declare of %s: %v", q, err)
		}
		if st.Messages == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %d ready messages after %v", q, st.Messages, tutWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tutRange is prefix0..prefix(n-1).
func tutRange(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// TestTutorial1HelloWorld: "Hello World!": a producer sends one message to
// the queue hello, the consumer receives it.
func TestTutorial1HelloWorld(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		// receive.go: declare hello and consume it.
		rch, msgs := tutConsume(t, w.cons[0], "hello", "")
		// send.go: declare hello (both sides do) and publish to it.
		ch := tutConfirming(t, w.prod)
		if _, err := ch.QueueDeclare("hello", true, false, false, false, nil); err != nil {
			t.Fatalf("declare hello at the producer: %v", err)
		}
		tutPublish(t, ch, "", "hello", "Hello World!")
		d := tutExpect(t, "hello", msgs, "Hello World!")[0]
		if d.ContentType != "text/plain" || d.Exchange != "" || d.RoutingKey != "hello" || d.Redelivered {
			t.Fatalf("the delivery: content type %q, exchange %q, key %q, redelivered %t", d.ContentType, d.Exchange, d.RoutingKey, d.Redelivered)
		}
		tutNoMore(t, rch, msgs, "hello")
		tutEmpty(t, rch, "hello")
	})
}

// TestTutorial2WorkQueues: work queues with fair dispatch. Two workers on
// task_queue with prefetch 1 and manual acks. The first task is heavy (its
// dots stand for seconds of work): its worker holds it, unacked, until the
// other worker has done every other task. With prefetch 1 the busy worker
// is sent nothing meanwhile, so the other gets all the rest; each task is
// delivered once, never redelivered, and acked once (after the workers'
// channels close, none is back in the queue).
func TestTutorial2WorkQueues(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		const q = "task_queue"
		heavy := "First task.........."
		tasks := []string{heavy}
		for i := 2; i <= 12; i++ {
			tasks = append(tasks, fmt.Sprintf("Task %d%s", i, strings.Repeat(".", i%4+1)))
		}
		// worker.go, twice.
		var wch [2]*amqp.Channel
		var wds [2]<-chan amqp.Delivery
		for i := range wch {
			_, ch := tutChannel(t, w.cons[i])
			if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				t.Fatalf("worker %d: declare: %v", i, err)
			}
			if err := ch.Qos(1, 0, false); err != nil {
				t.Fatalf("worker %d: qos: %v", i, err)
			}
			ds, err := ch.Consume(q, fmt.Sprintf("worker-%d", i), false, false, false, false, nil)
			if err != nil {
				t.Fatalf("worker %d: consume: %v", i, err)
			}
			wch[i], wds[i] = ch, ds
		}
		// new_task.go, once per task.
		pch := tutConfirming(t, w.prod)
		if _, err := pch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatalf("declare at the producer: %v", err)
		}
		for _, task := range tasks {
			tutPublish(t, pch, "", q, task)
		}

		var done [2][]string // what each worker did, in order
		acked := map[string]int{}
		var held *amqp.Delivery // the heavy task, being worked on
		busy := -1              // the worker holding it
		work := func(i int, d amqp.Delivery) {
			t.Helper()
			b := string(d.Body)
			if busy == i {
				t.Fatalf("worker %d was sent %q while %q was unacked: prefetch 1 not honoured", i, b, held.Body)
			}
			if d.Redelivered || acked[b] > 0 {
				t.Fatalf("worker %d: %q again (redelivered %t); done so far %q", i, b, d.Redelivered, done)
			}
			done[i] = append(done[i], b)
			if b == heavy {
				held, busy = &d, i
				return
			}
			if err := d.Ack(false); err != nil {
				t.Fatalf("worker %d: ack %q: %v", i, b, err)
			}
			acked[b]++
		}
		timeout := time.After(tutWait)
		for len(acked) < len(tasks) {
			select {
			case d := <-wds[0]:
				work(0, d)
			case d := <-wds[1]:
				work(1, d)
			case <-timeout:
				t.Fatalf("within %v the workers did %q and acked %d of %d", tutWait, done, len(acked), len(tasks))
			}
			if held != nil && len(acked) == len(tasks)-1 {
				// All the light tasks are done: the heavy one is too.
				if err := held.Ack(false); err != nil {
					t.Fatalf("worker %d: ack %q: %v", busy, heavy, err)
				}
				acked[heavy]++
				held, busy = nil, -1
			}
		}
		if len(done[0]) == 0 || len(done[1]) == 0 {
			t.Fatalf("the work was not shared: worker 0 did %q, worker 1 did %q", done[0], done[1])
		}
		// The heavy task's worker did it alone; the other did the rest, in
		// the order they were queued.
		h := 0
		if done[1][0] == heavy {
			h = 1
		}
		if fmt.Sprint(done[h]) != fmt.Sprint([]string{heavy}) || fmt.Sprint(done[1-h]) != fmt.Sprint(tasks[1:]) {
			t.Fatalf("worker %d (heavy) did %q, worker %d did %q; want %q and %q", h, done[h], 1-h, done[1-h], heavy, tasks[1:])
		}
		for i := range wch {
			tutNoMore(t, wch[i], wds[i], fmt.Sprintf("worker-%d", i))
			// A closed channel returns its unacked deliveries: none.
			if err := wch[i].Close(); err != nil {
				t.Fatalf("worker %d: close: %v", i, err)
			}
		}
		tutEmpty(t, pch, q)
	})
}

// TestTutorial3PublishSubscribe: publish/subscribe: a fanout exchange logs
// gives every log message to each bound queue, in order.
func TestTutorial3PublishSubscribe(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		// receive_logs.go, twice: declare logs, a queue of its own, bind.
		var rch [2]*amqp.Channel
		var rds [2]<-chan amqp.Delivery
		for i := range rch {
			_, ch := tutChannel(t, w.cons[i])
			if err := ch.ExchangeDeclare("logs", "fanout", true, false, false, false, nil); err != nil {
				t.Fatalf("receiver %d: declare logs: %v", i, err)
			}
			rch[i], rds[i] = tutConsume(t, w.cons[i], fmt.Sprintf("logs-%d", i), "logs", "")
		}
		// emit_log.go.
		pch := tutConfirming(t, w.prod)
		if err := pch.ExchangeDeclare("logs", "fanout", true, false, false, false, nil); err != nil {
			t.Fatalf("declare logs at the producer: %v", err)
		}
		logs := tutRange("log ", 10)
		tutPublish(t, pch, "logs", "", logs...)
		for i := range rds {
			q := fmt.Sprintf("logs-%d", i)
			for _, d := range tutExpect(t, q, rds[i], logs...) {
				if d.Exchange != "logs" {
					t.Fatalf("%s: %q came from exchange %q", q, d.Body, d.Exchange)
				}
			}
			tutNoMore(t, rch[i], rds[i], q)
			tutEmpty(t, rch[i], q)
		}
	})
}

// TestTutorial4Routing: routing with a direct exchange: one receiver saves
// errors, the other prints info, warning and error (three bindings);
// debug is bound by no one and goes nowhere.
func TestTutorial4Routing(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		receivers := []struct {
			q    string
			keys []string
		}{{"direct-errors", []string{"error"}}, {"direct-console", []string{"info", "warning", "error"}}}
		var rch [2]*amqp.Channel
		var rds [2]<-chan amqp.Delivery
		for i, r := range receivers {
			_, ch := tutChannel(t, w.cons[i])
			if err := ch.ExchangeDeclare("logs_direct", "direct", true, false, false, false, nil); err != nil {
				t.Fatalf("receiver %d: declare logs_direct: %v", i, err)
			}
			rch[i], rds[i] = tutConsume(t, w.cons[i], r.q, "logs_direct", r.keys...)
		}
		// emit_log_direct.go, once per message.
		pch := tutConfirming(t, w.prod)
		if err := pch.ExchangeDeclare("logs_direct", "direct", true, false, false, false, nil); err != nil {
			t.Fatalf("declare logs_direct at the producer: %v", err)
		}
		sent := [][2]string{{"info", "i1"}, {"warning", "w1"}, {"error", "e1"}, {"debug", "d1"},
			{"error", "e2"}, {"info", "i2"}, {"debug", "d2"}, {"warning", "w2"}, {"error", "e3"}}
		for _, m := range sent {
			tutPublish(t, pch, "logs_direct", m[0], m[0]+": "+m[1])
		}
		for i, r := range receivers {
			var want []string
			for _, m := range sent {
				for _, k := range r.keys {
					if m[0] == k {
						want = append(want, m[0]+": "+m[1])
					}
				}
			}
			for _, d := range tutExpect(t, r.q, rds[i], want...) {
				if !strings.HasPrefix(string(d.Body), d.RoutingKey+": ") || d.Exchange != "logs_direct" {
					t.Fatalf("%s: %q came with key %q from %q", r.q, d.Body, d.RoutingKey, d.Exchange)
				}
			}
			tutNoMore(t, rch[i], rds[i], r.q)
			tutEmpty(t, rch[i], r.q)
		}
	})
}

// TestTutorial5Topics: topics: a topic exchange routes by pattern, * for
// exactly one word and # for zero or more; a message matching two of a
// queue's bindings comes to it once.
func TestTutorial5Topics(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		// The tutorial's Q1 and Q2, and its receive_logs_topic.go examples:
		// "#" (all) and "kern.*" with "*.critical".
		receivers := []struct {
			q    string
			at   int
			keys []string
		}{
			{"topic-q1", 0, []string{"*.orange.*"}},
			{"topic-q2", 1, []string{"*.*.rabbit", "lazy.#"}},
			{"topic-all", 0, []string{"#"}},
			{"topic-kern-critical", 1, []string{"kern.*", "*.critical"}},
		}
		// Each routing key and the receivers it reaches (by index).
		sent := []struct {
			key string
			to  []int
		}{
			{"quick.orange.rabbit", []int{0, 1, 2}},
			{"lazy.orange.elephant", []int{0, 1, 2}},
			{"quick.orange.fox", []int{0, 2}},
			{"lazy.brown.fox", []int{1, 2}},
			{"lazy.pink.rabbit", []int{1, 2}}, // matches both of Q2's bindings
			{"quick.brown.fox", []int{2}},
			{"orange", []int{2}},
			{"quick.orange.male.rabbit", []int{2}},
			{"lazy.orange.male.rabbit", []int{1, 2}},
			{"lazy", []int{1, 2}}, // # matches zero words
			{"kern.critical", []int{2, 3}},
			{"kern.info", []int{2, 3}},
			{"cron.critical", []int{2, 3}},
			{"kern.disk.critical", []int{2}},
			{"orange.orange.orange", []int{0, 2}},
		}
		rch := make([]*amqp.Channel, len(receivers))
		rds := make([]<-chan amqp.Delivery, len(receivers))
		for i, r := range receivers {
			_, ch := tutChannel(t, w.cons[r.at])
			if err := ch.ExchangeDeclare("logs_topic", "topic", true, false, false, false, nil); err != nil {
				t.Fatalf("%s: declare logs_topic: %v", r.q, err)
			}
			rch[i], rds[i] = tutConsume(t, w.cons[r.at], r.q, "logs_topic", r.keys...)
		}
		// emit_log_topic.go, once per message; the body is the key.
		pch := tutConfirming(t, w.prod)
		if err := pch.ExchangeDeclare("logs_topic", "topic", true, false, false, false, nil); err != nil {
			t.Fatalf("declare logs_topic at the producer: %v", err)
		}
		for _, m := range sent {
			tutPublish(t, pch, "logs_topic", m.key, m.key)
		}
		for i, r := range receivers {
			var want []string
			for _, m := range sent {
				for _, to := range m.to {
					if to == i {
						want = append(want, m.key)
					}
				}
			}
			for _, d := range tutExpect(t, r.q, rds[i], want...) {
				if d.RoutingKey != string(d.Body) {
					t.Fatalf("%s: %q came with key %q", r.q, d.Body, d.RoutingKey)
				}
			}
			tutNoMore(t, rch[i], rds[i], r.q)
			tutEmpty(t, rch[i], r.q)
		}
	})
}

// tutFib is the RPC tutorial's server function, as it writes it.
func tutFib(n int) int {
	if n == 0 {
		return 0
	} else if n == 1 {
		return 1
	}
	return tutFib(n-1) + tutFib(n-2)
}

// TestTutorial6RPC: RPC: a server consumes rpc_queue with prefetch 1 and
// answers fib(n) to each request's reply_to with its correlation id; two
// clients send their requests at once and match each reply to its
// request by correlation id.
//
// Each client declares an exclusive, server-named reply queue, as the
// tutorial's does: on its own broker, which the server (on another broker
// in the cluster) publishes the replies to.
func TestTutorial6RPC(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		// Known values, not the server's own function.
		fib := map[int]int{0: 0, 1: 1, 2: 1, 3: 2, 5: 5, 8: 21, 10: 55, 13: 233, 15: 610, 20: 6765, 25: 75025}
		clients := []struct {
			at *Server
			ns []int
		}{{w.prod, []int{1, 2, 3, 5, 8, 10}}, {w.cons[1], []int{25, 0, 13, 20, 15, 1, 10}}}

		// rpc_server.go, on the consumers' side.
		sconn, sch := tutChannel(t, w.cons[0])
		if _, err := sch.QueueDeclare("rpc_queue", true, false, false, false, nil); err != nil {
			t.Fatalf("server: declare rpc_queue: %v", err)
		}
		if err := sch.Qos(1, 0, false); err != nil {
			t.Fatalf("server: qos: %v", err)
		}
		reqs, err := sch.Consume("rpc_queue", "rpc-server", false, false, false, false, nil)
		if err != nil {
			t.Fatalf("server: consume: %v", err)
		}
		served := make(chan int, 1)
		go func() {
			count := 0
			defer func() { served <- count }()
			for d := range reqs {
				n, err := strconv.Atoi(string(d.Body))
				if err != nil {
					t.Errorf("server: request %q (correlation id %q): %v", d.Body, d.CorrelationId, err)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), tutWait)
				err = sch.PublishWithContext(ctx, "", d.ReplyTo, false, false, amqp.Publishing{
					ContentType: "text/plain", CorrelationId: d.CorrelationId, Body: []byte(strconv.Itoa(tutFib(n)))})
				cancel()
				if err != nil {
					t.Errorf("server: reply to %q (%s): %v", d.CorrelationId, d.ReplyTo, err)
					return
				}
				if err := d.Ack(false); err != nil {
					t.Errorf("server: ack %q: %v", d.CorrelationId, err)
					return
				}
				count++
			}
		}()
		var total int
		t.Cleanup(func() {
			// The server's connection closes, its deliveries end, it stops.
			sconn.Close()
			if n := <-served; n != total && !t.Failed() {
				t.Errorf("the server answered %d requests, want %d", n, total)
			}
		})

		// rpc_client.go, twice: a reply queue, then every request at once.
		type call struct {
			n     int
			reply string
		}
		calls := make([]map[string]*call, len(clients))
		cch := make([]*amqp.Channel, len(clients))
		cds := make([]<-chan amqp.Delivery, len(clients))
		rqs := make([]string, len(clients))
		for c, cl := range clients {
			_, cch[c] = tutChannel(t, cl.at)
			q, err := cch[c].QueueDeclare("", false, false, true, false, nil)
			if err != nil {
				t.Fatalf("client %d: declare an exclusive server-named reply queue: %v", c, err)
			}
			rq := q.Name
			rqs[c] = rq
			if cds[c], err = cch[c].Consume(rq, rq, true, false, false, false, nil); err != nil {
				t.Fatalf("client %d: consume %s: %v", c, rq, err)
			}
			calls[c] = map[string]*call{}
			ctx, cancel := context.WithTimeout(context.Background(), tutWait)
			for i, n := range cl.ns {
				corr := fmt.Sprintf("client-%d-call-%d", c, i)
				calls[c][corr] = &call{n: n}
				err := cch[c].PublishWithContext(ctx, "", "rpc_queue", false, false, amqp.Publishing{
					ContentType: "text/plain", CorrelationId: corr, ReplyTo: rq, Body: []byte(strconv.Itoa(n))})
				if err != nil {
					t.Fatalf("client %d: request fib(%d): %v", c, n, err)
				}
				total++
			}
			cancel()
		}
		for c, cl := range clients {
			rq := rqs[c]
			timeout := time.After(tutWait)
			for answered := 0; answered < len(cl.ns); {
				select {
				case d, ok := <-cds[c]:
					if !ok {
						t.Fatalf("client %d: the replies ended after %d of %d", c, answered, len(cl.ns))
					}
					k, known := calls[c][d.CorrelationId]
					switch {
					case !known:
						t.Fatalf("client %d: a reply %q with correlation id %q, not one of its requests", c, d.Body, d.CorrelationId)
					case k.reply != "":
						t.Fatalf("client %d: %q answered twice (%q, then %q)", c, d.CorrelationId, k.reply, d.Body)
					}
					k.reply = string(d.Body)
					if k.reply != strconv.Itoa(fib[k.n]) {
						t.Fatalf("client %d: %q asked fib(%d) and got %q, want %d", c, d.CorrelationId, k.n, d.Body, fib[k.n])
					}
					answered++
				case <-timeout:
					var missing []string
					for corr, k := range calls[c] {
						if k.reply == "" {
							missing = append(missing, fmt.Sprintf("%s fib(%d)", corr, k.n))
						}
					}
					t.Fatalf("client %d: no reply within %v to %q", c, tutWait, missing)
				}
			}
			tutNoMore(t, cch[c], cds[c], rq)
			tutEmpty(t, cch[c], rq)
		}
		tutNoMore(t, sch, reqs, "rpc-server")
		tutEmpty(t, cch[0], "rpc_queue")
	})
}

// TestTutorial7PublisherConfirms: publisher confirms, the tutorial's three
// strategies, each on a channel and a queue of its own: publishing
// messages individually (wait for each confirm), in batches (publish 50,
// wait for their confirms), and handling confirms asynchronously
// (NotifyPublish, settled while publishing goes on). Every publish is
// acked exactly once, and a consumer on another broker gets every message
// in order.
func TestTutorial7PublisherConfirms(t *testing.T) {
	tutRun(t, func(t *testing.T, w tutWorld) {
		const (
			individually = "confirms-individually"
			batches      = "confirms-batches"
			async        = "confirms-async"
			count        = 200
			batchSize    = 50
		)
		declare := func(q string) *amqp.Channel {
			t.Helper()
			ch := tutConfirming(t, w.prod)
			if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				t.Fatalf("declare %s: %v", q, err)
			}
			return ch
		}
		msg := func(b string) amqp.Publishing {
			return amqp.Publishing{ContentType: "text/plain", DeliveryMode: amqp.Persistent, Body: []byte(b)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), tutWait)
		defer cancel()

		// Publishing messages individually.
		ch := declare(individually)
		for _, b := range tutRange("i", count) {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", individually, false, false, msg(b))
			if err != nil {
				t.Fatalf("individually: publish %s: %v", b, err)
			}
			if acked, err := dc.WaitContext(ctx); err != nil || !acked {
				t.Fatalf("individually: the confirm of %s: acked %t, %v", b, acked, err)
			}
		}

		// Publishing messages in batches.
		ch = declare(batches)
		var batch []*amqp.DeferredConfirmation
		for i, b := range tutRange("b", count) {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", batches, false, false, msg(b))
			if err != nil {
				t.Fatalf("batches: publish %s: %v", b, err)
			}
			batch = append(batch, dc)
			if len(batch) == batchSize || i == count-1 {
				for _, dc := range batch {
					if acked, err := dc.WaitContext(ctx); err != nil || !acked {
						t.Fatalf("batches: the confirm of tag %d (batch ending %s): acked %t, %v", dc.DeliveryTag, b, acked, err)
					}
				}
				batch = batch[:0]
			}
		}

		// Handling publisher confirms asynchronously.
		ch = declare(async)
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, count))
		outstanding := map[uint64]string{}
		settle := func(c amqp.Confirmation) {
			t.Helper()
			b, ok := outstanding[c.DeliveryTag]
			if !ok {
				t.Fatalf("async: a confirm of tag %d, not outstanding", c.DeliveryTag)
			}
			if !c.Ack {
				t.Fatalf("async: %s (tag %d) nacked", b, c.DeliveryTag)
			}
			delete(outstanding, c.DeliveryTag)
		}
		settledWhilePublishing := 0
		for _, b := range tutRange("a", count) {
			outstanding[ch.GetNextPublishSeqNo()] = b
			if err := ch.PublishWithContext(ctx, "", async, false, false, msg(b)); err != nil {
				t.Fatalf("async: publish %s: %v", b, err)
			}
			for drained := false; !drained; {
				select {
				case c := <-confirms:
					settle(c)
					settledWhilePublishing++
				default:
					drained = true
				}
			}
		}
		for len(outstanding) > 0 {
			select {
			case c := <-confirms:
				settle(c)
			case <-ctx.Done():
				t.Fatalf("async: %d publishes unconfirmed within %v", len(outstanding), tutWait)
			}
		}
		t.Logf("async: %d of %d confirms settled while publishing", settledWhilePublishing, count)

		// A consumer elsewhere gets each queue's messages, in order.
		for i, c := range []struct {
			q      string
			prefix string
		}{{individually, "i"}, {batches, "b"}, {async, "a"}} {
			rch, ds := tutConsume(t, w.cons[i%2], c.q, "")
			tutExpect(t, c.q, ds, tutRange(c.prefix, count)...)
			tutNoMore(t, rch, ds, c.q)
			tutEmpty(t, rch, c.q)
		}
	})
}
