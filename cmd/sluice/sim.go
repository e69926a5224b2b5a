package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/sweep"
	"github.com/sluicemq/sluice/sim/world"
)

type simFlags struct {
	seed       uint64
	seeds      uint64
	first      uint64
	parallel   int
	trace      bool
	traceFrom  time.Duration
	profile    string
	durationMs int64
	jsonOut    bool
	shard      string
	bugs       string
	planted    bugs.Set
	// coverageMin: "mark=N,..." or "@FILE": fail the sweep when fewer seeds
	// than N reached a mark.
	coverageMin      string
	coverageMinimums map[string]uint64
}

// profileFor returns the profile function of a named profile, with the
// workload length overridden when durationMs > 0 and the planted bugs set.
func profileFor(name string, durationMs int64, planted bugs.Set) (func(uint64) world.Profile, error) {
	var f func(uint64) world.Profile
	switch name {
	case "swarm":
		f = world.Draw
	case "standard":
		f = func(uint64) world.Profile { return world.Standard() }
	case "standard-faults":
		f = func(uint64) world.Profile { return world.StandardWithFaults() }
	default:
		return nil, fmt.Errorf("unknown profile %q (want swarm, standard or standard-faults)", name)
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

// reproduce returns the one-line command that replays seed.
func (f *simFlags) reproduce(seed uint64) string {
	cmd := fmt.Sprintf("go run ./cmd/sluice sim --seed %d", seed)
	if f.profile != "swarm" {
		cmd += " --profile " + f.profile
	}
	if f.durationMs > 0 {
		cmd += fmt.Sprintf(" --duration-ms %d", f.durationMs)
	}
	if f.planted != 0 {
		cmd += " --bugs " + f.planted.String()
	}
	return cmd
}

func runSim(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "shrink":
			return runShrink(args[1:], stdout, stderr)
		case "replay":
			return runReplay(args[1:], stdout, stderr)
		case "mutants":
			return runMutants(args[1:], stdout, stderr)
		}
	}
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&f.seed, "seed", 1, "run one world with this seed")
	fs.Uint64Var(&f.seeds, "seeds", 0, "sweep this many seeds (from --first) instead of one")
	fs.Uint64Var(&f.first, "first", 1, "first seed of a sweep")
	fs.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "worlds run at once in a sweep")
	fs.BoolVar(&f.trace, "trace", false, "print the trace: one line per input, effect and world event")
	fs.DurationVar(&f.traceFrom, "trace-from", 0, "with --trace, print from this simulated time on (e.g. 2.5s)")
	fs.StringVar(&f.profile, "profile", "swarm", "swarm: each seed draws its profile; standard: the benchmark's world; standard-faults: it with every fault kind on")
	fs.Int64Var(&f.durationMs, "duration-ms", 0, "override the workload phase's simulated length")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON line per seed")
	fs.StringVar(&f.shard, "shard", "", "k/n: run only shard k (0-based) of n of the sweep's seeds")
	fs.StringVar(&f.coverageMin, "coverage-min", "", "fail a sweep when a coverage row is reached by fewer seeds than given: mark=N,... or @file with one mark=N per line")
	fs.StringVar(&f.bugs, "bugs", "", "plant bugs by name, comma-separated (the mutation suite); 'list' prints their names")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.bugs == "list" {
		for _, b := range bugs.Registry {
			fmt.Fprintln(stdout, b.Name)
		}
		return 0
	}
	var err error
	if f.planted, err = bugs.Parse(f.bugs); err != nil {
		fmt.Fprintln(stderr, "sluice sim:", err)
		return 2
	}
	if f.coverageMin != "" {
		if f.coverageMinimums, err = sweep.ParseMinimums(f.coverageMin); err != nil {
			fmt.Fprintln(stderr, "sluice sim:", err)
			return 2
		}
	}
	prof, err := profileFor(f.profile, f.durationMs, f.planted)
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim:", err)
		return 2
	}
	if f.seeds == 0 {
		return runOne(&f, prof, stdout, stderr)
	}
	return runSweep(&f, prof, stdout, stderr)
}

func runOne(f *simFlags, prof func(uint64) world.Profile, stdout, stderr io.Writer) int {
	opts := world.Options{}
	if f.trace {
		opts.Trace = stdout
		opts.TraceFilter.FromNs = int64(f.traceFrom)
	}
	start := time.Now()
	r, err := world.Run(f.seed, prof(f.seed), opts)
	if err != nil {
		fmt.Fprintln(stderr, "sluice sim:", err)
		return 2
	}
	wall := time.Since(start)
	if f.jsonOut {
		printJSON(stdout, r, wall)
	} else {
		fmt.Fprintln(stdout, summaryLine(r, wall))
		fmt.Fprintf(stdout, "profile: %s\n", r.Profile)
		for _, fl := range r.Failures {
			fmt.Fprintf(stdout, "  FAIL %s\n", fl)
		}
		if r.Failed > 0 {
			fmt.Fprintf(stdout, "reproduce: %s\n", f.reproduce(r.Seed))
		}
	}
	if r.Failed > 0 {
		return 1
	}
	return 0
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
	return fmt.Sprintf("seed=%d %s hash=%s events=%d sim=%.1fs wall=%.2fs events/s=%.0f publishes=%d confirmed=%d failed=%d unknown=%d deliveries=%d faults=%d",
		r.Seed, verdict, r.TraceHash, r.Events, float64(r.SimNs)/1e9, wall.Seconds(), float64(r.Events)/wall.Seconds(),
		s.Publishes, s.Confirmed, s.FailedPubs, s.Unknown, s.Deliveries, faults)
}

