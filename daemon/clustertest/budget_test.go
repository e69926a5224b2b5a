package clustertest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/daemon"
)

// budgetSetAside makes q0's recovery read another broker's log under a
// budget smaller than that log: the lower-id survivor, the recovery's
// candidate, is paused while 200 publishes are confirmed by the owner and
// the other follower, so that the other's log is the longer one, the
// source; then the owner is killed. It returns the candidate, the other
// survivor and the bodies confirmed.
func budgetSetAside(t *testing.T, c *cluster) (lo, hi int, bodies []string) {
	publishThrough(t, c, 1, "q0", 10)
	qs := c.settle(1, []string{"q0"}, 30*time.Second)
	victim := owner(t, qs, "q0")
	var survivors []int
	for _, b := range c.brokers {
		if b.id != victim {
			survivors = append(survivors, b.id)
		}
	}
	lo, hi = survivors[0], survivors[1]
	if out, err := c.sluice("settings", "set", "recovery.inspect_records_max", "50", "--http", c.b(hi).httpAddr); err != nil {
		t.Fatalf("settings: %v\n%s", err, out)
	}
	c.signal(lo, syscall.SIGSTOP)
	bodies = publishThroughRetrying(t, c, hi, "q0", 200, 60*time.Second)
	c.kill(victim)
	c.signal(lo, syscall.SIGCONT)
	t.Logf("q0's owner n%d killed with n%d paused while 200 were confirmed by n%d", victim, lo, hi)
	return lo, hi, bodies
}

// TestRecoveryBudgetSetAside: a recovery whose source is another broker's
// log reads it, and a budget smaller than that log blocks it: the queue
// stays fenced, describe names the budget (set-aside=...), and raising it
// lets the next attempt through, every confirmed message delivered.
func TestRecoveryBudgetSetAside(t *testing.T) {
	c := newCluster(t, 3)
	lo, hi, bodies := budgetSetAside(t, c)
	var line string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !strings.Contains(line, "set-aside="); {
		time.Sleep(100 * time.Millisecond)
		line = c.describe(lo, "--unavailable")
	}
	if !strings.Contains(line, "inspection budget exhausted") || !strings.Contains(line, "recovery.inspect_records_max") {
		t.Fatalf("q0 at its candidate n%d: %q, want it fenced with the budget named\n%s", lo, line, c.describe(hi))
	}
	t.Logf("fenced, as describe says: %s", strings.TrimSpace(line))
	if out, err := c.sluice("settings", "set", "recovery.inspect_records_max", "1000000", "--http", c.b(hi).httpAddr); err != nil {
		t.Fatalf("settings: %v\n%s", err, out)
	}
	raisedAt := time.Now()
	c.settle(lo, []string{"q0"}, 60*time.Second)
	t.Logf("q0 recovered %v after the budget was raised (a change of the budget retries at once)", time.Since(raisedAt).Round(time.Millisecond))
	consumeConfirmed(t, c, lo, hi, bodies)
}

func consumeConfirmed(t *testing.T, c *cluster, lo, hi int, bodies []string) {
	t.Helper()
	want := map[string]bool{}
	for _, b := range bodies {
		want[b] = true
	}
	seen := consumeAll(t, []string{c.b(lo).url(), c.b(hi).url()}, "q0", want, 30*time.Second)
	for b := range want {
		if seen[b] == 0 {
			t.Fatalf("confirmed %q not delivered after the recovery", b)
		}
	}
}

