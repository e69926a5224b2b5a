package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/daemon"
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
	code, out, errOut = runCmd(t, "describe", "--json", "--http", httpAddr)
	var d daemon.Description
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || len(d.Queues) != 1 || d.Queues[0].Name != "orders" || d.Queues[0].Fenced ||
		len(d.Histories) != 1 || d.Histories[0].Node != 1 {
		t.Fatalf("describe --json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	// A second address that does not answer is named, the catalogue
	// still printed.
	if code, out, errOut := runCmd(t, "describe", "--http", httpAddr+",127.0.0.1:1"); code != 0 || !strings.HasPrefix(out, "orders id=") || !strings.Contains(errOut, "no history from 127.0.0.1:1") {
		t.Fatalf("describe with an address that does not answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "recovery", "retry", "orders", "--http", httpAddr); code != 1 || !strings.Contains(errOut, "not fenced") {
		t.Fatalf("recovery retry of a queue serving: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "recovery", "retry"); code != 2 || !strings.Contains(errOut, "retry QUEUE") {
		t.Fatalf("recovery retry without a queue: exit %d, %q", code, errOut)
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

// TestServeClusterFlagsRefused: cluster flags that cannot work are usage
// errors (exit 2) naming the flag, before anything starts.
func TestServeClusterFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "secret")
	os.WriteFile(good, []byte("a cluster secret of at least thirty-two bytes\n"), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("too short\n"), 0o600)
	cfg := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	peers := "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--peers", peers}, "--peers needs --secret-file"},
		{[]string{"--secret-file", good}, "--secret-file is for cluster mode: give --peers too"},
		{[]string{"--voters", "1"}, "--voters is for cluster mode"},
		{[]string{"--peers", peers, "--secret-file", short}, "9 bytes, need at least 32"},
		{[]string{"--peers", peers, "--secret-file", filepath.Join(dir, "none")}, "--secret-file: open"},
		{[]string{"--peers", "1=127.0.0.1:7001", "--secret-file", good}, "at least 2"},
		{[]string{"--peers", "1=127.0.0.1:7001,1=127.0.0.1:7002", "--secret-file", good}, "n1 is listed twice"},
		{[]string{"--peers", "1=127.0.0.1,2=127.0.0.1:7002", "--secret-file", good}, "want host:port"},
		{[]string{"--peers", "x=127.0.0.1:1,2=127.0.0.1:7002", "--secret-file", good}, `"x" is not a node id`},
		{[]string{"--peers", peers, "--secret-file", good, "--node", "4"}, "does not list this broker (--node 4)"},
		{[]string{"--peers", peers, "--secret-file", good, "--voters", "1,2"}, "--voters lists 2; want 1, 3 or 5"},
		{[]string{"--peers", peers, "--secret-file", good, "--voters", "1,2,9"}, "n9 is not in --peers"},
		{[]string{"--peers", peers, "--secret-file", good, "--peer-listen", "nowhere"}, "--peer-listen"},
		{[]string{"--config", filepath.Join(dir, "none.conf")}, "--config: open"},
		{[]string{"--config", cfg("unknown.conf", "peer = 1\n")}, `unknown setting "peer" (did you mean "peers"?)`},
		{[]string{"--config", cfg("nokv.conf", "peers\n")}, "nokv.conf:1: want name = value"},
		{[]string{"--config", cfg("twice.conf", "node = 2\nnode = 3\n")}, "node is set twice"},
		{[]string{"--config", cfg("badnode.conf", "# a comment\n\nnode = two\n")}, "badnode.conf:3: node"},
		{[]string{"--config", cfg("cluster.conf", "peers = "+peers+"\n")}, "--peers needs --secret-file"},
	} {
		code, _, stderr := runCmd(t, append([]string{"serve"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}

// TestServeConfigFile: a broker of a two-broker cluster configured by a
// file, with a flag that overrides one of the file's settings; it starts,
// listens for peers where the file says and is ready once both are up.
func TestServeConfigFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("a cluster secret of at least thirty-two bytes\n"), 0o600)
	ports := make([]string, 2)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().String()
		ln.Close()
	}
	peers := fmt.Sprintf("1=%s,2=%s", ports[0], ports[1])
	var logs []*syncBuffer
	var statuses []chan int
	for n := 1; n <= 2; n++ {
		conf := filepath.Join(dir, fmt.Sprintf("n%d.conf", n))
		os.WriteFile(conf, []byte(fmt.Sprintf("# broker n%d\nnode = %d\npeers = %s\nvoters = 1\nsecret-file = %s\ndata-dir = %s\namqp-addr = 127.0.0.1:1\n",
			n, n, peers, secret, filepath.Join(dir, fmt.Sprintf("d%d", n)))), 0o644)
		// --amqp-addr on the command line wins over the file's.
		addr, lg, status := startServe(t, "--config", conf, "--amqp-addr", "127.0.0.1:0")
		statuses = append(statuses, status)
		if addr == "127.0.0.1:1" {
			t.Fatal("the file's amqp-addr won over the flag")
		}
		logs = append(logs, lg)
		if !strings.Contains(lg.String(), "peers="+ports[n-1]) {
			t.Fatalf("n%d does not listen for peers at %s:\n%s", n, ports[n-1], lg.String())
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs[0].String(), "peer connected") || !strings.Contains(logs[1].String(), "peer connected") {
		if time.Now().After(deadline) {
			t.Fatalf("the two brokers did not connect:\n%s\n%s", logs[0].String(), logs[1].String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i, st := range statuses {
		select {
		case code := <-st:
			if code != 0 {
				t.Errorf("n%d exited %d after SIGTERM:\n%s", i+1, code, logs[i].String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("n%d did not exit 20 s after SIGTERM", i+1)
		}
	}
}

// TestServeUsersFile: --users-file replaces guest with its users; a
// listed user logs in, a wrong password and the default guest are refused
// with 403 ACCESS_REFUSED; a malformed file is the operator's error (exit 2)
// with its line, and nothing starts.
func TestServeUsersFile(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	os.WriteFile(users, []byte("# who may log in\nalice:s3cret\n\nbob:hunter2:loopback\n"), 0o600)
	addr, _, status := startServe(t, "--users-file", users)
	for _, tc := range []struct {
		user, password string
		ok             bool
	}{{"alice", "s3cret", true}, {"bob", "hunter2", true}, {"alice", "wrong", false}, {"guest", "guest", false}} {
		c, err := amqp.Dial(fmt.Sprintf("amqp://%s:%s@%s/", tc.user, tc.password, addr))
		switch {
		case tc.ok && err != nil:
			t.Fatalf("%s: %v", tc.user, err)
		case tc.ok:
			c.Close()
		case err == nil:
			c.Close()
			t.Fatalf("%s with password %q logged in", tc.user, tc.password)
		case !strings.Contains(err.Error(), "403"):
			t.Fatalf("%s with password %q: %v, want 403 ACCESS_REFUSED", tc.user, tc.password, err)
		}
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := <-status; code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	for _, bad := range []struct{ file, want string }{
		{"alice\n", ":1: want name:password"},
		{"alice:x:remote\n", ":1: want name:password"},
		{"# none\n\n", "no user"},
		{"alice:x\n:y\n", ":2: an empty name or password"},
		{"alice:x\nalice:y\n", `:2: user "alice" listed already on line 1`},
	} {
		os.WriteFile(users, []byte(bad.file), 0o600)
		code, _, stderr := runCmd(t, "serve", "--data-dir", t.TempDir(), "--amqp-addr", "127.0.0.1:0", "--http-addr", "", "--users-file", users)
		if code != 2 || !strings.Contains(stderr, bad.want) {
			t.Fatalf("users file %q: exit %d, stderr %q, want 2 and %q", bad.file, code, stderr, bad.want)
		}
	}
}
