package clustertest

import (
	"slices"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestConsumeAfterFailover: a queue of three replicas declared through a
// broker that does not own it, a consumer attached through every broker,
// confirmed publishes through that broker; SIGKILL the queue's owner.
// The consumers whose subscriptions ran at the owner lose their
// connections (320) and consume again through the same broker, as a
// client does: each must have basic.consume-ok within 5 s of the queue
// serving again (a consume through a broker whose route was dropped with
// the owner used to be refused with 405 "no owner known" for good), and
// every confirmed message, before and after the kill, must reach a
// consumer.
func TestConsumeAfterFailover(t *testing.T) {
	c := newCluster(t, 3)
	const q = "cq"
	qs := func() map[string]queueLine {
		publishThrough(t, c, 1, q, 1) // declares it
		return c.settle(1, []string{q}, 30*time.Second)
	}()
	victim := owner(t, qs, q)
	via := c.runningOther(victim)
	t.Logf("%s owned by n%d; publishing through n%d", q, victim, via)

	var consumers []*failoverConsumer
	for _, b := range c.brokers {
		k := &failoverConsumer{url: b.url(), broker: b.id, seen: map[string]int{}, stop: make(chan struct{})}
		go k.run()
		consumers = append(consumers, k)
	}
	defer func() {
		for _, k := range consumers {
			k.end()
		}
	}()
	for _, k := range consumers {
		k.waitConsuming(t, time.Time{}, 30*time.Second)
	}
	before := publishThrough(t, c, via, q, 100)

	killedAt := time.Now()
	c.kill(victim)
	// The queue serves again when a publish sent after the kill is
	// confirmed.
	after := publishThroughRetrying(t, c, via, q, 1, 60*time.Second)
	servingAt := time.Now()
	t.Logf("%s serving again %v after the kill", q, servingAt.Sub(killedAt).Round(time.Millisecond))
	after = append(after, publishThrough(t, c, via, q, 100)...)
	for _, k := range consumers {
		if k.broker == victim {
			continue
		}
		at := k.waitConsuming(t, killedAt, 30*time.Second)
		wait := at.Sub(servingAt)
		t.Logf("consumer through n%d: consume-ok %v after the queue served again (%d consumes in all)", k.broker, wait.Round(time.Millisecond), k.consumes())
		if wait > 5*time.Second {
			t.Errorf("consumer through n%d: consume-ok %v after the queue served again, want within 5 s", k.broker, wait.Round(time.Millisecond))
		}
	}
	want := append(slices.Clone(before), after...)
	deadline := time.Now().Add(30 * time.Second)
	missing := want
	for time.Now().Before(deadline) {
		missing = missing[:0:0]
		for _, b := range want {
			n := 0
			for _, k := range consumers {
				n += k.count(b)
			}
			if n == 0 {
				missing = append(missing, b)
			}
		}
		if len(missing) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d confirmed messages reached no consumer, e.g. %q", len(missing), len(want), missing[0])
	}
	t.Logf("all %d confirmed messages delivered", len(want))
}

// publishThroughRetrying publishes n messages through broker i, trying
// again (a new connection) while the queue does not serve, for at most
// within.
func publishThroughRetrying(t testing.TB, c *cluster, i int, queue string, n int, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if bodies := publishThroughOnce(c, i, queue, n); len(bodies) == n {
			return bodies
		}
		if time.Now().After(deadline) {
			t.Fatalf("no publish through n%d to %s confirmed within %v", i, queue, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// publishThroughOnce publishes n messages through broker i on one
// connection and returns the bodies, all of them only if every one was
// confirmed (an ack).
func publishThroughOnce(c *cluster, i int, queue string, n int) []string {
	conn, err := amqp.DialConfig(c.b(i).url(), amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return nil
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return nil
	}
	if err := ch.Confirm(false); err != nil {
		return nil
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	var bodies []string
	for k := 0; k < n; k++ {
		b := failoverBody(queue, i, c.b(i).starts, k)
		if err := ch.Publish("", queue, false, false, amqp.Publishing{Body: []byte(b)}); err != nil {
			return nil
		}
		bodies = append(bodies, b)
	}
	timeout := time.After(10 * time.Second)
	for k := 0; k < n; k++ {
		select {
		case cf, ok := <-confirms:
			if !ok || !cf.Ack {
				return nil
			}
		case <-timeout:
			return nil
		}
	}
	return bodies
}

var failoverSeq struct {
	sync.Mutex
	n int
}

// failoverBody is a body no other publish of the test has.
func failoverBody(queue string, i, starts, k int) string {
	failoverSeq.Lock()
	defer failoverSeq.Unlock()
	failoverSeq.n++
	return queue + "-retry-" + itoa(i) + "-" + itoa(starts) + "-" + itoa(k) + "-" + itoa(failoverSeq.n)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// failoverConsumer consumes a queue through one broker, as a client
// would: when its connection or channel ends it connects again and
// consumes again (without declaring), until stopped. It acks what it
// gets and records each consume-ok.
type failoverConsumer struct {
	url    string
	broker int
	stop   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	seen     map[string]int
	consumed []time.Time // each consume-ok
}

func (k *failoverConsumer) end() { k.once.Do(func() { close(k.stop) }) }

func (k *failoverConsumer) run() {
	for {
		select {
		case <-k.stop:
			return
		default:
		}
		k.session()
		select {
		case <-k.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (k *failoverConsumer) session() {
	conn, ds, err := consumeSession(k.url, "cq", 20)
	if err != nil {
		return
	}
	defer conn.Close()
	k.mu.Lock()
	k.consumed = append(k.consumed, time.Now())
	k.mu.Unlock()
	for {
		select {
		case <-k.stop:
			return
		case d, ok := <-ds:
			if !ok {
				return
			}
			k.mu.Lock()
			k.seen[string(d.Body)]++
			k.mu.Unlock()
			if d.Ack(false) != nil {
				return
			}
		}
	}
}

func (k *failoverConsumer) count(body string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[body]
}

func (k *failoverConsumer) consumes() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.consumed)
}

// waitConsuming waits for the consumer's last consume-ok to be after
// since, and returns it: the first consume-ok after since of the session
// that is consuming now.
func (k *failoverConsumer) waitConsuming(t *testing.T, since time.Time, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		k.mu.Lock()
		var last time.Time
		if n := len(k.consumed); n > 0 {
			last = k.consumed[n-1]
		}
		k.mu.Unlock()
		if last.After(since) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("consumer through n%d: no consume-ok after %v within %v", k.broker, since.Format(time.StampMilli), within)
	return time.Time{}
}

// consumeSession dials url and consumes queue q with manual acks and a
// prefetch; the caller closes the connection (nil on an error).
func consumeSession(url, q string, prefetch int) (*amqp.Connection, <-chan amqp.Delivery, error) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return nil, nil, err
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Qos(prefetch, 0, false)
	}
	var ds <-chan amqp.Delivery
	if err == nil {
		ds, err = ch.Consume(q, "", false, false, false, false, nil)
	}
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, ds, nil
}
