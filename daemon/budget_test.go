package daemon

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestServeRecoveryOwnLog: a single broker whose inspection budget is far
// smaller than its queue's log restarts, and its queue is recovered at
// once: the source is its own log, sealed by this very process, which
// the recovery takes by that seal instead of reading it again, so no
// budget binds; every message is there.
func TestServeRecoveryOwnLog(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server { return startWithHTTP(t, dir) }
	s := start()
	c := mustDial(t, s)
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("deep", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	const n = 50
	publishConfirmed(t, ch, "deep", 0, n)
	postSetting(t, s, "recovery.inspect_records_max", "10")
	c.Close()
	stopServer(t, s)

	s = start()
	defer stopServer(t, s)
	line := getDescribe(t, s)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (strings.Contains(line, " fenced ") || !strings.Contains(line, "epoch=2")); {
		time.Sleep(20 * time.Millisecond)
		line = getDescribe(t, s)
	}
	if strings.Contains(line, " fenced ") || !strings.Contains(line, "epoch=2") {
		t.Fatalf("describe: %q, want the queue recovered (epoch 2) within 10 s", line)
	}
	c2 := mustDial(t, s)
	defer c2.Close()
	ch2, _ := c2.Channel()
	msgs, err := ch2.Consume("deep", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		select {
		case <-msgs:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d messages after the recovery", i, n)
		}
	}
}

func postSetting(t *testing.T, s *Server, key, value string) {
	t.Helper()
	resp, err := http.PostForm("http://"+s.HTTPAddr()+"/settings", url.Values{"key": {key}, "value": {value}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("set %s=%s: %d %s", key, value, resp.StatusCode, b)
	}
}

func getDescribe(t *testing.T, s *Server) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr()+"/describe", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeRestartKnowsItsQueues: right after a restart, before the broker
// re-applied its metadata, a queue it holds is not taken for missing: a
// passive declaration waits and succeeds (it answered 404 for the first
// few milliseconds), and a mandatory publish is never returned as
// unroutable (it was acked and dropped).
func TestServeRestartKnowsItsQueues(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	c := mustDial(t, s)
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("kept", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publishConfirmed(t, ch, "kept", 0, 5)
	c.Close()
	stopServer(t, s)

	s = startServer(t, dir)
	defer stopServer(t, s)
	c2 := mustDial(t, s)
	defer c2.Close()
	ch2, _ := c2.Channel()
	returns := ch2.NotifyReturn(make(chan amqp.Return, 1))
	if err := ch2.Publish("", "kept", true, false, amqp.Publishing{Body: []byte("early")}); err != nil {
		t.Fatal(err)
	}
	ch3, _ := c2.Channel()
	if _, err := ch3.QueueDeclarePassive("kept", true, false, false, false, nil); err != nil {
		t.Fatalf("a passive declaration right after the restart: %v", err)
	}
	select {
	case r := <-returns:
		t.Fatalf("a publish right after the restart was returned: %d %s", r.ReplyCode, r.ReplyText)
	case <-time.After(200 * time.Millisecond):
	}
}

// startWithHTTP starts a broker on dir with its HTTP listener too.
func startWithHTTP(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := Start(Config{DataDir: dir, AMQPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
