package scenarios

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/sim/shrink"
	"github.com/sluicemq/sluice/sim/world"
)

// The failover story and its "evidence unavailable" variant
// (docs/design/recovery.md, "A failover, step by step"), replayed from
// their named scenarios: the recovery's stages in the story's order, with
// their instants, read from the run's trace.

// recoveryRun is what a run's trace says of queue "orders"'s recovery.
type recoveryRun struct {
	queue    string             // the queue's group id, as the trace prints it
	owner    string             // the first owner
	killNs   int64              // the first kill fault
	stages   map[string][]int64 // stage name -> instants of the core's marks (propose, detect, seal, select, install, activate, reattach)
	newOwner string
	reattach int64   // the new owner's first confirm after the activation
	asks     []int64 // the candidate's seal requests to the follower killed (evidence variant)
}

var reStage = regexp.MustCompile(`^t=\S+ (n[0-9]+) > recovery q=([0-9]+) stage=([a-z]+) `)

// runRecovery replays a named scenario and reads the recovery of queue
// name from its trace (askedOf: a node id whose seal requests to list).
func runRecovery(t *testing.T, file, name, askedOf string) recoveryRun {
	t.Helper()
	return readRecovery(t, replayTrace(t, file), name, askedOf)
}

// replayTrace replays a named scenario (its checkers required to pass)
// and returns its trace.
func replayTrace(t *testing.T, file string) string {
	t.Helper()
	return replaySeed(t, file, 0)
}

func readRecovery(t *testing.T, trace, name, askedOf string) recoveryRun {
	t.Helper()
	reActivated := regexp.MustCompile(`> applied .* activate "` + name + `" .* owner=(n[0-9]+) `)
	reOwner := regexp.MustCompile(`> applied .* assign "` + name + `" .* owner=(n[0-9]+) `)
	reID := regexp.MustCompile(`=> declared "` + name + `" id=([0-9]+) `)
	rr := recoveryRun{stages: map[string][]int64{}}
	for _, line := range strings.Split(trace, "\n") {
		at := instant(line)
		if m := reID.FindStringSubmatch(line); m != nil {
			rr.queue = m[1]
		}
		switch {
		case rr.owner == "" && reOwner.MatchString(line):
			rr.owner = reOwner.FindStringSubmatch(line)[1]
		case rr.killNs == 0 && strings.Contains(line, " * fault ") && strings.Contains(line, " kill "):
			rr.killNs = at
		case reStage.MatchString(line) && reStage.FindStringSubmatch(line)[2] == rr.queue:
			m := reStage.FindStringSubmatch(line)
			rr.stages[m[3]] = append(rr.stages[m[3]], at)
		case rr.newOwner == "" && reActivated.MatchString(line) && strings.Contains(line, "=> activated"):
			rr.newOwner = reActivated.FindStringSubmatch(line)[1]
			// The activation: when it first applied (the worker marks it
			// on its next tick).
			rr.stages["activate"] = append([]int64{at}, rr.stages["activate"]...)
		case rr.newOwner != "" && rr.reattach == 0 && strings.HasPrefix(line[strings.Index(line, " ")+1:], rr.newOwner+" > reply ") &&
			strings.Contains(line, " confirmed q="+rr.queue+" ") && !strings.Contains(line, " result="):
			// (A publish's confirm: a topology answer has a result.)
			rr.reattach = at
		case askedOf != "" && strings.Contains(line, "> send to="+askedOf+" seal-request"):
			rr.asks = append(rr.asks, at)
		}
	}
	return rr
}

// ordered checks the stage marks come in the story's order and returns
// each stage's first instant.
func (rr *recoveryRun) ordered(t *testing.T) []int64 {
	t.Helper()
	var at []int64
	prev, prevName := rr.killNs, "kill"
	for _, st := range []string{"propose", "detect", "seal", "select", "install", "activate"} {
		ts := rr.stages[st]
		if len(ts) == 0 {
			t.Fatalf("no %s stage; stages %v", st, rr.stages)
		}
		if ts[0] < prev {
			t.Fatalf("stage %s at %s before %s at %s", st, sec(ts[0]), prevName, sec(prev))
		}
		at = append(at, ts[0])
		prev, prevName = ts[0], st
	}
	if rr.reattach == 0 || rr.reattach < prev {
		t.Fatalf("no confirm by the new owner %s after the activation at %s (first: %s)", rr.newOwner, sec(prev), sec(rr.reattach))
	}
	// The core's own reattach mark comes with that very confirm.
	if got := rr.stages["reattach"]; len(got) == 0 || got[0] != rr.reattach {
		t.Fatalf("reattach marks at %v, want the first at the new owner's first confirm %s", got, sec(rr.reattach))
	}
	return append(at, rr.reattach)
}

