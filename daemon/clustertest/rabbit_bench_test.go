package clustertest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rabbitBin is where Debian's rabbitmq-server package puts the real
// scripts (/usr/sbin's are a wrapper that su's to the rabbitmq user and
// would drop this test's environment).
const rabbitBin = "/usr/lib/rabbitmq/bin"

// BenchmarkRabbitMQ is `just bench-daemon`'s RabbitMQ half, the same
// sub-benchmarks as BenchmarkCluster with the same client code: three
// RabbitMQ nodes (Debian's rabbitmq-server, 3.10.8 in bookworm) on
// loopback, started by this benchmark, joined into one cluster, a quorum
// queue (three members, the default on three nodes; a quorum queue
// confirms once a majority has fsynced the publish to its write-ahead
// log, as Sluice's W = 2 of 3 fdatasynced), one amqp091-go publisher
// connected to the queue's leader. Then the leader-kill pause: publishing
// at 500 msg/s through another node, the time from SIGKILL of the
// leader's node (its beam process) to the next confirm.
//
//	go test -run '^$' -bench 'Cluster|RabbitMQ' -benchtime 20000x ./daemon/clustertest
func BenchmarkRabbitMQ(b *testing.B) {
	if _, err := os.Stat(filepath.Join(rabbitBin, "rabbitmq-server")); err != nil {
		b.Skipf("RabbitMQ is not installed (%v): apt-get install rabbitmq-server (`just bench-daemon` does) for the RabbitMQ half", err)
	}
	c := newRabbitCluster(b, 3)
	runs := benchWindows(b, func(b *testing.B, q string) string { return c.n(c.declareAndFindLeader(b, q)).url() })
	b.Run("owner-kill", func(b *testing.B) {
		runs++
		q := fmt.Sprintf("bench-kill-%d", runs)
		leader := c.declareAndFindLeader(b, q)
		via := leader%len(c.nodes) + 1
		pause, unknown := killPause(b, q, c.n(via).url(), func() { c.kill(leader) })
		newLeader, _ := c.queueLeader(via, q)
		b.Logf("leader %s killed, publishing via %s; first confirm after %v; %d unknown outcomes; leader now %s",
			c.n(leader).name, c.n(via).name, pause.Round(time.Millisecond), unknown, newLeader)
		// Back to three nodes for the next run.
		c.start(leader)
		c.awaitStartup(leader)
	})
}

// rabbitNode is one RabbitMQ node of a test cluster.
type rabbitNode struct {
	id                 int
	name               string // rabbitN@localhost
	amqpPort, distPort int
	dir                string
	out                string // the server script's stdout and stderr
	cmd                *exec.Cmd
	exited             chan struct{}
}

func (n *rabbitNode) url() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.amqpPort) }

func (n *rabbitNode) running() bool { return processRunning(n.cmd, n.exited) }

// rabbitCluster is a cluster of RabbitMQ nodes on loopback, all under one
// temporary directory: a HOME holding the shared Erlang cookie, and a
// private epmd port, so that nothing is shared with a system RabbitMQ.
type rabbitCluster struct {
	t        testing.TB
	dir      string
	epmdPort int
	epmd     *exec.Cmd // the cluster's own epmd, in the foreground
	nodes    []*rabbitNode
}

func (c *rabbitCluster) n(i int) *rabbitNode { return c.nodes[i-1] }

