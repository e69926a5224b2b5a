package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/sim/shrink"
	"github.com/sluicemq/sluice/sim/world"
)

const shrinkSynopsis = `sluice sim shrink --seed S [--profile P] [--duration-ms MS] [--bugs X [--fixed]] [--name N] [flags]`

const shrinkAbout = `Shrinks a failing seed into a small scenario that fails the same checker: ddmin
over its fault schedule, then cuts of the workload (duration, message faults,
consumer loss, clients, queues, replicas, brokers, rate), then ddmin again. Writes
DIR/NAME.json, which 'go test ./scenarios' replays; it never replaces an existing
file unless --force is given (a saved regression's note would be lost).

examples:
  sluice sim shrink --seed 1 --bugs sync-skip --name x
  sluice sim shrink --seed 8 --bugs no-heartbeat --fixed --name follower-restart --note "what it guards"
`

// scenarioName is what --name may be: a file name without directories.
var scenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// runsMaxMax bounds --runs-max: each run is a whole world.
const runsMaxMax = 1_000_000

// runShrink: sluice sim shrink --seed S [--name N] writes a shrunk regression.
func runShrink(args []string, e env) int {
	c := newCommand("sluice sim shrink", shrinkSynopsis, shrinkAbout)
	var profile, planted string
	var durationMs int64
	seed := c.fs.Uint64("seed", 0, "the failing seed to shrink (required)")
	addRunFlags(c, &profile, &durationMs, &planted)
	name := c.fs.String("name", "", "scenario name: lower-case letters, digits, '.', '_', '-' (default seed-S-CHECKER)")
	note := c.fs.String("note", "", "what the regression guards")
	dir := c.fs.String("dir", filepath.Join("scenarios", "regressions"), "where to write the scenario")
	runsMax := c.fs.Int("runs-max", 2000, "bound on the worlds run while shrinking")
	mark := c.fs.String("mark", "", "the coverage mark the bug's path hits (default: the most specific one the shrunk run reaches)")
	fixed := c.fs.Bool("fixed", false, "with --bugs: the planted bug brings back a fixed one; write a regression that must pass, and fail with the bug planted")
	force := c.fs.Bool("force", false, "replace an existing scenario file")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	// Everything the work depends on is checked before the work.
	switch {
	case len(pos) > 0:
		return c.fail(e, fmt.Sprintf("unexpected argument %q: the seed is given with --seed", pos[0]))
	case !c.set("seed"):
		return c.fail(e, "--seed S is required: the failing seed to shrink")
	case *name != "" && !scenarioName.MatchString(*name):
		return c.fail(e, fmt.Sprintf("--name %q: want lower-case letters, digits, '.', '_' or '-' (no directories, no .json)", *name))
	case *runsMax < 1 || *runsMax > runsMaxMax:
		return c.fail(e, fmt.Sprintf("--runs-max %d: want 1..%d", *runsMax, runsMaxMax))
	case *fixed && planted == "":
		return c.fail(e, "--fixed needs --bugs, the planted bug that brings the fixed one back")
	}
	if *mark != "" {
		if _, err := world.ParseMark(*mark); err != nil {
			return c.fail(e, "--mark: "+err.Error())
		}
	}
	prof, set, msg := checkRunFlags(c, profile, durationMs, planted)
	if msg != "" {
		return c.fail(e, msg)
	}
	p := prof(*seed)
	if err := p.Validate(); err != nil {
		return c.fail(e, err.Error())
	}
	// The first run names the checker (and so the default name): refuse an
	// existing file before the long work, not after.
	r, err := world.Run(*seed, p, world.Options{})
	if err != nil {
		return c.fail(e, err.Error())
	}
	if r.Failed == 0 {
		fmt.Fprintf(e.stderr, "sluice sim shrink: seed %d passes under this profile (%s): nothing to shrink\n", *seed, reproduceCommand(*seed, profile, durationMs, set))
		return 1
	}
	if *name == "" {
		*name = fmt.Sprintf("seed-%d-%s", *seed, r.Failures[0].Checker)
		if set != 0 && !*fixed {
			*name = set.String() + "-" + *name
		}
	}
	path := filepath.Join(*dir, *name+".json")
	if _, err := os.Stat(path); err == nil && !*force {
		return c.fail(e, fmt.Sprintf("%s exists: choose another --name, or give --force to replace it (its note and history would be lost)", path))
	}

	start := time.Now()
	small, checker, runs, err := shrink.ShrinkKeeping(*seed, p, *runsMax, *mark, func(step string, runs, faults int) {
		fmt.Fprintf(e.stderr, "shrink: %-20s runs=%d faults=%d\n", step, runs, faults)
	})
	if err != nil {
		fmt.Fprintln(e.stderr, "sluice sim shrink:", err)
		return 1
	}
	if runs >= *runsMax {
		fmt.Fprintf(e.stderr, "shrink: stopped by --runs-max %d: the reductions left were not tried, so the scenario may shrink further (raise --runs-max)\n", *runsMax)
	}
	// A planted bug kept (no --fixed), or a real failure not yet fixed:
	// the scenario reproduces the failure. Once the bug is fixed, its
	// expect becomes "pass" (see docs/simulator.md, "Regressions").
	expect, bug := "fail:"+checker, ""
	if *fixed {
		expect, bug, small.Bugs = "pass", set.String(), 0
	}
	if *mark == "" {
		*mark = shrink.MarkOf(*seed, small)
	}
	if _, err := world.ParseMark(*mark); err != nil {
		fmt.Fprintln(e.stderr, "sluice sim shrink: the shrunk run reaches no coverage mark to name; give --mark:", err)
		return 1
	}
	s := shrink.Scenario{Name: *name, Note: *note, Seed: *seed, Expect: expect, Mark: *mark, Bug: bug, Profile: small}
	if ok, detail := s.Verdict(); !ok {
		fmt.Fprintf(e.stderr, "sluice sim shrink: the shrunk scenario does not hold as a regression: %s\n", detail)
		return 1
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(e.stderr, "sluice sim shrink:", err)
		return 2
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	fd, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(e.stderr, "sluice sim shrink: %s appeared while shrinking; not replaced (give --force)\n", path)
		return 2
	}
	if err == nil {
		_, err = fd.Write(s.Marshal())
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "sluice sim shrink:", err)
		return 2
	}
	fmt.Fprintf(e.stdout, "shrunk seed %d (%s) in %d runs, %.1fs: %d faults, %d ms, %s\nwrote %s (expect %s)\nreplay: go run ./cmd/sluice sim replay %s\n",
		*seed, checker, runs, time.Since(start).Seconds(), len(small.Schedule), small.DurationMs, small, path, expect, path)
	return 0
}

