package daemon

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
)

// Operators' metadata commands (sluice settings set) arrive over HTTP:
// POST /settings with key and value. The loop proposes the command as a
// ReqMeta of its own core client (adminClient, apart from the front's),
// and the handler answers once the metadata group committed and applied
// it. The endpoint has no authentication: it listens where --http-addr
// says, loopback by default.

// adminClient is the core client of operators' requests; the front's
// clients count up from 1 and never reach it.
const adminClient = core.ClientID(1) << 62

// adminReply is the outcome of an operator's command.
type adminReply struct {
	outcome core.Outcome
	reason  string
	index   uint64
}

// adminEvent asks the loop to propose cmd.
type adminEvent struct {
	cmd   []byte
	reply chan adminReply
}

// adminPending is an operator's command awaiting its outcome (loop).
type adminPending struct {
	cmd   []byte
	reply chan adminReply
	node  core.NodeID // where it was proposed (this broker, or the leader it was forwarded to)
}

// propose runs on the loop: cmd goes to the core.
func (s *Server) propose(a *adminEvent) {
	s.adminSeq++
	s.admin[s.adminSeq] = &adminPending{cmd: a.cmd, reply: a.reply, node: s.node}
	s.host.Request(s.now(), adminClient, core.Request{Kind: core.ReqMeta, ID: s.adminSeq, Body: a.cmd})
}

// adminAnswer runs on the loop: the core's reply to an operator's command
// (this broker's, or the leader's it was forwarded to). In a cluster, a
// "not the leader" that names another leader sends the command there
// (after this step: the host may be mid-step).
func (s *Server) adminAnswer(e *core.Effect) {
	p := s.admin[e.ReqID]
	if p == nil {
		return
	}
	if s.cluster != nil && e.Outcome == core.Failed {
		if n := leaderIn(e.Reason); n != 0 && n != p.node && n != s.node && s.cluster.member(n) {
			p.node = n
			id, cmd := e.ReqID, p.cmd
			s.work.push(func() {
				s.cluster.fwd.request(n, adminClient, &core.Request{Kind: core.ReqMeta, ID: id, Body: cmd})
			})
			return
		}
	}
	delete(s.admin, e.ReqID)
	p.reply <- adminReply{outcome: e.Outcome, reason: e.Reason, index: e.Offset}
}

// adminLost answers the commands forwarded to broker node, whose link
// ended, as unknown (loop).
func (s *Server) adminLost(node core.NodeID) {
	for id, p := range s.admin {
		if p.node == node && node != s.node {
			delete(s.admin, id)
			p.reply <- adminReply{outcome: core.Unknown, reason: "the link to the leader n" + itoa(uint64(node)) + " ended"}
		}
	}
}

// adminUnreached sends the commands forwarded to broker node, whose link
// never connected (nothing arrived), to this broker again (loop).
func (s *Server) adminUnreached(node core.NodeID) {
	var ids []uint64
	for id, p := range s.admin {
		if p.node == node && node != s.node {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := s.admin[id]
		p.node = s.node
		s.host.Request(s.now(), adminClient, core.Request{Kind: core.ReqMeta, ID: id, Body: p.cmd})
	}
}

// leaderIn returns the leader a "not the leader: leader=N" refusal names
// (core/ctrl), 0 if none.
func leaderIn(reason string) core.NodeID {
	if !strings.HasPrefix(reason, "not the leader") {
		return 0
	}
	_, after, ok := strings.Cut(reason, "leader=")
	if !ok {
		return 0
	}
	end := 0
	for end < len(after) && after[end] >= '0' && after[end] <= '9' {
		end++
	}
	n, err := strconv.ParseUint(after[:end], 10, 32)
	if err != nil {
		return 0
	}
	return core.NodeID(n)
}

// command proposes cmd until it is committed, refused, or ctx ends;
// "not the leader" (a broker still electing itself) is asked again.
func (s *Server) command(ctx context.Context, cmd []byte) (adminReply, error) {
	for {
		reply := make(chan adminReply, 1)
		select {
		case s.events <- event{kind: evAdmin, admin: &adminEvent{cmd: cmd, reply: reply}}:
		case <-s.done:
			return adminReply{}, fmt.Errorf("the broker stopped")
		case <-ctx.Done():
			return adminReply{}, ctx.Err()
		}
		var r adminReply
		select {
		case r = <-reply:
		case <-s.done:
			return adminReply{}, fmt.Errorf("the broker stopped")
		case <-ctx.Done():
			return adminReply{}, fmt.Errorf("no answer in time: the outcome is unknown")
		}
		if r.outcome == core.Failed && strings.HasPrefix(r.reason, "not the leader") {
			select {
			case <-time.After(20 * time.Millisecond):
				continue
			case <-ctx.Done():
				return adminReply{}, fmt.Errorf("no leader in time: %s", r.reason)
			}
		}
		return r, nil
	}
}

// handleSettings is POST /settings?key=K&value=V (or a form body).
func (s *Server) handleSettings(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST key and value", http.StatusMethodNotAllowed)
		return
	}
	key, value := r.FormValue("key"), r.FormValue("value")
	c, err := metadata.Set(key, value)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.answerCommand(w, r, c)
}

// answerCommand commits c and answers the operator's request with its
// result.
func (s *Server) answerCommand(w http.ResponseWriter, r *http.Request, c metadata.Command) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	rep, err := s.command(ctx, c.Encode(nil))
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case rep.outcome == core.Confirmed:
		fmt.Fprintf(w, "%s (metadata entry %d)\n", rep.reason, rep.index)
	case rep.outcome == core.Unknown:
		http.Error(w, "outcome unknown: "+rep.reason, http.StatusServiceUnavailable)
	default:
		http.Error(w, rep.reason, http.StatusConflict)
	}
}
