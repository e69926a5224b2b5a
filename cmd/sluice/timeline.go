package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicemq/sluice/io/driver"
	"github.com/sluicemq/sluice/sim/timeline"
	"github.com/sluicemq/sluice/sim/world"
)

// timelineOut builds a run's timeline from its trace and writes it to an
// HTML file at the end.
type timelineOut struct {
	path string
	b    *timeline.Builder
}

// newTimelineOut checks that path can be written (before the run: a bad
// path is bad input, found before the work) and starts a builder.
func newTimelineOut(path string, seed uint64, p world.Profile, reproduce string) (*timelineOut, error) {
	if filepath.Ext(path) != ".html" {
		return nil, fmt.Errorf("--timeline %q: want a file name ending in .html", path)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--timeline %q: no directory %s to write it in", path, filepath.Dir(path))
	}
	m := timeline.Meta{Title: fmt.Sprintf("Sluice simulator: seed %d", seed), Seed: seed, Profile: p.String(),
		Brokers: p.Brokers, WorkloadNs: p.DurationMs * 1e6, Reproduce: reproduce}
	return &timelineOut{path: path, b: timeline.New(m)}, nil
}

// writer returns a trace writer that feeds the timeline and, if also is not
// nil, writes there too.
func (t *timelineOut) writer(also io.Writer) io.Writer {
	if also == nil {
		return t.b
	}
	return io.MultiWriter(t.b, also)
}

// finish writes the page for the run's result.
func (t *timelineOut) finish(r world.Result) error {
	res := timeline.Result{Verdict: "ok", Hash: r.TraceHash, EndNs: r.SimNs}
	if r.Failed > 0 {
		res.Verdict = fmt.Sprintf("FAIL(%d)", r.Failed)
	}
	for _, f := range r.Failures {
		res.Failures = append(res.Failures, timeline.Failure{Checker: f.Checker, AtNs: f.AtNs, Line: f.Line, Detail: f.Detail})
	}
	fd, err := os.Create(t.path)
	if err != nil {
		return err
	}
	err = t.b.Render(fd, res)
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	return err
}

// filteredWriter writes the trace lines f selects: --trace's filters when
// the timeline takes every line.
func filteredWriter(w io.Writer, f driver.TraceFilter) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		// The trace writes one whole line per call.
		if f.Match(p) {
			return w.Write(p)
		}
		return len(p), nil
	})
}
