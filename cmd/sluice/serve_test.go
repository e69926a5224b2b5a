package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs `sluice serve` in-process on an ephemeral port and
// returns its AMQP address, its log and its exit status (when it ends).
func startServe(t *testing.T, args ...string) (addr string, logs *syncBuffer, status chan int) {
	t.Helper()
	logs = &syncBuffer{}
	status = make(chan int, 1)
	args = append([]string{"serve", "--data-dir", t.TempDir(), "--amqp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)
	go func() { status <- run(args, env{stdout: &bytes.Buffer{}, stderr: logs}) }()
	ready := regexp.MustCompile(`msg=ready amqp=(\S+) http=\S+`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := ready.FindStringSubmatch(logs.String()); m != nil {
			return m[1], logs, status
		}
		select {
		case code := <-status:
			t.Fatalf("serve exited %d before it was ready:\n%s", code, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve not ready in 10 s:\n%s", logs.String())
	return "", nil, nil
}

// TestServeSIGTERM: `sluice serve` starts, takes a confirmed publish, and
// on SIGTERM drains and exits 0.
func TestServeSIGTERM(t *testing.T) {
	addr, logs, status := startServe(t)
	c, err := amqp.Dial(fmt.Sprintf("amqp://guest:guest@%s/", addr))
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("q", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ch.Confirm(false)
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	ch.Publish("", "q", false, false, amqp.Publishing{Body: []byte("x")})
	if cf := <-confirms; !cf.Ack {
		t.Fatal("nacked")
	}
	closed := c.NotifyClose(make(chan *amqp.Error, 1))
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-status:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM:\n%s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit 10 s after SIGTERM:\n%s", logs.String())
	}
	for _, want := range []string{"msg=draining", "msg=drained", "msg=stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Errorf("the client's connection did not close")
	}
}

// TestServeBadFlags: a bad flag is a usage error (exit 2), nothing starts.
func TestServeBadFlags(t *testing.T) {
	code, _, stderr := runCmd(t, "serve", "--log-level", "loud")
	if code != 2 || !strings.Contains(stderr, "--log-level") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCmd(t, "serve", "--amqp-adr", "x")
	if code != 2 || !strings.Contains(stderr, `unknown flag --amqp-adr (did you mean "amqp-addr"?)`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// readmeServeBlock returns the command lines of README.md's fenced block
// under "## Run a broker", comments cut.
func readmeServeBlock(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Run a broker")
	if !ok {
		t.Fatal("README.md has no section \"## Run a broker\"")
	}
	_, blk, ok := strings.Cut(sec, "```sh\n")
	blk, _, ok2 := strings.Cut(blk, "```")
	if !ok || !ok2 {
		t.Fatal("README.md's \"Run a broker\" has no ```sh block")
	}
	var cmds [][]string
	for _, l := range strings.Split(blk, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "go run ./cmd/sluice ")
		if ok {
			cmds = append(cmds, strings.Fields(rest))
		}
	}
	return cmds
}

// TestReadmeRoundTrip runs README.md's broker round trip as printed: the
// server (on an ephemeral port and a temporary data directory instead of
// the defaults, which a test machine may have in use), then the publish
// and consume lines against it, checking what the comments promise.
func TestReadmeRoundTrip(t *testing.T) {
	cmds := readmeServeBlock(t)
	if len(cmds) != 3 || cmds[0][0] != "serve" || cmds[1][0] != "publish" || cmds[2][0] != "consume" {
		t.Fatalf("README's round trip is %v; this test knows serve, publish, consume", cmds)
	}
	addr, logs, status := startServe(t, cmds[0][1:]...)
	url := "amqp://guest:guest@" + addr + "/"
	code, out, errOut := runCmd(t, append(append([]string{}, cmds[1]...), "--url", url)...)
	if code != 0 || out != "published 2, confirmed 2, nacked 0\n" {
		t.Fatalf("%v: exit %d, stdout %q, stderr %q", cmds[1], code, out, errOut)
	}
	code, out, errOut = runCmd(t, append(append([]string{}, cmds[2]...), "--url", url)...)
	if code != 0 || out != "hello\nworld\n" {
		t.Fatalf("%v: exit %d, stdout %q, stderr %q", cmds[2], code, out, errOut)
	}
	// Acked: a second consumer finds nothing within its idle time.
	code, out, _ = runCmd(t, "consume", "--idle", "200ms", "--url", url, "orders")
	if code != 0 || out != "" {
		t.Fatalf("after the acks: exit %d, stdout %q", code, out)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-status:
		if code != 0 {
			t.Fatalf("serve exit %d:\n%s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestSettingsSet: sluice settings set commits a setting through the
// running broker's metadata group; an unknown key or a value out of range
// is a usage error before anything is sent.
func TestSettingsSet(t *testing.T) {
	_, logs, status := startServe(t)
	m := regexp.MustCompile(`msg=ready amqp=\S+ http=(\S+)`).FindStringSubmatch(logs.String())
	code, out, errOut := runCmd(t, "settings", "set", "liveness.expiry_ms", "5000", "--http", m[1])
	if code != 0 || !strings.Contains(out, "liveness.expiry_ms=5000 (metadata entry ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "settings", "set", "liveness.expiry_ms", "1", "--http", m[1])
	if code != 2 || !strings.Contains(errOut, "liveness.expiry_ms") {
		t.Fatalf("out of range: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCmd(t, "settings", "set", "no.such", "1", "--http", m[1])
	if code != 2 || !strings.Contains(errOut, `unknown setting "no.such"`) {
		t.Fatalf("unknown key: exit %d, stderr %q", code, errOut)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := <-status; code != 0 {
		t.Fatalf("serve exit %d", code)
	}
}

// TestDescribeAndDrain: describe lists a placed queue, its filters print
// nothing on a healthy broker, drain marks and unmarks the broker, and
// after a restart describe --unavailable names the queue the new process
// cannot serve (fenced until recovery).
func TestDescribeAndDrain(t *testing.T) {
	dir := t.TempDir()
	addr, logs, status := startServe(t, "--data-dir", dir)
	httpAddr := regexp.MustCompile(`msg=ready amqp=\S+ http=(\S+)`).FindStringSubmatch(logs.String())[1]
	url := "amqp://guest:guest@" + addr + "/"
	if code, out, errOut := runCmd(t, "publish", "--url", url, "orders", "x"); code != 0 {
		t.Fatalf("publish: %d %q %q", code, out, errOut)
	}
	code, out, errOut := runCmd(t, "describe", "--http", httpAddr)
	if code != 0 || !regexp.MustCompile(`^orders id=\d+ replicas=1 policy=majority_durable min-insync=1 epoch=\d+ owner=n1 members=n1 in-sync=n1\n$`).MatchString(out) {
		t.Fatalf("describe: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, f := range []string{"--under-replicated", "--under-min-insync", "--unavailable"} {
		if code, out, errOut := runCmd(t, "describe", f, "--http", httpAddr); code != 0 || out != "" {
			t.Fatalf("describe %s on a healthy broker: exit %d, stdout %q, stderr %q", f, code, out, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "describe", "--unavailable", "--under-replicated"); code != 2 || !strings.Contains(errOut, "one filter") {
		t.Fatalf("two filters: exit %d, %q", code, errOut)
	}
	if code, out, errOut := runCmd(t, "drain", "1", "--http", httpAddr); code != 0 || !strings.Contains(out, "n1 draining=true") {
		t.Fatalf("drain: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "drain", "1", "--undo", "--http", httpAddr); code != 0 || !strings.Contains(out, "n1 draining=false") {
		t.Fatalf("drain --undo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	if code := <-status; code != 0 {
		t.Fatalf("serve exit %d", code)
	}

	// A restart is a new process: the queue's assignment named the old one,
	// so it is fenced, and its recovery (seal, install, activate: the one
	// broker is every part of it) brings it back under a later epoch.
	addr, logs, status = startServe(t, "--data-dir", dir)
	httpAddr = regexp.MustCompile(`msg=ready amqp=\S+ http=(\S+)`).FindStringSubmatch(logs.String())[1]
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, _ = runCmd(t, "describe", "--http", httpAddr)
		if code == 0 && regexp.MustCompile(`^orders id=\d+ replicas=1 .* epoch=([2-9]|\d\d+) owner=n1 members=n1 in-sync=n1\n$`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a restart, the queue did not recover: describe: exit %d, %q", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, out, errOut := runCmd(t, "describe", "--unavailable", "--http", httpAddr); code != 0 || out != "" {
		t.Fatalf("describe --unavailable after the recovery: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	url = "amqp://guest:guest@" + addr + "/"
	if code, out, errOut := runCmd(t, "publish", "--url", url, "orders", "y"); code != 0 {
		t.Fatalf("publish after the recovery: %d %q %q", code, out, errOut)
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	if code := <-status; code != 0 {
		t.Fatalf("serve exit %d", code)
	}
}
