package daemon

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// The recovery history: per queue, the last attempts at its recovery this
// broker saw a stage of (the EfRecovery marks its core emitted), so that
// an operator can read why a queue stays fenced. Only the candidate's
// broker sees an attempt's detect, select, activate and set-aside; a
// previous member sees its own seal, a proposed member its installation,
// the metadata leader the transition's proposal. `sluice describe` gathers
// every broker's history (GET /recovery/history) and shows them side by
// side. Every buffer is bounded: historyQueuesMax queues (the one touched
// least recently goes first), historyAttemptsMax attempts a queue (the
// oldest goes), historyStagesMax stages an attempt (later ones counted in
// StagesDropped), and each detail cut to historyDetailBytesMax.
const (
	historyQueuesMax      = 1024
	historyAttemptsMax    = 8
	historyStagesMax      = 32
	historyDetailBytesMax = 512
)

// Outcomes of an attempt in the history.
const (
	outcomeRunning    = "running"    // no outcome yet
	outcomeActivated  = "activated"  // its activation committed
	outcomeSetAside   = "set-aside"  // set aside (Aside: why); the queue stays fenced
	outcomeSuperseded = "superseded" // replaced by a later attempt (its evidence changed) or a later transition
	outcomeHandedOff  = "handed-off" // the metadata handed the recovery to another proposed member
	outcomeObserved   = "observed"   // the stages this broker took part in of an attempt another broker ran
)

// Attempt is one attempt at a queue's recovery as one broker saw it.
type Attempt struct {
	Queue uint64 `json:"queue"` // the queue's id
	Epoch uint64 `json:"epoch"` // the pending transition's epoch
	// StartUnixMs: the wall instant of its first stage this broker saw.
	StartUnixMs int64 `json:"start_unix_ms"`
	// Candidate: this broker's worker ran the attempt (its detect).
	Candidate bool           `json:"candidate"`
	Stages    []AttemptStage `json:"stages"`
	// StagesDropped counts the stages past historyStagesMax.
	StagesDropped int    `json:"stages_dropped,omitempty"`
	Outcome       string `json:"outcome"`
	// Aside is the typed reason of a set-aside (seam.AsideReason's name).
	Aside string `json:"aside,omitempty"`
	// Detail is the prose of the stage that decided the outcome.
	Detail string `json:"detail,omitempty"`
}

