package world

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/io/driver"
)

// A profile the world cannot run is refused before the run, naming the
// field as a scenario file spells it; it never becomes a failure (or a
// panic) of the system under test.
func TestValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		want string
		bad  func(p *Profile)
	}{
		{"brokers: 0, want 1..16", func(p *Profile) { p.Brokers = 0 }},
		{"queues[0].replicas: 4, want 1..3 (brokers=3)", func(p *Profile) { p.Queues[0].Replicas = 4 }},
		{"queues[0].replicas: 0, want 1..3", func(p *Profile) { p.Queues[0].Replicas = 0 }},
		{"queues[0].policy: unknown policy 9", func(p *Profile) { p.Queues[0].Policy = 9 }},
		{"queues[0].min_insync: 4, want 0..3", func(p *Profile) { p.Queues[0].MinInSync = 4 }},
		{"queues: none, and no operator step declares one", func(p *Profile) { p.Queues = nil }},
		{"operator: declares q1, the name of the profile's queue 0", func(p *Profile) {
			p.Operator = []string{"at=0 declare q1 3 majority_durable 1"}
		}},
		{"duration_ms: 0, want 1..600000", func(p *Profile) { p.DurationMs = 0 }},
		{"duration_ms: -5, want 1..600000", func(p *Profile) { p.DurationMs = -5 }},
		{"duration_ms: 9223372036854, want 1..600000", func(p *Profile) { p.DurationMs = 9223372036854 }},
		{"drain_ms: 0", func(p *Profile) { p.DrainMs = 0 }},
		{"inflight_max: 0", func(p *Profile) { p.InflightMax = 0 }},
		{"faults.drop_per_1000: 1001", func(p *Profile) { p.Faults.DropPer1000 = 1001 }},
		{"net_latency_us_max: 10, want 50..", func(p *Profile) { p.NetLatencyUsMax = 10 }},
		{`schedule[0]: "at=5 crash n4 dur=1": broker n4 does not exist`, func(p *Profile) {
			p.Schedule = []Fault{{AtNs: 5, Kind: FaultCrash, Node: 4, DurNs: 1}}
		}},
		{`schedule[0]: "at=5 clog n1->n1 dur=1": peer n1`, func(p *Profile) {
			p.Schedule = []Fault{{AtNs: 5, Kind: FaultClog, Node: 1, Peer: 1, DurNs: 1}}
		}},
		{"outside the workload phase", func(p *Profile) {
			p.Schedule = []Fault{{AtNs: p.DurationMs * 1e6, Kind: FaultCrash, Node: 1, DurNs: 1}}
		}},
	} {
		p := Standard()
		p.Queues = []QueueDecl{{Replicas: 3, Policy: core.MajorityDurable}}
		c.bad(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
		if _, err := Run(1, p, Options{}); err == nil {
			t.Errorf("%s: Run accepted the profile", c.want)
		}
	}
	if err := Standard().Validate(); err != nil {
		t.Fatal(err)
	}
	for s := uint64(1); s <= 50; s++ {
		if err := Draw(s).Validate(); err != nil {
			t.Fatalf("seed %d draws a profile Validate refuses: %v", s, err)
		}
	}
}

// Interrupt stops a run without a verdict; a run it does not stop is the
// same run as without it.
func TestInterrupt(t *testing.T) {
	p := Standard()
	p.DurationMs = 4000
	asks := 0
	r, err := Run(1, p, Options{Interrupt: func() bool { asks++; return asks == 2 }})
	if !errors.Is(err, ErrInterrupted) || r.Failed != 0 || r.Events != interruptEvents+1 {
		t.Fatalf("got %v after %d events, %d failures; want ErrInterrupted after %d events", err, r.Events, r.Failed, interruptEvents+1)
	}
	a, _ := Run(1, p, Options{Interrupt: func() bool { return false }})
	b, _ := Run(1, p, Options{})
	if a.TraceHash != b.TraceHash {
		t.Fatal("an Interrupt that never stops changed the run")
	}
}

// Every trace line carries its instant in seconds; filters choose what is
// written, never what is hashed.
func TestTraceLinesCarryTheirInstant(t *testing.T) {
	p := Standard()
	p.DurationMs = 300
	p.Schedule = []Fault{{AtNs: 100e6, Kind: FaultCrash, Node: 2, DurNs: 50e6}}
	var all, some bytes.Buffer
	a, _ := Run(1, p, Options{Trace: &all})
	b, _ := Run(1, p, Options{Trace: &some, TraceFilter: driver.TraceFilter{FromNs: 100e6, UntilNs: 200e6, Nodes: []core.NodeID{2}}})
	if a.TraceHash != b.TraceHash {
		t.Fatal("a trace filter changed the hash")
	}
	lines := strings.Split(strings.TrimSuffix(all.String(), "\n"), "\n")
	if uint64(len(lines)) != a.Lines {
		t.Fatalf("%d lines written, %d counted", len(lines), a.Lines)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "t=") || !strings.Contains(l[:20], "s ") {
			t.Fatalf("line without its instant: %q", l)
		}
	}
	if !strings.Contains(all.String(), "t=0.100000000s * fault at=100000000 crash n2") {
		t.Fatal("the crash's note is missing")
	}
	for _, l := range strings.Split(strings.TrimSuffix(some.String(), "\n"), "\n") {
		if l < "t=0.100000000s" || l > "t=0.200000000s~" || strings.Contains(l, " n1 ") || strings.Contains(l, " n3 ") {
			t.Fatalf("the filter let through %q", l)
		}
	}
	if !strings.Contains(some.String(), "crash n2") || !strings.Contains(some.String(), " n2 < ") {
		t.Fatalf("the filter dropped n2's lines:\n%s", some.String())
	}
}
