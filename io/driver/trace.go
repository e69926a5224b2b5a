package driver

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/digest"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/meta"
)

// Trace is the record of a run: every input and effect of every node, and
// the world's own notes, in the order they happened. Its hash is BLAKE3 over
// a compact binary encoding of each of them (appendInputBin,
// appendEffectBin; notes as their text), so two runs agree on the hash
// exactly when they agree on every input, effect and note (a sent
// message's bytes up to their CRC-32C, see below), and hashing costs no
// text rendering. A message's bytes are hashed whole once, where they
// enter a core (the receiver's InMessage input: a core's effects follow
// from its inputs); the send effect hashes their length and CRC-32C.
// Hashed at both ends, the bytes of every message were most of what a run
// hashed, and the recovery's pages (whole logs) weighed twice. The text
// lines (one per input, effect and note,
// their stable forms, see "Line text" below) are rendered only when they are
// written out (--trace, --timeline), and neither rendering them nor the
// filter changes the hash.
type Trace struct {
	hasher digest.Hasher
	out    io.Writer // nil: hash only
	filter TraceFilter
	lines  uint64
	bin    []byte // encoded entries not yet hashed
	text   []byte // a line being rendered

	// The prefix of the last input or effect line written ("t=... nX "),
	// reused while the instant and node stay the same: most lines come in
	// runs of one step.
	prefix       []byte
	prefixNowNs  int64
	prefixNode   core.NodeID
	prefixMarked bool
}

// TraceFilter selects the lines a trace writes; every entry is hashed
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

// traceBufBytes batches hashing: the hasher is fastest on large writes, and
// a run makes millions of short entries. It also bounds the buffer: it is
// flushed into the hasher before an entry could overflow it.
const traceBufBytes = 256 << 10

// NewTrace returns a trace that hashes every entry and, when out is not
// nil, also writes the lines f selects to out.
func NewTrace(out io.Writer, f TraceFilter) *Trace {
	return &Trace{out: out, filter: f, bin: make([]byte, 0, traceBufBytes)}
}

func (t *Trace) room(n int) {
	if len(t.bin)+n > traceBufBytes {
		t.flush()
	}
}

// writing reports whether a line at nowNs may be written: the instant
// bounds are checked before any text is rendered.
func (t *Trace) writing(nowNs int64) bool {
	return t.out != nil && nowNs >= t.filter.FromNs && (t.filter.UntilNs == 0 || nowNs <= t.filter.UntilNs)
}

// Input records an input of node at nowNs.
func (t *Trace) Input(nowNs int64, node core.NodeID, in *core.Input) {
	t.lines++
	t.room(64 + len(in.Data) + len(in.Req.Body) + 24*len(in.Done.Records) + 64*len(in.Logs))
	t.bin = appendInputBin(t.bin, nowNs, node, in)
	if t.writing(nowNs) {
		t.text = in.AppendText(t.linePrefix(t.text[:0], nowNs, node, '<'), core.MsgTexts)
		t.writeLine(nowNs)
	}
}

// Effect records an effect of node, made by the input at nowNs.
func (t *Trace) Effect(nowNs int64, node core.NodeID, e *core.Effect) {
	t.lines++
	t.room(64 + 24*len(e.Records) + len(e.Reason) + len(e.Body) + batchBinBytes(e.Batch) + 20*len(e.Epochs))
	t.bin = appendEffectBin(t.bin, node, e)
	if t.writing(nowNs) {
		t.text = e.AppendText(t.linePrefix(t.text[:0], nowNs, node, '>'), core.MsgTexts)
		t.writeLine(nowNs)
	}
}

// noteBytesMax bounds a note's line: a note is one line, never a dump.
const noteBytesMax = traceBufBytes / 2

// Note adds a line of the world's own (a fault, a client action) at nowNs.
func (t *Trace) Note(nowNs int64, text string) {
	if len(text) > noteBytesMax {
		text = text[:noteBytesMax]
	}
	t.lines++
	t.room(16 + len(text))
	t.bin = append(t.bin, 'N')
	t.bin = binary.LittleEndian.AppendUint64(t.bin, uint64(nowNs))
	t.bin = binary.AppendUvarint(t.bin, uint64(len(text)))
	t.bin = append(t.bin, text...)
	if t.writing(nowNs) {
		t.text = appendNote(t.text[:0], nowNs, text)
		t.writeLine(nowNs)
	}
}

func (t *Trace) linePrefix(dst []byte, nowNs int64, node core.NodeID, dir byte) []byte {
	if !t.prefixMarked || nowNs != t.prefixNowNs || node != t.prefixNode {
		t.prefix = appendNodePrefix(t.prefix[:0], nowNs, node)
		t.prefixNowNs, t.prefixNode, t.prefixMarked = nowNs, node, true
	}
	dst = append(dst, t.prefix...)
	return append(dst, dir, ' ')
}

// writeLine writes the rendered line if the filter keeps it.
func (t *Trace) writeLine(nowNs int64) {
	t.text = append(t.text, '\n')
	if t.filter.keep(nowNs, t.text) {
		t.out.Write(t.text)
	}
}

func (t *Trace) flush() {
	t.hasher.Write(t.bin)
	t.bin = t.bin[:0]
}

// Lines returns how many entries the trace holds: the number of the latest
// line, counting from 1 as `--trace` prints them unfiltered.
func (t *Trace) Lines() uint64 { return t.lines }

// Hash returns the hex BLAKE3 hash of every entry so far.
func (t *Trace) Hash() string {
	t.flush()
	sum := t.hasher.Sum()
	return hex.EncodeToString(sum[:])
}

