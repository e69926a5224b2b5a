package driver

import (
	"encoding/binary"
	"encoding/hex"
	"io"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
	"lukechampine.com/blake3"
)

// Trace is the record of a run: every input and effect of every node, and
// the world's own notes, in the order they happened. Its hash is BLAKE3 over
// a compact binary encoding of each of them (appendInputBin,
// appendEffectBin; notes as their text), so two runs agree on the hash
// exactly when they agree on every input, effect and note, and hashing
// costs no text rendering. The text lines (one per input, effect and note,
// their stable forms) are rendered only when they are written out (--trace),
// and rendering them does not change the hash.
type Trace struct {
	hasher *blake3.Hasher
	out    io.Writer // nil: hash only
	fromNs int64     // lines before this instant are hashed but not written
	lines  uint64
	bin    []byte // encoded entries not yet hashed
	text   []byte // a line being rendered

	// The prefix of the last input line written ("t=... nX "), reused while
	// the instant and node stay the same: most lines come in runs of one
	// step.
	prefix       []byte
	prefixNowNs  int64
	prefixNode   core.NodeID
	prefixMarked bool
}

// traceBufBytes batches hashing: the hasher is fastest on large writes, and
// a run makes millions of short entries.
const traceBufBytes = 256 << 10

// NewTrace returns a trace that hashes every entry and, when out is not
// nil, also writes the lines at or after fromNs to out.
func NewTrace(out io.Writer, fromNs int64) *Trace {
	return &Trace{hasher: blake3.New(32, nil), out: out, fromNs: fromNs, bin: make([]byte, 0, traceBufBytes)}
}

func (t *Trace) room(n int) {
	if len(t.bin)+n > traceBufBytes {
		t.flush()
	}
}

func (t *Trace) writing(nowNs int64) bool { return t.out != nil && nowNs >= t.fromNs }

// Input records an input of node at nowNs.
func (t *Trace) Input(nowNs int64, node core.NodeID, in *core.Input) {
	t.lines++
	t.room(64 + len(in.Data) + 24*len(in.Done.Records) + 64*len(in.Logs))
	t.bin = appendInputBin(t.bin, nowNs, node, in)
	if t.writing(nowNs) {
		t.text = in.AppendText(t.linePrefix(t.text[:0], nowNs, node, '<'), core.MsgTexts)
		t.writeLine()
	}
}

// Effect records an effect of node, made by the input at nowNs.
func (t *Trace) Effect(nowNs int64, node core.NodeID, e *core.Effect) {
	t.lines++
	t.room(64 + len(e.Data) + 24*len(e.Records) + len(e.Reason))
	t.bin = appendEffectBin(t.bin, node, e)
	if t.writing(nowNs) {
		// An effect line carries no instant: it happens at the instant of
		// the input line above it, whose step made it.
		b := append(t.text[:0], "  n"...)
		b = strconv.AppendUint(b, uint64(node), 10)
		b = append(b, " > "...)
		t.text = e.AppendText(b, core.MsgTexts)
		t.writeLine()
	}
}

// Note adds a line of the world's own (a fault, a client action) at nowNs.
func (t *Trace) Note(nowNs int64, text string) {
	t.lines++
	t.room(16 + len(text))
	t.bin = append(t.bin, 'N')
	t.bin = binary.LittleEndian.AppendUint64(t.bin, uint64(nowNs))
	t.bin = binary.AppendUvarint(t.bin, uint64(len(text)))
	t.bin = append(t.bin, text...)
	if t.writing(nowNs) {
		b := append(t.text[:0], "t="...)
		b = strconv.AppendInt(b, nowNs, 10)
		b = append(b, " * "...)
		t.text = append(b, text...)
		t.writeLine()
	}
}

func (t *Trace) linePrefix(dst []byte, nowNs int64, node core.NodeID, dir byte) []byte {
	if !t.prefixMarked || nowNs != t.prefixNowNs || node != t.prefixNode {
		t.prefix = append(t.prefix[:0], "t="...)
		t.prefix = strconv.AppendInt(t.prefix, nowNs, 10)
		t.prefix = append(t.prefix, " n"...)
		t.prefix = strconv.AppendUint(t.prefix, uint64(node), 10)
		t.prefix = append(t.prefix, ' ')
		t.prefixNowNs, t.prefixNode, t.prefixMarked = nowNs, node, true
	}
	dst = append(dst, t.prefix...)
	return append(dst, dir, ' ')
}

func (t *Trace) writeLine() {
	t.text = append(t.text, '\n')
	t.out.Write(t.text)
}

func (t *Trace) flush() {
	t.hasher.Write(t.bin)
	t.bin = t.bin[:0]
}

// Lines returns how many entries the trace holds.
func (t *Trace) Lines() uint64 { return t.lines }

// Hash returns the hex BLAKE3 hash of every entry so far.
func (t *Trace) Hash() string {
	t.flush()
	return hex.EncodeToString(t.hasher.Sum(nil))
}