// AttemptStage is one stage reached.
type AttemptStage struct {
	Stage string `json:"stage"`
	AtMs  int64  `json:"at_ms"` // since the attempt's start
	// Peer: the broker the stage names (the sealer, the source chosen,
	// the installer; 0: none).
	Peer   uint64 `json:"peer,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// History is one broker's recovery history (GET /recovery/history).
type History struct {
	Node     uint64    `json:"node"`
	Attempts []Attempt `json:"attempts"` // by queue id, then oldest first
}

// queueHistory is one queue's attempts, oldest first.
type queueHistory struct {
	queue    seam.QueueID
	touched  uint64 // the observer's sequence number when last changed
	attempts []Attempt
}

// history is the bounded store (loop only).
type history struct {
	seq    uint64
	queues []queueHistory // by queue id
	// setAsides counts set-asides by reason, for /metrics.
	setAsides [seam.AsideMax + 1]uint64
}

// record takes one EfRecovery mark seen at wall instant nowUnixMs.
func (h *history) record(e *core.Effect, nowUnixMs int64) {
	if e.Stage == seam.StageSetAside && int(e.Aside) < len(h.setAsides) {
		h.setAsides[e.Aside]++
	}
	qh := h.queue(e.Queue)
	h.seq++
	qh.touched = h.seq
	var last *Attempt
	if n := len(qh.attempts); n > 0 {
		last = &qh.attempts[n-1]
	}
	open := last != nil && last.Epoch == e.Offset && (last.Outcome == outcomeRunning || last.Outcome == outcomeObserved)
	switch {
	case e.Stage == seam.StageDetect && open && last.Outcome == outcomeObserved:
		// This broker proposed the transition (it leads the metadata
		// group) and is its candidate too: one attempt, timed from the
		// fence.
		last.Candidate, last.Outcome = true, outcomeRunning
	case e.Stage == seam.StageDetect:
		if last != nil && last.Outcome == outcomeRunning {
			last.Outcome = outcomeSuperseded // started over, or a newer transition's
		}
		last = qh.add(Attempt{Queue: uint64(e.Queue), Epoch: e.Offset, StartUnixMs: nowUnixMs, Candidate: true, Outcome: outcomeRunning})
	case e.Stage == seam.StageReattach && last != nil && last.Epoch == e.Offset && last.Outcome == outcomeActivated:
		// The new owner's first confirm after the activation: part of it.
	case !open:
		if last != nil && last.Outcome == outcomeRunning {
			last.Outcome = outcomeSuperseded
		}
		last = qh.add(Attempt{Queue: uint64(e.Queue), Epoch: e.Offset, StartUnixMs: nowUnixMs, Outcome: outcomeObserved})
	}
	if len(last.Stages) >= historyStagesMax {
		last.StagesDropped++
	} else {
		last.Stages = append(last.Stages, AttemptStage{Stage: e.Stage.String(), AtMs: nowUnixMs - last.StartUnixMs, Peer: stagePeer(e), Detail: cut(e.Reason)})
	}
	switch e.Stage {
	case seam.StageSetAside:
		last.Outcome, last.Aside, last.Detail = outcomeSetAside, e.Aside.String(), cut(e.Reason)
	case seam.StageActivate:
		last.Outcome, last.Aside, last.Detail = outcomeActivated, "", cut(e.Reason)
	case seam.StageHandedOff:
		last.Outcome, last.Aside, last.Detail = outcomeHandedOff, "", cut(e.Reason)
	}
}

// add appends an attempt, dropping the oldest beyond historyAttemptsMax.
func (qh *queueHistory) add(a Attempt) *Attempt {
	if len(qh.attempts) >= historyAttemptsMax {
		qh.attempts = slices.Delete(qh.attempts, 0, 1)
	}
	qh.attempts = append(qh.attempts, a)
	return &qh.attempts[len(qh.attempts)-1]
}

// queue returns q's history, made (and the least recently touched queue
// dropped beyond historyQueuesMax) if it has none.
func (h *history) queue(q seam.QueueID) *queueHistory {
	i, ok := slices.BinarySearchFunc(h.queues, q, func(qh queueHistory, q seam.QueueID) int { return cmpQueue(qh.queue, q) })
	if ok {
		return &h.queues[i]
	}
	if len(h.queues) >= historyQueuesMax {
		oldest := 0
		for j := range h.queues {
			if h.queues[j].touched < h.queues[oldest].touched {
				oldest = j
			}
		}
		h.queues = slices.Delete(h.queues, oldest, oldest+1)
		if oldest < i {
			i--
		}
	}
	h.queues = slices.Insert(h.queues, i, queueHistory{queue: q})
	return &h.queues[i]
}

func cmpQueue(a, b seam.QueueID) int { return cmp.Compare(a, b) }

// snapshot copies the history for an answer off the loop.
func (h *history) snapshot(node core.NodeID) History {
	out := History{Node: uint64(node), Attempts: []Attempt{}}
	for _, qh := range h.queues {
		for _, a := range qh.attempts {
			a.Stages = slices.Clone(a.Stages)
			out.Attempts = append(out.Attempts, a)
		}
	}
	return out
}

// lastSetAside returns queue q's latest attempt at the transition to
// epoch if it was set aside.
func (h *history) lastSetAside(q seam.QueueID, epoch uint64) (Attempt, bool) {
	i, ok := slices.BinarySearchFunc(h.queues, q, func(qh queueHistory, q seam.QueueID) int { return cmpQueue(qh.queue, q) })
	if !ok {
		return Attempt{}, false
	}
	as := h.queues[i].attempts
	for j := len(as) - 1; j >= 0; j-- {
		if as[j].Epoch == epoch && as[j].Candidate {
			return as[j], as[j].Outcome == outcomeSetAside
		}
	}
	return Attempt{}, false
}

// stagePeer returns the broker a stage's evidence names: the sealer of a
// seal, the source of a selection, the installer of an installation.
func stagePeer(e *core.Effect) uint64 {
	switch e.Stage {
	case seam.StageSeal, seam.StageSelect:
		if s, err := recovery.DecodeSeal(e.Body); err == nil {
			return uint64(s.Node)
		}
	case seam.StageInstall:
		if r, err := recovery.DecodeInstalled(e.Body); err == nil {
			return uint64(r.Node)
		}
	}
	return 0
}

// cut bounds a detail's bytes.
func cut(s string) string {
	if len(s) <= historyDetailBytesMax {
		return s
	}
	return s[:historyDetailBytesMax] + "…"
}

// chain renders the stage chain: "detect +0ms, seal n2 +3ms, ...".
func (a *Attempt) chain() string {
	b := make([]byte, 0, 16*len(a.Stages))
	for i, st := range a.Stages {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, st.Stage...)
		if st.Peer != 0 {
			b = fmt.Appendf(b, " n%d", st.Peer)
		}
		b = fmt.Appendf(b, " +%dms", st.AtMs)
	}
	if a.StagesDropped > 0 {
		b = fmt.Appendf(b, ", %d more", a.StagesDropped)
	}
	return string(b)
}
