package daemon

import (
	"context"
	"encoding/binary"
	"os"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkRestartDeepQueue: a single broker holding N confirmed 1 KiB
// messages drains on SIGTERM's path (Shutdown) and starts again on the
// same directory; reported is the time from the start until a publish is
// confirmed (serve-again-ms: the restart's fence, the seal that hashes
// the log, its installation in place), and every message is consumed and
// checked. A benchmark, never a timed test:
//
//	SLUICE_DEEP_RECORDS=1000000 go test -run '^$' -bench RestartDeepQueue -benchtime 1x -timeout 30m ./daemon
//
// SLUICE_DEEP_RECORDS sets N (default 10000).
func BenchmarkRestartDeepQueue(b *testing.B) {
	n := 10_000
	if s := os.Getenv("SLUICE_DEEP_RECORDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("SLUICE_DEEP_RECORDS=%q: want a positive integer", s)
		}
		n = v
	}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		s, err := Start(Config{DataDir: dir, AMQPAddr: "127.0.0.1:0", Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		url := "amqp://guest:guest@" + s.Addr().String() + "/"
		fillStart := time.Now()
		restartFill(b, url, n)
		b.Logf("%d confirmed 1 KiB messages in %v", n, time.Since(fillStart).Round(time.Millisecond))
		if err := s.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		started := time.Now()
		s, err = Start(Config{DataDir: dir, AMQPAddr: "127.0.0.1:0", Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		url = "amqp://guest:guest@" + s.Addr().String() + "/"
		for {
			if restartPublishOne(url) {
				break
			}
			if time.Since(started) > 10*time.Minute {
				b.Fatal("no publish confirmed within 10 minutes of the restart")
			}
			time.Sleep(50 * time.Millisecond)
		}
		pause := time.Since(started)
		b.ReportMetric(float64(pause.Milliseconds()), "serve-again-ms")
		b.Logf("restarted with %d records: a publish confirmed %v after the start", n, pause.Round(time.Millisecond))
		if got := restartConsume(b, url, n); got != n {
			b.Fatalf("%d of %d confirmed messages delivered after the restart", got, n)
		}
		s.Shutdown(context.Background())
	}
}

func restartFill(b *testing.B, url string, n int) {
	c, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("deep", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	ch.Confirm(false)
	const window = 1000
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window+16))
	body := make([]byte, 1024)
	inFlight := 0
	for k := 0; k < n; k++ {
		for inFlight >= window {
			if cf := <-confirms; !cf.Ack {
				b.Fatal("nack")
			}
			inFlight--
		}
		binary.BigEndian.PutUint64(body, uint64(k))
		if err := ch.Publish("", "deep", false, false, amqp.Publishing{Body: body}); err != nil {
			b.Fatal(err)
		}
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		if cf := <-confirms; !cf.Ack {
			b.Fatal("nack")
		}
	}
}

// restartPublishOne publishes one short message and reports whether it
// was confirmed (an ack) within 5 s.
func restartPublishOne(url string) bool {
	c, err := amqp.Dial(url)
	if err != nil {
		return false
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil || ch.Confirm(false) != nil {
		return false
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	if ch.Publish("", "deep", false, false, amqp.Publishing{Body: []byte("after")}) != nil {
		return false
	}
	select {
	case cf := <-confirms:
		return cf.Ack
	case <-time.After(5 * time.Second):
		return false
	}
}

func restartConsume(b *testing.B, url string, n int) int {
	c, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ch, _ := c.Channel()
	ch.Qos(2000, 0, false)
	ds, err := ch.Consume("deep", "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	seen := make([]bool, n)
	got := 0
	for got < n {
		select {
		case d := <-ds:
			if len(d.Body) == 1024 {
				if k := binary.BigEndian.Uint64(d.Body); k < uint64(n) && !seen[k] {
					seen[k] = true
					got++
				}
			}
			d.Ack(false)
		case <-time.After(30 * time.Second):
			return got
		}
	}
	return got
}
