package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// Filters of GET /describe (sluice describe): which queues to list.
const (
	describeAll             = ""
	describeUnderReplicated = "under-replicated" // in-sync set smaller than the declared replica count
	describeUnderMinInSync  = "under-min-insync" // in-sync set below the queue's min in-sync
	describeUnavailable     = "unavailable"      // not placed, or fenced
)

// DescribedQueue is one catalogue entry as a broker applied it (describe's
// JSON; its text line is the same fields).
type DescribedQueue struct {
	Name        string   `json:"name"`
	ID          uint64   `json:"id"`
	Incarnation uint64   `json:"incarnation"`
	Replicas    int      `json:"replicas"`
	Policy      string   `json:"policy"`
	MinInsync   int      `json:"min_insync"`
	Placed      bool     `json:"placed"`
	Epoch       uint64   `json:"epoch,omitempty"`
	Owner       uint64   `json:"owner,omitempty"`
	Members     []uint64 `json:"members,omitempty"`
	InSync      []uint64 `json:"in_sync,omitempty"`
	Fenced      bool     `json:"fenced"`
	// The pending transition of a fenced queue: its epoch, the members it
	// proposes, the operator's retries counted on it.
	PendingEpoch uint64   `json:"pending_epoch,omitempty"`
	Proposed     []uint64 `json:"proposed,omitempty"`
	Retries      uint64   `json:"retries,omitempty"`
}

// Description is describe's document: the catalogue as broker Node applied
// it, and the recovery histories of the brokers asked (`sluice describe`
// asks each broker it is given; a broker's own GET /describe holds its
// history alone).
type Description struct {
	Node      uint64           `json:"node"`
	Queues    []DescribedQueue `json:"queues"`
	Histories []History        `json:"histories"`
	// Unreached: the brokers' HTTP addresses whose history could not be
	// had, and why.
	Unreached []string `json:"unreached,omitempty"`
}

// describe returns the catalogue as this broker applied it, keeping the
// queues filter selects, with this broker's recovery history. It runs on
// the loop.
func (s *Server) describe(filter string) Description {
	md := s.host.Node().Metadata()
	d := Description{Node: uint64(s.node), Queues: []DescribedQueue{}, Histories: []History{s.obs.history.snapshot(s.node)}}
	qs := md.Queues()
	for i := range qs {
		q := &qs[i]
		a := &q.Assignment
		switch filter {
		case describeUnderReplicated:
			if !q.UnderReplicated() {
				continue
			}
		case describeUnderMinInSync:
			if !q.UnderMinInSync() {
				continue
			}
		case describeUnavailable:
			if q.Assigned && !a.Fenced {
				continue
			}
		}
		dq := DescribedQueue{Name: q.Name, ID: uint64(q.ID), Incarnation: q.Incarnation, Replicas: q.Replicas, Policy: q.Policy.String(), MinInsync: q.MinInsync, Placed: q.Assigned}
		if q.Assigned {
			dq.Epoch, dq.Owner, dq.Fenced = a.Epoch, uint64(a.Owner), a.Fenced
			for _, m := range a.Members.Slice() {
				dq.Members = append(dq.Members, uint64(m.Node))
			}
			dq.InSync = nodeIDs(a.InSync.Slice())
			if a.Fenced {
				dq.PendingEpoch, dq.Proposed, dq.Retries = a.Pending.Epoch, nodeIDs(a.Pending.Proposed.Slice()), a.Pending.Retries
			}
		}
		d.Queues = append(d.Queues, dq)
	}
	return d
}

func nodeIDs(ns []seam.NodeID) []uint64 {
	out := make([]uint64, len(ns))
	for i, n := range ns {
		out[i] = uint64(n)
	}
	return out
}

// DescribeAttemptsMax is how many of a fenced queue's last attempts the
// text shows (from every broker's history, by start).
const DescribeAttemptsMax = 8

// WriteText writes d as describe's text: one line a queue; under a fenced
// queue, its last attempts at the pending transition, one indented line
// each: the broker, the stage chain with ms since the attempt's start,
// the outcome and reason. The queue's line names the latest set-aside's
// detail (set-aside="...").
func (d *Description) WriteText(w io.Writer) {
	var b strings.Builder
	for i := range d.Queues {
		q := &d.Queues[i]
		fmt.Fprintf(&b, "%s id=%d replicas=%d policy=%s min-insync=%d", q.Name, q.ID, q.Replicas, q.Policy, q.MinInsync)
		if !q.Placed {
			b.WriteString(" not-placed\n")
			continue
		}
		fmt.Fprintf(&b, " epoch=%d owner=n%d members=%s in-sync=%s", q.Epoch, q.Owner, nodeList(q.Members), nodeList(q.InSync))
		if !q.Fenced {
			b.WriteByte('\n')
			continue
		}
		fmt.Fprintf(&b, " fenced pending-epoch=%d proposed=%s", q.PendingEpoch, nodeList(q.Proposed))
		if q.Retries > 0 {
			fmt.Fprintf(&b, " retries=%d", q.Retries)
		}
		attempts := d.attempts(q.ID, q.PendingEpoch)
		for j := len(attempts) - 1; j >= 0; j-- {
			if a := attempts[j].a; a.Outcome == outcomeSetAside {
				fmt.Fprintf(&b, " set-aside=%q", a.Detail)
				break
			}
		}
		b.WriteByte('\n')
		for _, na := range attempts {
			a := na.a
			fmt.Fprintf(&b, "  attempt n%d epoch=%d at=%s %s", na.node, a.Epoch, time.UnixMilli(a.StartUnixMs).UTC().Format("15:04:05.000"), a.Outcome)
			if a.Aside != "" {
				fmt.Fprintf(&b, " aside=%s", a.Aside)
			}
			fmt.Fprintf(&b, ": %s\n", a.chain())
		}
	}
	io.WriteString(w, b.String())
}