func TestSeed004Story(t *testing.T) {
	t.Run("owner lost", func(t *testing.T) {
		rr := runRecovery(t, "named/recovery-owner-lost.json", "orders", "")
		at := rr.ordered(t)
		if rr.owner != "n1" || rr.newOwner == "" || rr.newOwner == rr.owner {
			t.Fatalf("owner %s, new owner %s: want n1 replaced", rr.owner, rr.newOwner)
		}
		if n := len(rr.stages["seal"]); n < 2 {
			t.Fatalf("%d seals, want R = 2", n)
		}
		if n := len(rr.stages["install"]); n < 2 {
			t.Fatalf("%d installations, want W = 2", n)
		}
		t.Logf("owner n1 killed at %s; by stage, from the kill: propose %s, detect %s, seal %s, select %s, install %s, activate %s, reattach (next confirm, by %s) %s",
			sec(rr.killNs), sec(at[0]-rr.killNs), sec(at[1]-rr.killNs), sec(at[2]-rr.killNs), sec(at[3]-rr.killNs), sec(at[4]-rr.killNs),
			sec(at[5]-rr.killNs), rr.newOwner, sec(at[6]-rr.killNs))
	})
	t.Run("evidence unavailable", func(t *testing.T) {
		rr := runRecovery(t, "named/recovery-evidence-unavailable.json", "orders", "3")
		at := rr.ordered(t)
		const backNs = 22e9 // the follower's new process starts
		if activate := at[5]; activate < backNs {
			t.Fatalf("activated at %s, before the missing witness came back at %s", sec(activate), sec(backNs))
		}
		// While the witness is missing, the candidate asks again with a
		// backoff that doubles: 1 s, 2 s, 4 s, 8 s; once the witness's
		// broker registers a new process, it asks at once, not at the end
		// of the backoff.
		var gaps []int64
		back := -1
		for i := 1; i < len(rr.asks); i++ {
			if rr.asks[i] > backNs {
				back = i
				break
			}
			gaps = append(gaps, rr.asks[i]-rr.asks[i-1])
		}
		if len(gaps) < 3 || back < 0 {
			t.Fatalf("seal requests to n3 at %v: want retries, and one after n3 is back", rr.asks)
		}
		for i, g := range gaps {
			// The backoff, 1 s doubling to 30 s; a retry comes at the
			// node's first tick past it (the first ask, when the
			// transition applied, need not be at a tick).
			want := min(int64(1e9)<<i, 30e9)
			if g < want-1e6 || g > want+200e6 {
				t.Fatalf("seal request gaps %v: want 1 s doubling (to 30 s)", gaps)
			}
		}
		if d := rr.asks[back] - backNs; d > 1e9 {
			t.Fatalf("seal requests to n3 at %v: the first after n3 is back (%s) comes %s later, want at once", rr.asks, sec(backNs), sec(d))
		}
		t.Logf("fenced at %s; seal requests to the missing n3 at %v; n3 back at %s; activated at %s (owner %s)",
			sec(at[0]), rr.asks, sec(backNs), sec(at[5]), rr.newOwner)
	})
}

