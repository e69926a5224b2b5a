package clustertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkCluster is `just bench-daemon`'s Sluice half (a benchmark,
// never a timed test): three brokers on this host, a queue of three
// replicas under majority_durable (W = 2, each copy fdatasynced), one
// amqp091-go publisher connected to the queue's owner keeping window
// publishes unconfirmed. Per body size it reports confirmed msgs/s and
// the p50 and p99 of the time from a publish's write to its confirm;
// then the owner-kill pause: publishing at 500 msg/s through another
// broker, the time from SIGKILL of the owner to the next confirm.
//
//	go test -run '^$' -bench Cluster -benchtime 20000x ./daemon/clustertest
func BenchmarkCluster(b *testing.B) {
	c := newCluster(b, 3)
	runs := benchWindows(b, func(b *testing.B, q string) string { return c.b(declareAndFindOwner(b, c, q)).url() })
	b.Run("owner-kill", func(b *testing.B) {
		runs++
		q := fmt.Sprintf("bench-kill-%d", runs)
		owner := declareAndFindOwner(b, c, q)
		pause, unknown := killPause(b, q, c.b(c.runningOther(owner)).url(), func() { c.kill(owner) })
		b.Logf("owner n%d killed; first confirm after %v; %d unknown outcomes", owner, pause.Round(time.Millisecond), unknown)
		// Back to three brokers for the next run.
		c.start(owner)
		c.waitReady(owner, 30*time.Second)
	})
}

// benchWindows runs the throughput and latency sub-benchmarks, shared by
// the Sluice and RabbitMQ halves: per body size, a window of 1,000
// publishes unconfirmed, then one publish at a time (the confirm latency
// itself, without a window's queueing in front of it), each on a fresh
// queue that declare creates and whose serving node's URL it returns. It
// returns how many queues it declared.
func benchWindows(b *testing.B, declare func(b *testing.B, q string) string) int {
	runs := 0 // each sub-benchmark runs more than once (b.N=1 first): a queue per run
	for _, size := range []int{128, 1024} {
		for _, window := range []int{1000, 1} {
			b.Run(fmt.Sprintf("window=%d/body=%dB", window, size), func(b *testing.B) {
				runs++
				q := fmt.Sprintf("bench-%d-%d", size, runs)
				url := declare(b, q)
				n := b.N
				if window == 1 {
					n = min(b.N, 2000)
				}
				rate, p50, p99 := publishWindow(b, url, q, size, n, window)
				b.ReportMetric(rate, "confirmed-msgs/s")
				b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
				b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
			})
		}
	}
	return runs
}

// killPause publishes to queue q at 500 msg/s through url, kills the
// queue's owner (kill) once 500 are confirmed, and reports the time from
// the kill to the next confirm (pause-ms) and the publishes whose outcome
// is unknown.
func killPause(b *testing.B, q, url string, kill func()) (time.Duration, int) {
	p := newPublisher(q, "k", []string{url}, 0, 500)
	go p.run()
	p.waitConfirmsAfter(b, time.Time{}, 500, 30*time.Second)
	killedAt, seq := time.Now(), p.lastSeq()
	kill()
	first := p.waitSentAfter(b, seq, 1, 60*time.Second)
	p.finish()
	_, _, unknown := p.counts()
	b.ReportMetric(float64(first.Sub(killedAt).Milliseconds()), "pause-ms")
	b.ReportMetric(float64(unknown), "unknown")
	return first.Sub(killedAt), unknown
}

// declareQueue declares queue q (three replicas, durable; the same
// arguments for both halves) through the broker at url.
func declareQueue(b *testing.B, url, q string) {
	b.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, queueArgs); err != nil {
		b.Fatal(err)
	}
}

// declareAndFindOwner declares queue q (three replicas) and returns its
// owner once every replica is in sync.
func declareAndFindOwner(b *testing.B, c *cluster, q string) int {
	b.Helper()
	declareQueue(b, c.b(1).url(), q)
	return owner(b, c.settle(1, []string{q}, 30*time.Second), q)
}

// publishWindow publishes n bodies of size bytes to queue q at url with up
// to window unconfirmed, and returns the confirmed rate and the p50 and
// p99 confirm latencies.
func publishWindow(b *testing.B, url, q string, size, n, window int) (float64, time.Duration, time.Duration) {
	b.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window+16))
	body := make([]byte, size)
	sent := make([]time.Time, n+1) // by delivery tag
	lat := make([]time.Duration, 0, n)
	var mu sync.Mutex
	slots := make(chan struct{}, window)
	done := make(chan error, 1)
	go func() {
		for k := 0; k < n; k++ {
			cf, ok := <-confirms
			if !ok || !cf.Ack {
				done <- fmt.Errorf("confirm %d: ack %v, open %v", k, cf.Ack, ok)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(sent[cf.DeliveryTag]))
			mu.Unlock()
			<-slots
		}
		done <- nil
	}()
	b.ResetTimer()
	start := time.Now()
	for k := 1; k <= n; k++ {
		slots <- struct{}{}
		mu.Lock()
		sent[k] = time.Now()
		mu.Unlock()
		if err := ch.PublishWithContext(context.Background(), "", q, false, false, amqp.Publishing{Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	return float64(n) / elapsed.Seconds(), lat[len(lat)/2], lat[len(lat)*99/100]
}
