package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// binPath is the sluice binary, built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-clustertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "sluice")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	start := time.Now()
	out, err := exec.Command(goBin, "build", "-o", binPath, "github.com/sluicemq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the sluice binary: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "clustertest: built %s in %v\n", binPath, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// broker is one `sluice serve` process of a test cluster, and its fixed
// addresses (a restart keeps them, so that clients find it again).
type broker struct {
	id                           int
	dir                          string
	amqpAddr, httpAddr, peerAddr string
	logPath                      string
	cmd                          *exec.Cmd
	exited                       chan struct{}
	starts                       int
}

func (b *broker) url() string { return "amqp://guest:guest@" + b.amqpAddr + "/" }

// running reports whether b's process is up (started, not exited).
func (b *broker) running() bool { return processRunning(b.cmd, b.exited) }

// processRunning reports whether cmd was started and exited is not closed
// (a broker's or a RabbitMQ node's process).
func processRunning(cmd *exec.Cmd, exited chan struct{}) bool {
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// cluster is a test cluster of broker processes on loopback.
type cluster struct {
	t       testing.TB
	dir     string
	brokers []*broker
	peers   string // the --peers value
	secret  string // the secret file
}

// freePorts reserves n loopback ports (listening on port 0 and closing;
// nothing else on this machine is expected to take them within the test).
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

// newCluster starts n brokers and waits until every one is ready.
func newCluster(t testing.TB, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir()}
	c.secret = filepath.Join(c.dir, "secret")
	if err := os.WriteFile(c.secret, []byte("a cluster secret of at least thirty-two bytes, for tests\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := freePorts(t, 3*n)
	var peers []string
	for i := 1; i <= n; i++ {
		b := &broker{id: i, dir: filepath.Join(c.dir, fmt.Sprintf("n%d", i)),
			amqpAddr: addrs[3*(i-1)], httpAddr: addrs[3*(i-1)+1], peerAddr: addrs[3*(i-1)+2],
			logPath: filepath.Join(c.dir, fmt.Sprintf("n%d.log", i))}
		c.brokers = append(c.brokers, b)
		peers = append(peers, fmt.Sprintf("%d=%s", i, b.peerAddr))
	}
	c.peers = strings.Join(peers, ",")
	t.Cleanup(c.cleanup)
	for i := 1; i <= n; i++ {
		c.start(i)
	}
	for i := 1; i <= n; i++ {
		c.waitReady(i, 30*time.Second)
	}
	return c
}

func (c *cluster) b(i int) *broker { return c.brokers[i-1] }

// start starts broker i's process (a restart when it ran before).
func (c *cluster) start(i int) {
	c.t.Helper()
	b := c.b(i)
	if b.running() {
		c.t.Fatalf("n%d is running already", i)
	}
	logf, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	b.starts++
	fmt.Fprintf(logf, "==== start %d\n", b.starts)
	cmd := exec.Command(binPath, "serve", "--node", fmt.Sprint(i), "--peers", c.peers, "--secret-file", c.secret,
		"--data-dir", b.dir, "--amqp-addr", b.amqpAddr, "--http-addr", b.httpAddr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("starting n%d: %v", i, err)
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		logf.Close()
		close(exited)
	}(b.exited)
}

// signal sends sig to broker i's process; for SIGKILL it waits for the
// process to be gone.
func (c *cluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	b := c.b(i)
	if !b.running() {
		c.t.Fatalf("n%d is not running", i)
	}
	if err := b.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to n%d: %v", sig, i, err)
	}
	if sig == syscall.SIGKILL {
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			c.t.Fatalf("n%d did not die of SIGKILL in 10 s", i)
		}
	}
}

func (c *cluster) kill(i int) { c.signal(i, syscall.SIGKILL) }

// cleanup kills what still runs, continues what is stopped, prints the
// brokers' logs when the test failed (or SLUICE_CLUSTER_LOGS is set: all
// of each log), and copies them into the directory SLUICE_CLUSTER_KEEP
// names, if set.
func (c *cluster) cleanup() {
	for _, b := range c.brokers {
		if b.running() {
			b.cmd.Process.Signal(syscall.SIGCONT)
			b.cmd.Process.Signal(syscall.SIGKILL)
			<-b.exited
		}
	}
	if d := os.Getenv("SLUICE_CLUSTER_KEEP"); d != "" {
		// Kept for reading afterwards (a recovery's stage lines carry
		// their times); a failure to keep them fails nothing else.
		for _, b := range c.brokers {
			if data, err := os.ReadFile(b.logPath); err == nil {
				os.WriteFile(filepath.Join(d, fmt.Sprintf("n%d.log", b.id)), data, 0o644)
			}
		}
	}
	if c.t.Failed() || os.Getenv("SLUICE_CLUSTER_LOGS") != "" {
		for _, b := range c.brokers {
			data, _ := os.ReadFile(b.logPath)
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			if len(lines) > 60 && os.Getenv("SLUICE_CLUSTER_LOGS") == "" {
				lines = append([]string{"..."}, lines[len(lines)-60:]...)
			}
			c.t.Logf("---- n%d's log:\n%s", b.id, strings.Join(lines, "\n"))
		}
	}
}

// httpGet fetches path from broker i's HTTP address.
func (c *cluster) httpGet(i int, path string) (int, string, error) {
	cl := &http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get("http://" + c.b(i).httpAddr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.String(), nil
}

// waitReady waits until broker i answers /readyz with 200 (its loop runs
// and it knows the metadata group's leader).
func (c *cluster) waitReady(i int, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		if !c.b(i).running() {
			c.t.Fatalf("n%d exited while waiting for it to be ready", i)
		}
		code, body, err := c.httpGet(i, "/readyz")
		if err == nil && code == http.StatusOK {
			return
		}
		last = fmt.Sprintf("%d %s %v", code, strings.TrimSpace(body), err)
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("n%d not ready in %v: %s", i, within, last)
}

// sluice runs the binary's operator command args and returns its output.
func (c *cluster) sluice(args ...string) (string, error) {
	out, err := exec.Command(binPath, args...).CombinedOutput()
	return string(out), err
}

// describe runs `sluice describe [filter]` against broker i.
func (c *cluster) describe(i int, filter ...string) string {
	c.t.Helper()
	out, err := c.sluice(append([]string{"describe", "--http", c.b(i).httpAddr}, filter...)...)
	if err != nil {
		c.t.Fatalf("describe at n%d: %v\n%s", i, err, out)
	}
	return out
}

// queueLine is one queue of `sluice describe`.
type queueLine struct {
	name, owner, members, inSync string
	epoch                        string
	fenced                       bool
}

func parseDescribe(out string) map[string]queueLine {
	qs := map[string]queueLine{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(line, " ") {
			continue // (an indented line is a fenced queue's recovery attempt)
		}
		q := queueLine{name: f[0]}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "owner":
				q.owner = v
			case "members":
				q.members = v
			case "in-sync":
				q.inSync = v
			case "epoch":
				q.epoch = v
			case "fenced":
				q.fenced = true
			}
		}
		qs[q.name] = q
	}
	return qs
}