type nodeAttempt struct {
	node uint64
	a    *Attempt
}

// attempts returns the last DescribeAttemptsMax attempts at queue q's
// transition to epoch in every history, by start (ties by broker).
func (d *Description) attempts(q, epoch uint64) []nodeAttempt {
	var out []nodeAttempt
	for i := range d.Histories {
		h := &d.Histories[i]
		for j := range h.Attempts {
			if a := &h.Attempts[j]; a.Queue == q && a.Epoch == epoch {
				out = append(out, nodeAttempt{h.Node, a})
			}
		}
	}
	slices.SortStableFunc(out, func(x, y nodeAttempt) int {
		if c := cmp.Compare(x.a.StartUnixMs, y.a.StartUnixMs); c != 0 {
			return c
		}
		return cmp.Compare(x.node, y.node)
	})
	return out[max(0, len(out)-DescribeAttemptsMax):]
}

func nodeList(ns []uint64) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = "n" + strconv.FormatUint(n, 10)
	}
	return strings.Join(parts, ",")
}

// handleHistory is GET /recovery/history: this broker's recovery history
// as JSON (History).
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	d, ok := s.askDescribe(w, r, describeAll)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(d.Histories[0])
}

// handleDescribe is GET /describe[?filter=under-replicated|under-min-insync|unavailable][&format=json]:
// the text (Description.WriteText) or the JSON document (Description).
func (s *Server) handleDescribe(w http.ResponseWriter, r *http.Request) {
	filter := r.FormValue("filter")
	switch filter {
	case describeAll, describeUnderReplicated, describeUnderMinInSync, describeUnavailable:
	default:
		http.Error(w, fmt.Sprintf("unknown filter %q", filter), http.StatusBadRequest)
		return
	}
	d, ok := s.askDescribe(w, r, filter)
	if !ok {
		return
	}
	switch r.FormValue("format") {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d)
	default:
		d.WriteText(w)
	}
}

// askDescribe asks the loop for its description (filter: which queues);
// ok false: it answered the request with the error.
func (s *Server) askDescribe(w http.ResponseWriter, r *http.Request, filter string) (Description, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	reply := make(chan Description, 1)
	select {
	case s.events <- event{kind: evDescribe, filter: filter, described: reply}:
	case <-s.done:
		http.Error(w, "the broker stopped", http.StatusServiceUnavailable)
		return Description{}, false
	case <-ctx.Done():
		http.Error(w, "the broker's loop does not answer", http.StatusServiceUnavailable)
		return Description{}, false
	}
	select {
	case d := <-reply:
		return d, true
	case <-s.done:
		http.Error(w, "the broker stopped", http.StatusServiceUnavailable)
	case <-ctx.Done():
		http.Error(w, "the broker's loop does not answer", http.StatusServiceUnavailable)
	}
	return Description{}, false
}

// handleDrain is POST /drain with node and draining (true or false): the
// controller places nothing new on a draining broker.
func (s *Server) handleDrain(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST node and draining", http.StatusMethodNotAllowed)
		return
	}
	node, err := strconv.ParseUint(r.FormValue("node"), 10, 32)
	if err != nil || node == 0 {
		http.Error(w, fmt.Sprintf("node %q: want a broker id", r.FormValue("node")), http.StatusBadRequest)
		return
	}
	draining, err := strconv.ParseBool(r.FormValue("draining"))
	if err != nil {
		http.Error(w, fmt.Sprintf("draining %q: want true or false", r.FormValue("draining")), http.StatusBadRequest)
		return
	}
	c := metadata.Command{Kind: metadata.Drain, Node: seam.NodeID(node), Draining: draining}
	if err := c.Validate(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.answerCommand(w, r, c)
}

// handleRetry is POST /recovery/retry with queue (a name) and optionally
// epoch (the pending transition's, as describe showed it): the metadata
// group counts a retry on the queue's pending transition (RetryRecovery),
// and the candidate's worker tries an attempt it set aside at once. The
// command names the incarnation and pending epoch this broker applied
// (epoch, if given, instead), and the metadata refuses it if the queue is
// not fenced with that transition pending by the time it applies.
func (s *Server) handleRetry(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST queue", http.StatusMethodNotAllowed)
		return
	}
	name := r.FormValue("queue")
	var epoch uint64
	if v := r.FormValue("epoch"); v != "" {
		e, err := strconv.ParseUint(v, 10, 64)
		if err != nil || e == 0 {
			http.Error(w, fmt.Sprintf("epoch %q: want a pending transition's epoch", v), http.StatusBadRequest)
			return
		}
		epoch = e
	}
	d, ok := s.askDescribe(w, r, describeAll)
	if !ok {
		return
	}
	i := slices.IndexFunc(d.Queues, func(q DescribedQueue) bool { return q.Name == name })
	switch {
	case i < 0:
		http.Error(w, fmt.Sprintf("queue %q is not declared", name), http.StatusNotFound)
		return
	case !d.Queues[i].Fenced:
		http.Error(w, fmt.Sprintf("queue %q is not fenced: no recovery to retry", name), http.StatusConflict)
		return
	}
	q := &d.Queues[i]
	if epoch == 0 {
		epoch = q.PendingEpoch
	}
	c := metadata.Command{Kind: metadata.RetryRecovery, Queue: name, Incarnation: q.Incarnation, Epoch: epoch}
	if err := c.Validate(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.answerCommand(w, r, c)
}
