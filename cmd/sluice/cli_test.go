package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runCmd runs the command line in-process: the arguments after "sluice".
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, env{stdout: &out, stderr: &errb})
	return code, out.String(), errb.String()
}

// Every bad input is refused with exit 2 and a message naming the problem,
// before any world runs; none is reported as a failure of the system under
// test, and none passes green.
func TestBadInputExits2WithAMessage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"Brokerz\": 3\n}\n"), 0o644)
	cut := filepath.Join(dir, "cut.json")
	os.WriteFile(cut, []byte("{\n  \"name\": \"x\",\n  \"seed\": "), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "reply", "x.json"}, `unknown subcommand "reply" (did you mean "replay"?)`},
		{[]string{"sim", "shirnk"}, `unknown subcommand "shirnk" (did you mean "shrink"?)`},
		{[]string{"sim", "--seed", "3", "stray"}, `unexpected argument "stray"`},
		{[]string{"simm"}, `unknown command "simm" (did you mean "sim"?)`},
		{[]string{"sim", "--sede", "3"}, `unknown flag --sede (did you mean "seed"?)`},
		{[]string{"sim", "--seed", "1", "--seeds", "3"}, "--seed runs one world and --seeds sweeps: give one of them"},
		{[]string{"sim", "--seeds", "3", "--trace"}, "--trace is for one world (--seed S), not a sweep"},
		{[]string{"sim", "--seeds", "3", "--timeline", "x.html"}, "--timeline is for one world"},
		{[]string{"sim", "--shard", "1/3"}, "--shard applies to a sweep: it needs --seeds N"},
		{[]string{"sim", "--parallel", "2"}, "--parallel applies to a sweep"},
		{[]string{"sim", "--fail-fast"}, "--fail-fast applies to a sweep"},
		{[]string{"sim", "--trace-from", "1s"}, "--trace-from selects trace lines: it needs --trace"},
		{[]string{"sim", "--trace-until", "1s"}, "--trace-until selects trace lines: it needs --trace"},
		{[]string{"sim", "--trace", "--trace-from", "2s", "--trace-until", "1s"}, "--trace-until 1s is before --trace-from 2s"},
		{[]string{"sim", "--trace", "--trace-from", "soon"}, `"soon": want a simulated instant`},
		{[]string{"sim", "--trace", "--trace-node", "x7"}, `--trace-node "x7": want brokers such as n1,n3`},
		{[]string{"sim", "--trace", "--trace-kind", "fualt"}, `--trace-kind "fualt": unknown kind (did you mean "fault"?)`},
		{[]string{"sim", "--seeds", "0"}, "--seeds 0: want at least 1 seed"},
		{[]string{"sim", "--seeds", "3", "--shard", "1/3x"}, `--shard "1/3x": want k/n with 0 <= k < n`},
		{[]string{"sim", "--seeds", "3", "--shard", "3/3"}, `--shard "3/3": want k/n`},
		{[]string{"sim", "--seeds", "3", "--parallel", "0"}, "--parallel 0: want at least 1"},
		{[]string{"sim", "--seeds", "3", "--max-failures", "0"}, "--max-failures 0: want at least 1"},
		{[]string{"sim", "--seeds", "3", "--fail-fast", "--max-failures", "2"}, "--fail-fast is --max-failures 1: give one of them"},
		{[]string{"sim", "--seed-timeout", "-1s"}, "--seed-timeout -1s: want a positive wall-clock time"},
		{[]string{"sim", "--json", "--trace"}, "--json and --trace both print to stdout"},
		{[]string{"sim", "--duration-ms", "0"}, "--duration-ms 0: want 1..600000"},
		{[]string{"sim", "--duration-ms", "-5"}, "--duration-ms -5: want 1..600000"},
		{[]string{"sim", "--duration-ms", "9223372036854775"}, "--duration-ms 9223372036854775: want 1..600000"},
		{[]string{"sim", "--duration-ms", "99999999999999999999"}, `invalid value "99999999999999999999" for flag -duration-ms`},
		{[]string{"sim", "--profile", "standrad"}, `--profile "standrad": unknown profile (did you mean "standard"?)`},
		{[]string{"sim", "--bugs", "sync-skp"}, `unknown planted bug "sync-skp"`},
		{[]string{"sim", "--bugs", "list", "--seed", "3"}, "--bugs list prints the planted bugs' names: give it alone"},
		{[]string{"sim", "--seeds", "3", "--coverage-min", "nonsense=3"}, `unknown row "nonsense"`},
		{[]string{"sim", "--timeline", "out.txt"}, `--timeline "out.txt": want a file name ending in .html`},
		{[]string{"sim", "--timeline", filepath.Join(dir, "no", "such", "x.html")}, "no directory"},
		{[]string{"sim", "replay"}, "want one scenario FILE, got 0 arguments"},
		{[]string{"sim", "replay", "a.json", "b.json"}, "want one scenario FILE, got 2 arguments"},
		{[]string{"sim", "replay", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"sim", "replay", bad}, bad + `:2:3: unknown key "Brokerz" in scenario (its keys: name,`},
		{[]string{"sim", "replay", cut}, cut + ":3:11: unexpected end of file: the JSON is cut short (truncated?)"},
		{[]string{"sim", "shrink"}, "--seed S is required"},
		{[]string{"sim", "shrink", "--seed", "1", "--name", "../x"}, `--name "../x": want lower-case letters`},
		{[]string{"sim", "shrink", "--seed", "1", "--runs-max", "0"}, "--runs-max 0: want 1..1000000"},
		{[]string{"sim", "shrink", "--seed", "1", "--fixed"}, "--fixed needs --bugs"},
		{[]string{"sim", "shrink", "--seed", "1", "--mark", "nope"}, `--mark: unknown coverage mark "nope"`},
		{[]string{"sim", "shrink", "--seed", "1", "stray"}, `unexpected argument "stray"`},
		{[]string{"sim", "diff", "1"}, "want two runs to compare"},
		{[]string{"sim", "diff", "1", filepath.Join(dir, "none.trace")}, "is neither a seed nor a trace file"},
		{[]string{"sim", "mutants", "--parallel", "0"}, "--parallel 0: want 1..1024"},
		{[]string{"sim", "mutants", "stray"}, `unexpected argument "stray"`},
		{[]string{"help", "simm"}, `unknown command "simm"`},
	} {
		code, out, errs := runCmd(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("sluice %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
		if strings.Contains(out, "FAIL") || strings.Contains(out, "seed=") {
			t.Errorf("sluice %s ran a world: %s", strings.Join(c.args, " "), out)
		}
	}
}

// Help exits 0 and shows the subcommands and examples, however it is asked.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--help"}, {"sim", "-h"}, {"help", "sim"}, {"sim", "help"},
	} {
		code, out, _ := runCmd(t, args...)
		for _, want := range []string{"shrink", "replay", "diff", "mutants", "examples:", "--seeds", "--fail-fast", "--timeline"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("sluice %s: exit %d, help lacks %q:\n%s", strings.Join(args, " "), code, want, out)
			}
		}
	}
	for _, args := range [][]string{
		{"sim", "shrink", "--help"}, {"help", "sim", "shrink"}, {"sim", "help", "shrink"},
	} {
		code, out, _ := runCmd(t, args...)
		if code != 0 || !strings.Contains(out, "usage: sluice sim shrink") || !strings.Contains(out, "--force") {
			t.Fatalf("sluice %s: exit %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
	for _, sub := range []string{"replay", "diff", "mutants"} {
		code, out, _ := runCmd(t, "sim", sub, "--help")
		if code != 0 || !strings.Contains(out, "usage: sluice sim "+sub) || !strings.Contains(out, "examples:") {
			t.Fatalf("sluice sim %s --help: exit %d:\n%s", sub, code, out)
		}
	}
	if code, out, _ := runCmd(t, "--help"); code != 0 || !strings.Contains(out, "sim") {
		t.Fatalf("sluice --help: exit %d:\n%s", code, out)
	}
}

// Flags may follow the scenario file: `sim replay FILE --trace`.
func TestReplayTakesFlagsAfterTheFile(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := runCmd(t, "sim", "shrink", "--seed", "1", "--bugs", "sync-skip", "--name", "x", "--dir", dir)
	if code != 0 {
		t.Fatalf("shrink: exit %d: %s", code, errs)
	}
	file := filepath.Join(dir, "x.json")
	for _, args := range [][]string{
		{"sim", "replay", file, "--trace"},
		{"sim", "replay", "--trace", file},
	} {
		code, out, errs := runCmd(t, args...)
		if code != 0 || !strings.Contains(out, "t=0.000000000s * start n1") || !strings.Contains(out, "scenario x: as expected (fail:sync-durable)") {
			t.Fatalf("%v: exit %d, %s\n%s", args, code, errs, tail(out))
		}
	}
}

// shrink never replaces an existing scenario without --force, and says so
// before the work; it says when --runs-max stopped it.
func TestShrinkKeepsExistingScenarios(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.json")
	os.WriteFile(file, []byte("a committed regression with its note\n"), 0o644)
	code, out, errs := runCmd(t, "sim", "shrink", "--seed", "1", "--bugs", "sync-skip", "--name", "x", "--dir", dir)
	if code != 2 || !strings.Contains(errs, file+" exists: choose another --name, or give --force") || strings.Contains(errs, "shrink: schedule") {
		t.Fatalf("exit %d, stderr %q, stdout %q: want a refusal before the work", code, errs, out)
	}
	if b, _ := os.ReadFile(file); string(b) != "a committed regression with its note\n" {
		t.Fatal("the existing scenario was changed")
	}
	code, _, errs = runCmd(t, "sim", "shrink", "--seed", "1", "--bugs", "sync-skip", "--name", "x", "--dir", dir, "--force", "--runs-max", "3")
	if code != 0 || !strings.Contains(errs, "stopped by --runs-max 3") {
		t.Fatalf("exit %d, stderr %q: want a scenario and a word about --runs-max", code, errs)
	}
	if b, _ := os.ReadFile(file); !bytes.Contains(b, []byte(`"expect": "fail:sync-durable"`)) {
		t.Fatalf("--force did not write the scenario:\n%s", b)
	}
}

var reproduceRe = regexp.MustCompile(`reproduce: (go run \./cmd/sluice sim [^\n"]*)`)

// Every failing line, text and JSON, carries the exact command that
// reproduces it: run as printed, it gives the same trace hash.
func TestReproduceCommandsReproduce(t *testing.T) {
	code, out, errs := runCmd(t, "sim", "--seeds", "2", "--first", "4", "--parallel", "2", "--profile", "standard-faults", "--duration-ms", "700", "--bugs", "sync-skip", "--json")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got:\n%s", out)
	}
	for _, l := range lines {
		var j jsonResult
		if err := json.Unmarshal([]byte(l), &j); err != nil {
			t.Fatal(err)
		}
		if j.OK || j.Reproduce == "" || j.WallNs <= 0 || j.Publishes == 0 || j.Deliveries == 0 || !strings.Contains(l, `"unknown":`) || !strings.Contains(l, `"failed":`) {
			t.Fatalf("a failing JSON line lacks its counts, wall time or reproduce command: %s", l)
		}
		code, rout, _ := runCmd(t, strings.Fields(strings.TrimPrefix(j.Reproduce, "go run ./cmd/sluice "))...)
		if code != 1 || !strings.Contains(rout, "hash="+j.Hash) {
			t.Fatalf("%s: exit %d, not hash %s:\n%s", j.Reproduce, code, j.Hash, tail(rout))
		}
	}
	// Text: each FAIL line's reproduce command, and the single seed's.
	code, out, _ = runCmd(t, "sim", "--seeds", "1", "--first", "4", "--profile", "standard-faults", "--duration-ms", "700", "--bugs", "sync-skip")
	m := reproduceRe.FindStringSubmatch(out)
	if code != 1 || m == nil || m[1] != "go run ./cmd/sluice sim --seed 4 --profile standard-faults --duration-ms 700 --bugs sync-skip" {
		t.Fatalf("exit %d, reproduce %q:\n%s", code, m, out)
	}
}

// --fail-fast and --max-failures stop the sweep at the Nth failing seed in
// seed order, and the summary says so.
func TestFailFastAndMaxFailures(t *testing.T) {
	code, out, _ := runCmd(t, "sim", "--seeds", "50", "--parallel", "2", "--duration-ms", "300", "--bugs", "sync-skip", "--fail-fast")
	if code != 1 || strings.Count(out, "FAIL seed=") != 1 || !strings.Contains(out, "FAIL seed=1 ") || !strings.Contains(out, "stopped after seed 1 at 1 failing") {
		t.Fatalf("--fail-fast: exit %d:\n%s", code, out)
	}
	code, out, _ = runCmd(t, "sim", "--seeds", "50", "--parallel", "2", "--duration-ms", "300", "--bugs", "sync-skip", "--max-failures", "3")
	if code != 1 || strings.Count(out, "FAIL seed=") != 3 || !strings.Contains(out, "at 3 failing") || !strings.Contains(out, "failing seeds: 1 2 3\n") {
		t.Fatalf("--max-failures 3: exit %d:\n%s", code, out)
	}
}

// A seed over --seed-timeout is reported as timed out (exit 3), never as a
// failure of the system under test, even when it would fail.
func TestSeedTimeoutIsNotAFailure(t *testing.T) {
	code, out, _ := runCmd(t, "sim", "--seeds", "2", "--parallel", "2", "--duration-ms", "2000", "--bugs", "sync-skip", "--seed-timeout", "1ns")
	if code != 3 || strings.Contains(out, "FAIL") || !strings.Contains(out, "TIMED OUT seed=1") || !strings.Contains(out, "timed out  2 seeds") {
		t.Fatalf("sweep: exit %d:\n%s", code, out)
	}
	code, out, _ = runCmd(t, "sim", "--seed", "1", "--duration-ms", "2000", "--bugs", "sync-skip", "--seed-timeout", "1ns")
	if code != 3 || strings.Contains(out, "FAIL") || !strings.Contains(out, "seed=1 TIMED OUT") || !strings.Contains(out, "reproduce: go run ./cmd/sluice sim --seed 1") {
		t.Fatalf("one seed: exit %d:\n%s", code, out)
	}
	code, out, _ = runCmd(t, "sim", "--seeds", "1", "--seed-timeout", "1ns", "--json")
	if code != 3 || !strings.Contains(out, `"timed_out":true`) || !strings.Contains(out, `"reproduce":"go run ./cmd/sluice sim --seed 1"`) {
		t.Fatalf("json: exit %d:\n%s", code, out)
	}
}

// Ctrl-C stops a sweep and prints a partial summary (exit 130).
func TestInterruptPrintsAPartialSummary(t *testing.T) {
	stop := make(chan struct{})
	go func() { time.Sleep(300 * time.Millisecond); close(stop) }()
	var out, errb bytes.Buffer
	code := run([]string{"sim", "--seeds", "100000", "--parallel", "1", "--duration-ms", "300"}, env{stdout: &out, stderr: &errb, interrupt: stop})
	if code != 130 || !strings.Contains(out.String(), "INTERRUPTED: a partial summary") || !strings.Contains(out.String(), "coverage") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
}

// fakeTerminal is one screen that stdout and stderr share.
type fakeTerminal struct{ bytes.Buffer }

func (*fakeTerminal) IsTerminal() bool { return true }

// screenLines renders what a terminal shows: a carriage return goes back
// to the line's start, ESC[K clears the rest of the line.
func screenLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		var cur []byte
		pos := 0
		for i := 0; i < len(l); i++ {
			switch {
			case l[i] == '\r':
				pos = 0
			case strings.HasPrefix(l[i:], "\033[K"):
				cur = cur[:pos]
				i += 2
			default:
				if pos < len(cur) {
					cur[pos] = l[i]
				} else {
					cur = append(cur, l[i])
				}
				pos++
			}
		}
		lines = append(lines, string(cur))
	}
	return lines
}

