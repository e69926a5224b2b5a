// Package shrink reduces a failing simulator run to a small one that fails
// the same checker: delta debugging (ddmin) over the run's recorded fault
// schedule, then greedy cuts of the workload (duration, message faults,
// clients, queues, replicas, brokers, rate). It runs worlds one after another, deterministically, and
// writes the result as a scenario that `go test ./...` replays.
package shrink

import (
	"fmt"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/world"
	"slices"
)

// Verdict runs a scenario and reports whether it met its expectation.
func (s *Scenario) Verdict() (ok bool, detail string) {
	r, err := world.Run(s.Seed, s.Profile, world.Options{})
	if err != nil {
		return false, err.Error()
	}
	if m, _ := world.ParseMark(s.Mark); r.Stats.Coverage[m] == 0 {
		return false, fmt.Sprintf("the run no longer reaches mark %s, so it no longer tests its bug's path: shrink a new seed", s.Mark)
	}
	if s.Expect == "pass" {
		if r.Failed != 0 {
			return false, fmt.Sprintf("failed: %v", r.Failures)
		}
		if s.Bug == "" {
			return true, ""
		}
		p := s.Profile
		p.Bugs, _ = bugs.Parse(s.Bug)
		if rb, err := world.Run(s.Seed, p, world.Options{}); err != nil || rb.Failed == 0 {
			return false, fmt.Sprintf("with %s planted the run passes: it no longer reaches the bug it guards", s.Bug)
		}
		return true, ""
	}
	if FailsWith(r, s.Expect[5:]) {
		return true, ""
	}
	return false, fmt.Sprintf("want a %s failure, got %v", s.Expect[5:], r.Failures)
}

// FailsWith reports whether r has a failure of the named checker.
func FailsWith(r world.Result, checker string) bool {
	for _, f := range r.Failures {
		if f.Checker == checker {
			return true
		}
	}
	return false
}

// Progress is told about each accepted reduction.
type Progress func(step string, runs int, faults int)

// Shrink reduces the failing run of seed under p. It returns the reduced
// profile (with an explicit schedule), the checker it fails, and the number
// of runs it took (runsMax when the budget stopped it). It fails if the run
// does not fail to begin with. Every reduction it keeps still fails the
// same checker and still reaches a coverage mark, so that the scenario can
// name one (ShrinkKeeping holds it to one mark).
func Shrink(seed uint64, p world.Profile, runsMax int, progress Progress) (world.Profile, string, int, error) {
	return ShrinkKeeping(seed, p, runsMax, "", progress)
}

// reaches reports whether r reached the named mark, or any mark for "".
func reaches(r world.Result, mark string) bool {
	if mark == "" {
		for _, n := range r.Stats.Coverage {
			if n > 0 {
				return true
			}
		}
		return false
	}
	m, err := world.ParseMark(mark)
	return err == nil && r.Stats.Coverage[m] > 0
}