func newRabbitCluster(t testing.TB, n int) *rabbitCluster {
	t.Helper()
	c := &rabbitCluster{t: t, dir: t.TempDir()}
	ports := freePorts(t, 1+2*n)
	port := func(k int) int {
		_, p, _ := strings.Cut(ports[k], ":")
		v, _ := strconv.Atoi(p)
		return v
	}
	c.epmdPort = port(0)
	files := map[string]string{
		".erlang.cookie":    "SLUICECLUSTERTESTCOOKIE",
		"enabled_plugins":   "[].\n", // no management plugin, no plugin at all
		"rabbitmq-env.conf": "",      // not /etc/rabbitmq's
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(data), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= n; i++ {
		node := &rabbitNode{id: i, name: fmt.Sprintf("rabbit%d@localhost", i),
			amqpPort: port(2*i - 1), distPort: port(2 * i),
			dir: filepath.Join(c.dir, fmt.Sprintf("rabbit%d", i)),
			out: filepath.Join(c.dir, fmt.Sprintf("rabbit%d.out", i))}
		if err := os.MkdirAll(node.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		conf := fmt.Sprintf("listeners.tcp.1 = 127.0.0.1:%d\n", node.amqpPort)
		if err := os.WriteFile(filepath.Join(node.dir, "rabbitmq.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, node)
	}
	t.Cleanup(c.cleanup)
	// An epmd of the cluster's own, started before the nodes (which then
	// do not start one: erl's would daemonize out of reach).
	c.epmd = exec.Command("epmd", "-port", strconv.Itoa(c.epmdPort))
	c.epmd.Env = append(os.Environ(), "ERL_EPMD_PORT="+strconv.Itoa(c.epmdPort))
	c.epmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.epmd.Start(); err != nil {
		t.Fatalf("starting epmd: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		conn, err := net.Dial("tcp", ports[0])
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("epmd not listening on %s in 10 s: %v", ports[0], err)
		}
	}
	for i := 1; i <= n; i++ {
		c.start(i)
	}
	for i := 1; i <= n; i++ {
		c.awaitStartup(i)
	}
	for i := 2; i <= n; i++ {
		c.ctl(i, "stop_app")
		c.ctl(i, "join_cluster", c.n(1).name)
		c.ctl(i, "start_app")
		c.awaitStartup(i)
	}
	return c
}

// env is the environment of node i's server and of the CLI tools run
// against it.
func (c *rabbitCluster) env(i int) []string {
	node := c.n(i)
	return append(os.Environ(),
		"HOME="+c.dir,
		"ERL_EPMD_PORT="+strconv.Itoa(c.epmdPort),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(c.dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(c.dir, "enabled_plugins"),
		"RABBITMQ_NODENAME="+node.name,
		"RABBITMQ_NODE_PORT="+strconv.Itoa(node.amqpPort),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(node.distPort),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(node.dir, "rabbitmq"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(node.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(node.dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(node.dir, "pid"),
	)
}

// start starts node i's server in a process group of its own (the
// script, and the beam process it starts beside it).
func (c *rabbitCluster) start(i int) {
	c.t.Helper()
	node := c.n(i)
	if node.running() {
		c.t.Fatalf("%s is running already", node.name)
	}
	out, err := os.OpenFile(node.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmq-server"))
	cmd.Env, cmd.Dir = c.env(i), node.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		c.t.Fatalf("starting %s: %v", node.name, err)
	}
	node.cmd, node.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		out.Close()
		close(exited)
	}(node.exited)
}

// kill sends SIGKILL to node i's beam process (the script, its parent,
// then exits and reaps it) and waits for the script to be gone; then to
// what is left of its process group.
func (c *rabbitCluster) kill(i int) {
	c.t.Helper()
	node := c.n(i)
	if !node.running() {
		c.t.Fatalf("%s is not running", node.name)
	}
	pgid := node.cmd.Process.Pid
	beams := childrenOf(pgid)
	if len(beams) == 0 {
		c.t.Fatalf("%s: no beam process under its script (pid %d)", node.name, pgid)
	}
	for _, pid := range beams {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			c.t.Fatalf("kill -9 %s's beam (pid %d): %v", node.name, pid, err)
		}
	}
	select {
	case <-node.exited:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s did not die of SIGKILL in 10 s", node.name)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// childrenOf returns the pids of the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		k, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		_, rest, ok := strings.Cut(string(stat), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, k)
		}
	}
	return kids
}

// cleanup kills every node (its beam, then its process group) and the
// cluster's epmd, and prints the servers' output when the benchmark
// failed.
func (c *rabbitCluster) cleanup() {
	for _, node := range c.nodes {
		if !node.running() {
			continue
		}
		pgid := node.cmd.Process.Pid
		for _, pid := range childrenOf(pgid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-node.exited: // the script reaped its beam and exited
		case <-time.After(10 * time.Second):
		}
		syscall.Kill(-pgid, syscall.SIGKILL) // whatever is left of the group
		<-node.exited
	}
	if c.epmd != nil && c.epmd.Process != nil {
		syscall.Kill(-c.epmd.Process.Pid, syscall.SIGKILL)
		c.epmd.Wait()
	}
	if c.t.Failed() {
		for _, node := range c.nodes {
			data, _ := os.ReadFile(node.out)
			log, _ := os.ReadFile(filepath.Join(node.dir, "log", node.name+".log"))
			tail := func(s string) string {
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				return strings.Join(lines[max(0, len(lines)-40):], "\n")
			}
			c.t.Logf("---- %s's output:\n%s\n---- its log:\n%s", node.name, tail(string(data)), tail(string(log)))
		}
	}
}

// ctl runs `rabbitmqctl -n node_i args` and returns its output.
func (c *rabbitCluster) ctl(i int, args ...string) string {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmqctl"), append([]string{"-n", c.n(i).name}, args...)...)
	cmd.Env = c.env(i)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("rabbitmqctl -n %s %s: %v\n%s", c.n(i).name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// awaitStartup waits until node i runs its broker application.
func (c *rabbitCluster) awaitStartup(i int) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if !c.n(i).running() {
			c.t.Fatalf("%s exited while starting", c.n(i).name)
		}
		cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmqctl"), "-n", c.n(i).name, "await_startup", "--timeout", "60")
		cmd.Env = c.env(i)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not started in 60 s: %v\n%s", c.n(i).name, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// declareAndFindLeader declares quorum queue q (the same arguments as the
// Sluice half; RabbitMQ ignores x-sluice-replicas) and returns the node of
// its leader once all three members are online.
func (c *rabbitCluster) declareAndFindLeader(b *testing.B, q string) int {
	b.Helper()
	declareQueue(b, c.n(1).url(), q)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		leader, online := c.queueLeader(1, q)
		if online == len(c.nodes) {
			for i, node := range c.nodes {
				if node.name == leader && node.running() {
					return i + 1
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("quorum queue %s: no leader with every member online in 30 s:\n%s", q, c.ctl(1, "list_queues", "name", "type", "leader", "online"))
	return 0
}

// queueLeader returns quorum queue q's leader as node i sees it, and how
// many of its members are online.
func (c *rabbitCluster) queueLeader(i int, q string) (string, int) {
	c.t.Helper()
	out := c.ctl(i, "list_queues", "name", "type", "leader", "online", "--quiet", "--formatter", "json")
	var qs []struct {
		Name, Type, Leader string
		Online             []string
	}
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		c.t.Fatalf("list_queues: %v\n%s", err, out)
	}
	for _, x := range qs {
		if x.Name == q {
			if x.Type != "quorum" {
				c.t.Fatalf("%s is a %s queue, not a quorum queue", q, x.Type)
			}
			return x.Leader, len(x.Online)
		}
	}
	return "", 0
}