// On a terminal the progress bar has an ETA, and FAIL lines never print
// over it.
func TestProgressBarAndFailLines(t *testing.T) {
	var term fakeTerminal
	code := run([]string{"sim", "--seeds", "6", "--parallel", "2", "--duration-ms", "300", "--bugs", "sync-skip"}, env{stdout: &term, stderr: &term})
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(term.String(), "ETA ") {
		t.Fatalf("the bar has no ETA:\n%q", term.String())
	}
	fails := 0
	for _, l := range screenLines(term.String()) {
		if strings.Contains(l, "FAIL seed=") {
			fails++
			if !strings.HasPrefix(l, "FAIL seed=") {
				t.Fatalf("a FAIL line printed over the bar: %q", l)
			}
		}
	}
	if fails != 6 {
		t.Fatalf("%d FAIL lines on the screen, want 6:\n%s", fails, term.String())
	}
}

// Trace lines carry their instant; --trace-from takes an instant as
// printed; --trace-until, --trace-node and --trace-kind filter.
func TestTraceFilters(t *testing.T) {
	code, out, errs := runCmd(t, "sim", "--seed", "1", "--bugs", "sync-skip", "--trace", "--trace-from", "t=1.628840070s", "--trace-until", "2.3s", "--trace-kind", "fault,stop,start")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var n int
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "t=") {
			continue
		}
		n++
		if l < "t=1.628840070s" || l > "t=2.300000000s~" || !(strings.Contains(l, " * fault ") || strings.Contains(l, " * stop ") || strings.Contains(l, " * start ") || strings.Contains(l, " < start")) {
			t.Fatalf("a line outside the filters: %q", l)
		}
	}
	if n == 0 || !strings.Contains(out, "t=1.628840070s * fault at=1628840070 leader-isolate") {
		t.Fatalf("the filters let nothing through (or lost the leader's isolation):\n%s", tail(out))
	}
	_, out, _ = runCmd(t, "sim", "--seed", "1", "--bugs", "sync-skip", "--trace", "--trace-node", "n3")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "t=") && regexp.MustCompile(` n[1245] [<>] `).MatchString(l) {
			t.Fatalf("--trace-node n3 let through %q", l)
		}
	}
}