// TestOwnerLossUnderLoad: an owner lost under load; the checkers
// (0 confirmed records lost, every outcome accounted for) pass in
// replayTrace, and each queue's recovery is timed by stage from the kill,
// over the scenario's seed and the next ones (SLUICE_RECOVERY_SEEDS=N runs
// N seeds; CI runs 6): the median and p99 of every stage across the
// recoveries.
func TestOwnerLossUnderLoad(t *testing.T) {
	file := "named/recovery-owner-lost-under-load.json"
	seeds := 6
	if v := os.Getenv("SLUICE_RECOVERY_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_RECOVERY_SEEDS=%q: want a count", v)
		}
		seeds = n
	}
	names := []string{"propose", "detect", "seal", "select", "install", "activate", "next confirm"}
	byStage := make([][]int64, len(names))
	s0 := loadScenario(t, file).Seed
	for k := range seeds {
		trace := replaySeed(t, file, uint64(k))
		for _, name := range []string{"q0", "q1", "q2"} {
			rr := readRecovery(t, trace, name, "")
			at := rr.ordered(t)
			for i := range at {
				byStage[i] = append(byStage[i], at[i]-rr.killNs)
			}
			// Every survivor saw the killed process exit: eager failover
			// fences its queues within a commit, never after the
			// liveness expiry (9 s), even when the broker killed led the
			// metadata group: the survivors campaign at once for a
			// leader whose exit they saw (else 0.5 to 1 s of failure
			// detector) and the new leader proposes the loss it saw as a
			// follower (else seed 2 waited 9.9 s).
			if d := at[0] - rr.killNs; d > 500e6 {
				t.Fatalf("seed %d, %s: proposed %s after the kill its peers saw, want within 0.5 s (eager failover)", s0+uint64(k), name, sec(d))
			}
			if k == 0 {
				t.Logf("%s (owner %s, then %s): from the kill: propose %s, detect %s, seal %s, select %s, install %s, activate %s, next confirm %s",
					name, rr.owner, rr.newOwner, sec(at[0]-rr.killNs), sec(at[1]-rr.killNs), sec(at[2]-rr.killNs), sec(at[3]-rr.killNs),
					sec(at[4]-rr.killNs), sec(at[5]-rr.killNs), sec(at[6]-rr.killNs))
			}
		}
	}
	var b strings.Builder
	for i, name := range names {
		d := byStage[i]
		slices.Sort(d)
		fmt.Fprintf(&b, " %s %s/%s;", name, sec(d[len(d)/2]), sec(d[(len(d)*99)/100]))
	}
	t.Logf("%d recoveries over %d seeds, from the kill to each stage, median/p99:%s", len(byStage[0]), seeds, b.String())
}

