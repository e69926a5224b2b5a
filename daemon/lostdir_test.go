package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeLostDirectoryFenced: a single broker's queue directory is
// removed while it is stopped. Its only copy lost what it acknowledged
// (the log reopens empty, without its storage binding), so the restarted
// broker keeps the queue fenced and says why (describe's set-aside), and
// a consumer gets nothing, rather than the queue serving an empty log as
// if it were whole.
func TestServeLostDirectoryFenced(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server { return startWithHTTP(t, dir) }
	s := start()
	c := mustDial(t, s)
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("orders", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publishConfirmed(t, ch, "orders", 0, 20)
	c.Close()
	line := getDescribe(t, s)
	stopServer(t, s)
	var id string
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "id=") {
			id = strings.TrimPrefix(f, "id=")
		}
	}
	qdir := filepath.Join(dir, "queues", "q"+id)
	if _, err := os.Stat(qdir); err != nil || id == "" {
		t.Fatalf("the queue's directory %q (describe %q): %v", qdir, line, err)
	}
	if err := os.RemoveAll(qdir); err != nil {
		t.Fatal(err)
	}

	s = start()
	defer stopServer(t, s)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !strings.Contains(line, "set-aside="); {
		time.Sleep(50 * time.Millisecond)
		line = getDescribe(t, s)
	}
	if !strings.Contains(line, " fenced") || !strings.Contains(line, "lost what they acknowledged") {
		t.Fatalf("describe after the directory was lost: %q, want the queue fenced with the loss said", line)
	}
	t.Logf("describe: %s", strings.TrimSpace(line))
	c2 := mustDial(t, s)
	defer c2.Close()
	ch2, _ := c2.Channel()
	if _, err := ch2.Consume("orders", "", true, false, false, false, nil); err == nil {
		t.Fatal("a consumer was accepted on a queue whose only copy was lost")
	}
}
