package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/sim/check"
	"github.com/sluicemq/sluice/sim/sweep"
	"github.com/sluicemq/sluice/sim/world"
)

// subcommands of sluice sim, for help and for "did you mean".
var simSubcommands = []string{"shrink", "replay", "diff", "mutants", "help"}

const simSynopsis = `sluice sim [flags]                    one world (--seed) or a sweep (--seeds)
       sluice sim shrink --seed S [flags]    shrink a failing seed into a saved scenario
       sluice sim replay FILE [flags]        run a saved scenario
       sluice sim diff A B [flags]           where two runs' traces first differ
       sluice sim mutants [flags]            each planted bug: the first seed that catches it
       sluice sim help [subcommand]`

const simAbout = `Runs simulated Sluice clusters, one per seed, deterministically: the same seed
(and profile, duration and planted bugs) gives the same trace hash in any process.

examples:
  sluice sim --seed 42                        one world: summary line, profile, failures
  sluice sim --seed 42 --trace --trace-from 2.5s --trace-node n1
  sluice sim --seed 1 --bugs sync-skip --timeline seed1.html
  sluice sim --seeds 1000 --parallel 2        a sweep: summary, coverage table
  sluice sim --seeds 20000 --shard 3/8 --json one JSON line per seed of shard 3 of 8
  sluice sim --seeds 500 --fail-fast          stop at the first failing seed
  sluice sim shrink --seed 1 --bugs sync-skip --name x
  sluice sim replay scenarios/regressions/x.json --trace
  sluice sim diff 1 2                         two seeds' traces: the first line that differs

A seed's verdict never depends on the machine, the parallelism or the wall clock:
--seed-timeout only decides whether a seed is reported as timed out (exit 3, an
error of the run, never a failure of the system under test).
`

type simFlags struct {
	cmd         *command
	seed        uint64
	seeds       uint64
	first       uint64
	parallel    int
	trace       bool
	traceFrom   instantFlag
	traceUntil  instantFlag
	traceNode   string
	traceQueue  string
	traceKind   string
	timeline    string
	profile     string
	durationMs  int64
	jsonOut     bool
	shard       string
	bugs        string
	failFast    bool
	maxFailures int
	seedTimeout time.Duration
	coverageMin string

	planted          bugs.Set
	filter           driver.TraceFilter
	coverageMinimums map[string]uint64
}

// addRunFlags defines the flags that say what a seed runs: they are the
// ones a reproduce command repeats.
func addRunFlags(c *command, profile *string, durationMs *int64, planted *string) {
	c.fs.StringVar(profile, "profile", "swarm", "swarm: each seed draws its profile; scale: the swarm with one dimension a seed at users' sizes (deep queue, 10,000/s, 10 minutes, 50 queues); standard: the benchmark's world; standard-faults: it with every fault kind on")
	c.fs.Int64Var(durationMs, "duration-ms", 0, fmt.Sprintf("the workload phase's simulated length, 1..%d (default: the profile's)", world.DurationMsMax))
	c.fs.StringVar(planted, "bugs", "", "plant bugs by name, comma-separated (the mutation suite); 'list' prints their names")
}

// addTraceFlags defines the trace and timeline flags of one world.
func addTraceFlags(c *command, f *simFlags) {
	c.fs.BoolVar(&f.trace, "trace", false, "print the trace: one line per input, effect and world event, each with its instant")
	c.fs.Var(&f.traceFrom, "trace-from", "with --trace, print from this simulated instant on (2.5s, or t=2.288518965s as printed)")
	c.fs.Var(&f.traceUntil, "trace-until", "with --trace, print up to this simulated instant")
	c.fs.StringVar(&f.traceNode, "trace-node", "", "with --trace, only these brokers' lines (n1,n3) and world notes naming them or none")
	c.fs.StringVar(&f.traceQueue, "trace-queue", "", "with --trace, only inputs and effects of these queues (q1,q2), and world notes")
	c.fs.StringVar(&f.traceKind, "trace-kind", "", "with --trace, only lines of these kinds (send,recv,storage,done,client,reply,deliver,deadline,tick,start,fault,struck,mark,...)")
	c.fs.StringVar(&f.timeline, "timeline", "", "write the run's timeline to this HTML file (self-contained; open it in a browser)")
}

