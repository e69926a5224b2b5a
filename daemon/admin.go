package daemon

import (
	"context"
	"fmt"
	"net/http"
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

// propose runs on the loop: cmd goes to the core.
func (s *Server) propose(a *adminEvent) {
	s.adminSeq++
	s.admin[s.adminSeq] = a.reply
	s.host.Request(s.now(), adminClient, core.Request{Kind: core.ReqMeta, ID: s.adminSeq, Body: a.cmd})
}

// adminAnswer runs on the loop: the core's reply to an operator's command.
func (s *Server) adminAnswer(e *core.Effect) {
	ch := s.admin[e.ReqID]
	if ch == nil {
		return
	}
	delete(s.admin, e.ReqID)
	ch <- adminReply{outcome: e.Outcome, reason: e.Reason, index: e.Offset}
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
