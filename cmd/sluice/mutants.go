package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/shrink"
	"github.com/sluicemq/sluice/sim/sweep"
	"github.com/sluicemq/sluice/sim/world"
)

// mutantMedianMax is the acceptance bound on the median seeds a planted bug
// needs to be caught.
const mutantMedianMax = 100

const mutantsSynopsis = `sluice sim mutants [--bugs A,B] [--budgets FILE | --seeds-max N] [--first S] [--parallel P]`

const mutantsAbout = `Plants each registered bug (core/bugs) in turn and runs seeds from --first until
one catches it: the table gives each bug's first catching seed and checker. Fails
when a bug is not caught within its budget, or (for the whole registry) when the
median seeds to catch exceeds 100. A budget of 'regression' instead replays the
saved regressions (beside the budget file, under regressions/) that name the bug:
each must pass, and fail with the bug planted. It is for a bug the swarm catches
only after more seeds than CI can run; the median counts only swarm catches.

examples:
  sluice sim mutants --bugs sync-skip,ack-before-sync
  sluice sim mutants --parallel 2 --budgets scenarios/mutants.budget   (what CI runs)
`

// runMutants: sluice sim mutants plants each bug in turn and reports the
// first seed that catches it.
func runMutants(args []string, e env) int {
	c := newCommand("sluice sim mutants", mutantsSynopsis, mutantsAbout)
	fs := c.fs
	stdout, stderr := e.stdout, e.stderr
	first := fs.Uint64("first", 1, "first seed")
	seedsMax := fs.Uint64("seeds-max", 2000, "seeds a bug may take to be caught (without --budgets)")
	budgets := fs.String("budgets", "", "file of 'bug seeds' lines: each bug's own budget (every bug must be listed)")
	only := fs.String("bugs", "", "only these bugs, comma-separated (default all)")
	parallel := fs.Int("parallel", runtime.NumCPU(), "worlds run at once")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.fail(e, fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	if *parallel < 1 || *parallel > 1024 {
		return c.fail(e, fmt.Sprintf("--parallel %d: want 1..1024", *parallel))
	}
	if *seedsMax < 1 || *seedsMax > 100_000 {
		return c.fail(e, fmt.Sprintf("--seeds-max %d: want 1..100000", *seedsMax))
	}
	if *budgets != "" && c.set("seeds-max") {
		return c.fail(e, "--budgets gives each bug its own seeds: --seeds-max would be ignored")
	}
	list := bugs.Registry
	if *only != "" {
		set, err := bugs.Parse(*only)
		if err != nil {
			return c.fail(e, "--bugs: "+err.Error())
		}
		list = nil
		for _, b := range bugs.Registry {
			if set.Has(b.Bit) {
				list = append(list, b)
			}
		}
	}
	budget := func(bugs.Bug) uint64 { return *seedsMax }
	var byRegression []bugs.Bug
	if *budgets != "" {
		m, err := readBudgets(*budgets)
		if err != nil {
			return c.fail(e, "--budgets: "+err.Error())
		}
		var swarm []bugs.Bug
		for _, b := range list {
			n, ok := m[b.Name]
			switch {
			case !ok:
				return c.fail(e, fmt.Sprintf("--budgets %s: no budget for planted bug %s", *budgets, b.Name))
			case n == budgetRegression:
				byRegression = append(byRegression, b)
			default:
				swarm = append(swarm, b)
			}
		}
		list = swarm
		budget = func(b bugs.Bug) uint64 { return m[b.Name] }
	}
	start := time.Now()
	rs := sweep.Mutants(list, *first, budget, *parallel, world.Draw, func(m sweep.MutantResult) {
		if m.Caught {
			fmt.Fprintf(stderr, "%-24s caught at seed %d by %s\n", m.Bug.Name, m.Seed, m.Checker)
		} else {
			fmt.Fprintf(stderr, "%-24s NOT caught within %d seeds\n", m.Bug.Name, m.Budget)
		}
	})
	fmt.Fprint(stdout, sweep.MutantTable(rs, *first))
	code := 0
	for _, b := range byRegression {
		names, err := replayGuards(filepath.Join(filepath.Dir(*budgets), "regressions"), b)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %v\n", b.Name, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%-32s %-22s %10s  caught by its saved regression %s\n", b.Name, b.Area, "-", strings.Join(names, ", "))
	}
	fmt.Fprintf(stdout, "wall %.1fs\n", time.Since(start).Seconds())
	var ranks []uint64
	for _, r := range rs {
		if !r.Caught {
			cmd := fmt.Sprintf("go run ./cmd/sluice sim mutants --bugs %s --seeds-max %d", r.Bug.Name, r.Budget)
			if *first != 1 {
				cmd += fmt.Sprintf(" --first %d", *first)
			}
			fmt.Fprintf(stdout, "FAIL %s was not caught within its %d seeds: reproduce: %s\n", r.Bug.Name, r.Budget, cmd)
			code = 1
			ranks = append(ranks, r.Budget)
			continue
		}
		ranks = append(ranks, r.Seed-*first+1)
	}
	if *only == "" && sweep.Median(ranks) > mutantMedianMax {
		fmt.Fprintf(stdout, "FAIL the median seeds to catch a planted bug is %d, over %d\n", sweep.Median(ranks), mutantMedianMax)
		code = 1
	}
	return code
}

// budgetRegression marks a bug guarded by its saved regressions rather than
// by a swarm budget.
const budgetRegression = 0

// replayGuards replays every saved regression under dir that names bug b
// and returns their names: each must pass as it stands and fail with b
// planted (shrink.Scenario.Verdict). No such regression is an error.
func replayGuards(dir string, b bugs.Bug) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := shrink.ParseFile(f, data)
		if err != nil {
			return nil, err
		}
		if set, err := bugs.Parse(s.Bug); s.Bug == "" || err != nil || !set.Has(b.Bit) {
			continue
		}
		if ok, detail := s.Verdict(); !ok {
			return nil, fmt.Errorf("saved regression %s: %s", f, detail)
		}
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("budget 'regression' but no saved regression under %s names the bug", dir)
	}
	return names, nil
}

// readBudgets reads 'bug seeds' or 'bug regression' lines (# comments).
func readBudgets(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for i, line := range strings.Split(string(b), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want 'bug seeds', got %q", path, i+1, line)
		}
		if _, ok := bugs.Lookup(f[0]); !ok {
			return nil, fmt.Errorf("%s:%d: unknown planted bug %q", path, i+1, f[0])
		}
		if f[1] == "regression" {
			m[f[0]] = budgetRegression
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || n < 1 || n > 2000 {
			return nil, fmt.Errorf("%s:%d: budget %q: want 1..2000 seeds, or 'regression'", path, i+1, f[1])
		}
		m[f[0]] = n
	}
	return m, nil
}
