package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/daemon"
)

const serveAbout = `Runs one broker: the core the simulator exercises, on real files (fdatasync)
and real sockets, with an AMQP 0-9-1 front door. With no flags it is a
single-node broker with its data in ./sluice-data, AMQP on 127.0.0.1:5672,
and /metrics, /healthz and /readyz on 127.0.0.1:15692; the user guest
(password guest) may log in from loopback only. The broker is the sole voter
of the metadata group: queue.declare commits through it and places the
queue here; publishes on a confirm channel are acked once the queue's log
holds them durably.

SIGTERM (or Ctrl-C) drains: stop accepting, answer every publish in
flight, close the connections, exit 0. A storage failure ends the process
with status 1 (a supervisor restarts it). Logs are structured (log/slog) on
stderr. What is built and what is not: docs/daemon.md.

Example:
  sluice serve
  sluice serve --data-dir /var/lib/sluice --amqp-addr 127.0.0.1:5673 --http-addr ""
`

func runServe(args []string, e env) int {
	c := newCommand("sluice serve", "sluice serve [--data-dir DIR] [--amqp-addr HOST:PORT] [--http-addr HOST:PORT]", serveAbout)
	dataDir := c.fs.String("data-dir", "./sluice-data", "the data directory (created if missing)")
	addr := c.fs.String("amqp-addr", "127.0.0.1:5672", "where AMQP 0-9-1 clients connect")
	httpAddr := c.fs.String("http-addr", "127.0.0.1:15692", `where /metrics (Prometheus), /healthz and /readyz are served; "" for none`)
	node := c.fs.Uint("node", 1, "this broker's node id")
	level := c.fs.String("log-level", "info", "debug, info, warn or error")
	logJSON := c.fs.Bool("log-json", false, "log JSON lines instead of text")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.fail(e, fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return c.fail(e, fmt.Sprintf("--log-level %q: want debug, info, warn or error", *level))
	}
	if *node == 0 || *node > 1<<32-1 {
		return c.fail(e, "--node must be 1 to 2^32-1")
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewTextHandler(e.stderr, opts)
	if *logJSON {
		h = slog.NewJSONHandler(e.stderr, opts)
	}
	lg := slog.New(h)
	// SIGTERM is caught from before the broker starts, so that it always
	// drains rather than dies.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	srv, err := daemon.Start(daemon.Config{DataDir: *dataDir, AMQPAddr: *addr, HTTPAddr: *httpAddr, Node: uint32(*node), Logger: lg})
	if err != nil {
		lg.Error("cannot start", "err", err)
		return 1
	}
	lg.Info("ready", "amqp", srv.Addr().String(), "http", srv.HTTPAddr())
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
