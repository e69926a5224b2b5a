package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/sluicemq/sluice/sim/world"
)

const diffSynopsis = `sluice sim diff A B [--profile P] [--duration-ms MS] [--bugs X] [--bugs-b Y]`

const diffAbout = `Compares two runs' traces and prints the first line where they differ, with the
lines before it. A and B are each a seed (run here) or a trace file saved with
'sluice sim --seed S --trace > FILE' (say, the same seed on two builds). Lines that
are not trace lines (the summary) are skipped; line numbers count trace lines from
1, as an unfiltered --trace prints them. Exit 0 when the traces agree, 1 when they
differ.

examples:
  sluice sim diff 1 2
  sluice sim diff 1 1 --bugs-b sync-skip       the same seed without and with a planted bug
  git stash; go run ./cmd/sluice sim --seed 7 --trace > before.trace; git stash pop
  go run ./cmd/sluice sim --seed 7 --trace > after.trace
  sluice sim diff before.trace after.trace
`

// diffContextLines is how many agreeing lines before the divergence are
// shown.
const diffContextLines = 3

// traceLineBytesMax bounds one trace line read from a file.
const traceLineBytesMax = 1 << 20

func runDiff(args []string, e env) int {
	c := newCommand("sluice sim diff", diffSynopsis, diffAbout)
	var profile, planted string
	var durationMs int64
	addRunFlags(c, &profile, &durationMs, &planted)
	plantedB := c.fs.String("bugs-b", "", "plant these bugs in B's run instead of --bugs (seed operands)")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 2 {
		return c.fail(e, fmt.Sprintf("want two runs to compare (each a seed or a saved trace file), got %d arguments", len(pos)))
	}
	prof, _, msg := checkRunFlags(c, profile, durationMs, planted)
	if msg != "" {
		return c.fail(e, msg)
	}
	profB := prof
	if c.set("bugs-b") {
		if profB, _, msg = checkRunFlags(c, profile, durationMs, *plantedB); msg != "" {
			return c.fail(e, "--bugs-b: "+msg)
		}
	}
	var names [2]string
	var files [2]*os.File
	for i, arg := range pos {
		p := prof
		if i == 1 {
			p = profB
		}
		name, fd, err := openTrace(arg, p)
		if err != nil {
			return c.fail(e, err.Error())
		}
		defer fd.Close()
		names[i], files[i] = name, fd
	}
	return compareTraces(e, names, files[0], files[1])
}

// openTrace returns a readable trace for an operand: a seed is run into a
// temporary file (removed once opened: a trace can be large, so it is not
// held in memory), anything else is a trace file.
func openTrace(arg string, prof func(uint64) world.Profile) (string, *os.File, error) {
	seed, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		fd, err := os.Open(arg)
		if err != nil {
			return "", nil, fmt.Errorf("%q is neither a seed nor a trace file: %v", arg, err)
		}
		return arg, fd, nil
	}
	p := prof(seed)
	if err := p.Validate(); err != nil {
		return "", nil, err
	}
	fd, err := os.CreateTemp("", "sluice-diff-*.trace")
	if err != nil {
		return "", nil, err
	}
	os.Remove(fd.Name())
	w := bufio.NewWriterSize(fd, 1<<16)
	r, err := world.Run(seed, p, world.Options{Trace: w})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		_, err = fd.Seek(0, io.SeekStart)
	}
	if err != nil {
		fd.Close()
		return "", nil, err
	}
	verdict := "ok"
	if r.Failed > 0 {
		verdict = fmt.Sprintf("FAIL(%d)", r.Failed)
	}
	return fmt.Sprintf("seed %d (%s, %s)", seed, verdict, p.Bugs), fd, nil
}

// traceReader yields a file's trace lines (those that start with "t="),
// numbered from 1.
type traceReader struct {
	s    *bufio.Scanner
	line uint64
	name string
}

func newTraceReader(name string, r io.Reader) *traceReader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), traceLineBytesMax)
	return &traceReader{s: s, name: name}
}

func (t *traceReader) next() ([]byte, bool, error) {
	for t.s.Scan() {
		if b := t.s.Bytes(); bytes.HasPrefix(b, []byte("t=")) {
			t.line++
			return b, true, nil
		}
	}
	if err := t.s.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, false, fmt.Errorf("%s: a line over %d bytes after trace line %d: not a trace", t.name, traceLineBytesMax, t.line)
		}
		return nil, false, fmt.Errorf("%s: %v", t.name, err)
	}
	return nil, false, nil
}

func compareTraces(e env, names [2]string, a, b io.Reader) int {
	ra, rb := newTraceReader(names[0], a), newTraceReader(names[1], b)
	var context [diffContextLines]string
	for {
		la, okA, err := ra.next()
		if err != nil {
			fmt.Fprintln(e.stderr, "sluice sim diff:", err)
			return 2
		}
		lb, okB, err := rb.next()
		if err != nil {
			fmt.Fprintln(e.stderr, "sluice sim diff:", err)
			return 2
		}
		if !okA && !okB {
			if ra.line == 0 {
				fmt.Fprintf(e.stderr, "sluice sim diff: %s and %s hold no trace lines (save one with --trace)\n", names[0], names[1])
				return 2
			}
			fmt.Fprintf(e.stdout, "the traces agree: %d lines\n  A: %s\n  B: %s\n", ra.line, names[0], names[1])
			return 0
		}
		if okA && okB && bytes.Equal(la, lb) {
			copy(context[:], context[1:])
			context[diffContextLines-1] = string(la)
			continue
		}
		n := max(ra.line, rb.line)
		fmt.Fprintf(e.stdout, "the traces differ from trace line %d on\n  A: %s\n  B: %s\n", n, names[0], names[1])
		for i, l := range context {
			if l != "" {
				fmt.Fprintf(e.stdout, "  %d    %s\n", n-uint64(diffContextLines-i), l)
			}
		}
		show := func(tag string, l []byte, ok bool) {
			if !ok {
				fmt.Fprintf(e.stdout, "%s %d  (the trace ends here)\n", tag, n)
				return
			}
			fmt.Fprintf(e.stdout, "%s %d  %s\n", tag, n, l)
		}
		show("A", la, okA)
		show("B", lb, okB)
		return 1
	}
}
