package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkFanout: what routing through an exchange costs. One amqp091-go
// publisher on one confirm channel, up to 1,000 publishes unconfirmed,
// 128 B bodies, to one single-node broker on fsio: to a queue through the
// default exchange (the baseline), through a direct exchange to one queue,
// and through a fanout exchange to 3 and to 10 queues. A publish is
// confirmed once every queue it reaches stored it. Reports confirmed
// publishes/s and queue writes/s (publishes times the queues each
// reaches); compare within one run. `go test -run '^$' -bench Fanout
// ./daemon` (just bench-exchanges).
func BenchmarkFanout(b *testing.B) {
	for _, c := range []struct {
		name   string
		kind   string
		queues int
	}{{"default", "", 1}, {"direct-1", "direct", 1}, {"fanout-3", "fanout", 3}, {"fanout-10", "fanout", 10}} {
		b.Run(c.name, func(b *testing.B) { benchFanout(b, c.kind, c.queues) })
	}
}

func benchFanout(b *testing.B, kind string, queues int) {
	s, err := Start(Config{DataDir: b.TempDir(), AMQPAddr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	c, err := amqp.Dial("amqp://guest:guest@" + s.Addr().String() + "/")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ch, _ := c.Channel()
	ex, key := "", "q0"
	if kind != "" {
		ex, key = "bench-"+kind, "k"
		if err := ch.ExchangeDeclare(ex, kind, true, false, false, false, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := range queues {
		q := fmt.Sprintf("q%d", i)
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			b.Fatal(err)
		}
		if ex != "" {
			if err := ch.QueueBind(q, key, ex, false, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	ch.Confirm(false)
	const window = 1000
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window))
	body := make([]byte, 128)
	b.ResetTimer()
	start := time.Now()
	inFlight := 0
	for i := 0; i < b.N; i++ {
		for inFlight >= window {
			if cf := <-confirms; !cf.Ack {
				b.Fatal("nack")
			}
			inFlight--
		}
		if err := ch.Publish(ex, key, false, false, amqp.Publishing{Body: body}); err != nil {
			b.Fatal(err)
		}
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		if cf := <-confirms; !cf.Ack {
			b.Fatal("nack")
		}
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/secs, "confirmed/s")
	b.ReportMetric(float64(b.N*queues)/secs, "queue-writes/s")
}

// BenchmarkReplyQueue: an RPC client's reply queue, RabbitMQ's tutorial
// way: declare an exclusive, server-named, auto-delete queue, consume
// from it, cancel (which deletes it), one after another on one broker.
// Reports the time of one declare-to-deleted cycle (the deletion waits
// for its commit: a passive declare of the name is 404). `go test -run
// '^$' -bench ReplyQueue ./daemon`.
func BenchmarkReplyQueue(b *testing.B) {
	s, err := Start(Config{DataDir: b.TempDir(), AMQPAddr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	c, err := amqp.Dial("amqp://guest:guest@" + s.Addr().String() + "/")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ch, _ := c.Channel()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ch.Consume(q.Name, "reply", true, false, false, false, nil); err != nil {
			b.Fatal(err)
		}
		if err := ch.Cancel("reply", false); err != nil {
			b.Fatal(err)
		}
		for {
			pc, _ := c.Channel()
			_, err := pc.QueueDeclarePassive(q.Name, false, true, true, false, nil)
			if isCode(err, amqp.NotFound) {
				break
			}
			if err != nil && !isCode(err, amqp.ResourceLocked) {
				b.Fatalf("passive declare of %s: %v", q.Name, err)
			}
			pc.Close()
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/cycle")
}
