package clustertest

import (
	"os"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestISRHealthyUnderLoad (the number of records behind does not enter
// the rule: docs/design/in-sync.md, "The lag rule"): three healthy brokers, an isr queue of three
// replicas with min in-sync 3 and a lag time of 1 s, 5,000 publishes a
// second through its owner. Followers that stream a few records behind a
// busy owner are in sync: the in-sync set must never shrink (describe,
// read every 100 ms), and no publish may be refused (with min in-sync 3,
// one follower out refuses them all) or left unknown.
// SLUICE_ISR_LOAD_S sets the length (default 10 s; 60 s is the figure
// docs/daemon.md gives).
func TestISRHealthyUnderLoad(t *testing.T) {
	seconds := 10
	if s := os.Getenv("SLUICE_ISR_LOAD_S"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_ISR_LOAD_S=%q: want a positive number of seconds", s)
		}
		seconds = n
	}
	c := newCluster(t, 3)
	if out, err := c.sluice("settings", "set", "replica.lag_time_max_ms", "1000", "--http", c.b(1).httpAddr); err != nil {
		t.Fatalf("settings: %v\n%s", err, out)
	}
	const q = "hot"
	args := amqp.Table{"x-sluice-replicas": int32(3), "x-sluice-policy": "isr", "x-sluice-min-insync": int32(3)}
	warm := newPublisher(q, "warm", []string{c.b(1).url()}, 0, 100)
	warm.args = args
	go warm.run()
	warm.waitConfirmsAfter(t, time.Time{}, 10, 30*time.Second)
	warm.finish()
	qs := c.settle(1, []string{q}, 30*time.Second)
	ownerID := owner(t, qs, q)
	watch := c.runningOther(ownerID)

	p := newPublisher(q, "load", []string{c.b(ownerID).url()}, 0, 5000)
	p.args = args
	start := time.Now()
	go p.run()
	shrinks := 0
	for time.Since(start) < time.Duration(seconds)*time.Second {
		time.Sleep(100 * time.Millisecond)
		line := parseDescribe(c.describe(watch))[q]
		if line.inSync != line.members || line.fenced {
			shrinks++
			t.Errorf("at %v: %s in-sync %s of members %s (fenced %v)", time.Since(start).Round(time.Millisecond), q, line.inSync, line.members, line.fenced)
		}
	}
	p.finish()
	confirmed, nacked, unknown := p.counts()
	took := time.Since(start)
	t.Logf("%d s at 5,000/s asked: %d confirmed (%.0f/s), %d refused, %d unknown; the in-sync set shrank in %d of the reads",
		seconds, confirmed, float64(confirmed)/took.Seconds(), nacked, unknown, shrinks)
	if nacked > 0 || unknown > 0 {
		t.Errorf("%d publishes refused and %d unknown on a healthy cluster", nacked, unknown)
	}
}
