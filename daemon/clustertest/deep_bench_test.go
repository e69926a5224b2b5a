package clustertest

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkDeepQueueOwnerKill: three brokers, a 3-replica queue filled
// with N confirmed messages of 1 KiB through its owner, then SIGKILL the
// owner: the time until a publish through another broker is confirmed
// (serve-again-ms, the recovery of the whole log: seals, the source's
// sealed reads, the installations), then every confirmed message is
// consumed and checked. A benchmark, never a timed test:
//
//	SLUICE_DEEP_RECORDS=10000,100000,1000000 go test -run '^$' -bench DeepQueueOwnerKill -benchtime 1x -timeout 60m ./daemon/clustertest
//
// SLUICE_DEEP_RECORDS lists the queue sizes (default 10000),
// SLUICE_DEEP_BODY the body size in bytes (default 1024). The inspection
// budget is raised to fit the log first (`sluice settings set
// recovery.inspect_bytes_max`, the operator's knob; its default of
// 1 GiB a log: docs/design/recovery.md, "Budgets and limits"), since a 1 KiB body log of 1,000,000 records is
// more than 1 GiB of record bytes.
func BenchmarkDeepQueueOwnerKill(b *testing.B) {
	sizes := []int{10_000}
	if s := os.Getenv("SLUICE_DEEP_RECORDS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("SLUICE_DEEP_RECORDS=%q: want positive integers, comma-separated", s)
			}
			sizes = append(sizes, n)
		}
	}
	body := 1024
	if s := os.Getenv("SLUICE_DEEP_BODY"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 16 {
			b.Fatalf("SLUICE_DEEP_BODY=%q: want an integer of at least 16", s)
		}
		body = n
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("records=%d/body=%dB", n, body), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				deepOwnerKill(b, n, body)
			}
		})
	}
}

func deepOwnerKill(b *testing.B, n, body int) {
	c := newCluster(b, 3)
	// The log holds the n publishes and a few epoch records.
	for _, raise := range []struct {
		key        string
		need, dflt int64
	}{{"recovery.inspect_bytes_max", int64(n) * int64(body+64), 1 << 30}, {"recovery.inspect_records_max", int64(n) + 1000, 1_000_000}} {
		if raise.need <= raise.dflt {
			continue
		}
		if out, err := c.sluice("settings", "set", raise.key, strconv.FormatInt(raise.need, 10), "--http", c.b(1).httpAddr); err != nil {
			b.Fatalf("raise %s: %v\n%s", raise.key, err, out)
		}
	}
	const q = "deep"
	owner := declareAndFindOwner(b, c, q)
	fillStart := time.Now()
	deepFill(b, c.b(owner).url(), q, 0, n, body)
	b.Logf("%d confirmed messages of %d B in %v", n, body, time.Since(fillStart).Round(time.Millisecond))
	other := c.runningOther(owner)
	killedAt := time.Now()
	c.kill(owner)
	after := publishThroughRetrying(b, c, other, q, 1, 3*time.Minute)
	pause := time.Since(killedAt)
	b.ReportMetric(float64(pause.Milliseconds()), "serve-again-ms")
	b.Logf("owner n%d killed with %d records: a publish through n%d confirmed %v later", owner, n, other, pause.Round(time.Millisecond))
	consumeStart := time.Now()
	got := deepConsume(b, c.b(other).url(), q, n, after[0], 10*time.Minute)
	b.Logf("consumed %d of %d confirmed (and the one after the kill) in %v", got, n, time.Since(consumeStart).Round(time.Millisecond))
	if got != n {
		b.Fatalf("%d of %d confirmed messages delivered", got, n)
	}
}

// deepFill publishes n messages of size bytes, numbered from first in
// their first 8 bytes, with 1,000 unconfirmed at most; every one must be
// acked.
func deepFill(b testing.TB, url, q string, first, n, size int) {
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	const window = 1000
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, window+16))
	msg := make([]byte, size)
	inFlight := 0
	for k := first; k < first+n; k++ {
		for inFlight >= window {
			if cf := <-confirms; !cf.Ack {
				b.Fatalf("publish %d nacked", cf.DeliveryTag)
			}
			inFlight--
		}
		binary.BigEndian.PutUint64(msg, uint64(k))
		if err := ch.Publish("", q, false, false, amqp.Publishing{Body: msg}); err != nil {
			b.Fatal(err)
		}
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		select {
		case cf := <-confirms:
			if !cf.Ack {
				b.Fatalf("publish %d nacked", cf.DeliveryTag)
			}
		case <-time.After(60 * time.Second):
			b.Fatalf("%d confirms missing after 60 s", inFlight)
		}
	}
}

// deepConsume consumes q through url until every number in [0, n) and
// the body extra were seen, and returns how many of the n it saw.
func deepConsume(b *testing.B, url, q string, n int, extra string, within time.Duration) int {
	seen := make([]bool, n)
	got, extraSeen := 0, false
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && (got < n || !extraSeen) {
		func() {
			conn, ds, err := consumeSession(url, q, 2000)
			if err != nil {
				b.Logf("consume: %v", err)
				return
			}
			defer conn.Close()
			for got < n || !extraSeen {
				select {
				case d, ok := <-ds:
					if !ok {
						return
					}
					if string(d.Body) == extra {
						extraSeen = true
					} else if len(d.Body) >= 8 {
						if k := binary.BigEndian.Uint64(d.Body); k < uint64(n) && !seen[k] {
							seen[k] = true
							got++
						}
					}
					if d.Ack(false) != nil {
						return
					}
				case <-time.After(30 * time.Second):
					return
				}
			}
		}()
	}
	return got
}
