package clustertest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFollowerDirectoryLost: q0's second follower is paused (SIGSTOP)
// while 2,000 messages are confirmed by the owner and the first follower
// alone; then that follower is killed, its q0 directory removed, the
// owner killed, the paused follower resumed and the emptied one restarted.
// The emptied log reopens without its storage binding, so it is no
// witness: the queue waits for the owner (the survivors' logs lack the
// 2,000, or were emptied), recovers from it once it is back, and every
// confirmed message is delivered. Were the emptied log a witness, the
// survivors would meet R = 2 and recover from the paused follower's log,
// which lacks all 2,000.
func TestFollowerDirectoryLost(t *testing.T) {
	c := newCluster(t, 3)
	publishThrough(t, c, 1, "q0", 10)
	qs := c.settle(1, []string{"q0"}, 30*time.Second)
	o := owner(t, qs, "q0")
	var followers []int
	for _, m := range members(qs, "q0") {
		if m != o {
			followers = append(followers, m)
		}
	}
	emptied, paused := followers[0], followers[1]
	if leader := c.leader(o); paused == leader {
		// The metadata leader paused would stall the declaration the
		// publishes below make.
		emptied, paused = paused, emptied
	}
	id := strings.TrimPrefix(strings.Fields(describeLine(c.describe(1), "q0"))[1], "id=")
	c.signal(paused, syscall.SIGSTOP)
	bodies := publishThrough(t, c, o, "q0", 2000)
	c.kill(emptied)
	dir := filepath.Join(c.b(emptied).dir, "queues", "q"+id)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("follower n%d's q0 directory: %v", emptied, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	c.kill(o)
	c.signal(paused, syscall.SIGCONT)
	c.start(emptied)
	c.waitReady(emptied, 30*time.Second)
	t.Logf("2,000 confirmed by owner n%d and follower n%d with n%d paused; n%d's %s removed, n%d killed, n%d resumed",
		o, emptied, paused, emptied, dir, o, paused)
	time.Sleep(3 * time.Second)
	line := describeLine(c.describe(paused), "q0")
	t.Logf("q0 at n%d three seconds later: %s", paused, line)
	if !strings.Contains(line, " fenced") {
		t.Errorf("q0 recovered without its owner, from logs that lack the 2,000 or were emptied: %s", line)
	}
	c.start(o)
	c.waitReady(o, 30*time.Second)
	c.settle(paused, []string{"q0"}, 60*time.Second)
	want := map[string]bool{}
	for _, b := range bodies {
		want[b] = true
	}
	seen := consumeAll(t, []string{c.b(paused).url(), c.b(o).url()}, "q0", want, 60*time.Second)
	missing := 0
	for b := range want {
		if seen[b] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of the 2,000 confirmed messages not delivered after the recovery", missing)
	}
	t.Logf("all 2,000 confirmed delivered: %s", describeLine(c.describe(paused), "q0"))
}

// describeLine returns queue q's line of a describe output ("" if none).
func describeLine(out, q string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, q+" ") {
			return l
		}
	}
	return ""
}
