package scenarios

import (
	"regexp"
	"strings"
	"testing"
)

// The follower-loss hold's stories (docs/design/follower-loss-hold.md), each a named scenario whose
// checkers pass in replayTrace; the test reads from the trace when queue
// "orders" was fenced (and proposing whom), when it was activated again,
// and when n3 left and rejoined the live set.

type holdRun struct {
	faults      []int64  // instants of the scripted faults, in order
	fencedNs    []int64  // first applications of orders's transitions
	proposed    []string // their proposed members
	activatedNs []int64  // first applications of orders's activations
	n3DownNs    int64
	n3BackNs    int64    // n3 registered again with the process that went down
	n3NewNs     int64    // n3 registered with another process
	learnerNs   int64    // orders's first learner named (first application)
	admittedNs  int64    // and admitted
	admitted    string   // the instance admitted
	n3OpenEnds  []string // the ends n3's processes found opening orders's log
}

var (
	reHoldFence    = regexp.MustCompile(`> applied g=\d+ i=(\d+) .* transition "orders" .* proposed=\[([0-9 ]+)\] .*=> fenced`)
	reHoldActivate = regexp.MustCompile(`> applied g=\d+ i=(\d+) .* activate "orders" .*=> activated`)
	reN3Down       = regexp.MustCompile(`> applied g=\d+ i=\d+ .* down n3 process=(\d+) => n3 down`)
	reN3Live       = regexp.MustCompile(`> applied g=\d+ i=\d+ .* register n3 process=(\d+) .*=> n3 live`)
	reLearner      = regexp.MustCompile(`> applied g=\d+ i=\d+ .* add-learner "orders" .*=> learner of`)
	reAdmitted     = regexp.MustCompile(`> applied g=\d+ i=\d+ .* admit "orders" .*=> admitted (n\d+/\d+)/`)
	reN3Open       = regexp.MustCompile(`n3 < done open q=\d+ o=0 start=\d+ end=(\d+)`)
)

func readHold(trace string) holdRun {
	var hr holdRun
	seen := map[string]bool{} // entry indexes followed (first application only)
	downProcess := ""
	for _, line := range strings.Split(trace, "\n") {
		at := instant(line)
		switch {
		case strings.Contains(line, " * fault at="):
			hr.faults = append(hr.faults, at)
		case reHoldFence.MatchString(line):
			m := reHoldFence.FindStringSubmatch(line)
			if !seen[m[1]] {
				seen[m[1]] = true
				hr.fencedNs, hr.proposed = append(hr.fencedNs, at), append(hr.proposed, m[2])
			}
		case reHoldActivate.MatchString(line):
			m := reHoldActivate.FindStringSubmatch(line)
			if !seen[m[1]] {
				seen[m[1]] = true
				hr.activatedNs = append(hr.activatedNs, at)
			}
		case hr.n3DownNs == 0 && reN3Down.MatchString(line):
			hr.n3DownNs, downProcess = at, reN3Down.FindStringSubmatch(line)[1]
		case hr.n3DownNs != 0 && hr.n3BackNs == 0 && reN3Live.MatchString(line) && reN3Live.FindStringSubmatch(line)[1] == downProcess:
			hr.n3BackNs = at
		case hr.n3DownNs != 0 && hr.n3NewNs == 0 && reN3Live.MatchString(line) && reN3Live.FindStringSubmatch(line)[1] != downProcess:
			hr.n3NewNs = at
		case hr.learnerNs == 0 && reLearner.MatchString(line):
			hr.learnerNs = at
		case hr.admittedNs == 0 && reAdmitted.MatchString(line):
			hr.admittedNs, hr.admitted = at, reAdmitted.FindStringSubmatch(line)[1]
		case reN3Open.MatchString(line):
			hr.n3OpenEnds = append(hr.n3OpenEnds, reN3Open.FindStringSubmatch(line)[1])
		}
	}
	return hr
}