type jsonResult struct {
	Seed      uint64            `json:"seed"`
	OK        bool              `json:"ok"`
	Hash      string            `json:"hash"`
	Events    uint64            `json:"events"`
	SimNs     int64             `json:"sim_ns"`
	WallNs    int64             `json:"wall_ns,omitempty"`
	Failures  []string          `json:"failures,omitempty"`
	Profile   string            `json:"profile"`
	Confirmed uint64            `json:"confirmed"`
	Faults    map[string]uint64 `json:"faults,omitempty"` // struck, by kind
	Armed     map[string]uint64 `json:"armed,omitempty"`  // armed, by kind
	Coverage  map[string]uint64 `json:"coverage,omitempty"`
}

func printJSON(w io.Writer, r world.Result, wall time.Duration) {
	j := jsonResult{Seed: r.Seed, OK: r.Failed == 0, Hash: r.TraceHash, Events: r.Events, SimNs: r.SimNs,
		WallNs: wall.Nanoseconds(), Profile: r.Profile.String(), Confirmed: r.Stats.Confirmed,
		Faults: map[string]uint64{}, Armed: map[string]uint64{}, Coverage: map[string]uint64{}}
	for _, k := range world.FaultKinds() {
		if n := r.Stats.Struck[k]; n > 0 {
			j.Faults[k.String()] = n
		}
		if n := r.Stats.Armed[k]; n > 0 {
			j.Armed[k.String()] = n
		}
	}
	for _, m := range world.Marks() {
		if n := r.Stats.Coverage[m]; n > 0 {
			j.Coverage[m.String()] = n
		}
	}
	for _, f := range r.Failures {
		j.Failures = append(j.Failures, f.String())
	}
	b, _ := json.Marshal(j)
	fmt.Fprintln(w, string(b))
}

func runSweep(f *simFlags, prof func(uint64) world.Profile, stdout, stderr io.Writer) int {
	first, count := f.first, f.seeds
	if f.shard != "" {
		var k, n int
		if _, err := fmt.Sscanf(f.shard, "%d/%d", &k, &n); err != nil || n < 1 || k < 0 || k >= n {
			fmt.Fprintf(stderr, "sluice sim: --shard %q: want k/n with 0 <= k < n\n", f.shard)
			return 2
		}
		first, count = sweep.Shard(first, count, k, n)
	}
	start := time.Now()
	var done, failedSeeds, events uint64
	byChecker := map[string]int{}
	var armed, struck [32]uint64
	var cov sweep.Coverage
	var consumerLosses, confirmed uint64
	var failing []uint64
	progress := isTerminal(stderr) && !f.jsonOut
	sweep.Run(sweep.Job{First: first, Count: count, Parallel: f.parallel, Profile: prof, Done: func(r world.Result, err error) {
		done++
		if err != nil {
			fmt.Fprintf(stderr, "seed %d: %v\n", r.Seed, err)
			failedSeeds++
			return
		}
		events += r.Events
		for k := range r.Stats.Struck {
			armed[k] += r.Stats.Armed[k]
			struck[k] += r.Stats.Struck[k]
		}
		cov.Add(r)
		consumerLosses += r.Stats.ConsumerLosses
		confirmed += r.Stats.Confirmed
		if f.jsonOut {
			printJSON(stdout, r, 0)
		}
		if r.Failed > 0 {
			failedSeeds++
			failing = append(failing, r.Seed)
			seen := map[string]bool{}
			for _, fl := range r.Failures {
				if !seen[fl.Checker] {
					byChecker[fl.Checker]++
					seen[fl.Checker] = true
				}
			}
			if !f.jsonOut {
				fmt.Fprintf(stdout, "FAIL seed=%d %s\n  reproduce: %s\n", r.Seed, r.Failures[0], f.reproduce(r.Seed))
			}
		}
		if progress && (done%16 == 0 || done == count) {
			fmt.Fprintf(stderr, "\r%s", bar(done, count, failedSeeds, time.Since(start)))
		}
	}})
	if progress {
		fmt.Fprintln(stderr)
	}
	wall := time.Since(start)
	if f.jsonOut {
		if failedSeeds > 0 {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "seeds      %d (%d..%d)\n", count, first, first+count-1)
	fmt.Fprintf(stdout, "failures   %d\n", failedSeeds)
	names := make([]string, 0, len(byChecker))
	for n := range byChecker {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(stdout, "  %-18s %d seeds\n", n, byChecker[n])
	}
	fmt.Fprintf(stdout, "events     %d (%.0f events/s over %d workers, %.1fs wall)\n", events, float64(events)/wall.Seconds(), f.parallel, wall.Seconds())
	fmt.Fprintf(stdout, "confirmed  %d publishes\n", confirmed)
	fmt.Fprintf(stdout, "faults     struck/armed: consumer-loss=%d", consumerLosses)
	for _, k := range world.FaultKinds() {
		fmt.Fprintf(stdout, " %s=%d/%d", k, struck[k], armed[k])
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, cov.Table())
	if f.coverageMin != "" {
		if short := cov.Below(f.coverageMinimums); len(short) > 0 {
			fmt.Fprintf(stdout, "coverage below its minimum: %s\n", strings.Join(short, "; "))
			return 1
		}
	}
	if len(failing) > 0 {
		strs := make([]string, 0, len(failing))
		for _, s := range failing {
			strs = append(strs, fmt.Sprint(s))
		}
		fmt.Fprintf(stdout, "failing seeds: %s\n", strings.Join(strs, " "))
		return 1
	}
	return 0
}

func bar(done, total, failed uint64, elapsed time.Duration) string {
	const width = 30
	n := int(done * width / max(total, 1))
	return fmt.Sprintf("[%s%s] %d/%d seeds, %d failing, %.0fs", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, failed, elapsed.Seconds())
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