const replaySynopsis = `sluice sim replay FILE [--trace [filters]] [--timeline OUT.html]`

const replayAbout = `Runs a saved scenario and says whether it met its expectation ("pass", or
"fail:CHECKER"), and that its run still reaches its coverage mark. Flags may come
before or after FILE.

examples:
  sluice sim replay scenarios/regressions/canary-ack-before-sync.json
  sluice sim replay scenarios/regressions/x.json --trace --trace-kind fault,struck
`

// runReplay: sluice sim replay FILE [--trace] runs a saved scenario.
func runReplay(args []string, e env) int {
	f := simFlags{cmd: newCommand("sluice sim replay", replaySynopsis, replayAbout)}
	addTraceFlags(f.cmd, &f)
	f.cmd.fs.DurationVar(&f.seedTimeout, "seed-timeout", 0, "report the run as timed out after this wall-clock time (exit 3); 0: no bound")
	pos, status, done := f.cmd.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 1 {
		return f.cmd.fail(e, fmt.Sprintf("want one scenario FILE, got %d arguments", len(pos)))
	}
	if msg := checkTraceFlags(&f); msg != "" {
		return f.cmd.fail(e, msg)
	}
	b, err := readBounded(pos[0])
	if err != nil {
		return f.cmd.fail(e, err.Error())
	}
	s, err := shrink.ParseFile(pos[0], b)
	if err != nil {
		return f.cmd.fail(e, err.Error())
	}
	opts := world.Options{TraceFilter: f.filter}
	if f.trace {
		opts.Trace = e.stdout
	}
	var tl *timelineOut
	if f.timeline != "" {
		if tl, err = newTimelineOut(f.timeline, s.Seed, s.Profile, "go run ./cmd/sluice sim replay "+pos[0]); err != nil {
			return f.cmd.fail(e, err.Error())
		}
		opts.Trace = tl.writer(opts.Trace)
		if f.trace {
			opts.Trace = tl.writer(filteredWriter(e.stdout, f.filter))
			opts.TraceFilter = driver.TraceFilter{}
		}
	}
	start := time.Now()
	opts.Interrupt = interrupter(e.interrupt, start, f.seedTimeout)
	r, err := world.Run(s.Seed, s.Profile, opts)
	if errors.Is(err, world.ErrInterrupted) {
		return reportCut(e, s.Seed, time.Since(start), f.seedTimeout, "go run ./cmd/sluice sim replay "+pos[0], false)
	}
	if err != nil {
		return f.cmd.fail(e, err.Error())
	}
	fmt.Fprintln(e.stdout, summaryLine(r, time.Since(start)))
	for _, fl := range r.Failures {
		fmt.Fprintf(e.stdout, "  FAIL %s\n", fl)
	}
	if tl != nil {
		if err := tl.finish(r); err != nil {
			fmt.Fprintln(e.stderr, "sluice sim replay: --timeline:", err)
			return 2
		}
		fmt.Fprintf(e.stderr, "timeline: wrote %s\n", f.timeline)
	}
	ok, detail := s.Verdict()
	if !ok {
		fmt.Fprintf(e.stdout, "scenario %s: NOT as expected (%s): %s\n", s.Name, s.Expect, detail)
		return 1
	}
	fmt.Fprintf(e.stdout, "scenario %s: as expected (%s)\n", s.Name, s.Expect)
	return 0
}

// fileBytesMax bounds a file the command reads whole (a scenario).
const fileBytesMax = 16 << 20

// readBounded reads a whole file of at most fileBytesMax bytes.
func readBounded(path string) ([]byte, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	b, err := io.ReadAll(io.LimitReader(fd, fileBytesMax+1))
	if err == nil && len(b) > fileBytesMax {
		err = fmt.Errorf("%s: over %d bytes", path, fileBytesMax)
	}
	return b, err
}
