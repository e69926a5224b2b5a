package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/shrink"
	"github.com/sluicemq/sluice/sim/world"
)

// runShrink: sluice sim shrink --seed S [--name N] writes a shrunk regression.
func runShrink(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim shrink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "the failing seed to shrink")
	profile := fs.String("profile", "swarm", "the profile the seed ran under: swarm or standard")
	durationMs := fs.Int64("duration-ms", 0, "the --duration-ms the seed ran under, if any")
	planted := fs.String("bugs", "", "the planted bugs the seed ran with (names from sluice sim --bugs list)")
	name := fs.String("name", "", "scenario name (default seed-S-CHECKER)")
	note := fs.String("note", "", "what the regression guards")
	dir := fs.String("dir", filepath.Join("scenarios", "regressions"), "where to write the scenario")
	runsMax := fs.Int("runs-max", 2000, "bound on the worlds run while shrinking")
	mark := fs.String("mark", "", "the coverage mark the bug's path hits (default: the most specific one the shrunk run reaches)")
	fixed := fs.Bool("fixed", false, "with --bugs: the planted bug brings back a fixed one; write a regression that must pass, and fail with the bug planted")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	set, err := bugs.Parse(*planted)
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim shrink:", err)
		return 2
	}
	prof, err := profileFor(*profile, *durationMs, set)
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim shrink:", err)
		return 2
	}
	p := prof(*seed)
	expect := "pass"
	start := time.Now()
	small, checker, runs, err := shrink.Shrink(*seed, p, *runsMax, func(step string, runs, faults int) {
		fmt.Fprintf(stderr, "shrink: %-20s runs=%d faults=%d\n", step, runs, faults)
	})
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim shrink:", err)
		return 1
	}
	var bug string
	switch {
	case *fixed && p.Bugs == 0:
		fmt.Fprintln(stderr, "sluice sim shrink: --fixed needs --bugs, the planted bug that brings the fixed one back")
		return 2
	case *fixed:
		bug, small.Bugs = p.Bugs.String(), 0
	case p.Bugs != 0:
		expect = "fail:" + checker
	}
	if *name == "" {
		*name = fmt.Sprintf("seed-%d-%s", *seed, checker)
		if p.Bugs != 0 && !*fixed {
			*name = p.Bugs.String() + "-" + *name
		}
	}
	if *mark == "" {
		*mark = shrink.MarkOf(*seed, small)
	}
	if _, err := world.ParseMark(*mark); err != nil {
		fmt.Fprintln(stderr, "sluice sim shrink: the shrunk run reaches no coverage mark to name; give --mark:", err)
		return 1
	}
	s := shrink.Scenario{Name: *name, Note: *note, Seed: *seed, Expect: expect, Mark: *mark, Bug: bug, Profile: small}
	if ok, detail := s.Verdict(); !ok {
		fmt.Fprintf(stderr, "sluice sim shrink: the shrunk scenario does not hold as a regression: %s\n", detail)
		return 1
	}
	path := filepath.Join(*dir, *name+".json")
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(stderr, "sluice sim shrink:", err)
		return 1
	}
	if err := os.WriteFile(path, s.Marshal(), 0o644); err != nil {
		fmt.Fprintln(stderr, "sluice sim shrink:", err)
		return 1
	}
	fmt.Fprintf(stdout, "shrunk seed %d (%s) in %d runs, %.1fs: %d faults, %d ms, %s\nwrote %s (expect %s)\n",
		*seed, checker, runs, time.Since(start).Seconds(), len(small.Schedule), small.DurationMs, small, path, expect)
	return 0
}

// runReplay: sluice sim replay FILE [--trace] runs a saved scenario.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	trace := fs.Bool("trace", false, "print the trace")
	traceFrom := fs.Duration("trace-from", 0, "with --trace, print from this simulated time on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: sluice sim replay [--trace] FILE")
		return 2
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim replay:", err)
		return 2
	}
	s, err := shrink.Parse(b)
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim replay:", err)
		return 2
	}
	opts := world.Options{}
	if *trace {
		opts.Trace, opts.TraceFilter.FromNs = stdout, int64(*traceFrom)
	}
	start := time.Now()
	r, err := world.Run(s.Seed, s.Profile, opts)
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim replay:", err)
		return 2
	}
	fmt.Fprintln(stdout, summaryLine(r, time.Since(start)))
	for _, f := range r.Failures {
		fmt.Fprintf(stdout, "  FAIL %s\n", f)
	}
	ok, detail := s.Verdict()
	if !ok {
		fmt.Fprintf(stdout, "scenario %s: NOT as expected (%s): %s\n", s.Name, s.Expect, detail)
		return 1
	}
	fmt.Fprintf(stdout, "scenario %s: as expected (%s)\n", s.Name, s.Expect)
	return 0
}
