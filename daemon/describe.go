package daemon

import (
	"context"
	"fmt"
	"net/http"
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

// describe lists the catalogue as this broker applied it, one queue a
// line, keeping those filter selects. It runs on the loop.
func (s *Server) describe(filter string) string {
	md := s.host.Node().Metadata()
	var b strings.Builder
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
		fmt.Fprintf(&b, "%s id=%d replicas=%d policy=%s min-insync=%d", q.Name, q.ID, q.Replicas, q.Policy, q.MinInsync)
		if !q.Assigned {
			b.WriteString(" not-placed\n")
			continue
		}
		fmt.Fprintf(&b, " epoch=%d owner=n%d members=", a.Epoch, a.Owner)
		for j, m := range a.Members.Slice() {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "n%d", m.Node)
		}
		b.WriteString(" in-sync=")
		b.WriteString(nodeList(a.InSync.Slice()))
		if a.Fenced {
			fmt.Fprintf(&b, " fenced pending-epoch=%d proposed=%s", a.Pending.Epoch, nodeList(a.Pending.Proposed.Slice()))
			if sa, ok := s.obs.setAside[q.ID]; ok && sa.epoch == a.Pending.Epoch {
				fmt.Fprintf(&b, " set-aside=%q", sa.reason)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func nodeList(ns []seam.NodeID) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = "n" + strconv.FormatUint(uint64(n), 10)
	}
	return strings.Join(parts, ",")
}

// handleDescribe is GET /describe[?filter=under-replicated|under-min-insync|unavailable].
func (s *Server) handleDescribe(w http.ResponseWriter, r *http.Request) {
	filter := r.FormValue("filter")
	switch filter {
	case describeAll, describeUnderReplicated, describeUnderMinInSync, describeUnavailable:
	default:
		http.Error(w, fmt.Sprintf("unknown filter %q", filter), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	reply := make(chan string, 1)
	select {
	case s.events <- event{kind: evDescribe, filter: filter, text: reply}:
	case <-s.done:
		http.Error(w, "the broker stopped", http.StatusServiceUnavailable)
		return
	case <-ctx.Done():
		http.Error(w, "the broker's loop does not answer", http.StatusServiceUnavailable)
		return
	}
	select {
	case text := <-reply:
		w.Write([]byte(text))
	case <-s.done:
		http.Error(w, "the broker stopped", http.StatusServiceUnavailable)
	case <-ctx.Done():
		http.Error(w, "the broker's loop does not answer", http.StatusServiceUnavailable)
	}
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
