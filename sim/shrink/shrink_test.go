package shrink

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/world"
)

func TestDdminFindsTheCulprits(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	has := func(s []int, v int) bool {
		for _, x := range s {
			if x == v {
				return true
			}
		}
		return false
	}
	got := ddmin(items, func(s []int) bool { return has(s, 3) && has(s, 8) })
	if len(got) != 2 || !has(got, 3) || !has(got, 8) {
		t.Fatalf("ddmin kept %v, want [3 8]", got)
	}
}

func TestShrinkRefusesAPassingRun(t *testing.T) {
	p := world.Standard()
	p.DurationMs = 300
	if _, _, _, err := Shrink(1, p, 10, nil); err == nil {
		t.Fatal("shrinking a passing run did not fail")
	}
}

// The canary bug (a follower acks before its sync) under crashes shrinks to
// a run that still fails the same checker.
func TestShrinkKeepsTheFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs many worlds")
	}
	p := world.Standard()
	p.DurationMs = 4000
	p.Bugs = bugs.AckBeforeSync
	p.Faults.PerMin[world.FaultCrash] = world.PerMin(30)
	var seed uint64
	var checker string
	for s := uint64(1); s <= 50 && checker == ""; s++ {
		r, _ := world.Run(s, p, world.Options{})
		if r.Failed > 0 {
			seed, checker = s, r.Failures[0].Checker
		}
	}
	if checker == "" {
		t.Fatal("the canary bug failed no seed among 50: the checkers or faults are blind")
	}
	small, got, _, err := Shrink(seed, p, 200, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != checker {
		t.Fatalf("shrink changed the checker: %s, want %s", got, checker)
	}
	r, _ := world.Run(seed, small, world.Options{})
	if !FailsWith(r, checker) {
		t.Fatalf("the shrunk run no longer fails %s", checker)
	}
	if small.DurationMs > p.DurationMs || len(small.Schedule) > len(r.Schedule) {
		t.Fatalf("shrink grew the run")
	}
}

func TestScenarioRoundTrip(t *testing.T) {
	p := world.Standard()
	p.Schedule = []world.Fault{{AtNs: 5, Kind: world.FaultCrash, Node: 2, DurNs: 9}}
	s := Scenario{Name: "x", Seed: 3, Expect: "pass", Mark: "process-down", Profile: p}
	back, err := Parse(s.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if back.Profile.String() != p.String() || back.Profile.Schedule[0] != p.Schedule[0] {
		t.Fatalf("round trip changed the scenario:\n%s\n%s", back.Profile, p)
	}
	if _, err := Parse([]byte(`{"name":"y","expect":"maybe"}`)); err == nil {
		t.Fatal("a scenario with a bad expectation parsed")
	}
	s.Mark = ""
	if _, err := Parse(s.Marshal()); err == nil {
		t.Fatal("a scenario without a coverage mark parsed")
	}
}

// A regression whose run no longer reaches its mark fails, even when the
// run passes: it no longer tests anything.
func TestScenarioFailsWithoutItsMark(t *testing.T) {
	p := world.Standard()
	p.DurationMs = 500
	p.Schedule = []world.Fault{}
	s := Scenario{Name: "x", Seed: 3, Expect: "pass", Mark: "process-down", Profile: p}
	if ok, detail := s.Verdict(); ok || !strings.Contains(detail, "no longer reaches mark process-down") {
		t.Fatalf("a run without its mark passed: %v %q", ok, detail)
	}
	s.Profile.Schedule = []world.Fault{{AtNs: 100e6, Kind: world.FaultCrash, Node: 2, DurNs: 50e6}}
	if ok, detail := s.Verdict(); !ok {
		t.Fatalf("a run that reaches its mark failed: %s", detail)
	}
}

// Shrinking cuts replicas and brokers too: a planted bug that fails on any
// replicated queue shrinks to fewer brokers than it started with, every
// fault renumbered to brokers that exist, and still fails its checker and
// reaches a mark.
func TestShrinkCutsBrokersAndReplicas(t *testing.T) {
	p := world.Standard()
	p.Brokers = 5
	p.DurationMs = 1000
	p.Queues[0].Replicas = 3
	p.Bugs = bugs.SyncSkip
	p.Schedule = []world.Fault{{AtNs: 100e6, Kind: world.FaultCrash, Node: 1, DurNs: 1e6}, {AtNs: 200e6, Kind: world.FaultClog, Node: 5, Peer: 4, DurNs: 1e6}}
	small, checker, _, err := Shrink(1, p, 200, nil)
	if err != nil {
		t.Fatal(err)
	}
	if small.Brokers >= p.Brokers || small.Queues[0].Replicas > 3 {
		t.Fatalf("brokers %d, replicas %v: not cut", small.Brokers, small.Queues[0].Replicas)
	}
	if err := small.Validate(); err != nil {
		t.Fatalf("the shrunk profile is not valid: %v", err)
	}
	r, _ := world.Run(1, small, world.Options{})
	if !FailsWith(r, checker) || MarkOf(1, small) == "" {
		t.Fatalf("the shrunk run no longer fails %s or reaches no mark: %v", checker, r.Failures)
	}
}

func TestDropBrokerRenumbers(t *testing.T) {
	p := world.Standard()
	p.Brokers = 4
	p.Queues[0].Replicas = 3
	p.Schedule = []world.Fault{
		{AtNs: 1, Kind: world.FaultCrash, Node: 2, DurNs: 1},
		{AtNs: 2, Kind: world.FaultClog, Node: 4, Peer: 3, DurNs: 1},
		{AtNs: 3, Kind: world.FaultOneWay, Node: 1, Peer: 2, DurNs: 1},
		{AtNs: 4, Kind: world.FaultPowerCycle, DurNs: 1},
	}
	if !dropBroker(&p, 2) {
		t.Fatal("did not drop a broker the queue's 3 replicas can do without")
	}
	if dropBroker(&p, 1) {
		t.Fatal("dropped a broker the queue's 3 replicas need")
	}
	want := "reps=3 at=2 clog n3->n2 dur=1 at=4 power-cycle dur=1"
	got := fmt.Sprintf("reps=%d", p.Queues[0].Replicas)
	for _, f := range p.Schedule {
		got += " " + f.String()
	}
	if p.Brokers != 3 || got != want {
		t.Fatalf("got brokers=%d %s, want 3 %s", p.Brokers, got, want)
	}
}
