package scenarios

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/sim/world"
)

// TestRecoveryWorkers measures what 2 and 4 recovery workers per broker
// gain over the default 1 (docs/design/recovery.md, "Workers, backoff and
// deadlines") when
// 30 queues lose their owner at once? The named scenario kills n1, which
// owns 30 of 90 queues and follows the other 60; all 90 are fenced and n2
// is every recovery's candidate. Each run must pass its checkers, recover
// every queue, and drive at most, and at some instant exactly, the
// configured number of recoveries at once; the times from the kill to the
// activations are logged for the closing note.
func TestRecoveryWorkers(t *testing.T) {
	const file = "named/recovery-30-owners-lost.json"
	s := loadScenario(t, file)
	var report []string
	for _, workers := range []int{1, 2, 4} {
		p := s.Profile
		p.Operator = append([]string{fmt.Sprintf("at=0 set recovery.workers_per_broker %d", workers)}, p.Operator...)
		var trace bytes.Buffer
		r, err := world.Run(s.Seed, p, world.Options{Trace: &trace})
		if err != nil {
			t.Fatal(err)
		}
		if r.Failed > 0 {
			t.Fatalf("%d workers: the checkers failed: %v", workers, r.Failures)
		}
		wr := readWorkers(t, trace.String())
		if len(wr.activatedNs) != 90 {
			t.Fatalf("%d workers: %d of 90 queues activated", workers, len(wr.activatedNs))
		}
		if wr.concurrentMax != workers {
			t.Fatalf("%d workers: at most %d recoveries ran at once on one broker, want %d", workers, wr.concurrentMax, workers)
		}
		owned, all := wr.sinceKill(true), wr.sinceKill(false)
		if len(owned) != 30 {
			t.Fatalf("%d workers: %d queues of n1 activated, want 30", workers, len(owned))
		}
		report = append(report, fmt.Sprintf("%d workers: the 30 that lost their owner, median %s, last %s; all 90, median %s, last %s",
			workers, sec(owned[len(owned)/2]), sec(owned[len(owned)-1]), sec(all[len(all)/2]), sec(all[len(all)-1])))
	}
	t.Logf("from the kill to the activation:\n  %s", strings.Join(report, "\n  "))
}

// workersRun is what a trace says of the 90 queues' recoveries.
type workersRun struct {
	killNs        int64
	ownedByN1     map[string]bool  // queue name -> its first owner was n1
	activatedNs   map[string]int64 // queue name -> its first activation
	concurrentMax int              // recoveries in progress at once on one broker, at most
}

var (
	reAssignOwner = regexp.MustCompile(`> applied .* assign "(q[0-9]+)" .* owner=(n[0-9]+) `)
	reActivate    = regexp.MustCompile(`> applied .* activate "(q[0-9]+)" .*=> activated`)
	reWorkerStage = regexp.MustCompile(`^t=\S+ (n[0-9]+) > recovery q=([0-9]+) stage=(detect|activate) `)
	reWorkerEnd   = regexp.MustCompile(`^t=\S+ (n[0-9]+) > note g=[0-9]+ recovery q=([0-9]+) epoch=[0-9]+ (set aside|ended)`)
)

func readWorkers(t *testing.T, trace string) workersRun {
	t.Helper()
	wr := workersRun{ownedByN1: map[string]bool{}, activatedNs: map[string]int64{}}
	running := map[string][]string{} // node -> queue ids whose attempt runs
	for _, line := range strings.Split(trace, "\n") {
		switch {
		case wr.killNs == 0 && strings.Contains(line, " * fault ") && strings.Contains(line, " kill "):
			wr.killNs = instant(line)
		case reAssignOwner.MatchString(line):
			m := reAssignOwner.FindStringSubmatch(line)
			if _, seen := wr.ownedByN1[m[1]]; !seen {
				wr.ownedByN1[m[1]] = m[2] == "n1"
			}
		case reActivate.MatchString(line):
			if m := reActivate.FindStringSubmatch(line); wr.activatedNs[m[1]] == 0 {
				wr.activatedNs[m[1]] = instant(line)
			}
		case reWorkerStage.MatchString(line):
			m := reWorkerStage.FindStringSubmatch(line)
			if m[3] == "detect" {
				if !slices.Contains(running[m[1]], m[2]) { // (a start over marks detect again)
					running[m[1]] = append(running[m[1]], m[2])
				}
				wr.concurrentMax = max(wr.concurrentMax, len(running[m[1]]))
			} else {
				running[m[1]] = slices.DeleteFunc(running[m[1]], func(q string) bool { return q == m[2] })
			}
		case reWorkerEnd.MatchString(line):
			m := reWorkerEnd.FindStringSubmatch(line)
			running[m[1]] = slices.DeleteFunc(running[m[1]], func(q string) bool { return q == m[2] })
		}
	}
	if wr.killNs == 0 {
		t.Fatal("no kill in the trace")
	}
	return wr
}

