package driver

import (
	"encoding/hex"
	"io"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"lukechampine.com/blake3"
)

// Trace is the stable text of a run: one line per input and per effect, in
// the order they happened. Its hash is BLAKE3 over that text, so two runs
// agree on the hash exactly when they agree on every line.
type Trace struct {
	hasher *blake3.Hasher
	out    io.Writer // nil: hash only
	fromNs int64     // lines before this instant are hashed but not written
	lines  uint64
	buf    []byte // lines not yet hashed
	start  int    // where the line being built starts in buf
	nowNs  int64  // the instant of the line being built

	// The prefix of the last line built ("t=... nX "), reused while the
	// instant and node stay the same: most lines come in runs of one step.
	prefix       []byte
	prefixNowNs  int64
	prefixNode   core.NodeID
	prefixMarked bool
}

// traceBufBytes batches hashing and writing: the hasher is fastest on large
// writes, and a run makes millions of short lines.
const traceBufBytes = 256 << 10

// NewTrace returns a trace that hashes every line and, when out is not nil,
// also writes the lines at or after fromNs to out.
func NewTrace(out io.Writer, fromNs int64) *Trace {
	return &Trace{hasher: blake3.New(32, nil), out: out, fromNs: fromNs, buf: make([]byte, 0, traceBufBytes)}
}

// begin starts a line of node at nowNs with the direction mark dir ('<' for
// an input, '>' for an effect) and returns the buffer to append its text to.
func (t *Trace) begin(nowNs int64, node core.NodeID, dir byte) []byte {
	if len(t.buf) > traceBufBytes-512 {
		t.flush()
	}
	t.start, t.nowNs = len(t.buf), nowNs
	if dir == '>' {
		// An effect line carries no instant: it happens at the instant of
		// the input line above it, whose step made it.
		t.buf = append(t.buf, "  n"...)
		t.buf = strconv.AppendUint(t.buf, uint64(node), 10)
		return append(t.buf, " > "...)
	}
	if !t.prefixMarked || nowNs != t.prefixNowNs || node != t.prefixNode {
		t.prefix = append(t.prefix[:0], "t="...)
		t.prefix = strconv.AppendInt(t.prefix, nowNs, 10)
		t.prefix = append(t.prefix, " n"...)
		t.prefix = strconv.AppendUint(t.prefix, uint64(node), 10)
		t.prefix = append(t.prefix, ' ')
		t.prefixNowNs, t.prefixNode, t.prefixMarked = nowNs, node, true
	}
	t.buf = append(t.buf, t.prefix...)
	return append(t.buf, dir, ' ')
}

// end finishes the line built in b (the buffer begin returned, extended).
func (t *Trace) end(b []byte) {
	t.buf = append(b, '\n')
	t.lines++
	if t.out != nil && t.nowNs >= t.fromNs {
		t.out.Write(t.buf[t.start:])
	}
}

// Note adds a line of the world's own (a fault, a client action) at nowNs.
func (t *Trace) Note(nowNs int64, text string) {
	if len(t.buf) > traceBufBytes-512-len(text) {
		t.flush()
	}
	t.start, t.nowNs = len(t.buf), nowNs
	b := append(t.buf, "t="...)
	b = strconv.AppendInt(b, nowNs, 10)
	b = append(b, " * "...)
	t.end(append(b, text...))
}

func (t *Trace) flush() {
	t.hasher.Write(t.buf)
	t.buf = t.buf[:0]
}

// Lines returns how many lines the trace holds.
func (t *Trace) Lines() uint64 { return t.lines }

// Hash returns the hex BLAKE3 hash of every line so far.
func (t *Trace) Hash() string {
	t.flush()
	return hex.EncodeToString(t.hasher.Sum(nil))
}
