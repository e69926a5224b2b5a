package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/sim/world"
)

// recoveryTotals gathers the queue recoveries of one run or a sweep, timed
// by stage from their propose marks (world.RecoveryTimes), for the
// summary's recovery line.
type recoveryTotals struct {
	timed, untimed uint64
	// sinceProposeNs: per stage, the time from the propose mark to the
	// stage, of each recovery that reached it
	sinceProposeNs [seam.StageMax + 1][]int64
}

// recoveryTimesMax bounds the samples a sweep keeps per stage (every
// recovery counts; the percentiles are of the first this many).
const recoveryTimesMax = 1 << 20

func (t *recoveryTotals) add(s *world.Stats) {
	t.untimed += s.RecoveriesUntimed
	for i := range s.Recoveries {
		r := &s.Recoveries[i]
		t.timed++
		for st := seam.StageDetect; st <= seam.StageMax; st++ {
			if d := r.SinceProposeNs[st]; st != seam.StagePropose && d >= 0 && len(t.sinceProposeNs[st]) < recoveryTimesMax {
				t.sinceProposeNs[st] = append(t.sinceProposeNs[st], d)
			}
		}
	}
}

// recoveryStages is the order the summary gives the stages in: the order
// a recovery reaches them.
var recoveryStages = []seam.RecoveryStage{seam.StageDetect, seam.StageSeal, seam.StageSelect, seam.StageInstall, seam.StageActivate, seam.StageReattach}

// line returns the summary's recovery line ("" when nothing was timed):
// how many recoveries, and per stage how many reached it with the median
// and p99 of the simulated time from the propose mark.
func (t *recoveryTotals) line() string {
	if t.timed == 0 && t.untimed == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "recovery   %d timed from the propose (untimed marks %d); reached, median/p99:", t.timed, t.untimed)
	for _, st := range recoveryStages {
		d := slices.Clone(t.sinceProposeNs[st])
		if len(d) == 0 {
			fmt.Fprintf(&b, " %s 0", st)
			continue
		}
		slices.Sort(d)
		fmt.Fprintf(&b, " %s %d %s/%s", st, len(d), ms(d[len(d)/2]), ms(d[(len(d)*99)/100]))
	}
	return b.String()
}

// ms prints a duration of simulated time in milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns)/1e6) }
