package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// queues are the test's three queues; with three brokers the controller
// gives each broker one to own (the fewest owned first).
var queues = []string{"q0", "q1", "q2"}

// ratePerQueue: 1,000 publishes a second in all (docs/daemon.md, "The
// real-cluster tests").
const ratePerQueue = 333

// startPublishers starts one publisher per queue, the i-th connected
// first to broker i+1 (so that most publishes are forwarded: a queue's
// owner is rarely the broker its client is connected to).
func startPublishers(c *cluster, tag string) []*publisher {
	var urls []string
	for _, b := range c.brokers {
		urls = append(urls, b.url())
	}
	var pubs []*publisher
	for i, q := range queues {
		p := newPublisher(q, tag, urls, i, ratePerQueue)
		go p.run()
		pubs = append(pubs, p)
	}
	return pubs
}

func stopPublishers(pubs []*publisher) {
	for _, p := range pubs {
		p.finish()
	}
}

// owner returns the broker that owns queue q in qs.
func owner(t testing.TB, qs map[string]queueLine, q string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(qs[q].owner, "n%d", &n); err != nil {
		t.Fatalf("queue %s: owner %q", q, qs[q].owner)
	}
	return n
}

// members returns the brokers that are members of queue q in qs.
func members(qs map[string]queueLine, q string) []int {
	var ns []int
	for _, m := range strings.Split(qs[q].members, ",") {
		var n int
		if _, err := fmt.Sscanf(m, "n%d", &n); err == nil {
			ns = append(ns, n)
		}
	}
	return ns
}

// running returns a broker that runs, other than the ones given.
func (c *cluster) runningOther(not ...int) int {
	for _, b := range c.brokers {
		if b.running() && !slices.Contains(not, b.id) {
			return b.id
		}
	}
	return 0
}