// diff names the first line where two runs' traces part, for seeds and for
// saved traces.
func TestDiff(t *testing.T) {
	code, out, _ := runCmd(t, "sim", "diff", "3", "3", "--duration-ms", "500")
	if code != 0 || !strings.Contains(out, "the traces agree") {
		t.Fatalf("diff 3 3: exit %d:\n%s", code, out)
	}
	code, out, _ = runCmd(t, "sim", "diff", "1", "1", "--bugs-b", "sync-skip")
	if code != 1 || !regexp.MustCompile(`the traces differ from trace line \d+ on`).MatchString(out) ||
		!regexp.MustCompile(`\nA \d+  t=`).MatchString(out) || !regexp.MustCompile(`\nB \d+  t=`).MatchString(out) {
		t.Fatalf("diff 1 1 --bugs-b sync-skip: exit %d:\n%s", code, out)
	}
	// Saved traces (one seed on two builds): a file and a seed that agree.
	dir := t.TempDir()
	_, trace, _ := runCmd(t, "sim", "--seed", "2", "--duration-ms", "500", "--trace")
	file := filepath.Join(dir, "a.trace")
	os.WriteFile(file, []byte(trace), 0o644)
	if code, out, _ := runCmd(t, "sim", "diff", file, "2", "--duration-ms", "500"); code != 0 {
		t.Fatalf("a saved trace against its seed: exit %d:\n%s", code, out)
	}
	changed := strings.Replace(trace, " * mark queue-w2", " * mark something-else", 1)
	os.WriteFile(file, []byte(changed), 0o644)
	if code, out, _ := runCmd(t, "sim", "diff", file, "2", "--duration-ms", "500"); code != 1 || !strings.Contains(out, "the traces differ from trace line 1 on") {
		t.Fatalf("a changed first line: exit %d:\n%s", code, out)
	}
}

