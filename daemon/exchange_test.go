package daemon

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// publishTo publishes bodies to exchange ex with routing key rk on a new
// confirm channel of c and wants every one acked.
func publishTo(t *testing.T, c *amqp.Connection, ex, rk string, bodies ...string) {
	t.Helper()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm.select: %v", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, len(bodies)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, b := range bodies {
		if err := ch.PublishWithContext(ctx, ex, rk, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(b)}); err != nil {
			t.Fatalf("publish %s to %q: %v", b, ex, err)
		}
	}
	for range bodies {
		select {
		case c := <-confirms:
			if !c.Ack {
				t.Fatalf("publish %d to %q nacked", c.DeliveryTag, ex)
			}
		case <-ctx.Done():
			t.Fatalf("publishes to %q: no confirm in 10 s", ex)
		}
	}
}

// TestServeExchanges runs RabbitMQ's publish/subscribe, routing and topics
// tutorials against one broker: a fanout exchange delivers each message
// to every bound queue, a direct one by key, a topic one by pattern; an
// exchange binding and an alternate exchange route on; a missing exchange
// is 404 on the channel; deleting an exchange ends its routes.
func TestServeExchanges(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	for _, x := range [][2]string{{"logs", "fanout"}, {"direct_logs", "direct"}, {"topic_logs", "topic"}} {
		if err := ch.ExchangeDeclare(x[0], x[1], true, false, false, false, nil); err != nil {
			t.Fatalf("declare %s: %v", x[0], err)
		}
	}
	for _, q := range []string{"a", "b"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	binds := []struct{ q, key, ex string }{{"a", "", "logs"}, {"b", "", "logs"}, {"a", "error", "direct_logs"},
		{"b", "info", "direct_logs"}, {"a", "*.critical", "topic_logs"}, {"b", "kern.#", "topic_logs"}}
	for _, b := range binds {
		if err := ch.QueueBind(b.q, b.key, b.ex, false, nil); err != nil {
			t.Fatalf("bind %s to %s: %v", b.q, b.ex, err)
		}
	}
	publishTo(t, c, "logs", "", "f1", "f2")
	publishTo(t, c, "direct_logs", "error", "e1")
	publishTo(t, c, "direct_logs", "info", "i1")
	publishTo(t, c, "direct_logs", "debug", "d1") // no binding: acked, dropped
	publishTo(t, c, "topic_logs", "kern.critical", "k1")
	publishTo(t, c, "topic_logs", "user.critical", "u1")
	if got, want := fmt.Sprint(consume(t, s, "a", 4)), "[f1 f2 e1 k1]"; got != want {
		t.Fatalf("queue a got %s, want %s", got, want)
	}
	// k1 routes to a by *.critical and to b by kern.#: once each.
	if got, want := fmt.Sprint(consume(t, s, "b", 4)), "[f1 f2 i1 k1]"; got != want {
		t.Fatalf("queue b got %s, want %s", got, want)
	}
	if err := ch.Publish("no-such", "", false, false, amqp.Publishing{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclarePassive("a", true, false, false, false, nil); !isCode(err, amqp.NotFound) {
		t.Fatalf("after a publish to a missing exchange: %v, want the channel closed with 404", err)
	}
	// Exchange-to-exchange bindings and an alternate exchange: "front"
	// hands what it routes nowhere to "spill" (fanout to b), and its key
	// "a.b" reaches topic_logs through an exchange binding.
	ch, _ = c.Channel()
	if err := ch.ExchangeDeclare("spill", "fanout", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("front", "direct", true, false, false, false, amqp.Table{"alternate-exchange": "spill"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("b", "", "spill", false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeBind("topic_logs", "kern.x", "front", false, nil); err != nil {
		t.Fatalf("exchange.bind: %v", err)
	}
	publishTo(t, c, "front", "kern.x", "via-binding")
	publishTo(t, c, "front", "other", "via-alternate")
	if got, want := fmt.Sprint(consume(t, s, "b", 2)), "[via-binding via-alternate]"; got != want {
		t.Fatalf("queue b got %s, want %s", got, want)
	}
	if err := ch.ExchangeUnbind("topic_logs", "kern.x", "front", false, nil); err != nil {
		t.Fatalf("exchange.unbind: %v", err)
	}
	if err := ch.ExchangeDelete("logs", false, false); err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclarePassive("logs", "fanout", true, false, false, false, nil); !isCode(err, amqp.NotFound) {
		t.Fatalf("a deleted exchange: %v, want 404", err)
	}
}

func isCode(err error, code int) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == code
}

// TestClusterExchanges: publish/subscribe across a three-broker cluster
// with clients on different brokers: the exchange declared at one, the
// queues and their bindings at the others, the publishes at a third; each
// queue gets every message, in order, wherever its owner is.
func TestClusterExchanges(t *testing.T) {
	addrs := reservePorts(t, 3)
	ss := startCluster(t, members(addrs), []uint32{1, 2, 3})
	for _, s := range ss {
		waitLeader(t, s)
	}
	dialCh := func(n uint32) (*amqp.Connection, *amqp.Channel) {
		c := mustDial(t, ss[n])
		ch, err := c.Channel()
		if err != nil {
			t.Fatal(err)
		}
		return c, ch
	}
	c1, ch1 := dialCh(1)
	defer c1.Close()
	if err := ch1.ExchangeDeclare("news", "fanout", true, false, false, false, nil); err != nil {
		t.Fatalf("declare at n1: %v", err)
	}
	for n, q := range map[uint32]string{2: "readers-2", 3: "readers-3"} {
		c, ch := dialCh(n)
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatalf("declare %s at n%d: %v", q, n, err)
		}
		// A bind right after the declare of the exchange elsewhere, and a
		// publish right after the bind: each sees what came before it.
		if err := ch.QueueBind(q, "", "news", false, nil); err != nil {
			t.Fatalf("bind %s at n%d: %v", q, n, err)
		}
		c.Close()
	}
	var bodies []string
	for i := range 30 {
		bodies = append(bodies, fmt.Sprintf("n%d", i))
	}
	c3, _ := dialCh(3)
	publishTo(t, c3, "news", "", bodies...)
	c3.Close()
	want := fmt.Sprint(bodies)
	for n, q := range map[uint32]string{1: "readers-2", 2: "readers-3"} {
		if got := fmt.Sprint(consume(t, ss[n], q, len(bodies))); got != want {
			t.Fatalf("%s consumed at n%d: %s, want %s", q, n, got, want)
		}
	}
}
