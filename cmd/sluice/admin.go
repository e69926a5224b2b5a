package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/daemon"
)

const describeAbout = `Lists the queues as the first broker's metadata holds them, one a line:
id, replicas, policy, min in-sync, epoch, owner, members, in-sync set, and
a pending transition if the queue is fenced. Under a fenced queue, one
indented line for each of its last attempts at recovery (at most 8, by
start): the broker that saw it, the transition's epoch, its start (UTC),
its outcome (running, activated, set-aside with its reason, superseded,
handed-off to another proposed member, or
observed: the stages this broker did of an attempt another ran), and the
stage chain with each stage's ms since the attempt's start and the broker
it names (the sealer, the source, the installer). A broker sees only its
own part of an attempt (the candidate runs it; the others seal or
install), so give --http every broker's address, comma-separated: the
catalogue comes from the first that answers, the attempts from all.

With a filter it lists only the queues in trouble, and prints nothing when
there are none (like Kafka's):

  --under-replicated   the in-sync set is smaller than the declared replicas
  --under-min-insync   the in-sync set is below the queue's min in-sync
  --unavailable        not placed, or fenced (no writes until recovery)

--json prints one JSON document instead: {"node", "queues", "histories",
"unreached"}, the catalogue and each broker's history as GET /describe?format=json
and GET /recovery/history give them.

Example:
  sluice describe
  sluice describe --unavailable --http 127.0.0.1:15692,127.0.0.1:15693
  sluice describe --json
`

func runDescribe(args []string, e env) int {
	c := newCommand("sluice describe", "sluice describe [--under-replicated | --under-min-insync | --unavailable] [--json] [--http HOST:PORT[,HOST:PORT...]]", describeAbout)
	addrs := c.fs.String("http", "127.0.0.1:15692", "the brokers' HTTP addresses (sluice serve --http-addr), comma-separated")
	under := c.fs.Bool("under-replicated", false, "only queues whose in-sync set is smaller than their members")
	minIsr := c.fs.Bool("under-min-insync", false, "only queues whose in-sync set is below their min in-sync")
	unavail := c.fs.Bool("unavailable", false, "only queues not placed or fenced")
	asJSON := c.fs.Bool("json", false, "print the catalogue and the recovery histories as one JSON document")
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
	var hosts []string
	for _, a := range strings.Split(*addrs, ",") {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(hosts, a) {
			hosts = append(hosts, a)
		}
	}
	if len(hosts) == 0 || len(hosts) > describeBrokersMax {
		return c.fail(e, fmt.Sprintf("--http: want 1 to %d addresses", describeBrokersMax))
	}
	d, err := gatherDescription(hosts, filter)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice describe: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(d)
		return 0
	}
	d.WriteText(e.stdout)
	for _, u := range d.Unreached {
		fmt.Fprintf(e.stderr, "sluice describe: no history from %s\n", u)
	}
	return 0
}

// describeBrokersMax bounds the addresses describe asks.
const describeBrokersMax = 64

// gatherDescription asks hosts in order for the catalogue (the first that
// answers gives it, with its own history) and every other for its
// recovery history; a broker that does not answer is named in Unreached.
func gatherDescription(hosts []string, filter string) (daemon.Description, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	var d daemon.Description
	var errs []string
	from := -1
	for i, h := range hosts {
		if err := getJSON(client, "http://"+h+"/describe?"+url.Values{"filter": {filter}, "format": {"json"}}.Encode(), &d); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", h, err))
			continue
		}
		from = i
		break
	}
	if from < 0 {
		return d, errors.New(strings.Join(errs, "; "))
	}
	d.Unreached = append(d.Unreached, errs...)
	for _, h := range hosts[from+1:] {
		var hist daemon.History
		if err := getJSON(client, "http://"+h+"/recovery/history", &hist); err != nil {
			d.Unreached = append(d.Unreached, fmt.Sprintf("%s: %v", h, err))
			continue
		}
		d.Histories = append(d.Histories, hist)
	}
	return d, nil
}

// getJSON gets u and decodes its JSON body into v.
func getJSON(client *http.Client, u string, v any) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, v)
}

const recoveryAbout = `recovery retry QUEUE tries the recovery of fenced queue QUEUE at once:
the metadata group counts a retry on its pending transition, and the
candidate broker's worker ends the backoff of the attempt it set aside
(1 s doubling to 30 s) and starts a fresh one (an attempt blocked starts
over at once; one running asks again now). For after the cause was
mended: a broker back, a budget raised (a change of the
recovery.inspect_* settings retries by itself). Refused (exit 1) when
the queue is not fenced, or its transition changed since --epoch.

Example:
  sluice recovery retry orders
  sluice recovery retry orders --epoch 3
`

func runRecovery(args []string, e env) int {
	c := newCommand("sluice recovery", "sluice recovery retry QUEUE [--epoch N] [--http HOST:PORT]", recoveryAbout)
	addr := c.fs.String("http", "127.0.0.1:15692", "the broker's HTTP address (sluice serve --http-addr)")
	epoch := c.fs.Uint64("epoch", 0, "the pending transition's epoch the retry is for (describe's pending-epoch; 0: the one the broker holds)")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 2 || pos[0] != "retry" {
		return c.fail(e, "want: retry QUEUE")
	}
	form := url.Values{"queue": {pos[1]}}
	if *epoch != 0 {
		form.Set("epoch", strconv.FormatUint(*epoch, 10))
	}
	return postAdmin(e, "sluice recovery", *addr, "/recovery/retry", form)
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
	return postAdmin(e, "sluice drain", *addr, "/drain", url.Values{"node": {pos[0]}, "draining": {strconv.FormatBool(!*undo)}})
}

// postAdmin posts form to path on a broker's HTTP address and prints its
// answer: exit status 0 when it says 200 OK, else 1 with what it said.
func postAdmin(e env, name, addr, path string, form url.Values) int {
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.PostForm("http://"+addr+path, form)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", name, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(e.stderr, "%s: %s: %s", name, resp.Status, body)
		return 1
	}
	e.stdout.Write(body)
	return 0
}