func TestHoldStories(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		// Held for the hold (3 s) from n3's loss, then fenced proposing
		// the replacement, and recovered.
		hr := readHold(replayTrace(t, "named/hold-expired-replaced.json"))
		if hr.n3DownNs == 0 || len(hr.fencedNs) == 0 {
			t.Fatalf("n3 down at %s, transitions %v", sec(hr.n3DownNs), hr.fencedNs)
		}
		held := hr.fencedNs[0] - hr.n3DownNs
		t.Logf("n3 down at %s; fenced %s later proposing [%s]; activated at %v", sec(hr.n3DownNs), sec(held), hr.proposed[0], hr.activatedNs)
		if held < 3e9 || held > 4e9 {
			t.Errorf("fenced %s after n3's loss, want after the hold of 3 s (within 1 s of it)", sec(held))
		}
		if hr.proposed[0] != "1 2 4" {
			t.Errorf("the transition proposed [%s], want the owner, the follower left and the replacement n4: [1 2 4]", hr.proposed[0])
		}
		if len(hr.activatedNs) == 0 || hr.activatedNs[0] < hr.fencedNs[0] {
			t.Errorf("no activation after the transition: %v", hr.activatedNs)
		}
	})
	t.Run("false suspicion", func(t *testing.T) {
		// Cut off past the liveness expiry, back with the same process:
		// never fenced.
		hr := readHold(replayTrace(t, "named/hold-false-suspicion.json"))
		t.Logf("n3 down at %s, live again (same process) at %s; transitions %v", sec(hr.n3DownNs), sec(hr.n3BackNs), hr.fencedNs)
		if hr.n3DownNs == 0 || hr.n3BackNs == 0 {
			t.Fatalf("n3 never left the live set and came back with its process (down %s, back %s)", sec(hr.n3DownNs), sec(hr.n3BackNs))
		}
		if len(hr.fencedNs) != 0 {
			t.Errorf("orders was fenced at %v: a held queue's assignment does not change on a false suspicion", hr.fencedNs)
		}
	})
	t.Run("back with a new process", func(t *testing.T) {
		// Killed for 3 s under the default hold: back with a new process
		// on the same storage, it is named the learner, catches up and is
		// admitted; never fenced.
		hr := readHold(replayTrace(t, "named/hold-follower-rejoins-as-learner.json"))
		t.Logf("n3 down at %s, back with a new process at %s; learner at %s, admitted at %s; transitions %v",
			sec(hr.n3DownNs), sec(hr.n3NewNs), sec(hr.learnerNs), sec(hr.admittedNs), hr.fencedNs)
		if hr.n3DownNs == 0 || hr.n3NewNs == 0 {
			t.Fatalf("n3 never left the live set and came back with a new process (down %s, new %s)", sec(hr.n3DownNs), sec(hr.n3NewNs))
		}
		if len(hr.fencedNs) != 0 {
			t.Errorf("orders was fenced at %v: a follower back on its storage rejoins as a learner, without a recovery", hr.fencedNs)
		}
		if hr.learnerNs < hr.n3NewNs || hr.admittedNs < hr.learnerNs || hr.admittedNs-hr.n3NewNs > 2e9 {
			t.Errorf("learner named at %s and admitted at %s, want after n3's return at %s and within 2 s of it",
				sec(hr.learnerNs), sec(hr.admittedNs), sec(hr.n3NewNs))
		}
	})
	t.Run("learner restarted", func(t *testing.T) {
		// The learner is killed in the middle of its catch-up: its next
		// process is named the learner in turn, resumes from the copy
		// its predecessor left, and is admitted; never fenced.
		hr := readHold(replayTrace(t, "named/hold-learner-restarts.json"))
		t.Logf("n3's opens found ends %v; admitted %s at %s; transitions %v", hr.n3OpenEnds, hr.admitted, sec(hr.admittedNs), hr.fencedNs)
		if len(hr.fencedNs) != 0 {
			t.Errorf("orders was fenced at %v", hr.fencedNs)
		}
		if len(hr.n3OpenEnds) != 3 || hr.n3OpenEnds[2] == hr.n3OpenEnds[1] {
			t.Errorf("n3's three processes found ends %v, want the third past the second (the first learner's copy kept)", hr.n3OpenEnds)
		}
		if hr.admitted != "n3/3" {
			t.Errorf("admitted %q, want n3's third process", hr.admitted)
		}
	})
	t.Run("both followers lost", func(t *testing.T) {
		// No hold (the owner alone is short of W): fenced at once, and
		// activated only once n3's new process sealed (22 s).
		hr := readHold(replayTrace(t, "named/hold-both-followers-lost.json"))
		t.Logf("killed at %s; fenced at %v; activated at %v", sec(hr.faults[0]), hr.fencedNs, hr.activatedNs)
		if len(hr.fencedNs) == 0 || hr.fencedNs[0]-hr.faults[0] > 1e9 {
			t.Fatalf("fenced at %v, want within 1 s of the kills at %s (no hold without W - 1 followers)", hr.fencedNs, sec(hr.faults[0]))
		}
		if len(hr.activatedNs) == 0 || hr.activatedNs[0] < 22e9 {
			t.Errorf("activated at %v, want only after n3 is back at 22 s (R = 2 seals of 3)", hr.activatedNs)
		}
	})
	t.Run("follower lost while its broker drains", func(t *testing.T) {
		// Drained at 8 s, killed at 10 s: no hold for a copy that is
		// leaving. Fenced at once, proposing a replacement on an
		// undrained broker instead of n3, and recovered.
		hr := readHold(replayTrace(t, "named/hold-drained-follower-lost.json"))
		if len(hr.faults) != 2 {
			t.Fatalf("faults at %v, want the drain and the kill", hr.faults)
		}
		t.Logf("n3 drained at %s, killed at %s; fenced at %v proposing %v; activated at %v", sec(hr.faults[0]), sec(hr.faults[1]), hr.fencedNs, hr.proposed, hr.activatedNs)
		if len(hr.fencedNs) == 0 || hr.fencedNs[0] < hr.faults[1] || hr.fencedNs[0]-hr.faults[1] > 1e9 {
			t.Fatalf("fenced at %v, want within 1 s of n3's kill at %s (no hold while its broker drains)", hr.fencedNs, sec(hr.faults[1]))
		}
		if hr.proposed[0] != "1 2 4" {
			t.Errorf("the transition proposed [%s], want the owner, the follower left and a replacement on an undrained broker: [1 2 4]", hr.proposed[0])
		}
		if len(hr.activatedNs) == 0 || hr.activatedNs[0] < hr.fencedNs[0] {
			t.Errorf("no activation after the transition: %v", hr.activatedNs)
		}
	})
	t.Run("owner lost while held", func(t *testing.T) {
		// Held from 10 s, fenced when the owner is lost at 14 s, and
		// activated only once n3's new process sealed (22 s).
		hr := readHold(replayTrace(t, "named/hold-then-owner-lost.json"))
		t.Logf("n3 killed at %s, n1 at %s; fenced at %v; activated at %v", sec(hr.faults[0]), sec(hr.faults[1]), hr.fencedNs, hr.activatedNs)
		if len(hr.fencedNs) == 0 || hr.fencedNs[0] < hr.faults[1] || hr.fencedNs[0]-hr.faults[1] > 1e9 {
			t.Fatalf("fenced at %v, want held until the owner's kill at %s, then fenced within 1 s", hr.fencedNs, sec(hr.faults[1]))
		}
		if len(hr.activatedNs) == 0 || hr.activatedNs[0] < 22e9 {
			t.Errorf("activated at %v, want only after n3 is back at 22 s: one seal of R = 2 is no proof", hr.activatedNs)
		}
	})
}
