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
	buf    []byte
	extra  []byte
}

// traceBufBytes batches hashing and writing: the hasher is fastest on large
// writes, and a run makes millions of short lines.
const traceBufBytes = 64 << 10

// NewTrace returns a trace that hashes every line and, when out is not nil,
// also writes the lines at or after fromNs to out.
func NewTrace(out io.Writer, fromNs int64) *Trace {
	return &Trace{hasher: blake3.New(32, nil), out: out, fromNs: fromNs, buf: make([]byte, 0, traceBufBytes)}
}

func (t *Trace) prefix(dst []byte, nowNs int64, node core.NodeID, dir byte) []byte {
	dst = append(dst, "t="...)
	dst = strconv.AppendInt(dst, nowNs, 10)
	dst = append(dst, " n"...)
	dst = strconv.AppendUint(dst, uint64(node), 10)
	dst = append(dst, ' ', dir, ' ')
	return dst
}

// Note adds a line of the world's own (a fault, a client action) at nowNs.
func (t *Trace) Note(nowNs int64, text string) {
	t.extra = append(t.extra[:0], "t="...)
	t.extra = strconv.AppendInt(t.extra, nowNs, 10)
	t.extra = append(t.extra, " * "...)
	t.extra = append(t.extra, text...)
	t.emit(t.extra, nowNs)
}

func (t *Trace) emit(line []byte, nowNs int64) {
	t.lines++
	if len(t.buf)+len(line)+1 > cap(t.buf) {
		t.flush()
	}
	t.buf = append(t.buf, line...)
	t.buf = append(t.buf, '\n')
	if t.out != nil && nowNs >= t.fromNs {
		t.out.Write(line)
		t.out.Write([]byte{'\n'})
	}
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