// The binary encoding of entries: a tag byte, then the fields that the
// text form shows, as varints and raw bytes (a peer message as its bytes).
// It is the hash's input only; nothing decodes it.

func appendInputBin(b []byte, nowNs int64, node core.NodeID, in *core.Input) []byte {
	b = append(b, 'I', byte(in.Kind))
	b = binary.LittleEndian.AppendUint64(b, uint64(nowNs))
	b = binary.AppendUvarint(b, uint64(node))
	switch in.Kind {
	case core.InStart:
		for i := range in.Logs {
			l := &in.Logs[i]
			b = binary.AppendUvarint(b, uint64(l.Group))
			b = binary.AppendUvarint(b, uint64(l.Log))
			b = binary.AppendUvarint(b, l.Start)
			b = binary.AppendUvarint(b, l.End)
			b = appendEpochsBin(b, l.Epochs)
			b = appendStrBin(b, l.Damage)
			b = appendBoolBin(b, l.Unrepaired)
		}
	case core.InMessage:
		b = binary.AppendUvarint(b, uint64(in.From))
		b = binary.AppendUvarint(b, uint64(in.Group))
		b = binary.AppendUvarint(b, uint64(len(in.Data)))
		b = append(b, in.Data...)
	case core.InClient:
		r := &in.Req
		b = binary.AppendUvarint(b, uint64(in.Client))
		b = append(b, byte(r.Kind))
		b = binary.AppendUvarint(b, uint64(r.Queue))
		b = binary.AppendUvarint(b, r.ID)
		b = binary.AppendUvarint(b, uint64(len(r.Body)))
		b = binary.AppendUvarint(b, uint64(int64(r.Prefetch)))
		b = binary.AppendUvarint(b, r.Offset)
	case core.InClientGone:
		b = binary.AppendUvarint(b, uint64(in.Client))
	case core.InStorage:
		d := &in.Done
		b = append(b, byte(d.Op))
		b = binary.AppendUvarint(b, uint64(d.Group))
		b = binary.AppendUvarint(b, uint64(d.Log))
		b = binary.AppendUvarint(b, d.Offset)
		b = binary.AppendUvarint(b, d.Tag)
		b = appendRecordsBin(b, d.Records)
		b = appendStrBin(b, d.Err)
	}
	return b
}

func appendEffectBin(b []byte, node core.NodeID, e *core.Effect) []byte {
	b = append(b, 'E', byte(e.Kind))
	b = binary.AppendUvarint(b, uint64(node))
	switch e.Kind {
	case core.EfSend:
		b = binary.AppendUvarint(b, uint64(e.To))
		b = binary.AppendUvarint(b, uint64(e.Group))
		b = binary.AppendUvarint(b, uint64(len(e.Data)))
		b = append(b, e.Data...)
	case core.EfStorage:
		b = append(b, byte(e.Op))
		b = binary.AppendUvarint(b, uint64(e.Group))
		b = binary.AppendUvarint(b, uint64(e.Log))
		b = binary.AppendUvarint(b, e.Offset)
		b = binary.AppendUvarint(b, uint64(int64(e.Count)))
		b = binary.AppendUvarint(b, e.Tag)
		b = appendRecordsBin(b, e.Records)
	case core.EfReply:
		b = binary.AppendUvarint(b, uint64(e.Client))
		b = binary.AppendUvarint(b, e.ReqID)
		b = append(b, byte(e.Outcome))
		b = binary.AppendUvarint(b, uint64(e.Queue))
		b = binary.AppendUvarint(b, e.Offset)
		b = appendStrBin(b, e.Reason)
	case core.EfDeliver:
		b = binary.AppendUvarint(b, uint64(e.Client))
		b = binary.AppendUvarint(b, uint64(e.Queue))
		b = binary.AppendUvarint(b, e.Offset)
		b = binary.AppendUvarint(b, uint64(len(e.Body)))
		b = appendBoolBin(b, e.Redelivered)
	case core.EfDeadline:
		b = binary.LittleEndian.AppendUint64(b, uint64(e.AtNs))
	}
	return b
}

// appendRecordsBin encodes what the text form shows of records: how many,
// the first offset, their epochs, kinds and body lengths (bodies are the
// workload's; their identity is in the messages that carried them).
func appendRecordsBin(b []byte, recs []record.Record) []byte {
	b = binary.AppendUvarint(b, uint64(len(recs)))
	if len(recs) > 0 {
		b = binary.AppendUvarint(b, recs[0].Offset)
	}
	for i := range recs {
		b = binary.AppendUvarint(b, recs[i].Epoch)
		b = append(b, byte(recs[i].Kind))
		b = binary.AppendUvarint(b, uint64(len(recs[i].Body)))
	}
	return b
}

func appendEpochsBin(b []byte, h []core.EpochStart) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	for _, e := range h {
		b = binary.AppendUvarint(b, e.Epoch)
		b = binary.AppendUvarint(b, e.Offset)
	}
	return b
}

func appendStrBin(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBoolBin(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}