// ShrinkKeeping is Shrink holding every reduction to reach mark ("" for
// any): the scenario then names a mark its bug's path really hits.
func ShrinkKeeping(seed uint64, p world.Profile, runsMax int, mark string, progress Progress) (world.Profile, string, int, error) {
	r, err := world.Run(seed, p, world.Options{})
	if err != nil {
		return p, "", 1, err
	}
	if r.Failed == 0 {
		return p, "", 1, fmt.Errorf("seed %d does not fail: nothing to shrink", seed)
	}
	if !reaches(r, mark) {
		return p, "", 1, fmt.Errorf("seed %d fails but does not reach coverage mark %q", seed, mark)
	}
	checker := r.Failures[0].Checker
	p.Schedule = append([]world.Fault{}, r.Schedule...)
	runs := 1
	fails := func(c world.Profile) bool {
		if c.Schedule == nil {
			c.Schedule = []world.Fault{} // none, not "draw one from the seed"
		}
		if runs >= runsMax {
			return false
		}
		runs++
		r, err := world.Run(seed, c, world.Options{})
		return err == nil && FailsWith(r, checker) && reaches(r, mark)
	}
	note := func(step string) {
		if progress != nil {
			progress(step, runs, len(p.Schedule))
		}
	}

	// 1. The schedule: ddmin over its faults.
	p.Schedule = ddmin(p.Schedule, func(s []world.Fault) bool {
		c := p
		c.Schedule = s
		return fails(c)
	})
	note("schedule")

	// 2. The workload, greedily: each cut is kept if the run still fails.
	try := func(step string, cut func(c *world.Profile) bool) {
		c := p
		c.Queues = append(c.Queues[:0:0], p.Queues...)
		c.Schedule = append(c.Schedule[:0:0], p.Schedule...)
		if cut(&c) && fails(c) {
			p = c
			note(step)
		}
	}
	for p.DurationMs > 500 {
		before := p.DurationMs
		try("duration", func(c *world.Profile) bool {
			c.DurationMs /= 2
			keep := c.Schedule[:0]
			for _, f := range c.Schedule {
				if f.AtNs < c.DurationMs*1e6 {
					keep = append(keep, f)
				}
			}
			c.Schedule = keep
			return true
		})
		if p.DurationMs == before {
			break
		}
	}
	try("no message drops", func(c *world.Profile) bool { c.Faults.DropPer1000 = 0; return p.Faults.DropPer1000 > 0 })
	try("no duplicates", func(c *world.Profile) bool { c.Faults.DupPer1000 = 0; return p.Faults.DupPer1000 > 0 })
	try("no corrupt frames", func(c *world.Profile) bool { c.Faults.CorruptPer1000 = 0; return p.Faults.CorruptPer1000 > 0 })
	try("no consumer loss", func(c *world.Profile) bool { c.ConsumerLossPerMin = world.Rate{}; return p.ConsumerLossPerMin.On() })
	try("one publisher", func(c *world.Profile) bool { c.PublishersPerQueue = 1; return p.PublishersPerQueue > 1 })
	try("one consumer", func(c *world.Profile) bool { c.ConsumersPerQueue = 1; return p.ConsumersPerQueue > 1 })
	try("no consumers", func(c *world.Profile) bool { c.ConsumersPerQueue = 0; return p.ConsumersPerQueue > 0 })
	for i := len(p.Queues) - 1; i >= 0 && len(p.Queues) > 1; i-- {
		try("fewer queues", func(c *world.Profile) bool {
			c.Queues = append(c.Queues[:i], c.Queues[i+1:]...)
			return true
		})
	}
	// Fewer replicas, one at a time (the controller places them).
	for qi := range p.Queues {
		for p.Queues[qi].Replicas > 1 {
			before := p.Queues[qi].Replicas
			try("fewer replicas", func(c *world.Profile) bool {
				// A new array: the profile being cut shares the old one.
				c.Queues = slices.Clone(c.Queues)
				q := &c.Queues[qi]
				q.Replicas--
				q.MinInSync = min(q.MinInSync, q.Replicas)
				return true
			})
			if p.Queues[qi].Replicas == before {
				break
			}
		}
	}
	// Fewer brokers: drop each broker while every queue's replicas still
	// fit, renumbering those above it; its faults go with it.
	for n := p.Brokers; n >= 1 && p.Brokers > 1; n-- {
		try("fewer brokers", func(c *world.Profile) bool { return dropBroker(c, n) })
	}
	for p.PublishesPerSec > 10 {
		before := p.PublishesPerSec
		try("lower publish rate", func(c *world.Profile) bool { c.PublishesPerSec /= 2; return true })
		if p.PublishesPerSec == before {
			break
		}
	}
	// The cuts may have made more faults needless.
	p.Schedule = ddmin(p.Schedule, func(s []world.Fault) bool {
		c := p
		c.Schedule = s
		return fails(c)
	})
	note("schedule again")
	if p.Schedule == nil {
		p.Schedule = []world.Fault{} // explicit: no faults, rather than drawn ones
	}
	return p, checker, runs, nil
}

// dropBroker removes broker n from c if it holds no replica: brokers above
// it move down one, and faults that name it are dropped. It reports whether
// it removed n.
func dropBroker(c *world.Profile, n int) bool {
	for _, q := range c.Queues {
		if q.Replicas > c.Brokers-1 {
			return false
		}
	}
	keep := c.Schedule[:0]
	for _, f := range c.Schedule {
		if f.Node == n || f.Peer == n {
			continue
		}
		if f.Node > n {
			f.Node--
		}
		if f.Peer > n {
			f.Peer--
		}
		keep = append(keep, f)
	}
	c.Schedule = keep
	c.Brokers--
	return true
}

// ddmin returns a small subsequence of items for which fails holds, given
// that it holds for items: Zeller's delta debugging.
func ddmin[T any](items []T, fails func([]T) bool) []T {
	if len(items) == 0 {
		return items
	}
	if fails(nil) {
		return nil
	}
	n := 2
	for len(items) >= 2 {
		chunk := (len(items) + n - 1) / n
		reduced := false
		for start := 0; start < len(items); start += chunk {
			end := min(start+chunk, len(items))
			complement := append(append([]T{}, items[:start]...), items[end:]...)
			if fails(complement) {
				items = complement
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(items) {
				break
			}
			n = min(n*2, len(items))
		}
	}
	return items
}

// markPreference orders the marks from the most to the least specific: a
// shrunk scenario names the first one its run reaches.
var markPreference = []world.Mark{
	world.MarkRecoveryReceipt, world.MarkCorruptLive, world.MarkTornSector, world.MarkLostWrite,
	world.MarkUnreadable, world.MarkPowerCycle, world.MarkCorruptOwner,
	world.MarkSyncFailDrop, world.MarkRedeliveryAfterLoss, world.MarkAllDown, world.MarkWDown,
	world.MarkRecoveryActivate, world.MarkRecoveryInstall, world.MarkRecoverySelect, world.MarkRecoverySeal,
	world.MarkFollowerTruncate, world.MarkDamageReported, world.MarkReadMetDamage, world.MarkSegmentRoll,
	world.MarkOwnerCrashInFlight, world.MarkTransitionFenced, world.MarkISRConfirm, world.MarkInSyncChange,
	world.MarkProcessDown, world.MarkQueueW2, world.MarkQueuePlaced,
}

// MarkOf returns the most specific mark the run of seed under p reaches, or
// "" if it reaches none.
func MarkOf(seed uint64, p world.Profile) string {
	r, err := world.Run(seed, p, world.Options{})
	if err != nil {
		return ""
	}
	for _, m := range markPreference {
		if r.Stats.Coverage[m] > 0 {
			return m.String()
		}
	}
	return ""
}