// settle waits until broker i's describe shows every queue of names
// placed, unfenced, with its in-sync set equal to its members and an
// owner that is running, and returns them.
func (c *cluster) settle(i int, names []string, within time.Duration) map[string]queueLine {
	c.t.Helper()
	return c.settleWhere(i, names, within, func(queueLine) bool { return true })
}

// settleFull waits until broker i's describe shows every queue of names
// settled (as settle) on replicas members: back to its declared count
// with every copy in sync.
func (c *cluster) settleFull(i int, names []string, replicas int, within time.Duration) map[string]queueLine {
	c.t.Helper()
	return c.settleWhere(i, names, within, func(q queueLine) bool { return len(strings.Split(q.members, ",")) == replicas })
}

// settleWhere is settle with a further condition on each queue.
func (c *cluster) settleWhere(i int, names []string, within time.Duration, also func(queueLine) bool) map[string]queueLine {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var out string
	for time.Now().Before(deadline) {
		out = c.describe(i)
		qs := parseDescribe(out)
		ok := true
		for _, n := range names {
			q, found := qs[n]
			var owner int
			fmt.Sscanf(q.owner, "n%d", &owner)
			if !found || q.fenced || q.owner == "" || q.inSync != q.members || owner < 1 || owner > len(c.brokers) || !c.b(owner).running() || !also(q) {
				ok = false
			}
		}
		if ok {
			return qs
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("queues %v not settled at n%d in %v:\n%s", names, i, within, out)
	return nil
}

// leader returns the metadata group's leader as broker i sees it (0: none).
func (c *cluster) leader(i int) int {
	_, body, err := c.httpGet(i, "/readyz")
	if err != nil {
		return 0
	}
	var n int
	if _, err := fmt.Sscanf(body, "ready: metadata leader n%d", &n); err != nil {
		return 0
	}
	return n
}

// publisher publishes with confirms to one queue at a steady rate,
// reconnecting (to the next broker of its list) whenever its connection
// ends, and keeps every publish's outcome as its client learned it.
type publisher struct {
	queue  string
	tag    string   // in every body, apart from other publishers' to the queue
	fixed  []string // bodies by seq instead of the generated ones (fixedPublisher)
	urls   []string
	next   int // index of the broker url it connects to next
	period time.Duration
	args   amqp.Table // the declaration's arguments (queueArgs unless set)
	stop   chan struct{}
	done   chan struct{}

	mu        sync.Mutex
	seq       int
	confirmed map[int]time.Time // seq → when its ack arrived
	nacked    map[int]bool
	unknown   map[int]bool
	sessions  int
	lastErr   string
}

// queueArgs are the declaration's arguments: three replicas, so that a
// publish is confirmed once two brokers (majority_durable, W = 2) hold it.
var queueArgs = amqp.Table{"x-queue-type": "quorum", "x-sluice-replicas": int32(3)}

func newPublisher(queue, tag string, urls []string, first int, ratePerS int) *publisher {
	return &publisher{queue: queue, tag: tag, urls: urls, next: first, period: time.Second / time.Duration(ratePerS),
		stop: make(chan struct{}), done: make(chan struct{}),
		confirmed: map[int]time.Time{}, nacked: map[int]bool{}, unknown: map[int]bool{}}
}

func (p *publisher) body(seq int) string {
	if p.fixed != nil {
		return p.fixed[seq]
	}
	return fmt.Sprintf("%s-%s-%08d", p.queue, p.tag, seq)
}

// outstandingMax bounds the publishes a session keeps unconfirmed: at the
// limit it waits (a stalled queue does not grow the test without bound).
const outstandingMax = 4000

func (p *publisher) run() {
	defer close(p.done)
	again := false // the last session was opened at once after one ended
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		url := p.urls[p.next%len(p.urls)]
		p.next++
		p.mu.Lock()
		before := p.sessions
		p.mu.Unlock()
		if err := p.session(url); err != "" {
			p.mu.Lock()
			p.lastErr = err
			opened := p.sessions > before
			p.mu.Unlock()
			if opened && !again {
				// A session that was set up and then ended (its channel
				// closed: outcomes unknown): reconnect at once, as a
				// client that recovers its connection does (the owner-kill
				// pause measures the broker, not a sleep of this client's);
				// after 100 ms if that one ends too.
				again = true
				continue
			}
			again = false
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// session publishes on one connection until it ends or the publisher
// stops; it returns why it ended.
func (p *publisher) session(url string) string {
	conn, err := amqp.DialConfig(url, amqp.Config{Heartbeat: 5 * time.Second, Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return "channel: " + err.Error()
	}
	args := queueArgs
	if p.args != nil {
		args = p.args
	}
	if _, err := ch.QueueDeclare(p.queue, true, false, false, false, args); err != nil {
		return "declare: " + err.Error()
	}
	if err := ch.Confirm(false); err != nil {
		return "confirm.select: " + err.Error()
	}
	p.mu.Lock()
	p.sessions++
	p.mu.Unlock()
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, outstandingMax+16))
	var pmu sync.Mutex
	pending := map[uint64]int{} // delivery tag → seq
	var tag uint64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for cf := range confirms {
			pmu.Lock()
			seq, ok := pending[cf.DeliveryTag]
			delete(pending, cf.DeliveryTag)
			pmu.Unlock()
			if !ok {
				continue
			}
			p.mu.Lock()
			if cf.Ack {
				p.confirmed[seq] = time.Now()
			} else {
				p.nacked[seq] = true
			}
			p.mu.Unlock()
		}
		// The channel closed: what is still pending has no outcome the
		// client will ever learn.
		pmu.Lock()
		p.mu.Lock()
		for _, seq := range pending {
			p.unknown[seq] = true
		}
		clear(pending)
		p.mu.Unlock()
		pmu.Unlock()
	}()
	tick := time.NewTicker(p.period)
	defer tick.Stop()
	why := ""
	// Each tick sends what the rate is owed since the session began, so
	// that a ticker slower than the period (a busy host) does not lower
	// the rate.
	began, sent := time.Now(), 0
publish:
	for {
		select {
		case <-p.stop:
			// Wait (bounded) for the confirms of what was sent.
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) {
				pmu.Lock()
				n := len(pending)
				pmu.Unlock()
				if n == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			why = "stopped"
			break publish
		case <-readerDone:
			why = "channel closed"
			break publish
		case <-tick.C:
		}
		for owed := int(time.Since(began)/p.period) + 1; sent < owed; sent++ {
			if why = p.publishOne(ch, &pmu, pending, &tag); why != "" {
				break publish
			}
		}
	}
	conn.Close()
	<-readerDone
	if why == "stopped" {
		return ""
	}
	return why
}

// publishOne sends the publisher's next message on ch, unless outstandingMax
// are unconfirmed; it returns why the session must end, or "".
func (p *publisher) publishOne(ch *amqp.Channel, pmu *sync.Mutex, pending map[uint64]int, tag *uint64) string {
	pmu.Lock()
	if len(pending) >= outstandingMax {
		pmu.Unlock()
		return ""
	}
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	*tag++
	pending[*tag] = seq
	pmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := ch.PublishWithContext(ctx, "", p.queue, false, false, amqp.Publishing{Body: []byte(p.body(seq))})
	cancel()
	if err != nil {
		return "publish: " + err.Error()
	}
	return ""
}

// finish stops the publisher and waits for it.
func (p *publisher) finish() {
	close(p.stop)
	<-p.done
}

// counts returns how many publishes were confirmed, nacked, unknown.
func (p *publisher) counts() (confirmed, nacked, unknown int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.confirmed), len(p.nacked), len(p.unknown)
}

// confirmsAfter returns how many confirms arrived after t, and when the
// first of them did.
func (p *publisher) confirmsAfter(t time.Time) (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, first := 0, time.Time{}
	for _, at := range p.confirmed {
		if at.After(t) {
			n++
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	return n, first
}

// waitConfirmsAfter waits until at least n confirms arrived after t.
func (p *publisher) waitConfirmsAfter(t testing.TB, after time.Time, n int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if k, first := p.confirmsAfter(after); k >= n {
			return first
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("%s: fewer than %d confirms in %v after %v (last error: %s)", p.queue, n, within, after.Format("15:04:05.000"), p.lastErr)
	return time.Time{}
}

// lastSeq is the sequence number of the last publish sent.
func (p *publisher) lastSeq() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// waitSentAfter waits until n publishes sent after seq (its number above
// it) are confirmed and returns when the first of those confirms came: a
// confirm already on its way when something happened does not count.
func (p *publisher) waitSentAfter(t testing.TB, seq, n int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		k, first := 0, time.Time{}
		for s, at := range p.confirmed {
			if s > seq {
				k++
				if first.IsZero() || at.Before(first) {
					first = at
				}
			}
		}
		p.mu.Unlock()
		if k >= n {
			return first
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("%s: fewer than %d confirms of publishes after #%d in %v (last error: %s)", p.queue, n, seq, within, p.lastErr)
	return time.Time{}
}

// maxGap is the longest time between two consecutive confirms within
// [from, to].
func (p *publisher) maxGap(from, to time.Time) time.Duration {
	// A window that ends in the future ends now: what is to come is not a
	// gap yet (TestOwnerKill once reported 737 ms of a second not yet
	// elapsed as its held queues' longest gap).
	if now := time.Now(); to.After(now) {
		to = now
	}
	p.mu.Lock()
	var ts []time.Time
	for _, at := range p.confirmed {
		if !at.Before(from) && !at.After(to) {
			ts = append(ts, at)
		}
	}
	p.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	gap := time.Duration(0)
	prev := from
	for _, at := range ts {
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return max(gap, to.Sub(prev))
}

// consumeAll consumes queue from the brokers of urls (the first that
// works) until every body of want has been seen and nothing more came for
// a second, or within elapses; it returns every body seen, with counts.
func consumeAll(t testing.TB, urls []string, queue string, want map[string]bool, within time.Duration) map[string]int {
	t.Helper()
	seen := map[string]int{}
	missing := func() int {
		n := 0
		for b := range want {
			if seen[b] == 0 {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(within)
	lastErr := ""
	for k := 0; time.Now().Before(deadline); k++ {
		url := urls[k%len(urls)]
		err := func() error {
			conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
			if err != nil {
				return err
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil {
				return err
			}
			if _, err := ch.QueueDeclare(queue, true, false, false, false, queueArgs); err != nil {
				return err
			}
			if err := ch.Qos(500, 0, false); err != nil {
				return err
			}
			ds, err := ch.Consume(queue, "", false, false, false, false, nil)
			if err != nil {
				return err
			}
			idle := time.NewTimer(time.Second)
			defer idle.Stop()
			for {
				select {
				case d, ok := <-ds:
					if !ok {
						return fmt.Errorf("deliveries ended")
					}
					seen[string(d.Body)]++
					if err := d.Ack(false); err != nil {
						return err
					}
					if !idle.Stop() {
						<-idle.C
					}
					idle.Reset(time.Second)
				case <-idle.C:
					if missing() == 0 {
						return nil
					}
					idle.Reset(time.Second)
					if time.Now().After(deadline) {
						return fmt.Errorf("%d confirmed messages not delivered", missing())
					}
				}
			}
		}()
		if err == nil {
			return seen
		}
		lastErr = err.Error()
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s: consuming ended: %s", queue, lastErr)
	return seen
}

// verify consumes each publisher's queue (once per queue) and checks that
// every confirmed message is there and no nacked one is; it returns the
// totals.
func verify(t testing.TB, c *cluster, pubs []*publisher) (confirmed, nacked, unknown, missing int) {
	t.Helper()
	var urls []string
	for _, b := range c.brokers {
		if b.running() {
			urls = append(urls, b.url())
		}
	}
	var queues []string
	for _, p := range pubs {
		if !slices.Contains(queues, p.queue) {
			queues = append(queues, p.queue)
		}
	}
	for _, q := range queues {
		want, nackedBodies := map[string]bool{}, map[string]bool{}
		nc, nn, nu, sessions := 0, 0, 0, 0
		for _, p := range pubs {
			if p.queue != q {
				continue
			}
			p.mu.Lock()
			for seq := range p.confirmed {
				want[p.body(seq)] = true
			}
			for seq := range p.nacked {
				nackedBodies[p.body(seq)] = true
			}
			nc, nn, nu, sessions = nc+len(p.confirmed), nn+len(p.nacked), nu+len(p.unknown), sessions+p.sessions
			p.mu.Unlock()
		}
		seen := consumeAll(t, urls, q, want, 60*time.Second)
		var lost []string
		for b := range want {
			if seen[b] == 0 {
				lost = append(lost, b)
			}
		}
		slices.Sort(lost)
		if len(lost) > 0 {
			t.Errorf("%s: %d of %d confirmed messages not delivered within 60 s (lost, or stuck), first %v", q, len(lost), len(want), lost[:min(5, len(lost))])
		}
		missing += len(lost)
		for b := range seen {
			if nackedBodies[b] {
				t.Errorf("%s: %s was nacked (definitely not stored) and was delivered", q, b)
			}
		}
		dups := 0
		for _, k := range seen {
			if k > 1 {
				dups++
			}
		}
		t.Logf("%s: %d confirmed (%d consumed), %d nacked, %d unknown outcomes; %d distinct delivered, %d more than once; %d publisher sessions",
			q, nc, nc-len(lost), nn, nu, len(seen), dups, sessions)
		confirmed, nacked, unknown = confirmed+nc, nacked+nn, unknown+nu
	}
	return confirmed, nacked, unknown, missing
}
