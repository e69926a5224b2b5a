package driver

import (
	"bytes"
	"encoding/hex"
	"io"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"lukechampine.com/blake3"
)

// Trace is the stable text of a run: one line per input, per effect and per
// world note, in the order they happened. Its hash is BLAKE3 over exactly
// those lines, so two runs agree on the hash exactly when they agree on
// every line. The text form of a line is made only by the functions under
// "Line text" below; the rest of Trace batches, hashes and filters lines
// without knowing their form.
type Trace struct {
	hasher *blake3.Hasher
	out    io.Writer // nil: hash only
	filter TraceFilter
	lines  uint64
	buf    []byte // lines not yet hashed
	start  int    // where the line being built starts in buf
	nowNs  int64  // the instant of the line being built

	// The prefix of the last input or effect line built ("t=... nX "),
	// reused while the instant and node stay the same: most lines come in
	// runs of one step.
	prefix       []byte
	prefixNowNs  int64
	prefixNode   core.NodeID
	prefixMarked bool
}

// TraceFilter selects the lines a trace writes; every line is hashed
// whatever the filter. The zero filter writes every line.
type TraceFilter struct {
	FromNs  int64 // lines before this instant are not written
	UntilNs int64 // lines after this instant are not written; 0: no bound
	// Nodes: only inputs and effects of these brokers, and world notes that
	// name one of them or no broker at all. Empty: every broker.
	Nodes []core.NodeID
	// Queues: only inputs and effects that name one of these queues (q=N),
	// and every world note. Empty: every queue.
	Queues []core.QueueID
	// Kinds: only lines whose text starts with one of these words (recv,
	// send, storage, done, client, reply, deliver, deadline, tick, start,
	// fault, mark, ...; see docs/simulator.md). Empty: every kind.
	Kinds []string
}

// traceBufBytes batches hashing and writing: the hasher is fastest on large
// writes, and a run makes millions of short lines. It also bounds the
// buffer: it is flushed into the hasher before a line could overflow it.
const traceBufBytes = 256 << 10

// NewTrace returns a trace that hashes every line and, when out is not nil,
// also writes the lines f selects to out.
func NewTrace(out io.Writer, f TraceFilter) *Trace {
	return &Trace{hasher: blake3.New(32, nil), out: out, filter: f, buf: make([]byte, 0, traceBufBytes)}
}

// begin starts a line of node at nowNs with the direction mark dir ('<' for
// an input, '>' for an effect) and returns the buffer to append its text to.
func (t *Trace) begin(nowNs int64, node core.NodeID, dir byte) []byte {
	if len(t.buf) > traceBufBytes-512 {
		t.flush()
	}
	t.start, t.nowNs = len(t.buf), nowNs
	if !t.prefixMarked || nowNs != t.prefixNowNs || node != t.prefixNode {
		t.prefix = appendNodePrefix(t.prefix[:0], nowNs, node)
		t.prefixNowNs, t.prefixNode, t.prefixMarked = nowNs, node, true
	}
	t.buf = append(t.buf, t.prefix...)
	return append(t.buf, dir, ' ')
}

// end finishes the line built in b (the buffer begin returned, extended).
func (t *Trace) end(b []byte) {
	t.buf = append(b, '\n')
	t.lines++
	if t.out != nil && t.filter.keep(t.nowNs, t.buf[t.start:]) {
		t.out.Write(t.buf[t.start:])
	}
}

// Note adds a line of the world's own (a fault, a client action) at nowNs.
func (t *Trace) Note(nowNs int64, text string) {
	if len(t.buf) > traceBufBytes-512-len(text) {
		t.flush()
	}
	if len(text) > traceBufBytes/2 {
		text = text[:traceBufBytes/2] // a note is one line, never a dump
	}
	t.start, t.nowNs = len(t.buf), nowNs
	t.end(appendNote(t.buf, nowNs, text))
}

func (t *Trace) flush() {
	t.hasher.Write(t.buf)
	t.buf = t.buf[:0]
}

// Lines returns how many lines the trace holds: the number of the latest
// line, counting from 1 as `--trace` prints them unfiltered.
func (t *Trace) Lines() uint64 { return t.lines }

// Hash returns the hex BLAKE3 hash of every line so far.
func (t *Trace) Hash() string {
	t.flush()
	return hex.EncodeToString(t.hasher.Sum(nil))
}

// --- Line text ---
//
// A line is "t=<seconds>s n<node> < <input>" for an input,
// "t=<seconds>s n<node> > <effect>" for an effect of that input's step (at
// the same instant), and "t=<seconds>s * <text>" for a world note. The
// instant is printed as seconds with all nine decimals, so that it reads
// back exactly (as a Go duration: --trace-from accepts it as printed) and
// every line, read alone, says when it happened.