// --timeline writes one self-contained page for the seed.
func TestTimelineFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed2.html")
	code, _, errs := runCmd(t, "sim", "--seed", "2", "--bugs", "sync-skip", "--timeline", file)
	if code != 1 || !strings.Contains(errs, "timeline: wrote "+file) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(file)
	for _, want := range []string{"Sluice simulator: seed 2", `"kind":"power-cycle"`, `"class":"process"`, "sync-durable"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Fatalf("the page lacks %q", want)
		}
	}
	for _, never := range []string{"http://", "https://", "src=\"", "@import"} {
		if bytes.Contains(bytes.ReplaceAll(b, []byte("http://www.w3.org/2000/svg"), nil), []byte(never)) {
			t.Fatalf("the page refers outside itself: %q", never)
		}
	}
}

// A 'regression' budget replays the saved regressions that name the bug;
// with none that names it, the suite fails rather than counting the bug
// caught.
func TestMutantsRegressionBudget(t *testing.T) {
	dir := t.TempDir()
	budgets := filepath.Join(dir, "mutants.budget")
	if err := os.WriteFile(budgets, []byte("no-heartbeat regression\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "regressions"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd(t, "sim", "mutants", "--bugs", "no-heartbeat", "--budgets", budgets)
	if code != 1 || !strings.Contains(out, "FAIL no-heartbeat: budget 'regression' but no saved regression") {
		t.Fatalf("no regression: exit %d:\n%s", code, out)
	}
	saved, err := os.ReadFile("../../scenarios/regressions/follower-restart-while-idle.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "regressions", "r.json"), saved, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCmd(t, "sim", "mutants", "--bugs", "no-heartbeat", "--budgets", budgets)
	if code != 0 || !strings.Contains(out, "caught by its saved regression follower-restart-while-idle") {
		t.Fatalf("with the regression: exit %d:\n%s", code, out)
	}
}
