package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/daemon"
	"github.com/sluicemq/sluice/netio"
)

const serveAbout = `Runs one broker: the core the simulator exercises, on real files (fdatasync)
and real sockets, with an AMQP 0-9-1 front door. With no flags it is a
single-node broker with its data in ./sluice-data, AMQP on 127.0.0.1:5672,
and /metrics, /healthz and /readyz on 127.0.0.1:15692; the user guest
(password guest) may log in from loopback only. --users-file FILE replaces
guest with the users it lists, one "name:password" a line, or
"name:password:loopback" for one that may log in from loopback only (#
starts a comment); keep it readable by the broker's user alone. The broker is the sole voter
of the metadata group: queue.declare commits through it and places the
queue here; publishes on a confirm channel are acked once the queue's log
holds them durably.

Cluster mode: --peers lists every broker of the cluster (this one included)
with the address its peers dial, --node says which one this is, and
--secret-file holds the cluster secret (at least 32 bytes, the same file on
every broker) that authenticates every peer connection. The metadata
group's voters are --voters (default: the lowest 1, 3 or 5 ids). A client
may connect to any broker: requests for a queue another broker owns are
forwarded there. --config FILE reads the same settings from a file, one
"name = value" a line (the flag names without dashes; # starts a comment);
a flag given on the command line overrides the file.

SIGTERM (or Ctrl-C) drains: stop accepting, answer every publish in
flight, close the connections, exit 0. A storage failure ends the process
with status 1 (a supervisor restarts it). Logs are structured (log/slog) on
stderr. What is built and what is not: docs/daemon.md.

Example:
  sluice serve
  sluice serve --data-dir /var/lib/sluice --amqp-addr 127.0.0.1:5673 --http-addr ""
  sluice serve --node 2 --peers 1=10.0.0.1:7000,2=10.0.0.2:7000,3=10.0.0.3:7000 \
      --secret-file /etc/sluice/secret --data-dir /var/lib/sluice --amqp-addr 0.0.0.0:5672
`

// serveFileKeys are the flags a --config file may set.
var serveFileKeys = []string{"data-dir", "amqp-addr", "http-addr", "node", "log-level", "log-json",
	"peers", "voters", "peer-listen", "secret-file", "users-file"}

func runServe(args []string, e env) int {
	c := newCommand("sluice serve", "sluice serve [--data-dir DIR] [--amqp-addr HOST:PORT] [--http-addr HOST:PORT] [--node N]\n"+
		"       [--peers N=HOST:PORT,... --secret-file FILE [--voters N,...] [--peer-listen HOST:PORT]] [--config FILE]", serveAbout)
	dataDir := c.fs.String("data-dir", "./sluice-data", "the data directory (created if missing)")
	addr := c.fs.String("amqp-addr", "127.0.0.1:5672", "where AMQP 0-9-1 clients connect")
	httpAddr := c.fs.String("http-addr", "127.0.0.1:15692", `where /metrics (Prometheus), /healthz and /readyz are served; "" for none`)
	node := c.fs.Uint("node", 1, "this broker's node id")
	level := c.fs.String("log-level", "info", "debug, info, warn or error")
	logJSON := c.fs.Bool("log-json", false, "log JSON lines instead of text")
	peers := c.fs.String("peers", "", "cluster mode: every broker of the cluster, this one included, as id=host:port of its peer listener, comma-separated")
	voters := c.fs.String("voters", "", "cluster mode: the metadata group's voters, 1, 3 or 5 ids, comma-separated (default: the lowest 1, 3 or 5)")
	peerListen := c.fs.String("peer-listen", "", "cluster mode: where to listen for peers (default: this broker's --peers address)")
	secretFile := c.fs.String("secret-file", "", "cluster mode: the file holding the cluster secret (at least 32 bytes; trailing newlines ignored)")
	usersFile := c.fs.String("users-file", "", `the users who may log in over AMQP (PLAIN), one "name:password[:loopback]" a line; default guest/guest from loopback only`)
	config := c.fs.String("config", "", `a file of settings, one "name = value" a line (flag names); flags override it`)
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.fail(e, fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	if *config != "" {
		if err := applyConfigFile(c, *config); err != nil {
			return c.fail(e, err.Error())
		}
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return c.fail(e, fmt.Sprintf("--log-level %q: want debug, info, warn or error", *level))
	}
	if *node == 0 || *node > 1<<32-1 {
		return c.fail(e, "--node must be 1 to 2^32-1")
	}
	cfg := daemon.Config{DataDir: *dataDir, AMQPAddr: *addr, HTTPAddr: *httpAddr, Node: uint32(*node)}
	if *usersFile != "" {
		users, err := readUsers(*usersFile)
		if err != nil {
			return c.fail(e, err.Error())
		}
		cfg.Users = users
	}
	if *peers == "" {
		for _, f := range []struct{ name, v string }{{"voters", *voters}, {"peer-listen", *peerListen}, {"secret-file", *secretFile}} {
			if f.v != "" {
				return c.fail(e, fmt.Sprintf("--%s is for cluster mode: give --peers too", f.name))
			}
		}
	} else {
		cc, err := clusterConfig(uint32(*node), *peers, *voters, *peerListen, *secretFile)
		if err != nil {
			return c.fail(e, err.Error())
		}
		cfg.Cluster = cc
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewTextHandler(e.stderr, opts)
	if *logJSON {
		h = slog.NewJSONHandler(e.stderr, opts)
	}
	lg := slog.New(h)
	cfg.Logger = lg
	// SIGTERM is caught from before the broker starts, so that it always
	// drains rather than dies.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	srv, err := daemon.Start(cfg)
	if err != nil {
		lg.Error("cannot start", "err", err)
		return 1
	}
	lg.Info("ready", "amqp", srv.Addr().String(), "http", srv.HTTPAddr(), "peers", srv.PeerAddr())
	select {
	case <-srv.Done():
		if err := srv.Err(); err != nil {
			lg.Error("stopped", "err", err)
			return 1
		}
		return 0
	case <-term:
	case <-e.interrupt:
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		lg.Error("drain failed", "err", err)
		return 1
	}
	lg.Info("stopped")
	return 0
}

// readUsers reads a --users-file: one "name:password" or
// "name:password:loopback" a line, blank lines and # comments skipped. A
// line that is not one of those, an empty name or password, a name given
// twice or a file with no user is refused, with its line number: a broker
// nobody can log in to, or one that silently skipped a user, is not what
// the operator asked for.
func readUsers(path string) ([]conn.User, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--users-file: %v", err)
	}
	var users []conn.User
	seen := map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		u := conn.User{}
		switch {
		case len(parts) == 2:
		case len(parts) == 3 && parts[2] == "loopback":
			u.LoopbackOnly = true
		default:
			return nil, fmt.Errorf("--users-file %s:%d: want name:password or name:password:loopback", path, i+1)
		}
		u.Name, u.Password = parts[0], parts[1]
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("--users-file %s:%d: an empty name or password", path, i+1)
		}
		if at, ok := seen[u.Name]; ok {
			return nil, fmt.Errorf("--users-file %s:%d: user %q listed already on line %d", path, i+1, u.Name, at)
		}
		seen[u.Name] = i + 1
		users = append(users, u)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("--users-file %s: no user: nobody could log in", path)
	}
	return users, nil
}