// TestRecoveryRetry: as TestRecoveryBudgetSetAside, the budget too small,
// but with the budget kept: once the candidate's backoff has grown to 4 s
// (its third set-aside), `sluice recovery retry q0` has the next attempt
// start at once, well inside that backoff; a second retry while that
// attempt is blocked starts it over at once. The describe of every broker
// shows the attempts (the candidate's set aside with reason
// inspect-records, the other survivor's seal as observed),
// /metrics counts them by reason, and once the budget is raised the
// history ends with the activation; a retry of the queue serving again is
// refused.
func TestRecoveryRetry(t *testing.T) {
	c := newCluster(t, 3)
	lo, hi, bodies := budgetSetAside(t, c)
	both := c.b(lo).httpAddr + "," + c.b(hi).httpAddr
	tried4s := regexp.MustCompile(`tried again in (\d+) ms`)
	var d daemon.Description
	var aside *daemon.Attempt
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		d = describeJSON(t, c, both)
		if aside = lastCandidate(d, lo); aside != nil && aside.Outcome == "set-aside" {
			if m := tried4s.FindStringSubmatch(aside.Detail); m != nil {
				if ms, _ := strconv.Atoi(m[1]); ms >= 4000 {
					break
				}
			}
		}
		aside = nil
	}
	if aside == nil {
		t.Fatalf("no set-aside with a backoff of 4 s at n%d within 60 s:\n%s", lo, c.describe(lo))
	}
	if aside.Aside != "inspect-records" || !aside.Candidate {
		t.Fatalf("the candidate's attempt: %+v, want set aside for inspect-records", aside)
	}
	asideAtMs := aside.StartUnixMs + aside.Stages[len(aside.Stages)-1].AtMs
	if out, err := c.sluice("recovery", "retry", "q0", "--http", c.b(hi).httpAddr); err != nil || !strings.Contains(out, `retry "q0"`) {
		t.Fatalf("recovery retry: %v\n%s", err, out)
	}
	var next *daemon.Attempt
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && next == nil; time.Sleep(20 * time.Millisecond) {
		d = describeJSON(t, c, both)
		if a := lastCandidate(d, lo); a != nil && a.StartUnixMs > aside.StartUnixMs {
			next = a
		}
	}
	if next == nil {
		t.Fatalf("no attempt after the retry:\n%s", c.describe(lo))
	}
	if waited := next.StartUnixMs - asideAtMs; waited >= 3000 {
		t.Fatalf("the next attempt began %d ms after the set-aside, want it at once after the retry (within the 4 s backoff)", waited)
	} else {
		t.Logf("the retry had the next attempt begin %d ms after the set-aside whose backoff was 4,000 ms", waited)
	}
	// The attempt the retry began blocks on the budget again at once, and
	// would keep its worker 5 s before it is set aside: a retry now starts
	// it over at once instead (it is superseded).
	time.Sleep(1500 * time.Millisecond)
	retriedMs := time.Now().UnixMilli()
	if out, err := c.sluice("recovery", "retry", "q0", "--http", c.b(lo).httpAddr); err != nil || !strings.Contains(out, "retries=2") {
		t.Fatalf("recovery retry of the blocked attempt: %v\n%s", err, out)
	}
	var third *daemon.Attempt
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && third == nil; time.Sleep(20 * time.Millisecond) {
		d = describeJSON(t, c, both)
		if a := lastCandidate(d, lo); a != nil && a.StartUnixMs > next.StartUnixMs {
			third = a
		}
	}
	if third == nil {
		t.Fatalf("no attempt after the second retry:\n%s", c.describe(lo))
	}
	if waited := third.StartUnixMs - retriedMs; waited >= 1500 {
		t.Fatalf("the attempt after the retry of a blocked one began %d ms after it, want it at once", waited)
	}
	for _, h := range d.Histories {
		for _, a := range h.Attempts {
			if h.Node == uint64(lo) && a.StartUnixMs == next.StartUnixMs && a.Candidate && a.Outcome != "superseded" {
				t.Fatalf("the blocked attempt retried: %+v, want superseded", a)
			}
		}
	}
	if q := d.Queues[0]; q.Name != "q0" || !q.Fenced || q.Retries != 2 {
		t.Fatalf("q0 in describe: %+v, want fenced with two retries counted", q)
	}
	if !observedElsewhere(d, hi) {
		t.Fatalf("n%d's history holds no stage of q0's attempts: %+v", hi, d.Histories)
	}
	text := c.describe(lo, "--unavailable")
	if !strings.Contains(text, "\n  attempt n"+strconv.Itoa(lo)) || !strings.Contains(text, "set-aside aside=inspect-records: detect +0ms") {
		t.Fatalf("describe's text shows no attempt lines:\n%s", text)
	}
	if n := setAsideMetric(t, c.b(lo).httpAddr, "inspect-records"); n < 3 {
		t.Fatalf("sluice_recovery_set_aside_total{reason=inspect-records} %d at n%d, want at least 3", n, lo)
	}

	if out, err := c.sluice("settings", "set", "recovery.inspect_records_max", "1000000", "--http", c.b(hi).httpAddr); err != nil {
		t.Fatalf("settings: %v\n%s", err, out)
	}
	c.settle(lo, []string{"q0"}, 60*time.Second)
	d = describeJSON(t, c, c.b(lo).httpAddr)
	if a := lastCandidate(d, lo); a == nil || a.Outcome != "activated" {
		t.Fatalf("the candidate's last attempt after the budget was raised: %+v, want activated", a)
	}
	if out, err := c.sluice("recovery", "retry", "q0", "--http", c.b(hi).httpAddr); err == nil || !strings.Contains(out, "not fenced") {
		t.Fatalf("a retry of q0 serving again: %v\n%s", err, out)
	}
	consumeConfirmed(t, c, lo, hi, bodies)
}

func describeJSON(t *testing.T, c *cluster, addrs string) daemon.Description {
	t.Helper()
	out, err := c.sluice("describe", "--json", "--http", addrs)
	var d daemon.Description
	if err != nil || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("describe --json: %v\n%s", err, out)
	}
	return d
}

// lastCandidate returns broker node's latest attempt it ran at q0.
func lastCandidate(d daemon.Description, node int) *daemon.Attempt {
	for _, h := range d.Histories {
		if h.Node != uint64(node) {
			continue
		}
		for i := len(h.Attempts) - 1; i >= 0; i-- {
			if h.Attempts[i].Candidate {
				return &h.Attempts[i]
			}
		}
	}
	return nil
}

// observedElsewhere reports whether node's history holds a stage it did
// of an attempt it did not run.
func observedElsewhere(d daemon.Description, node int) bool {
	for _, h := range d.Histories {
		for _, a := range h.Attempts {
			if h.Node == uint64(node) && !a.Candidate && len(a.Stages) > 0 {
				return true
			}
		}
	}
	return false
}

func setAsideMetric(t *testing.T, addr, reason string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^sluice_recovery_set_aside_total\{reason="` + reason + `"\} (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no set-aside counter for %s in /metrics", reason)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
