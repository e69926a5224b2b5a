package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const describeAbout = `Lists the broker's queues as its metadata holds them, one a line: id,
replicas, policy, min in-sync, epoch, owner, members, in-sync set, and a
pending transition if the queue is fenced. With a filter it lists only the
queues in trouble, and prints nothing when there are none (like Kafka's):

  --under-replicated   the in-sync set is smaller than the declared replicas
  --under-min-insync   the in-sync set is below the queue's min in-sync
  --unavailable        not placed, or fenced (no writes until recovery)

Example:
  sluice describe
  sluice describe --unavailable
`

func runDescribe(args []string, e env) int {
	c := newCommand("sluice describe", "sluice describe [--under-replicated | --under-min-insync | --unavailable] [--http HOST:PORT]", describeAbout)
	addr := c.fs.String("http", "127.0.0.1:15692", "the broker's HTTP address (sluice serve --http-addr)")
	under := c.fs.Bool("under-replicated", false, "only queues whose in-sync set is smaller than their members")
	minIsr := c.fs.Bool("under-min-insync", false, "only queues whose in-sync set is below their min in-sync")
	unavail := c.fs.Bool("unavailable", false, "only queues not placed or fenced")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.fail(e, fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	filter, n := "", 0
	for _, f := range []struct {
		on   bool
		name string
	}{{*under, "under-replicated"}, {*minIsr, "under-min-insync"}, {*unavail, "unavailable"}} {
		if f.on {
			filter, n = f.name, n+1
		}
	}
	if n > 1 {
		return c.fail(e, "give one filter at most")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + *addr + "/describe?" + url.Values{"filter": {filter}}.Encode())
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice describe: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(e.stderr, "sluice describe: %s: %s", resp.Status, body)
		return 1
	}
	e.stdout.Write(body)
	return 0
}

const drainAbout = `Marks broker NODE draining: the controller places no new queue on it
(queues it holds stay). --undo clears the mark. The broker answers once the
metadata group committed it.

Example:
  sluice drain 1
  sluice drain 1 --undo
`

func runDrain(args []string, e env) int {
	c := newCommand("sluice drain", "sluice drain NODE [--undo] [--http HOST:PORT]", drainAbout)
	addr := c.fs.String("http", "127.0.0.1:15692", "the broker's HTTP address (sluice serve --http-addr)")
	undo := c.fs.Bool("undo", false, "clear the draining mark")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 1 {
		return c.fail(e, "name one broker (its node id)")
	}
	node, err := strconv.ParseUint(pos[0], 10, 32)
	if err != nil || node == 0 {
		return c.fail(e, fmt.Sprintf("broker %q: want a node id from 1", pos[0]))
	}
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.PostForm("http://"+*addr+"/drain", url.Values{"node": {pos[0]}, "draining": {strconv.FormatBool(!*undo)}})
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice drain: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(e.stderr, "sluice drain: %s: %s", resp.Status, body)
		return 1
	}
	e.stdout.Write(body)
	return 0
}