// AppendInstant appends nowNs as the trace prints it: "t=2.288518965s".
func AppendInstant(dst []byte, nowNs int64) []byte {
	dst = append(dst, "t="...)
	if nowNs < 0 {
		dst = append(dst, '-')
		nowNs = -nowNs
	}
	dst = strconv.AppendInt(dst, nowNs/1e9, 10)
	frac := nowNs % 1e9
	dst = append(dst, '.')
	for d := int64(1e8); d > 0; d /= 10 {
		dst = append(dst, byte('0'+frac/d%10))
	}
	return append(dst, 's')
}

// appendNodePrefix appends "t=<seconds>s n<node> ".
func appendNodePrefix(dst []byte, nowNs int64, node core.NodeID) []byte {
	dst = AppendInstant(dst, nowNs)
	dst = append(dst, " n"...)
	dst = strconv.AppendUint(dst, uint64(node), 10)
	return append(dst, ' ')
}

// appendNote appends a world note's line, without its newline.
func appendNote(dst []byte, nowNs int64, text string) []byte {
	dst = AppendInstant(dst, nowNs)
	dst = append(dst, " * "...)
	return append(dst, text...)
}

// --- Filters, over the line text ---

// Match reports whether the filter selects line, a trace line as written
// (its instant is read from its text).
func (f *TraceFilter) Match(line []byte) bool {
	ns, ok := readInstant(line)
	return ok && f.keep(ns, line)
}

// readInstant reads the instant a line starts with ("t=2.288518965s ").
func readInstant(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("t="))
	sp := bytes.IndexByte(rest, ' ')
	if !ok || sp < 12 || rest[sp-1] != 's' || rest[sp-11] != '.' {
		return 0, false
	}
	sec, err1 := strconv.ParseInt(string(rest[:sp-11]), 10, 64)
	frac, err2 := strconv.ParseInt(string(rest[sp-10:sp-1]), 10, 64)
	if err1 != nil || err2 != nil || sec < 0 || sec > 1<<32 {
		return 0, false
	}
	return sec*1e9 + frac, true
}

// keep reports whether the filter writes line (with its newline), made at
// nowNs.
func (f *TraceFilter) keep(nowNs int64, line []byte) bool {
	if nowNs < f.FromNs || (f.UntilNs > 0 && nowNs > f.UntilNs) {
		return false
	}
	if len(f.Nodes) == 0 && len(f.Queues) == 0 && len(f.Kinds) == 0 {
		return true
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	// Skip the instant: "t=... ".
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return false
	}
	rest := line[sp+1:]
	note := bytes.HasPrefix(rest, []byte("* "))
	var node uint64
	if note {
		rest = rest[2:]
	} else {
		// "n<node> < text" or "n<node> > text"
		sp = bytes.IndexByte(rest, ' ')
		if sp < 2 || len(rest) < sp+3 {
			return false
		}
		node, _ = strconv.ParseUint(string(rest[1:sp]), 10, 64)
		rest = rest[sp+3:]
	}
	if len(f.Nodes) > 0 {
		ok := false
		if note {
			named := false
			for _, field := range bytes.Fields(rest) {
				for _, w := range bytes.Split(field, []byte("->")) {
					if n, isNode := nodeWord(w); isNode {
						named = true
						for _, want := range f.Nodes {
							ok = ok || n == uint64(want)
						}
					}
				}
			}
			ok = ok || !named
		} else {
			for _, want := range f.Nodes {
				ok = ok || node == uint64(want)
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Queues) > 0 && !note {
		ok := false
		for _, w := range bytes.Fields(rest) {
			if v, found := bytes.CutPrefix(w, []byte("q=")); found {
				for _, want := range f.Queues {
					ok = ok || string(v) == strconv.FormatUint(uint64(want), 10)
				}
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Kinds) > 0 {
		word := rest
		if sp := bytes.IndexByte(rest, ' '); sp >= 0 {
			word = rest[:sp]
		}
		ok := false
		for _, k := range f.Kinds {
			ok = ok || string(word) == k
		}
		if !ok {
			return false
		}
	}
	return true
}

// nodeWord reads a word naming a broker in a note ("n3", "n3:") and
// reports whether it is one.
func nodeWord(w []byte) (uint64, bool) {
	if len(w) < 2 || w[0] != 'n' || w[1] < '0' || w[1] > '9' {
		return 0, false
	}
	i := 1
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	n, err := strconv.ParseUint(string(w[1:i]), 10, 64)
	return n, err == nil
}