// loadScenario reads and parses a scenario file.
func loadScenario(t *testing.T, file string) shrink.Scenario {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := shrink.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replaySeed runs a named scenario's profile and schedule with its seed
// plus k, its checkers required to pass, and returns the trace.
func replaySeed(t *testing.T, file string, k uint64) string {
	t.Helper()
	s := loadScenario(t, file)
	var trace bytes.Buffer
	r, err := world.Run(s.Seed+k, s.Profile, world.Options{Trace: &trace})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed > 0 {
		t.Fatalf("%s with seed %d failed its checkers: %v", file, s.Seed+k, r.Failures)
	}
	return trace.String()
}

// TestAttemptDeadline: an attempt that cannot complete (one of R = 2
// witnesses, the other's broker down for 150 s) is set aside two minutes
// after it began, the queue still fenced, and tried again after the
// backoff; the fresh attempt activates once the witness is back.
func TestAttemptDeadline(t *testing.T) {
	trace := replayTrace(t, "named/recovery-attempt-deadline.json")
	rr := readRecovery(t, trace, "orders", "")
	at := rr.ordered(t)
	var asideNs []int64
	for _, line := range strings.Split(trace, "\n") {
		if strings.Contains(line, "stage=set-aside") && strings.Contains(line, "past the attempt's deadline") {
			// One of R = 2 witnesses, the other's broker down: what it
			// waited for, typed.
			if !strings.Contains(line, " aside=seals-missing ") {
				t.Fatalf("the deadline's set-aside: %q, want aside=seals-missing", line)
			}
			asideNs = append(asideNs, instant(line))
		}
	}
	detects := rr.stages["detect"]
	if len(asideNs) != 1 || len(detects) != 2 {
		t.Fatalf("attempts begun at %v, set aside at %v: want one set aside, and one more attempt", detects, asideNs)
	}
	if d := asideNs[0] - detects[0]; d < 120e9 || d > 120e9+200e6 {
		t.Fatalf("the attempt begun at %s was set aside %s later, want its 2-minute deadline", sec(detects[0]), sec(d))
	}
	if d := detects[1] - asideNs[0]; d < 1e9 || d > 1e9+200e6 {
		t.Fatalf("set aside at %s, tried again %s later, want after the 1 s backoff", sec(asideNs[0]), sec(d))
	}
	const backNs = 160e9 // the missing witness's broker starts again
	if activate := at[5]; activate < backNs {
		t.Fatalf("activated at %s, before the missing witness was back at %s", sec(activate), sec(backNs))
	}
	t.Logf("attempt at %s set aside at %s, again at %s; activated at %s", sec(detects[0]), sec(asideNs[0]), sec(detects[1]), sec(at[5]))
}

// TestStageBudget: a proposed member whose log lacks the source's last
// records must stage the whole history, and each staging budget refuses it
// in turn: the queue stays fenced, set aside with the budget named, tried
// again after each backoff without activating. Each raise (records at 25
// s, bytes at 35 s) starts the blocked attempt over at once: after the
// first, the bytes budget refuses it; after the second, it activates.
func TestStageBudget(t *testing.T) {
	trace := replayTrace(t, "named/recovery-stage-budget.json")
	const recordsRaiseNs, bytesRaiseNs = 25e9, 35e9
	var recordsAsideNs, bytesAsideNs []int64
	var raisedNs, activatedNs int64
	queue := ""
	reAside := regexp.MustCompile(` recovery q=([0-9]+) stage=set-aside epoch=[0-9]+ aside=stage-budget .*recovery\.stage_(records|bytes)_max \((100|1048576)\)`)
	for _, line := range strings.Split(trace, "\n") {
		at := instant(line)
		switch m := reAside.FindStringSubmatch(line); {
		case m != nil:
			if queue != "" && m[1] != queue {
				t.Fatalf("set aside for q=%s and q=%s: want one queue, the one whose member must stage", queue, m[1])
			}
			queue = m[1]
			if m[2] == "records" {
				recordsAsideNs = append(recordsAsideNs, at)
			} else {
				bytesAsideNs = append(bytesAsideNs, at)
			}
		case raisedNs == 0 && at >= bytesRaiseNs && strings.Contains(line, "> applied ") && strings.Contains(line, "recovery.stage_bytes_max=1073741824"):
			raisedNs = at
		case queue != "" && activatedNs == 0 && strings.Contains(line, " recovery q="+queue+" stage=activate "):
			activatedNs = at
		}
	}
	inside := func(ts []int64, from, until int64) bool {
		for _, at := range ts {
			if at < from || at >= until {
				return false
			}
		}
		return len(ts) > 0
	}
	if len(recordsAsideNs) < 2 || !inside(recordsAsideNs, 10e9, recordsRaiseNs) {
		t.Fatalf("set aside for the records budget at %v: want twice or more between the kill and its raise at %s", recordsAsideNs, sec(recordsRaiseNs))
	}
	if !inside(bytesAsideNs, recordsRaiseNs, bytesRaiseNs) {
		t.Fatalf("set aside for the bytes budget at %v: want it between the two raises", bytesAsideNs)
	}
	if raisedNs == 0 || activatedNs < raisedNs || activatedNs-raisedNs > 1e9 {
		t.Fatalf("the bytes budget raised (applied) at %s, q=%s activated at %s: want it within 1 s after", sec(raisedNs), queue, sec(activatedNs))
	}
	t.Logf("q=%s set aside at %v for the records budget, at %v for the bytes budget; the last raise applied at %s, activated %s later",
		queue, recordsAsideNs, bytesAsideNs, sec(raisedNs), sec(activatedNs-raisedNs))
}

// TestRecoveryHandoff: the candidate of a fenced queue killed for good
// right after the owner: the controller hands the recovery to n3, whose
// worker activates once R witnesses answer (the owner's new process at 15
// s), long before the drain brings the candidate back; and the queue is
// back on three members before the drain.
func TestRecoveryHandoff(t *testing.T) {
	trace := replayTrace(t, "named/recovery-handoff.json")
	const candidateKillNs, ownerBackNs, drainNs = 10.01e9, 15e9, 40e9
	var handedNs, detectNs, activateNs, admitNs int64
	for _, line := range strings.Split(trace, "\n") {
		at := instant(line)
		switch {
		case handedNs == 0 && strings.Contains(line, `=> handed "q0"'s recovery from n2 to n3`):
			handedNs = at
		case detectNs == 0 && handedNs != 0 && strings.Contains(line, " n3 > recovery ") && strings.Contains(line, " stage=detect "):
			detectNs = at
		case activateNs == 0 && strings.Contains(line, " n3 > recovery ") && strings.Contains(line, " stage=activate "):
			activateNs = at
		case admitNs == 0 && activateNs != 0 && strings.Contains(line, ` n3 > applied `) && strings.Contains(line, `=> admitted `) && strings.Contains(line, `"q0": 3 members`):
			admitNs = at
		}
	}
	switch {
	case handedNs < candidateKillNs || handedNs > candidateKillNs+1e9:
		t.Fatalf("handed to n3 at %s: want within 1 s of the candidate's kill at %s", sec(handedNs), sec(candidateKillNs))
	case detectNs < handedNs:
		t.Fatalf("n3's worker took the queue up at %s, the handoff applied at %s", sec(detectNs), sec(handedNs))
	case activateNs < ownerBackNs || activateNs > ownerBackNs+1e9:
		t.Fatalf("activated by n3 at %s: want within 1 s of the owner's return at %s (its R = 2 witnesses)", sec(activateNs), sec(ownerBackNs))
	case admitNs == 0 || admitNs > drainNs:
		t.Fatalf("back on three members at %s: want before the drain at %s", sec(admitNs), sec(drainNs))
	}
	t.Logf("handed to n3 %s after the candidate's kill; activated %s after the owner's return; three members again at %s",
		sec(handedNs-candidateKillNs), sec(activateNs-ownerBackNs), sec(admitNs))
}

// TestRecoveryPlanResumed: the candidate n2 killed for good after its
// plan committed, with a new copy's stage part-way: the recovery handed to
// n3 resumes the committed plan (it selects n3's own log, which holds the
// plan's history, with one witness where R is 2), never plans again, the
// new copy n4 goes on staging from where it was (its first read of n3 is
// past 0), and the queue activates on n3 and n4 within 1 s of the
// candidate's kill, before the owner's return at 15 s: without the plan it
// would wait for a second witness.
func TestRecoveryPlanResumed(t *testing.T) {
	trace := replayTrace(t, "named/recovery-plan-resumed.json")
	const candidateKillNs, ownerBackNs = 10.029e9, 15e9
	var plannedNs, handedNs, resumedNs, activateNs int64
	plans := 0
	firstFromN3 := int64(-1)
	reRead := regexp.MustCompile(` n4 > send to=3 read-request q=[0-9]+ epoch=2 from=([0-9]+) `)
	for _, line := range strings.Split(trace, "\n") {
		at := instant(line)
		switch m := reRead.FindStringSubmatch(line); {
		case strings.Contains(line, " n3 > applied ") && strings.Contains(line, `=> planned "q0"'s recovery`):
			plans++
			plannedNs = at
		case strings.Contains(line, " n3 > applied ") && strings.Contains(line, `=> re-planned "q0"`):
			plans++
		case handedNs == 0 && strings.Contains(line, `n3 > applied `) && strings.Contains(line, `=> handed "q0"'s recovery from n2 to n3`):
			handedNs = at
		case resumedNs == 0 && strings.Contains(line, " * mark plan-resumed"):
			resumedNs = at
		case m != nil && firstFromN3 < 0:
			firstFromN3, _ = strconv.ParseInt(m[1], 10, 64)
		case activateNs == 0 && strings.Contains(line, " n3 > recovery ") && strings.Contains(line, " stage=activate "):
			activateNs = at
		}
	}
	switch {
	case plans != 1 || plannedNs == 0 || plannedNs > candidateKillNs:
		t.Fatalf("%d plans applied on n3, the first at %s: want one, before the candidate's kill at %s", plans, sec(plannedNs), sec(candidateKillNs))
	case handedNs == 0 || resumedNs < handedNs:
		t.Fatalf("handed to n3 at %s, the plan resumed at %s: want a resumption after the handoff", sec(handedNs), sec(resumedNs))
	case firstFromN3 <= 0:
		t.Fatalf("n4's first sealed read of n3 from offset %d: want its stage resumed past 0", firstFromN3)
	case activateNs == 0 || activateNs > candidateKillNs+1e9 || activateNs >= ownerBackNs:
		t.Fatalf("activated by n3 at %s: want within 1 s of the candidate's kill at %s, before the owner's return", sec(activateNs), sec(candidateKillNs))
	}
	t.Logf("planned at %s; handed %s after the kill; n4 resumed its stage at o=%d from n3; activated %s after the kill",
		sec(plannedNs), sec(handedNs-candidateKillNs), firstFromN3, sec(activateNs-candidateKillNs))
}