// sinceKill returns the times from the kill to each activation, sorted: of
// the queues n1 owned (owned) or of every queue.
func (wr *workersRun) sinceKill(owned bool) []int64 {
	var d []int64
	for q, at := range wr.activatedNs {
		if !owned || wr.ownedByN1[q] {
			d = append(d, at-wr.killNs)
		}
	}
	slices.Sort(d)
	return d
}

// TestRecoveryWorkersTakeTheSmallestFirst: a node's worker takes up the
// fenced queues it is the candidate of smallest first, by what its own
// log of each retains (core/recover.go): whenever n2 takes one up, every
// other queue already fenced on n2 and taken up later retains at least as
// much (by n2's seal of each: the records it froze), and the first one
// is taken up only once every fence of the kill applied. The queues of
// the named scenario differ enough in size for the order to be tested.
func TestRecoveryWorkersTakeTheSmallestFirst(t *testing.T) {
	s := loadScenario(t, "named/recovery-30-owners-lost.json")
	var trace bytes.Buffer
	r, err := world.Run(s.Seed, s.Profile, world.Options{Trace: &trace})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed > 0 {
		t.Fatalf("the checkers failed: %v", r.Failures)
	}
	var (
		reDeclared = regexp.MustCompile(`> applied .* declare "(q[0-9]+)" .*=> declared "q[0-9]+" id=([0-9]+) `)
		reFenced   = regexp.MustCompile(`^t=\S+ n2 > applied .* transition "(q[0-9]+)" .*=> fenced `)
		reDetect   = regexp.MustCompile(`^t=\S+ n2 > recovery q=([0-9]+) stage=detect `)
		reSealed   = regexp.MustCompile(`^t=\S+ n2 > recovery q=([0-9]+) stage=seal epoch=[0-9]+ n2 sealed \[([0-9]+),([0-9]+)\)`)
	)
	ids := map[string]string{}
	fencedNs, detectNs, size := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var order []string
	for _, line := range strings.Split(trace.String(), "\n") {
		if m := reDeclared.FindStringSubmatch(line); m != nil {
			ids[m[1]] = m[2]
		} else if m := reFenced.FindStringSubmatch(line); m != nil && fencedNs[ids[m[1]]] == 0 {
			fencedNs[ids[m[1]]] = instant(line)
		} else if m := reDetect.FindStringSubmatch(line); m != nil && detectNs[m[1]] == 0 {
			detectNs[m[1]] = instant(line)
			order = append(order, m[1])
		} else if m := reSealed.FindStringSubmatch(line); m != nil && size[m[1]] == 0 {
			var from, to int64
			fmt.Sscan(m[2], &from)
			fmt.Sscan(m[3], &to)
			size[m[1]] = to - from + 1 // (+1: an empty log still counts as sealed)
		}
	}
	if len(order) < 30 {
		t.Fatalf("n2 took up %d recoveries, want the 90 queues' (at least the 30 of n1)", len(order))
	}
	compared, differed := 0, 0
	for i, q := range order {
		for _, later := range order[i+1:] {
			if f := fencedNs[later]; f == 0 || f > detectNs[q] {
				continue // not fenced yet when q was taken up
			}
			compared++
			if size[q] > size[later] {
				t.Fatalf("n2 took up q=%d (%d records) at %s while q=%d (%d records) waited, fenced since %s",
					atoi(q), size[q]-1, sec(detectNs[q]), atoi(later), size[later]-1, sec(fencedNs[later]))
			}
			if size[q] != size[later] {
				differed++
			}
		}
	}
	// The first pickup waited for the fences in n2's log: the leader's
	// placement check fenced the 90 queues one entry each, committed
	// within milliseconds, and a worker that took up the first one
	// applied would have chosen among one (core/recover.go's
	// recoveryGathered).
	before := 0
	for _, f := range fencedNs {
		if f <= detectNs[order[0]] {
			before++
		}
	}
	if before != len(fencedNs) {
		t.Fatalf("n2 took up its first recovery, q=%d, at %s with %d of the %d fenced queues applied", atoi(order[0]), sec(detectNs[order[0]]), before, len(fencedNs))
	}
	if compared == 0 || differed == 0 {
		t.Fatalf("%d pairs compared, %d of them of different sizes: the scenario no longer tests the order", compared, differed)
	}
	t.Logf("%d recoveries taken up by n2; %d pairs of a queue taken up and one waiting compared, %d of different sizes", len(order), compared, differed)
}

func atoi(s string) int {
	var v int
	fmt.Sscan(s, &v)
	return v
}
