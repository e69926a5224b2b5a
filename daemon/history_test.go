package daemon

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

func mark(q seam.QueueID, stage seam.RecoveryStage, epoch uint64, body []byte, detail string) *core.Effect {
	return &core.Effect{Kind: core.EfRecovery, Queue: q, Stage: stage, Offset: epoch, Body: body, Reason: detail}
}

// An attempt's stages go into one entry with their instants since its
// start and the peers their evidence names; a set-aside closes it with its
// typed reason, the next detect opens another, and the activation closes
// that one; stages a broker saw of another's attempt are "observed", and
// a proposal this broker made of a transition it is the candidate of
// begins its first attempt.
func TestHistoryAttempts(t *testing.T) {
	var h history
	seal := recovery.AppendSeal(nil, &recovery.Seal{Queue: 7, Node: 3, Start: 0, End: 4})
	h.record(mark(7, seam.StagePropose, 2, nil, "fenced at index 9"), 990)
	h.record(mark(7, seam.StageDetect, 2, nil, "candidate n1"), 1000)
	h.record(mark(7, seam.StageSeal, 2, seal, "sealed"), 1003)
	h.record(mark(7, seam.StageSelect, 2, seal, "source n3"), 1040)
	aside := mark(7, seam.StageSetAside, 2, nil, "blocked: inspection budget exhausted")
	aside.Aside = seam.AsideInspectRecords
	h.record(aside, 6040)
	h.record(mark(7, seam.StageDetect, 2, nil, "candidate n1"), 7040)
	h.record(mark(7, seam.StageActivate, 2, nil, "activated"), 7100)
	h.record(mark(7, seam.StageReattach, 2, nil, "owner n1 confirmed"), 7200)
	h.record(mark(9, seam.StageSeal, 4, seal, "sealed"), 8000)

	got := h.snapshot(1)
	if len(got.Attempts) != 3 {
		t.Fatalf("attempts %+v, want 2 of queue 7 and 1 of queue 9", got.Attempts)
	}
	first, second, other := got.Attempts[0], got.Attempts[1], got.Attempts[2]
	if first.Outcome != outcomeSetAside || first.Aside != "inspect-records" || !first.Candidate || !strings.Contains(first.Detail, "budget") {
		t.Fatalf("the first attempt: %+v", first)
	}
	if c := first.chain(); c != "propose +0ms, detect +10ms, seal n3 +13ms, select n3 +50ms, set-aside +5050ms" {
		t.Fatalf("the first attempt's chain: %q", c)
	}
	if second.Outcome != outcomeActivated || second.Aside != "" || len(second.Stages) != 3 || second.Stages[2].Stage != "reattach" {
		t.Fatalf("the second attempt: %+v", second)
	}
	if other.Queue != 9 || other.Outcome != outcomeObserved || other.Candidate {
		t.Fatalf("a seal of another broker's attempt: %+v", other)
	}
	if h.setAsides[seam.AsideInspectRecords] != 1 {
		t.Fatalf("set-asides counted: %v", h.setAsides)
	}
	if a, ok := h.lastSetAside(7, 2); ok || a.Outcome != outcomeActivated {
		t.Fatalf("queue 7's latest attempt taken for set aside: %+v", a)
	}
	// A detect while an attempt runs (it started over) supersedes it.
	h.record(mark(9, seam.StageDetect, 5, nil, ""), 9000)
	h.record(mark(9, seam.StageDetect, 5, nil, ""), 9500)
	if as := h.snapshot(1).Attempts; as[len(as)-2].Outcome != outcomeSuperseded || as[len(as)-1].Outcome != outcomeRunning {
		t.Fatalf("started over: %+v", as[len(as)-2:])
	}
	// A handoff ends the running attempt with its own outcome, naming
	// the new candidate; it is no longer running.
	h.record(mark(9, seam.StageHandedOff, 5, nil, "handed to n4"), 9800)
	if as := h.snapshot(1).Attempts; as[len(as)-1].Outcome != outcomeHandedOff || as[len(as)-1].Detail != "handed to n4" {
		t.Fatalf("handed off: %+v", as[len(as)-1])
	}
}

// Every buffer is bounded: attempts a queue, stages an attempt, queues.
func TestHistoryBounds(t *testing.T) {
	var h history
	for i := range historyAttemptsMax + 3 {
		h.record(mark(1, seam.StageDetect, uint64(i+1), nil, ""), int64(i))
	}
	if as := h.snapshot(1).Attempts; len(as) != historyAttemptsMax || as[0].Epoch != 4 {
		t.Fatalf("%d attempts kept, the oldest of epoch %d; want %d from epoch 4", len(as), as[0].Epoch, historyAttemptsMax)
	}
	for range historyStagesMax + 5 {
		h.record(mark(2, seam.StageSeal, 1, nil, strings.Repeat("x", 2*historyDetailBytesMax)), 0)
	}
	a := h.snapshot(1).Attempts[historyAttemptsMax]
	if len(a.Stages) != historyStagesMax || a.StagesDropped != 5 || len(a.Stages[0].Detail) > historyDetailBytesMax+len("…") {
		t.Fatalf("%d stages, %d dropped, a detail of %d bytes", len(a.Stages), a.StagesDropped, len(a.Stages[0].Detail))
	}
	for q := range historyQueuesMax + 10 {
		h.record(mark(seam.QueueID(100+q), seam.StagePropose, 1, nil, ""), 0)
	}
	if len(h.queues) != historyQueuesMax {
		t.Fatalf("%d queues tracked, want at most %d", len(h.queues), historyQueuesMax)
	}
	if _, ok := h.lastSetAside(1, 11); ok || h.queues[len(h.queues)-1].queue != seam.QueueID(100+historyQueuesMax+9) {
		t.Fatal("the least recently touched queues were not the ones dropped")
	}
	for i := 1; i < len(h.queues); i++ {
		if h.queues[i-1].queue >= h.queues[i].queue {
			t.Fatal("queues out of order")
		}
	}
}