// checkTraceFlags refuses trace filters without --trace and reads them.
func checkTraceFlags(f *simFlags) string {
	for _, name := range []string{"trace-from", "trace-until", "trace-node", "trace-queue", "trace-kind"} {
		if f.cmd.set(name) && !f.trace {
			return fmt.Sprintf("--%s selects trace lines: it needs --trace", name)
		}
	}
	f.filter = driver.TraceFilter{FromNs: f.traceFrom.ns, UntilNs: f.traceUntil.ns}
	if f.cmd.set("trace-until") && f.traceUntil.ns < f.traceFrom.ns {
		return fmt.Sprintf("--trace-until %s is before --trace-from %s", f.traceUntil.String(), f.traceFrom.String())
	}
	for _, s := range splitList(f.traceNode) {
		n, err := strconv.ParseUint(strings.TrimPrefix(s, "n"), 10, 8)
		if err != nil || n < 1 || n > world.BrokersMax {
			return fmt.Sprintf("--trace-node %q: want brokers such as n1,n3", f.traceNode)
		}
		f.filter.Nodes = append(f.filter.Nodes, core.NodeID(n))
	}
	for _, s := range splitList(f.traceQueue) {
		q, err := strconv.ParseUint(strings.TrimPrefix(s, "q"), 10, 32)
		if err != nil || q < 1 {
			return fmt.Sprintf("--trace-queue %q: want queues such as q1,q2", f.traceQueue)
		}
		f.filter.Queues = append(f.filter.Queues, core.QueueID(q))
	}
	for _, k := range splitList(f.traceKind) {
		if !knownTraceKind(k) {
			return fmt.Sprintf("--trace-kind %q: unknown kind%s (kinds: %s)", k, suggest(k, traceKinds), strings.Join(traceKinds, ","))
		}
		f.filter.Kinds = append(f.filter.Kinds, k)
	}
	return ""
}

// traceKinds are the first words of trace lines: inputs, effects, world
// notes.
var traceKinds = []string{"start", "recv", "client", "client-gone", "done", "tick",
	"send", "storage", "reply", "deliver", "deadline",
	"fault", "struck", "stop", "mark", "resume", "drain:", "end", "consumer-loss"}

