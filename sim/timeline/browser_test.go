package timeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicemq/sluice/sim/timeline"
	"github.com/sluicemq/sluice/sim/world"
)

// browserSeed is a swarm seed whose run has many fault kinds: power
// cycles, pauses, slow and failed syncs, a lost write, live corruption, a
// delay spike, process exits.
const browserSeed = 31

// buildPage runs seed and writes its timeline to dir, returning the path
// and the run's trace.
func buildPage(t *testing.T, dir string, seed uint64) (string, string, world.Result) {
	t.Helper()
	p := world.Draw(seed)
	m := timeline.Meta{Title: fmt.Sprintf("Sluice simulator: seed %d", seed), Seed: seed, Profile: p.String(), Brokers: p.Brokers,
		WorkloadNs: p.DurationMs * 1e6, Reproduce: fmt.Sprintf("go run ./cmd/sluice sim --seed %d", seed)}
	b := timeline.New(m)
	var trace bytes.Buffer
	r, err := world.Run(seed, p, world.Options{Trace: writerPair{b, &trace}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "timeline.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Render(f, timeline.Result{Verdict: "ok", Hash: r.TraceHash, EndNs: r.SimNs}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path, trace.String(), r
}

type writerPair struct {
	a, b interface{ Write([]byte) (int, error) }
}

func (w writerPair) Write(p []byte) (int, error) {
	w.a.Write(p)
	return w.b.Write(p)
}

// chromium finds Debian's chromium. Outside CI the test skips without it;
// with SLUICE_REQUIRE_CHROMIUM set (.ci/run sets it, after installing
// chromium) its absence is a failure.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SLUICE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is not installed, but SLUICE_REQUIRE_CHROMIUM is set (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); .ci/run installs it and requires this test")
	return ""
}

// The page opens from disk in a real browser, runs its script without an
// error, fetches nothing, and shows a lane per broker with the process
// lives, the seed's faults (every fault note of its trace), the queues'
// epochs, and a tooltip with the trace line of a hovered fault.
// SLUICE_TIMELINE_SCREENSHOT=FILE saves a screenshot (docs/timeline.png).
func TestTimelineInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	path, trace, r := buildPage(t, dir, browserSeed)

	var wantKinds []string
	faultNotes := 0
	for _, l := range strings.Split(trace, "\n") {
		if _, rest, ok := strings.Cut(l, " * fault at="); ok {
			faultNotes++
			kind := strings.Fields(rest)[1]
			if !slices.Contains(wantKinds, kind) {
				wantKinds = append(wantKinds, kind)
			}
		}
	}
	slices.Sort(wantKinds)
	if faultNotes < 5 || len(wantKinds) < 5 {
		t.Fatalf("seed %d is not faulty enough to test with: %d fault notes of %v", browserSeed, faultNotes, wantKinds)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1400, 700))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// Every console message and uncaught exception of the page.
	var mu sync.Mutex
	var problems []string
	cctx, stopConsole := context.WithCancel(ctx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range chromedp.Console(cctx) {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		ready, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.body.getAttribute("data-ready") === "1"`))
		if err == nil && ready {
			break
		}
		if i == 100 {
			mu.Lock()
			t.Fatalf("the page never finished drawing (%v); console: %v", err, problems)
		}
		time.Sleep(50 * time.Millisecond)
	}
	type pageState struct {
		Lanes      []string `json:"lanes"`
		Processes  int      `json:"processes"`
		Stops      int      `json:"stops"`
		Faults     int      `json:"faults"`
		FaultKinds []string `json:"faultKinds"`
		Epochs     int      `json:"epochs"`
		Bars       int      `json:"bars"`
		Resources  int      `json:"resources"`
		Title      string   `json:"title"`
	}
	st, err := chromedp.Run(tctx, chromedp.Evaluate[pageState](`(() => {
		const q = s => Array.from(document.querySelectorAll(s));
		return {
			lanes: q("g.lane").map(g => g.getAttribute("data-lane")),
			processes: q("rect.process").length,
			stops: q(".ev.stop").length,
			faults: q(".ev.fault").length,
			faultKinds: [...new Set(q(".ev.fault").map(e => e.getAttribute("data-kind")))].sort(),
			epochs: q("rect.epoch").length,
			bars: q("rect.bar").length,
			resources: performance.getEntriesByType("resource").length,
			title: document.getElementById("title").textContent,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= r.Profile.Brokers; n++ {
		if !slices.Contains(st.Lanes, fmt.Sprintf("n%d", n)) {
			t.Errorf("no lane for broker n%d: %v", n, st.Lanes)
		}
	}
	// The queues' ids come from the catalogue as the run declares them:
	// a lane for each of the profile's queues at least.
	queueLanes := 0
	for _, l := range st.Lanes {
		if strings.HasSuffix(l, " owner/epoch") {
			queueLanes++
		}
	}
	if queueLanes < len(r.Profile.Queues) {
		t.Errorf("%d queue lanes for %d queues: %v", queueLanes, len(r.Profile.Queues), st.Lanes)
	}
	if st.Faults != faultNotes || !slices.Equal(st.FaultKinds, wantKinds) {
		t.Errorf("the page shows %d faults of kinds %v; the trace has %d of %v", st.Faults, st.FaultKinds, faultNotes, wantKinds)
	}
	if st.Processes < r.Profile.Brokers || st.Stops == 0 || st.Epochs < len(r.Profile.Queues) || st.Bars == 0 {
		t.Errorf("the page lacks process lives, stops, epochs or confirms: %+v", st)
	}
	if st.Resources != 0 {
		t.Errorf("the page fetched %d resources; it must be self-contained", st.Resources)
	}
	if st.Title != fmt.Sprintf("Sluice simulator: seed %d", browserSeed) {
		t.Errorf("title %q", st.Title)
	}

	// Hover the first fault: the tooltip shows its trace line.
	type box struct{ X, Y float64 }
	b, err := chromedp.Run(tctx, chromedp.Evaluate[box](`(() => {
		const r = document.querySelector(".ev.fault").getBoundingClientRect();
		return {X: r.x + r.width / 2, Y: r.y + r.height / 2};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tctx, chromedp.MouseEvent(chromedp.MouseMoved, b.X, b.Y)); err != nil {
		t.Fatal(err)
	}
	tip, err := chromedp.Run(tctx, chromedp.Evaluate[string](`(() => { const t = document.getElementById("tip"); return t.style.display === "block" ? t.textContent : ""; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tip, "trace line ") || !strings.Contains(tip, " * fault at=") {
		t.Errorf("hovering a fault shows %q, want its trace line", tip)
	}
	if line, _, ok := strings.Cut(strings.SplitN(tip, "trace line ", 2)[1], ":"); ok {
		var n int
		fmt.Sscan(line, &n)
		lines := strings.Split(trace, "\n")
		if n < 1 || n > len(lines) || !strings.Contains(tip, lines[n-1]) {
			t.Errorf("the tooltip names trace line %d, which is not the line it shows", n)
		}
	}

	if out := os.Getenv("SLUICE_TIMELINE_SCREENSHOT"); out != "" {
		// With the tooltip of the hovered fault showing.
		png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stopConsole()
	<-consoleDone
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page logged errors: %v", problems)
	}
}
