package sweep

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/world"
)

// FirstFailure runs seeds first, first+1, ... (at most count of them, in
// parallel batches) and returns the lowest seed whose run fails, with its
// result; found is false when none of them fails.
func FirstFailure(first, count uint64, parallel int, profile func(uint64) world.Profile) (world.Result, bool) {
	par := max(parallel, 1)
	batch := uint64(2 * par)
	for lo := first; lo < first+count; lo += batch {
		n := min(batch, first+count-lo)
		results := make([]world.Result, n)
		var wg sync.WaitGroup
		var mu sync.Mutex
		next := uint64(0)
		for w := 0; w < par; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= n {
						return
					}
					seed := lo + i
					r, err := world.Run(seed, profile(seed), world.Options{})
					if err != nil {
						// A profile the world refuses is the caller's error.
						panic(fmt.Sprintf("sweep: seed %d: %v", seed, err))
					}
					results[i] = r
				}
			}()
		}
		wg.Wait()
		for i := range results {
			if results[i].Failed > 0 {
				return results[i], true
			}
		}
	}
	return world.Result{}, false
}

// MutantResult is how the simulator fared against one planted bug.
type MutantResult struct {
	Bug     bugs.Bug
	Caught  bool
	Seed    uint64 // the first seed that caught it
	Checker string // the first failure's checker
	Budget  uint64 // seeds it was allowed
}

// Mutants runs, for each bug, the seeds from first on with that bug planted
// until one catches it or its budget runs out. A seed catches the bug only
// if its run without the bug passes: one that fails either way is a
// finding of its own, not evidence that the checkers see this bug.
func Mutants(list []bugs.Bug, first uint64, budget func(bugs.Bug) uint64, parallel int, profile func(uint64) world.Profile,
	progress func(MutantResult)) []MutantResult {
	var out []MutantResult
	for _, b := range list {
		n := budget(b)
		m := MutantResult{Bug: b, Budget: n}
		for from := first; from < first+n; {
			r, found := FirstFailure(from, first+n-from, parallel, func(s uint64) world.Profile {
				p := profile(s)
				p.Bugs = b.Bit
				return p
			})
			if !found {
				break
			}
			if clean, err := world.Run(r.Seed, profile(r.Seed), world.Options{}); err == nil && clean.Failed == 0 {
				m.Caught, m.Seed, m.Checker = true, r.Seed, r.Failures[0].Checker
				break
			}
			from = r.Seed + 1
		}
		if progress != nil {
			progress(m)
		}
		out = append(out, m)
	}
	return out
}

// MutantTable prints the results, one bug a line, then the median first
// catching seed (a bug not caught counts as its budget).
func MutantTable(rs []MutantResult, first uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-22s %10s  %s\n", "bug", "area", "first seed", "checker")
	var ranks []uint64
	for _, r := range rs {
		seed, rank := "not caught", r.Budget
		if r.Caught {
			seed, rank = fmt.Sprint(r.Seed), r.Seed-first+1
		}
		ranks = append(ranks, rank)
		fmt.Fprintf(&b, "%-32s %-22s %10s  %s\n", r.Bug.Name, r.Bug.Area, seed, r.Checker)
	}
	fmt.Fprintf(&b, "median seeds to catch: %d\n", Median(ranks))
	return b.String()
}

// Median returns the median of v (the lower middle for an even count).
func Median(v []uint64) uint64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