func knownTraceKind(k string) bool {
	for _, t := range traceKinds {
		if t == k {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// profileFor returns the profile function of a named profile, with the
// workload length overridden when durationMs > 0 and the planted bugs set.
func profileFor(name string, durationMs int64, planted bugs.Set) (func(uint64) world.Profile, error) {
	var f func(uint64) world.Profile
	switch name {
	case "swarm":
		f = world.Draw
	case "scale":
		f = world.DrawScale
	case "standard":
		f = func(uint64) world.Profile { return world.Standard() }
	case "standard-faults":
		f = func(uint64) world.Profile { return world.StandardWithFaults() }
	default:
		return nil, fmt.Errorf("--profile %q: unknown profile%s (want swarm, scale, standard or standard-faults)", name, suggest(name, []string{"swarm", "scale", "standard", "standard-faults"}))
	}
	return func(s uint64) world.Profile {
		p := f(s)
		if durationMs > 0 {
			p.DurationMs = durationMs
		}
		p.Bugs = planted
		return p
	}, nil
}

// checkRunFlags checks the flags that say what a seed runs.
func checkRunFlags(c *command, profile string, durationMs int64, planted string) (func(uint64) world.Profile, bugs.Set, string) {
	if c.set("duration-ms") && (durationMs < 1 || durationMs > world.DurationMsMax) {
		return nil, 0, fmt.Sprintf("--duration-ms %d: want 1..%d simulated ms of the workload phase", durationMs, world.DurationMsMax)
	}
	set, err := bugs.Parse(planted)
	if err != nil {
		return nil, 0, "--bugs: " + err.Error()
	}
	prof, err := profileFor(profile, durationMs, set)
	if err != nil {
		return nil, 0, err.Error()
	}
	return prof, set, ""
}

// reproduceCommand returns the one-line command that replays seed exactly:
// every flag that changes what a seed runs, and no other.
func reproduceCommand(seed uint64, profile string, durationMs int64, planted bugs.Set) string {
	cmd := fmt.Sprintf("go run ./cmd/sluice sim --seed %d", seed)
	if profile != "swarm" {
		cmd += " --profile " + profile
	}
	if durationMs > 0 {
		cmd += fmt.Sprintf(" --duration-ms %d", durationMs)
	}
	if planted != 0 {
		cmd += " --bugs " + planted.String()
	}
	return cmd
}

func (f *simFlags) reproduce(seed uint64) string {
	return reproduceCommand(seed, f.profile, f.durationMs, f.planted)
}

func runSim(args []string, e env) int {
	if len(args) > 0 {
		switch args[0] {
		case "shrink":
			return runShrink(args[1:], e)
		case "replay":
			return runReplay(args[1:], e)
		case "mutants":
			return runMutants(args[1:], e)
		case "diff":
			return runDiff(args[1:], e)
		case "help":
			if len(args) == 1 {
				args = []string{"--help"}
			} else {
				return runSim(append(append([]string{}, args[1:]...), "--help"), e)
			}
		}
	}
	f := simFlags{cmd: newCommand("sluice sim", simSynopsis, simAbout)}
	fs := f.cmd.fs
	fs.Uint64Var(&f.seed, "seed", 1, "run one world with this seed")
	fs.Uint64Var(&f.seeds, "seeds", 0, "sweep this many seeds (from --first) instead of one")
	fs.Uint64Var(&f.first, "first", 1, "with --seeds, the first seed of the sweep")
	fs.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "with --seeds, worlds run at once")
	fs.StringVar(&f.shard, "shard", "", "with --seeds, run only shard k (0-based) of n: k/n")
	addRunFlags(f.cmd, &f.profile, &f.durationMs, &f.bugs)
	addTraceFlags(f.cmd, &f)
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON line per seed (a sweep's summary goes to stderr)")
	fs.BoolVar(&f.failFast, "fail-fast", false, "with --seeds, stop at the first failing seed (seed order)")
	fs.IntVar(&f.maxFailures, "max-failures", 0, "with --seeds, stop after this many failing seeds (seed order)")
	fs.DurationVar(&f.seedTimeout, "seed-timeout", 0, "report a seed that takes longer than this wall-clock time as timed out (exit 3; never a checker failure); 0: no bound")
	fs.StringVar(&f.coverageMin, "coverage-min", "", "with --seeds, fail when a coverage row is reached by fewer seeds than given: mark=N,... or @file with one mark=N per line")
	pos, status, done := f.cmd.parse(e, args)
	if done {
		return status
	}
	if len(pos) > 0 {
		if len(args) > 0 && args[0] == pos[0] {
			return f.cmd.fail(e, fmt.Sprintf("unknown subcommand %q%s (subcommands: %s)", pos[0], suggest(pos[0], simSubcommands), strings.Join(simSubcommands, ", ")))
		}
		return f.cmd.fail(e, fmt.Sprintf("unexpected argument %q: sluice sim takes flags only (subcommands come first: %s)", pos[0], strings.Join(simSubcommands, ", ")))
	}
	if f.bugs == "list" {
		n := 0
		fs.Visit(func(*flag.Flag) { n++ })
		if n > 1 {
			return f.cmd.fail(e, "--bugs list prints the planted bugs' names: give it alone")
		}
		for _, b := range bugs.Registry {
			fmt.Fprintln(e.stdout, b.Name)
		}
		return 0
	}
	if msg := f.check(); msg != "" {
		return f.cmd.fail(e, msg)
	}
	prof, planted, msg := checkRunFlags(f.cmd, f.profile, f.durationMs, f.bugs)
	if msg != "" {
		return f.cmd.fail(e, msg)
	}
	f.planted = planted
	if f.seeds == 0 {
		return runOne(&f, prof, e)
	}
	return runSweep(&f, prof, e)
}

// check refuses flag combinations that would be ignored without a word.
func (f *simFlags) check() string {
	c := f.cmd
	sweepOnly := []string{"first", "parallel", "shard", "fail-fast", "max-failures", "coverage-min"}
	oneOnly := []string{"trace", "timeline"}
	if c.set("seeds") {
		if f.seeds == 0 {
			return "--seeds 0: want at least 1 seed (or --seed S for one world)"
		}
		if c.set("seed") {
			return "--seed runs one world and --seeds sweeps: give one of them (--first sets a sweep's first seed)"
		}
		for _, n := range oneOnly {
			if c.set(n) {
				return fmt.Sprintf("--%s is for one world (--seed S), not a sweep: run the seed you want to see with --seed", n)
			}
		}
	} else {
		for _, n := range sweepOnly {
			if c.set(n) {
				return fmt.Sprintf("--%s applies to a sweep: it needs --seeds N", n)
			}
		}
	}
	if c.set("parallel") && f.parallel < 1 {
		return fmt.Sprintf("--parallel %d: want at least 1 world at once", f.parallel)
	}
	if c.set("parallel") && f.parallel > 1024 {
		return fmt.Sprintf("--parallel %d: want at most 1024", f.parallel)
	}
	if c.set("max-failures") && f.maxFailures < 1 {
		return fmt.Sprintf("--max-failures %d: want at least 1", f.maxFailures)
	}
	if c.set("fail-fast") && c.set("max-failures") {
		return "--fail-fast is --max-failures 1: give one of them"
	}
	if f.failFast {
		f.maxFailures = 1
	}
	if c.set("seed-timeout") && f.seedTimeout <= 0 {
		return fmt.Sprintf("--seed-timeout %s: want a positive wall-clock time such as 2m", f.seedTimeout)
	}
	if f.jsonOut && f.trace {
		return "--json and --trace both print to stdout: give one of them"
	}
	if f.shard != "" {
		if _, _, err := sweep.ParseShard(f.shard); err != nil {
			return err.Error()
		}
	}
	if f.coverageMin != "" {
		m, err := sweep.ParseMinimums(f.coverageMin)
		if err != nil {
			return "--coverage-min: " + err.Error()
		}
		f.coverageMinimums = m
	}
	return checkTraceFlags(f)
}

func runOne(f *simFlags, prof func(uint64) world.Profile, e env) int {
	var tl *timelineOut
	opts := world.Options{TraceFilter: f.filter}
	if f.trace {
		opts.Trace = e.stdout
	}
	if f.timeline != "" {
		var err error
		if tl, err = newTimelineOut(f.timeline, f.seed, prof(f.seed), f.reproduce(f.seed)); err != nil {
			return f.cmd.fail(e, err.Error())
		}
		opts.Trace = tl.writer(opts.Trace)
		if f.trace {
			// The timeline needs every line; the filter applies to what
			// --trace prints.
			opts.Trace = tl.writer(filteredWriter(e.stdout, f.filter))
			opts.TraceFilter = driver.TraceFilter{}
		}
	}
	start := time.Now()
	opts.Interrupt = interrupter(e.interrupt, start, f.seedTimeout)
	r, err := world.Run(f.seed, prof(f.seed), opts)
	wall := time.Since(start)
	if errors.Is(err, world.ErrInterrupted) {
		return reportCut(e, f.seed, wall, f.seedTimeout, f.reproduce(f.seed), f.jsonOut)
	}
	if err != nil {
		return f.cmd.fail(e, err.Error())
	}
	if f.jsonOut {
		printJSON(e.stdout, r, wall, f.reproduce(r.Seed))
	} else {
		fmt.Fprintln(e.stdout, summaryLine(r, wall))
		var rt recoveryTotals
		if rt.add(&r.Stats); rt.timed > 0 {
			fmt.Fprintln(e.stdout, rt.line())
		}
		fmt.Fprintf(e.stdout, "profile: %s\n", r.Profile)
		for _, fl := range r.Failures {
			fmt.Fprintf(e.stdout, "  FAIL %s\n", fl)
		}
		if r.Failed > len(r.Failures) {
			fmt.Fprintf(e.stdout, "  ... %d failures in all (the first %d shown)\n", r.Failed, len(r.Failures))
		}
		if r.Failed > 0 {
			fmt.Fprintf(e.stdout, "reproduce: %s\n", f.reproduce(r.Seed))
		}
	}
	if tl != nil {
		if err := tl.finish(r); err != nil {
			fmt.Fprintln(e.stderr, "sluice sim: --timeline:", err)
			return 2
		}
		fmt.Fprintf(e.stderr, "timeline: wrote %s\n", f.timeline)
	}
	if r.Failed > 0 {
		return 1
	}
	return 0
}

// interrupter returns the world's Interrupt for one run: Ctrl-C, or the
// wall-clock bound.
func interrupter(interrupt <-chan struct{}, start time.Time, timeout time.Duration) func() bool {
	if interrupt == nil && timeout == 0 {
		return nil
	}
	return func() bool {
		if timeout > 0 && time.Since(start) > timeout {
			return true
		}
		select {
		case <-interrupt:
			return true
		default:
			return false
		}
	}
}

// reportCut reports one world cut short: by its wall-clock bound (exit 3)
// or by Ctrl-C (exit 130). Neither is a verdict.
func reportCut(e env, seed uint64, wall, timeout time.Duration, reproduce string, jsonOut bool) int {
	timedOut := timeout > 0 && wall > timeout
	what, code := "INTERRUPTED", 130
	if timedOut {
		what, code = fmt.Sprintf("TIMED OUT after %.1fs of wall time (--seed-timeout %s)", wall.Seconds(), timeout), 3
	}
	if jsonOut {
		b, _ := json.Marshal(jsonResult{Seed: seed, TimedOut: timedOut, Error: strings.ToLower(what), WallNs: wall.Nanoseconds(), Reproduce: reproduce})
		fmt.Fprintln(e.stdout, string(b))
	} else {
		fmt.Fprintf(e.stdout, "seed=%d %s: no verdict (the run did not end; this is not a failure of the system under test)\nreproduce: %s\n", seed, what, reproduce)
	}
	return code
}

func summaryLine(r world.Result, wall time.Duration) string {
	verdict := "ok"
	if r.Failed > 0 {
		verdict = fmt.Sprintf("FAIL(%d)", r.Failed)
	}
	s := r.Stats
	var faults uint64
	for _, n := range s.Struck {
		faults += n
	}
	return fmt.Sprintf("seed=%d %s hash=%s events=%d sim=%.1fs wall=%.2fs events/s=%.0f publishes=%d confirmed=%d failed=%d unknown=%d deliveries=%d faults=%d placed=%d under-replicated=%d under-min-insync=%d",
		r.Seed, verdict, r.TraceHash, r.Events, float64(r.SimNs)/1e9, wall.Seconds(), float64(r.Events)/max(wall.Seconds(), 1e-9),
		s.Publishes, s.Confirmed, s.FailedPubs, s.Unknown, s.Deliveries, faults, s.InSync.Placed, s.InSync.UnderReplicated, s.InSync.UnderMinInSync)
}

type jsonResult struct {
	Seed       uint64   `json:"seed"`
	OK         bool     `json:"ok"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	Error      string   `json:"error,omitempty"`
	Hash       string   `json:"hash,omitempty"`
	Events     uint64   `json:"events,omitempty"`
	SimNs      int64    `json:"sim_ns,omitempty"`
	WallNs     int64    `json:"wall_ns"`
	Failures   []string `json:"failures,omitempty"`
	Reproduce  string   `json:"reproduce,omitempty"` // on every line that is not ok
	Profile    string   `json:"profile,omitempty"`
	Publishes  uint64   `json:"publishes"`
	Confirmed  uint64   `json:"confirmed"`
	FailedPubs uint64   `json:"failed"`
	Unknown    uint64   `json:"unknown"`
	Deliveries uint64   `json:"deliveries"`
	// the placed queues at the end, and of them those under-replicated
	// and under min in-sync (by the committed metadata)
	Placed          int               `json:"placed"`
	UnderReplicated int               `json:"under_replicated"`
	UnderMinInSync  int               `json:"under_min_insync"`
	Faults          map[string]uint64 `json:"faults,omitempty"` // struck, by kind
	Armed           map[string]uint64 `json:"armed,omitempty"`  // armed, by kind
	Coverage        map[string]uint64 `json:"coverage,omitempty"`
	// each queue recovery's time by stage from its propose mark (-1: not
	// reached)
	Recoveries []world.RecoveryTimes `json:"recoveries,omitempty"`
}

func printJSON(w io.Writer, r world.Result, wall time.Duration, reproduce string) {
	s := r.Stats
	j := jsonResult{Seed: r.Seed, OK: r.Failed == 0, Hash: r.TraceHash, Events: r.Events, SimNs: r.SimNs,
		WallNs: wall.Nanoseconds(), Profile: r.Profile.String(), Publishes: s.Publishes, Confirmed: s.Confirmed,
		FailedPubs: s.FailedPubs, Unknown: s.Unknown, Deliveries: s.Deliveries,
		Placed: s.InSync.Placed, UnderReplicated: s.InSync.UnderReplicated, UnderMinInSync: s.InSync.UnderMinInSync,
		Faults: map[string]uint64{}, Armed: map[string]uint64{}, Coverage: map[string]uint64{}, Recoveries: s.Recoveries}
	for _, k := range world.FaultKinds() {
		if n := s.Struck[k]; n > 0 {
			j.Faults[k.String()] = n
		}
		if n := s.Armed[k]; n > 0 {
			j.Armed[k.String()] = n
		}
	}
	for _, m := range world.Marks() {
		if n := s.Coverage[m]; n > 0 {
			j.Coverage[m.String()] = n
		}
	}
	for _, f := range r.Failures {
		j.Failures = append(j.Failures, f.String())
	}
	if !j.OK {
		j.Reproduce = reproduce
	}
	b, _ := json.Marshal(j)
	fmt.Fprintln(w, string(b))
}

// sweepTotals is what a sweep adds up over its seeds.
type sweepTotals struct {
	done, failedSeeds, timedOut, events         uint64
	publishes, confirmed, failedPubs, unknown   uint64
	deliveries, consumerLosses                  uint64
	armed, struck                               [32]uint64
	byChecker                                   map[string]int
	failing, timedOutSeeds                      []uint64
	cov                                         sweep.Coverage
	inSync                                      check.InSyncHealth
	recoveries                                  recoveryTotals
	lastReported                                uint64
	stoppedByFailures, stoppedByInterrupt, stop bool
}

// listMax bounds the seeds a summary lists by name; the count is exact.
const listMax = 1000

func runSweep(f *simFlags, prof func(uint64) world.Profile, e env) int {
	first, count := f.first, f.seeds
	if f.first > ^uint64(0)-count {
		return f.cmd.fail(e, fmt.Sprintf("--first %d with --seeds %d runs past the last seed", f.first, f.seeds))
	}
	if f.shard != "" {
		k, n, _ := sweep.ParseShard(f.shard)
		first, count = sweep.Shard(first, count, k, n)
		if count == 0 {
			return f.cmd.fail(e, fmt.Sprintf("--shard %s of %d seeds holds no seed", f.shard, f.seeds))
		}
	}
	// Catch a profile the world refuses (say, a planted bug the profile
	// cannot take) before the sweep, as bad input.
	if err := prof(first).Validate(); err != nil {
		return f.cmd.fail(e, err.Error())
	}
	start := time.Now()
	t := sweepTotals{byChecker: map[string]int{}}
	var bar *progressBar
	if isTerminal(e.stderr) && !f.jsonOut {
		bar = &progressBar{w: e.stderr, total: count, start: start}
	}
	out := e.stdout
	if bar != nil {
		out = bar.above(e.stdout)
	}
	sum := sweep.Run(sweep.Job{First: first, Count: count, Parallel: f.parallel, Profile: prof,
		SeedTimeout: f.seedTimeout, Stop: e.interrupt, Done: func(o sweep.Outcome) bool {
			t.done++
			t.lastReported = o.Seed
			r := o.Result
			switch {
			case errors.Is(o.Err, sweep.ErrTimedOut):
				t.timedOut++
				if len(t.timedOutSeeds) < listMax {
					t.timedOutSeeds = append(t.timedOutSeeds, o.Seed)
				}
				if f.jsonOut {
					b, _ := json.Marshal(jsonResult{Seed: o.Seed, TimedOut: true, WallNs: o.Wall.Nanoseconds(),
						Error: fmt.Sprintf("timed out after %s of wall time (--seed-timeout)", f.seedTimeout), Reproduce: f.reproduce(o.Seed)})
					fmt.Fprintln(out, string(b))
				} else {
					fmt.Fprintf(out, "TIMED OUT seed=%d after %.1fs of wall time (--seed-timeout %s): no verdict, not a failure of the system under test\n  reproduce: %s\n",
						o.Seed, o.Wall.Seconds(), f.seedTimeout, f.reproduce(o.Seed))
				}
				bar.update(t.done, t.failedSeeds)
				return true
			case o.Err != nil:
				// Validated above; a profile drawn for a later seed that
				// the world refuses is still bad input, not a failure.
				fmt.Fprintf(e.stderr, "sluice sim: seed %d: %v\n", o.Seed, o.Err)
				t.stop = true
				return false
			}
			t.events += r.Events
			for k := range r.Stats.Struck {
				t.armed[k] += r.Stats.Armed[k]
				t.struck[k] += r.Stats.Struck[k]
			}
			t.cov.Add(r)
			t.recoveries.add(&r.Stats)
			s := r.Stats
			t.publishes += s.Publishes
			t.confirmed += s.Confirmed
			t.failedPubs += s.FailedPubs
			t.unknown += s.Unknown
			t.deliveries += s.Deliveries
			t.consumerLosses += s.ConsumerLosses
			t.inSync.Placed += s.InSync.Placed
			t.inSync.UnderReplicated += s.InSync.UnderReplicated
			t.inSync.UnderMinInSync += s.InSync.UnderMinInSync
			t.inSync.UnderReplicatedSpells += s.InSync.UnderReplicatedSpells
			t.inSync.UnderMinInSyncSpells += s.InSync.UnderMinInSyncSpells
			t.inSync.UnderReplicatedNs += s.InSync.UnderReplicatedNs
			t.inSync.UnderMinInSyncNs += s.InSync.UnderMinInSyncNs
			if f.jsonOut {
				printJSON(out, r, o.Wall, f.reproduce(r.Seed))
			}
			if r.Failed > 0 {
				t.failedSeeds++
				if len(t.failing) < listMax {
					t.failing = append(t.failing, r.Seed)
				}
				seen := map[string]bool{}
				for _, fl := range r.Failures {
					if !seen[fl.Checker] {
						t.byChecker[fl.Checker]++
						seen[fl.Checker] = true
					}
				}
				if !f.jsonOut {
					fmt.Fprintf(out, "FAIL seed=%d %s\n  reproduce: %s\n", r.Seed, r.Failures[0], f.reproduce(r.Seed))
				}
				if f.maxFailures > 0 && t.failedSeeds >= uint64(f.maxFailures) {
					t.stoppedByFailures = true
					bar.update(t.done, t.failedSeeds)
					return false
				}
			}
			bar.update(t.done, t.failedSeeds)
			return true
		}})
	bar.finish()
	if t.stop {
		return 2
	}
	wall := time.Since(start)
	t.stoppedByInterrupt = sum.Stopped && !t.stoppedByFailures
	summary := e.stdout
	if f.jsonOut {
		summary = e.stderr // stdout stays one JSON object a line
	}
	printSweepSummary(summary, f, &t, first, count, wall)
	switch {
	case t.stoppedByInterrupt:
		return 130
	case t.failedSeeds > 0:
		return 1
	}
	if f.coverageMin != "" && !t.stoppedByFailures {
		if short := t.cov.Below(f.coverageMinimums); len(short) > 0 {
			fmt.Fprintf(summary, "coverage below its minimum: %s\n", strings.Join(short, "; "))
			return 1
		}
	}
	if t.timedOut > 0 {
		return 3
	}
	return 0
}

func printSweepSummary(w io.Writer, f *simFlags, t *sweepTotals, first, count uint64, wall time.Duration) {
	fmt.Fprintf(w, "seeds      %d (%d..%d)", count, first, first+count-1)
	switch {
	case t.stoppedByFailures:
		fmt.Fprintf(w, "; stopped after seed %d at %d failing (--fail-fast/--max-failures): %d seeds reported, %d not run", t.lastReported, t.failedSeeds, t.done, count-t.done)
	case t.stoppedByInterrupt:
		fmt.Fprintf(w, "; INTERRUPTED: a partial summary of the %d seeds reported (%d..%d), %d not run or not finished", t.done, first, first+t.done-1, count-t.done)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "failures   %d seeds\n", t.failedSeeds)
	names := make([]string, 0, len(t.byChecker))
	for n := range t.byChecker {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %d seeds\n", n, t.byChecker[n])
	}
	if t.timedOut > 0 {
		fmt.Fprintf(w, "timed out  %d seeds over --seed-timeout %s (no verdict; not failures of the system under test): %s\n", t.timedOut, f.seedTimeout, seedList(t.timedOutSeeds, t.timedOut))
	}
	fmt.Fprintf(w, "events     %d (%.0f events/s over %d workers, %.1fs wall)\n", t.events, float64(t.events)/max(wall.Seconds(), 1e-9), f.parallel, wall.Seconds())
	fmt.Fprintf(w, "publishes  %d: confirmed %d, failed %d, unknown %d; deliveries %d\n", t.publishes, t.confirmed, t.failedPubs, t.unknown, t.deliveries)
	h := &t.inSync
	fmt.Fprintf(w, "in-sync    placed queues at the end %d: under-replicated %d, under-min-insync %d; spells under-replicated %d (%.1fs), under-min-insync %d (%.1fs)\n",
		h.Placed, h.UnderReplicated, h.UnderMinInSync, h.UnderReplicatedSpells, float64(h.UnderReplicatedNs)/1e9, h.UnderMinInSyncSpells, float64(h.UnderMinInSyncNs)/1e9)
	fmt.Fprintf(w, "faults     struck/armed: consumer-loss=%d", t.consumerLosses)
	for _, k := range world.FaultKinds() {
		fmt.Fprintf(w, " %s=%d/%d", k, t.struck[k], t.armed[k])
	}
	fmt.Fprintln(w)
	if line := t.recoveries.line(); line != "" {
		fmt.Fprintln(w, line)
	}
	fmt.Fprint(w, t.cov.Table())
	if t.failedSeeds > 0 {
		fmt.Fprintf(w, "failing seeds: %s\n", seedList(t.failing, t.failedSeeds))
		fmt.Fprintf(w, "reproduce the first: %s\n", f.reproduce(t.failing[0]))
	}
}

func seedList(seeds []uint64, total uint64) string {
	strs := make([]string, 0, len(seeds))
	for _, s := range seeds {
		strs = append(strs, fmt.Sprint(s))
	}
	out := strings.Join(strs, " ")
	if total > uint64(len(seeds)) {
		out += fmt.Sprintf(" ... (%d in all)", total)
	}
	return out
}

// progressBar draws a sweep's progress on a terminal's stderr, with an ETA.
// Lines printed to stdout while it shows (FAIL lines) first clear it, so
// that they never print over it; it is drawn again after them.
type progressBar struct {
	w            io.Writer
	total        uint64
	start        time.Time
	done, failed uint64
	shown        bool
	lastDraw     time.Time
}

func (b *progressBar) update(done, failed uint64) {
	if b == nil {
		return
	}
	b.done, b.failed = done, failed
	if now := time.Now(); done == b.total || now.Sub(b.lastDraw) > 100*time.Millisecond {
		b.lastDraw = now
		b.draw()
	}
}

func (b *progressBar) draw() {
	const width = 30
	n := int(b.done * width / max(b.total, 1))
	elapsed := time.Since(b.start)
	eta := "?"
	if b.done > 0 {
		left := time.Duration(float64(elapsed) / float64(b.done) * float64(b.total-b.done))
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %d/%d seeds, %d failing, %s elapsed, ETA %s",
		strings.Repeat("#", n), strings.Repeat(".", width-n), b.done, b.total, b.failed, elapsed.Round(time.Second), eta)
	b.shown = true
}

func (b *progressBar) clear() {
	if b != nil && b.shown {
		fmt.Fprint(b.w, "\r\033[K")
		b.shown = false
	}
}

func (b *progressBar) finish() {
	if b != nil && b.shown {
		b.draw()
		fmt.Fprintln(b.w)
		b.shown = false
	}
}

// above returns a writer for whole lines that clears the bar before them
// and draws it again after.
func (b *progressBar) above(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		b.clear()
		n, err := w.Write(p)
		b.draw()
		return n, err
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// terminal is a writer that says whether it is a terminal (tests use it to
// see the progress bar).
type terminal interface{ IsTerminal() bool }

func isTerminal(w io.Writer) bool {
	if t, ok := w.(terminal); ok {
		return t.IsTerminal()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
