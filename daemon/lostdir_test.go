package daemon

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
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
	line, id := describedID(t, s)
	stopServer(t, s)
	qdir := filepath.Join(dir, "queues", "q"+id)
	if _, err := os.Stat(qdir); err != nil || id == "" {
		t.Fatalf("the queue's directory %q (describe %q): %v", qdir, line, err)
	}
	if err := os.RemoveAll(qdir); err != nil {
		t.Fatal(err)
	}

	s = start()
	defer stopServer(t, s)
	fencedWithLoss(t, s, "orders")
}

// TestServeFlippedBytesFenced: a single broker with 10,000 confirmed
// messages (ten rounds, each confirmed before the next: ten syncs at
// least) has 8 bytes flipped in the middle of its segment's records while
// it is stopped. The damaged records had been synced (later rounds' frames
// lie beyond them), so the restarted broker keeps the queue fenced with
// the loss said, and no consumer receives a cut log.
func TestServeFlippedBytesFenced(t *testing.T) {
	dir := t.TempDir()
	s := startWithHTTP(t, dir)
	c := mustDial(t, s)
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("orders", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		rch, err := c.Channel() // a channel a round: each has its confirm listener
		if err != nil {
			t.Fatal(err)
		}
		publishConfirmed(t, rch, "orders", 1000*round, 1000)
		rch.Close()
	}
	c.Close()
	_, id := describedID(t, s)
	stopServer(t, s)
	seg := filepath.Join(dir, "queues", "q"+id, "00000000000000000000.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	slots := int64(binary.LittleEndian.Uint32(b[12:16]))
	framesAt, end := 32+32*slots, int64(len(b))
	for end > framesAt && b[end-1] == 0 {
		end--
	}
	mid := (framesAt + end) / 2
	for k := range int64(8) {
		b[mid+k] ^= 0xff
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("8 bytes flipped at byte %d of %s (frames from %d to %d)", mid, seg, framesAt, end)

	s = startWithHTTP(t, dir)
	defer stopServer(t, s)
	fencedWithLoss(t, s, "orders")
}

// fencedWithLoss waits up to 15 s for broker s's describe to show queue
// fenced with its recovery set aside for lost copies, and checks that a
// consumer is refused.
func fencedWithLoss(t *testing.T, s *Server, queue string) {
	t.Helper()
	line := ""
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !strings.Contains(line, "set-aside="); {
		time.Sleep(50 * time.Millisecond)
		line = getDescribe(t, s)
	}
	if !strings.Contains(line, " fenced") || !strings.Contains(line, "lost what they acknowledged") {
		t.Fatalf("describe after the loss: %q, want %s fenced with the loss said", line, queue)
	}
	t.Logf("describe: %s", strings.TrimSpace(line))
	// The history says it typed: this broker's worker set the attempt
	// aside for lost copies; the metrics count it by that reason.
	resp, err := http.Get("http://" + s.HTTPAddr() + "/recovery/history")
	if err != nil {
		t.Fatal(err)
	}
	var h History
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || len(h.Attempts) == 0 {
		t.Fatalf("/recovery/history: %v %+v", err, h)
	}
	if a := h.Attempts[len(h.Attempts)-1]; a.Outcome != outcomeSetAside || a.Aside != "lost-copies" || !a.Candidate || !strings.Contains(a.chain(), "detect +") {
		t.Fatalf("the last attempt: %+v, want the candidate's set aside for lost-copies", a)
	}
	if m := getMetrics(t, s); !strings.Contains(m, `sluice_recovery_set_aside_total{reason="lost-copies"} `) ||
		!strings.Contains(m, `sluice_queues_fenced_set_aside{reason="lost-copies"} 1`) {
		t.Fatalf("/metrics counts no set-aside for lost copies:\n%s", m)
	}
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	if _, err := ch.Consume(queue, "", true, false, false, false, nil); err == nil {
		t.Fatalf("a consumer was accepted on %s, whose only copy lost what it acknowledged", queue)
	}
}

// describedID returns broker s's describe and the id of its one queue.
func describedID(t *testing.T, s *Server) (line, id string) {
	t.Helper()
	line = getDescribe(t, s)
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "id=") {
			id = strings.TrimPrefix(f, "id=")
		}
	}
	return line, id
}

func getMetrics(t *testing.T, s *Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