// publishThrough publishes n messages to queue through broker i only and
// returns the bodies confirmed; it fails the test if any is not.
func publishThrough(t *testing.T, c *cluster, i int, queue string, n int) []string {
	t.Helper()
	conn, err := amqp.DialConfig(c.b(i).url(), amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		t.Fatalf("dial n%d: %v", i, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, queueArgs); err != nil {
		t.Fatalf("declare %s at n%d: %v", queue, i, err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	var bodies []string
	for k := 0; k < n; k++ {
		b := fmt.Sprintf("%s-via-n%d-%d-%04d", queue, i, c.b(i).starts, k)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{Body: []byte(b)})
		cancel()
		if err != nil {
			t.Fatalf("publish via n%d: %v", i, err)
		}
		bodies = append(bodies, b)
	}
	timeout := time.After(30 * time.Second)
	for k := 0; k < n; k++ {
		select {
		case cf, ok := <-confirms:
			if !ok || !cf.Ack {
				t.Fatalf("publish %d via n%d to %s: ack %v, channel open %v", k, i, queue, cf.Ack, ok)
			}
		case <-timeout:
			t.Fatalf("publishes via n%d to %s: %d of %d confirmed in 30 s", i, queue, k, n)
		}
	}
	return bodies
}

// fixedPublisher wraps bodies confirmed outside a publisher so that verify
// checks them too.
func fixedPublisher(queue, tag string, bodies []string) *publisher {
	p := newPublisher(queue, tag, nil, 0, 1)
	// body(seq) must give the same strings: keep them by index.
	p.fixed = bodies
	for i := range bodies {
		p.confirmed[i] = time.Now()
	}
	return p
}

// TestOwnerKill: three brokers, three queues of three replicas, 1,000
// confirmed publishes a second through brokers that mostly do not own the
// queue (forwarding). SIGKILL the owner of q0: its queues are recovered on
// the two others and serve again (the next confirm comes after the
// recovery; the pause is reported), the queues it only followed are held
// (same epoch and owner), nothing confirmed is lost, unknown outcomes are
// counted and reported. Then restart it: it serves again (publishes
// through it are confirmed), and every queue is back on 3 members in sync
// within 60 s.
func TestOwnerKill(t *testing.T) {
	c, pubs, qs, victim, owned := loadedCluster(t, 3)
	leader := c.leader(c.runningOther(victim))
	t.Logf("killing n%d, the owner of %v (the metadata leader is n%d)", victim, owned, leader)
	var seqs []int
	for _, p := range pubs {
		seqs = append(seqs, p.lastSeq())
	}
	killedAt := time.Now()
	c.kill(victim)
	firsts := make([]time.Time, len(pubs))
	for i, p := range pubs {
		// The first confirm of a publish sent after the kill: one already
		// on its way does not show the queue serving again.
		firsts[i] = p.waitSentAfter(t, seqs[i], 50, 60*time.Second)
	}
	time.Sleep(time.Second) // the window after each first confirm
	for i, p := range pubs {
		if slices.Contains(owned, p.queue) {
			t.Logf("%s (owner killed): first confirm %v after the kill", p.queue, firsts[i].Sub(killedAt).Round(time.Millisecond))
			continue
		}
		// Held (the follower-loss hold): no pause.
		gap := p.maxGap(killedAt.Add(-time.Second), firsts[i].Add(time.Second))
		t.Logf("%s (a follower killed): longest gap between confirms %v", p.queue, gap.Round(time.Millisecond))
		if gap > 500*time.Millisecond {
			t.Errorf("%s lost only a follower, yet waited %v between confirms (want at most 0.5 s under the hold)", p.queue, gap.Round(time.Millisecond))
		}
	}
	other := c.runningOther(victim)
	after := c.settle(other, owned, 30*time.Second)
	under := parseDescribe(c.describe(other, "--under-replicated"))
	for _, q := range owned {
		if owner(t, after, q) == victim || slices.Contains(members(after, q), victim) {
			t.Errorf("%s after the kill: %+v still names n%d", q, after[q], victim)
		}
		// Two copies of the three declared: under-replicated, whatever
		// its in-sync set says of the members it has.
		if _, listed := under[q]; len(members(after, q)) < 3 && !listed {
			t.Errorf("%s runs on %v of 3 replicas, and describe --under-replicated does not list it", q, members(after, q))
		}
	}
	// The queues it only followed are held (the follower-loss hold): the
	// same epoch and owner, the killed broker still a member.
	for _, q := range queues {
		if !slices.Contains(owned, q) && (after[q].epoch != qs[q].epoch || after[q].owner != qs[q].owner || !slices.Contains(members(after, q), victim)) {
			t.Errorf("%s lost only a follower: %+v, before the kill %+v: the hold keeps its assignment", q, after[q], qs[q])
		}
	}

	// The killed broker comes back and serves clients again.
	restartedAt := time.Now()
	c.start(victim)
	c.waitReady(victim, 30*time.Second)
	t.Logf("n%d ready again %v after its restart", victim, time.Since(restartedAt).Round(time.Millisecond))
	var extra []*publisher
	for _, q := range queues {
		extra = append(extra, fixedPublisher(q, "via", publishThrough(t, c, victim, q, 20)))
	}
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Now(), 100, 30*time.Second)
	}
	// Back with a new process, it rejoins the queues it was held in (a
	// successor's learner, admitted once caught up), and those it owned
	// get their third copy back on it (a new copy's learner: its older
	// history kept apart, a fresh copy caught up while publishing goes
	// on, admitted as one member more): every queue on 3 members in sync
	// within 60 s.
	full := c.settleFull(victim, queues, 3, 60*time.Second)
	t.Logf("every queue back on 3 members in sync %v after the restart", time.Since(restartedAt).Round(time.Millisecond))
	for _, q := range owned {
		if !slices.Contains(members(full, q), victim) || full[q].epoch != after[q].epoch {
			t.Errorf("%s after the restart: %+v, want n%d added as a member at epoch %s, without a recovery", q, full[q], victim, after[q].epoch)
		}
	}
	if under := parseDescribe(c.describe(victim, "--under-replicated")); len(under) != 0 {
		t.Errorf("describe --under-replicated lists %v with every queue on 3 members in sync", under)
	}
	stopPublishers(pubs)
	confirmed, nacked, unknown, missing := verify(t, c, append(pubs, extra...))
	t.Logf("in all: %d confirmed, %d of them not delivered; %d nacked; %d unknown outcomes", confirmed, missing, nacked, unknown)
}

// loadedCluster starts n brokers and a publisher per queue, waits for 300
// confirms of each and for the queues to settle, and returns them with
// the owner of q0 (victim) and the queues it owns.
func loadedCluster(t *testing.T, n int) (c *cluster, pubs []*publisher, qs map[string]queueLine, victim int, owned []string) {
	t.Helper()
	c = newCluster(t, n)
	pubs = startPublishers(c, "w")
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Time{}, 300, 30*time.Second)
	}
	qs = c.settle(1, queues, 30*time.Second)
	victim = owner(t, qs, "q0")
	for _, q := range queues {
		if owner(t, qs, q) == victim {
			owned = append(owned, q)
		}
	}
	return c, pubs, qs, victim, owned
}