// clusterConfig checks the cluster flags and reads the secret; every
// error names the flag at fault.
func clusterConfig(node uint32, peers, voters, peerListen, secretFile string) (*daemon.ClusterConfig, error) {
	cc := &daemon.ClusterConfig{PeerListen: peerListen}
	for _, item := range strings.Split(peers, ",") {
		id, a, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("--peers %q: want id=host:port, comma-separated", item)
		}
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("--peers: %q is not a node id (1 to 2^32-1)", id)
		}
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" || port == "0" {
			return nil, fmt.Errorf("--peers: n%d's address %q: want host:port with a port", n, a)
		}
		if slices.ContainsFunc(cc.Members, func(m daemon.Member) bool { return m.Node == uint32(n) }) {
			return nil, fmt.Errorf("--peers: n%d is listed twice", n)
		}
		cc.Members = append(cc.Members, daemon.Member{Node: uint32(n), Addr: a})
	}
	if len(cc.Members) < 2 {
		return nil, fmt.Errorf("--peers lists %d broker(s); a cluster has at least 2 (leave --peers out for one broker)", len(cc.Members))
	}
	if !slices.ContainsFunc(cc.Members, func(m daemon.Member) bool { return m.Node == node }) {
		return nil, fmt.Errorf("--peers does not list this broker (--node %d)", node)
	}
	if voters != "" {
		for _, v := range strings.Split(voters, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("--voters: %q is not a node id", v)
			}
			if !slices.ContainsFunc(cc.Members, func(m daemon.Member) bool { return m.Node == uint32(n) }) {
				return nil, fmt.Errorf("--voters: n%d is not in --peers", n)
			}
			if slices.Contains(cc.Voters, uint32(n)) {
				return nil, fmt.Errorf("--voters: n%d is listed twice", n)
			}
			cc.Voters = append(cc.Voters, uint32(n))
		}
		if k := len(cc.Voters); k != 1 && k != 3 && k != 5 {
			return nil, fmt.Errorf("--voters lists %d; want 1, 3 or 5", k)
		}
	}
	if peerListen != "" {
		if _, _, err := net.SplitHostPort(peerListen); err != nil {
			return nil, fmt.Errorf("--peer-listen %q: want host:port", peerListen)
		}
	}
	if secretFile == "" {
		return nil, fmt.Errorf("--peers needs --secret-file: peers authenticate with the cluster secret")
	}
	b, err := os.ReadFile(secretFile)
	if err != nil {
		return nil, fmt.Errorf("--secret-file: %v", err)
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < netio.SecretBytesMin {
		return nil, fmt.Errorf("--secret-file %s: %d bytes, need at least %d", secretFile, len(b), netio.SecretBytesMin)
	}
	cc.Secret = b
	return cc, nil
}

// applyConfigFile sets the flags the file names, except those given on
// the command line.
func applyConfigFile(c *command, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		if text == "" {
			continue
		}
		key, value, ok := strings.Cut(text, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return fmt.Errorf("--config %s:%d: want name = value", path, line)
		}
		if !slices.Contains(serveFileKeys, key) {
			return fmt.Errorf("--config %s:%d: unknown setting %q%s", path, line, key, suggest(key, serveFileKeys))
		}
		if seen[key] {
			return fmt.Errorf("--config %s:%d: %s is set twice", path, line, key)
		}
		seen[key] = true
		if c.set(key) {
			continue // the command line wins
		}
		if err := c.fs.Set(key, value); err != nil {
			return fmt.Errorf("--config %s:%d: %s: %v", path, line, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--config %s: %v", path, err)
	}
	return nil
}