// The binary encoding of entries: a tag byte, then the fields that the
// text form shows, as varints and raw bytes (a peer message as its bytes
// where it arrives, as its CRC-32C where it is sent). It is the hash's
// input only; nothing decodes it.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
			if len(l.Seal) > 0 || l.SealDamage != "" {
				// (Only then, so that runs without seals hash as before.)
				b = append(b, 'S')
				b = appendStrBin(b, string(l.Seal))
				b = appendStrBin(b, l.SealDamage)
			}
			if l.DamageDurable {
				b = append(b, 'L')
			}
			if len(l.Binding) > 0 || l.BindingDamage != "" || l.BoundBefore {
				b = append(b, 'B')
				b = appendStrBin(b, string(l.Binding))
				b = appendStrBin(b, l.BindingDamage)
				b = appendBoolBin(b, l.BoundBefore)
			}
		}
		if m := in.Meta; m != nil {
			b = append(b, 'M')
			b = binary.AppendUvarint(b, m.HardState.Term)
			b = binary.AppendUvarint(b, m.HardState.Vote)
			b = binary.AppendUvarint(b, m.HardState.Commit)
			b = binary.AppendUvarint(b, m.Compacted.Index)
			b = binary.AppendUvarint(b, uint64(len(m.Entries)))
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
		if r.Kind == core.ReqMeta {
			b = append(b, r.Body...)
		}
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
	case core.InTick:
		b = binary.AppendUvarint(b, in.Draw)
	case core.InPeerLost:
		b = binary.AppendUvarint(b, uint64(in.From))
		b = binary.AppendUvarint(b, in.Process)
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
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(e.Data, castagnoli))
	case core.EfStorage:
		b = append(b, byte(e.Op))
		b = binary.AppendUvarint(b, uint64(e.Group))
		b = binary.AppendUvarint(b, uint64(e.Log))
		b = binary.AppendUvarint(b, e.Offset)
		b = binary.AppendUvarint(b, uint64(int64(e.Count)))
		b = binary.AppendUvarint(b, e.Tag)
		b = appendRecordsBin(b, e.Records)
		if e.Batch != nil {
			b = appendBatchBin(b, e.Batch)
		}
		if e.Op == core.OpSeal || e.Op == core.OpBind {
			b = appendStrBin(b, string(e.Body))
		}
		if e.Op == core.OpReseed {
			b = binary.AppendUvarint(b, uint64(len(e.Epochs)))
			for _, h := range e.Epochs {
				b = binary.AppendUvarint(b, h.Epoch)
				b = binary.AppendUvarint(b, h.Offset)
			}
		}
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
	case core.EfCancel:
		b = binary.AppendUvarint(b, uint64(e.Client))
		b = binary.AppendUvarint(b, uint64(e.Queue))
		b = appendStrBin(b, e.Reason)
	case core.EfDeadline:
		b = binary.LittleEndian.AppendUint64(b, uint64(e.AtNs))
	case core.EfApplied:
		b = binary.AppendUvarint(b, uint64(e.Group))
		b = binary.AppendUvarint(b, e.Offset)
		b = binary.AppendUvarint(b, e.Tag)
		b = appendStrBin(b, string(e.Body))
		b = appendStrBin(b, e.Reason)
	case core.EfNote:
		b = binary.AppendUvarint(b, uint64(e.Group))
		b = appendStrBin(b, e.Reason)
	case core.EfWatermark:
		b = binary.AppendUvarint(b, uint64(e.Queue))
		b = binary.AppendUvarint(b, e.Offset)
	case core.EfRecovery:
		b = binary.AppendUvarint(b, uint64(e.Queue))
		b = append(b, byte(e.Stage))
		if e.Stage == seam.StageSetAside {
			b = append(b, byte(e.Aside)) // only here: no other stage's hash moved with it
		}
		b = binary.AppendUvarint(b, e.Offset)
		b = appendStrBin(b, string(e.Body))
		b = appendStrBin(b, e.Reason)
	}
	return b
}

// batchBinBytes bounds appendBatchBin's output.
func batchBinBytes(mb *meta.Batch) int {
	if mb == nil {
		return 0
	}
	n := 40
	for i := range mb.Entries {
		n += 30 + len(mb.Entries[i].Data)
	}
	if mb.Snapshot != nil {
		n += 40 + len(mb.Snapshot.Data)
	}
	if mb.Applied != nil {
		n += 30 + len(mb.Applied.Data)
	}
	return n + 12 // the compaction index
}

// appendBatchBin encodes what the text form shows of a metadata batch, and
// its entries' data (the commands are the metadata).
func appendBatchBin(b []byte, mb *meta.Batch) []byte {
	b = binary.AppendUvarint(b, uint64(len(mb.Entries)))
	for i := range mb.Entries {
		e := &mb.Entries[i]
		b = binary.AppendUvarint(b, e.Index)
		b = binary.AppendUvarint(b, e.Term)
		b = appendStrBin(b, string(e.Data))
	}
	if hs := mb.HardState; hs != nil {
		b = append(b, 'H')
		b = binary.AppendUvarint(b, hs.Term)
		b = binary.AppendUvarint(b, hs.Vote)
		b = binary.AppendUvarint(b, hs.Commit)
	}
	if sn := mb.Snapshot; sn != nil {
		b = append(b, 'S')
		b = binary.AppendUvarint(b, sn.Index)
		b = binary.AppendUvarint(b, sn.Term)
		b = appendStrBin(b, string(sn.Data))
	}
	if ap := mb.Applied; ap != nil {
		b = append(b, 'A')
		b = binary.AppendUvarint(b, ap.Index)
		b = appendStrBin(b, string(ap.Data))
	}
	if mb.CompactIndex != 0 {
		b = append(b, 'C')
		b = binary.AppendUvarint(b, mb.CompactIndex)
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
