package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The two in-sync timelines (docs/design/in-sync.md, "Timeline of a
// shrink"), replayed from their named scenarios, with the timeline's
// numbers checked against the trace of the run: the owner's
// announced high watermarks (effect "watermark"), and the metadata every
// broker applied (the first application of each entry, by the owner's
// node). The timeline's clock starts when the follower stalls (14 s here).

// timeline is what a run's trace says of queue "clicks".
type timeline struct {
	owner    string    // "n1"
	follower string    // the follower the scenario stalls
	marks    []mark    // the owner's announced high watermarks, in order
	inSync   []applied // in-sync changes of clicks, as the owner's node applied them
	down     []applied // brokers' losses
	fencedNs int64     // when clicks was fenced (0: never)
}

type mark struct {
	atNs int64
	end  uint64
}

type applied struct {
	atNs int64
	text string
}

var (
	reInstant   = regexp.MustCompile(`^t=([0-9]+)\.([0-9]{9})s `)
	reWatermark = regexp.MustCompile(`^t=\S+ (n[0-9]+) > watermark q=[0-9]+ end=([0-9]+)$`)
	reAssign    = regexp.MustCompile(`assign "clicks" .* owner=(n[0-9]+) `)
)

func instant(line string) int64 {
	m := reInstant.FindStringSubmatch(line)
	if m == nil {
		return -1
	}
	s, _ := strconv.ParseInt(m[1], 10, 64)
	ns, _ := strconv.ParseInt(m[2], 10, 64)
	return s*1e9 + ns
}

// runTimeline replays the named scenario file and reads its trace.
func runTimeline(t *testing.T, file, follower string) timeline {
	t.Helper()
	tl := timeline{follower: follower}
	for _, line := range strings.Split(replayTrace(t, file), "\n") {
		if m := reAssign.FindStringSubmatch(line); m != nil && tl.owner == "" {
			tl.owner = m[1]
		}
		if tl.owner == "" || !strings.Contains(line, " "+tl.owner+" > ") {
			continue
		}
		at := instant(line)
		switch {
		case reWatermark.MatchString(line):
			end, _ := strconv.ParseUint(reWatermark.FindStringSubmatch(line)[2], 10, 64)
			tl.marks = append(tl.marks, mark{at, end})
		case strings.Contains(line, "> applied") && strings.Contains(line, `in-sync "clicks"`):
			_, res, _ := strings.Cut(line, "=> ")
			tl.inSync = append(tl.inSync, applied{at, res})
		case strings.Contains(line, "> applied") && strings.Contains(line, " down "+follower+" "):
			tl.down = append(tl.down, applied{at, line})
		case strings.Contains(line, "> applied") && strings.Contains(line, `=> fenced "clicks"`) && tl.fencedNs == 0:
			tl.fencedNs = at
		}
	}
	if tl.owner == "" || tl.owner == follower {
		t.Fatalf("%s: clicks placed with owner %q; the scenario stalls %s, which must be a follower", file, tl.owner, follower)
	}
	return tl
}

// markAt returns the last watermark announced at or before atNs.
func (tl *timeline) markAt(atNs int64) uint64 {
	var m uint64
	for _, k := range tl.marks {
		if k.atNs <= atNs {
			m = k.end
		}
	}
	return m
}

func sec(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// TestSeed003Timelines checks the numbers of the timeline of a shrink
// (docs/design/in-sync.md) and of its restart variant.
func TestSeed003Timelines(t *testing.T) {
	const stallNs = 14e9 // the timeline's 0 s
	t.Run("slow follower", func(t *testing.T) {
		tl := runTimeline(t, "named/insync-slow-follower.json", "n3")
		if len(tl.inSync) < 2 {
			t.Fatalf("want n3 dropped, then back; in-sync changes: %v", tl.inSync)
		}
		drop, back := tl.inSync[0], tl.inSync[1]
		m0 := tl.markAt(stallNs)
		stuck := tl.markAt(drop.atNs)
		jump := tl.markAt(drop.atNs + 1e9) // the owner's next tick reads the change; publishing stopped at 30 s

		t.Logf("mark %d at the stall (seed: 1,200); still %d just before n3 left at seed-clock %s (seed: 30 to 45 s); %d after (seed: 4,200); n3 back at seed-clock %s (seed: about 52 s)",
			m0, stuck, sec(drop.atNs-stallNs), jump, sec(back.atNs-stallNs))
		switch {
		case m0 < 1150 || m0 > 1250:
			t.Errorf("mark %d at the stall, want about 1,200", m0)
		case stuck != m0:
			t.Errorf("the mark moved from %d to %d while n3 counted as in sync", m0, stuck)
		case drop.text != `in-sync "clicks" [1 2] version=1 under-replicated`:
			t.Errorf("first in-sync change %q, want n3 dropped", drop.text)
		case drop.atNs-stallNs < 30e9 || drop.atNs-stallNs > 45e9:
			t.Errorf("n3 left at seed-clock %s, want between 30 and 45 s (lag 30 s, checked every 15 s)", sec(drop.atNs-stallNs))
		case jump < m0+2950 || jump > m0+3050:
			// 3,000 appended in the 30 s after the stall, and no more
			// until 45 s: the jump is all of them.
			t.Errorf("the mark jumped from %d to %d, want about %d (3,000 appended)", m0, jump, m0+3000)
		case back.text != `in-sync "clicks" [1 2 3] version=2`:
			t.Errorf("second in-sync change %q, want n3 back", back.text)
		case back.atNs-stallNs < 45e9 || back.atNs-stallNs > 52e9:
			t.Errorf("n3 back at seed-clock %s, want after it woke at 45 s and by the seed's 52 s", sec(back.atNs-stallNs))
		}
		for i := 1; i < len(tl.marks); i++ {
			if tl.marks[i].end < tl.marks[i-1].end {
				t.Errorf("the mark moved back at %s: %d after %d", sec(tl.marks[i].atNs), tl.marks[i].end, tl.marks[i-1].end)
			}
		}
	})
	t.Run("restarted follower", func(t *testing.T) {
		tl := runTimeline(t, "named/insync-restarted-follower.json", "n3")
		if len(tl.down) == 0 || len(tl.inSync) == 0 {
			t.Fatalf("want n3's loss and an in-sync change; losses %v, changes %v", tl.down, tl.inSync)
		}
		down, drop := tl.down[0], tl.inSync[0]
		t.Logf("n3 killed at seed-clock 0; its loss applied at %s, its removal at %s (the owner's lag timer: 1.5 s); clicks fenced at %s",
			sec(down.atNs-stallNs), sec(drop.atNs-stallNs), sec(tl.fencedNs-stallNs))
		switch {
		case drop.text != `in-sync "clicks" [1 2] version=1 under-replicated`:
			t.Errorf("first in-sync change %q, want n3 dropped", drop.text)
		case drop.atNs < down.atNs:
			t.Errorf("n3 left the in-sync set at %s, before the controller saw it gone at %s: the lag timer's doing", sec(drop.atNs), sec(down.atNs))
		case drop.atNs-stallNs >= 1.5e9/2:
			t.Errorf("n3 left at seed-clock %s: want it as soon as the controller sees it gone, well before the 1.5 s lag timer", sec(drop.atNs-stallNs))
		case tl.fencedNs != 0 && tl.fencedNs < drop.atNs:
			t.Errorf("clicks was fenced at %s, before n3 left its in-sync set at %s", sec(tl.fencedNs), sec(drop.atNs))
		}
	})
}
