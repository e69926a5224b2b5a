package clustertest

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRecoveryBudgetSetAside: a recovery whose source is another broker's
// log reads it, and a budget smaller than that log blocks it: the queue
// stays fenced, describe names the budget (set-aside=...), and raising it
// lets the next attempt through, every confirmed message delivered. The
// lower-id survivor, the recovery's candidate, is paused while 200
// publishes are confirmed by the owner and the other follower, so that
// the other's log is the longer one, the source.
func TestRecoveryBudgetSetAside(t *testing.T) {
	c := newCluster(t, 3)
	publishThrough(t, c, 1, "q0", 10)
	qs := c.settle(1, []string{"q0"}, 30*time.Second)
	victim := owner(t, qs, "q0")
	var survivors []int
	for _, b := range c.brokers {
		if b.id != victim {
			survivors = append(survivors, b.id)
		}
	}
	lo, hi := survivors[0], survivors[1]
	if out, err := c.sluice("settings", "set", "recovery.inspect_records_max", "50", "--http", c.b(hi).httpAddr); err != nil {
		t.Fatalf("settings: %v\n%s", err, out)
	}
	c.signal(lo, syscall.SIGSTOP)
	bodies := publishThroughRetrying(t, c, hi, "q0", 200, 60*time.Second)
	c.kill(victim)
	c.signal(lo, syscall.SIGCONT)
	t.Logf("q0's owner n%d killed with n%d paused while 200 were confirmed by n%d", victim, lo, hi)
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
