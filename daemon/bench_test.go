package daemon

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkConfirmedPublish: one amqp091-go publisher on one confirm
// channel, keeping up to 1,000 publishes unconfirmed, 128 B and 1 KiB bodies, to
// one queue of a single-node broker on fsio (fdatasync per group commit).
// Reports confirmed msgs/s. Not a timed test: `go test -run '^$' -bench
// ConfirmedPublish ./daemon`.
func BenchmarkConfirmedPublish(b *testing.B) {
	for _, size := range []int{128, 1024} {
		b.Run(fmt.Sprintf("body=%dB", size), func(b *testing.B) { benchConfirmed(b, size) })
	}
}

func benchConfirmed(b *testing.B, size int) {
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
	if _, err := ch.QueueDeclare("bench", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	ch.Confirm(false)
	const window = 1000
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window))
	body := make([]byte, size)
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
		if err := ch.Publish("", "bench", false, false, amqp.Publishing{Body: body}); err != nil {
			b.Fatal(err)
		}
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		if cf := <-confirms; !cf.Ack {
			b.Fatal("nack")
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "confirmed/s")
}

// BenchmarkConfirmLatency: one publish at a time (the next after the
// previous one's confirm), 128-byte bodies: the round trip of one confirm,
// which includes one fdatasync. Reports p50 and p99.
func BenchmarkConfirmLatency(b *testing.B) {
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
	if _, err := ch.QueueDeclare("lat", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	ch.Confirm(false)
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	body := make([]byte, 128)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := ch.Publish("", "lat", false, false, amqp.Publishing{Body: body}); err != nil {
			b.Fatal(err)
		}
		if cf := <-confirms; !cf.Ack {
			b.Fatal("nack")
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