// TestFollowerKill: SIGKILL a broker that only follows q0 (it owns another
// queue): q0's confirms continue without a pause above 0.5 s and no
// outcome unknown (the follower-loss hold), and nothing confirmed is lost.
func TestFollowerKill(t *testing.T) {
	c := newCluster(t, 3)
	pubs := startPublishers(c, "w")
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Time{}, 300, 30*time.Second)
	}
	qs := c.settle(1, queues, 30*time.Second)
	o := owner(t, qs, "q0")
	leader := c.leader(o)
	victim := 0
	for _, m := range members(qs, "q0") {
		if m != o && (victim == 0 || m != leader) {
			victim = m // a follower of q0, the metadata leader only if both are
		}
	}
	_, _, unknownBefore := pubs[0].counts()
	t.Logf("killing n%d, a follower of q0 (owner n%d; metadata leader n%d)", victim, o, leader)
	killedAt := time.Now()
	c.kill(victim)
	pubs[0].waitConfirmsAfter(t, killedAt, 100, 60*time.Second)
	gap := pubs[0].maxGap(killedAt, time.Now())
	_, _, unknownAfter := pubs[0].counts()
	t.Logf("q0 after its follower's kill: longest gap between confirms %v, %d unknown outcomes", gap.Round(time.Millisecond), unknownAfter-unknownBefore)
	// The follower-loss hold (docs/design/follower-loss-hold.md, its
	// default of 5 min): q0 lost
	// only a follower and keeps its assignment, so its owner goes on
	// confirming with the follower left: no publish ends unknown, and no
	// confirm waits long.
	if unknownAfter != unknownBefore {
		t.Errorf("q0 lost only a follower, yet %d of its publishes ended unknown (the hold keeps its assignment)", unknownAfter-unknownBefore)
	}
	if gap > 500*time.Millisecond {
		t.Errorf("q0 lost only a follower, yet waited %v between confirms (want at most 0.5 s under the hold)", gap.Round(time.Millisecond))
	}
	// The metadata leader's placement counts the hold.
	if l := c.leader(o); l != 0 {
		_, body, err := c.httpGet(l, "/metrics")
		if err != nil || strings.Contains(body, "\nsluice_queues_held 0\n") || !strings.Contains(body, "\nsluice_queues_held ") ||
			strings.Contains(body, `sluice_holds_total{event="entered"} 0`+"\n") {
			t.Errorf("n%d, the metadata leader, counts no held queue (%v):\n%s", l, err, body)
		}
	}
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Now(), 50, 60*time.Second)
	}
	stopPublishers(pubs)
	verify(t, c, pubs)
}

// TestFollowerPaused: SIGSTOP a follower of q0 past the lag time: `sluice
// describe --under-replicated` lists q0 without it in the in-sync set;
// after SIGCONT it catches up and the list is empty again.
func TestFollowerPaused(t *testing.T) {
	c := newCluster(t, 3)
	// A short lag time, and a liveness expiry far above the pause, so the
	// paused broker leaves the in-sync sets and never the live set.
	for _, kv := range [][2]string{{"replica.lag_time_max_ms", "1000"}, {"liveness.expiry_ms", "30000"}} {
		if out, err := c.sluice("settings", "set", kv[0], kv[1], "--http", c.b(1).httpAddr); err != nil {
			t.Fatalf("settings set %s: %v\n%s", kv[0], err, out)
		}
	}
	pubs := startPublishers(c, "w")
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Time{}, 300, 30*time.Second)
	}
	qs := c.settle(1, queues, 30*time.Second)
	o := owner(t, qs, "q0")
	leader := c.leader(o)
	victim := 0
	for _, m := range members(qs, "q0") {
		if m != o && (victim == 0 || m != leader) {
			victim = m
		}
	}
	if out := c.describe(o, "--under-replicated"); out != "" {
		t.Fatalf("describe --under-replicated before the pause:\n%s", out)
	}
	t.Logf("pausing n%d, a follower of q0 (owner n%d; metadata leader n%d)", victim, o, leader)
	c.signal(victim, syscall.SIGSTOP)
	stoppedAt := time.Now()
	var listed string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out := c.describe(o, "--under-replicated")
		if q, ok := parseDescribe(out)["q0"]; ok && !strings.Contains(q.inSync, fmt.Sprintf("n%d", victim)) {
			listed = out
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if listed == "" {
		t.Fatalf("q0 not listed under-replicated within 20 s of pausing n%d:\n%s", victim, c.describe(o))
	}
	t.Logf("listed %v after the pause:\n%s", time.Since(stoppedAt).Round(time.Millisecond), listed)
	// q0 keeps confirming without it (W = 2 of the two others).
	pubs[0].waitConfirmsAfter(t, time.Now(), 100, 20*time.Second)
	c.signal(victim, syscall.SIGCONT)
	contAt := time.Now()
	deadline = time.Now().Add(30 * time.Second)
	out := "?"
	for time.Now().Before(deadline) {
		if out = c.describe(o, "--under-replicated"); out == "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out != "" {
		t.Fatalf("still under-replicated 30 s after SIGCONT:\n%s\n%s", out, c.describe(o))
	}
	t.Logf("in sync again %v after SIGCONT", time.Since(contAt).Round(time.Millisecond))
	// Nothing was fenced: the pause stayed under the liveness expiry.
	if q := parseDescribe(c.describe(o))["q0"]; q.epoch != qs["q0"].epoch {
		t.Errorf("q0's epoch moved from %s to %s: the pause cost a recovery", qs["q0"].epoch, q.epoch)
	}
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Now(), 50, 30*time.Second)
	}
	stopPublishers(pubs)
	verify(t, c, pubs)
}
