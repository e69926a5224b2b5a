package seam

import (
	"fmt"

	"github.com/sluicemq/sluice/core/record"
)

// Out collects the effects of one Step, in the order the driver must start
// them. Groups add to it; the node hands it to the driver. Message bytes
// are carved out of one buffer reused from Step to Step, so a send costs no
// allocation once the buffer has grown; effects and their bytes are valid
// until the next Step.
type Out struct {
	Effects []Effect
	buf     []byte
	// recs holds the records of the step's storage effects (Record), as
	// buf holds its messages' bytes.
	recs []record.Record
	// Steps counts the Steps begun (Resets): memory a group freed in one
	// Step may still be named by that Step's effects, and is reused only
	// from the next one on.
	Steps uint64
}

// Reset empties the buffer for the next Step.
func (o *Out) Reset() {
	o.Steps++
	clear(o.Effects)
	o.Effects = o.Effects[:0]
	o.buf = o.buf[:0]
	clear(o.recs) // the bodies are not the Out's to keep
	o.recs = o.recs[:0]
}

// Record returns a one-record slice holding a copy of rec (its body
// shared), valid until the next Step like the effects: a storage effect
// carries it instead of pointing into its group's memory, which the group
// may move or reuse before the driver runs the effect.
func (o *Out) Record(rec record.Record) []record.Record {
	if len(o.recs) == cap(o.recs) {
		// Effects already emitted keep the old array: they stay valid.
		nr := make([]record.Record, len(o.recs), max(2*cap(o.recs), 16))
		copy(nr, o.recs)
		o.recs = nr
	}
	o.recs = append(o.recs, rec)
	k := len(o.recs)
	return o.recs[k-1 : k : k]
}

// Grow returns the buffer with room for at least n more bytes, to append a
// message to; Send takes what was appended.
func (o *Out) Grow(n int) []byte {
	if cap(o.buf)-len(o.buf) < n {
		// Effects already emitted keep the old array: they stay valid.
		nb := make([]byte, len(o.buf), max(2*cap(o.buf), len(o.buf)+n, 4096))
		copy(nb, o.buf)
		o.buf = nb
	}
	return o.buf
}

// Keep takes buf, the buffer Grow returned extended by bytes an effect
// already emitted holds, as the buffer's new contents.
func (o *Out) Keep(buf []byte) { o.buf = buf }

// Send emits a send of the message appended to the buffer Grow returned
// (buf is that buffer, extended).
func (o *Out) Send(g GroupID, to NodeID, buf []byte) {
	if to == 0 {
		// Node ids start at 1: a send to 0 is a zero value taken for a
		// peer (a source never chosen, say), never a peer's address.
		panic(fmt.Sprintf("core: a send of group %d to node 0", g))
	}
	start := len(o.buf)
	o.buf = buf
	o.Effects = append(o.Effects, Effect{Kind: EfSend, Group: g, To: to, Data: buf[start:len(buf):len(buf)]})
}

// Storage emits a storage effect.
func (o *Out) Storage(e Effect) {
	e.Kind = EfStorage
	o.Effects = append(o.Effects, e)
}

// Reply emits the answer to a client request.
func (o *Out) Reply(c ClientID, id uint64, oc Outcome, q QueueID, offset uint64, reason string) {
	o.Effects = append(o.Effects, Effect{Kind: EfReply, Client: c, ReqID: id, Outcome: oc, Queue: q, Offset: offset, Reason: reason})
}

// Refuse emits a failed reply with its typed cause.
func (o *Out) Refuse(c ClientID, id uint64, q QueueID, r Refusal, reason string) {
	o.Effects = append(o.Effects, Effect{Kind: EfReply, Client: c, ReqID: id, Outcome: Failed, Queue: q, Refusal: r, Reason: reason})
}

// ReplyCounts emits the confirmed answer to a ReqCount: ready messages and
// consumers of queue q, and the incarnation of q the owner serves.
func (o *Out) ReplyCounts(c ClientID, id uint64, q QueueID, ready uint64, consumers int, incarnation uint64) {
	o.Effects = append(o.Effects, Effect{Kind: EfReply, Client: c, ReqID: id, Outcome: Confirmed, Queue: q, Offset: ready, Count: consumers, Tag: incarnation})
}

// Deliver emits a delivery of rec to consumer c.
func (o *Out) Deliver(c ClientID, q QueueID, rec *record.Record, redelivered bool) {
	o.Effects = append(o.Effects, Effect{Kind: EfDeliver, Client: c, Queue: q, Offset: rec.Offset, Body: rec.Body, Redelivered: redelivered})
}

// Cancel emits the end of consumer c's subscription to queue q, on the
// broker's side.
func (o *Out) Cancel(c ClientID, q QueueID, why string) {
	o.Effects = append(o.Effects, Effect{Kind: EfCancel, Client: c, Queue: q, Reason: why})
}

// Deadline emits the next deadline.
func (o *Out) Deadline(atNs int64) {
	o.Effects = append(o.Effects, Effect{Kind: EfDeadline, AtNs: atNs})
}

// Recovery emits a stage mark of queue q's recovery. buf is nil (no
// evidence) or the buffer Grow returned, extended by the stage's evidence
// (as Send takes a message).
func (o *Out) Recovery(q QueueID, stage RecoveryStage, epoch uint64, buf []byte, reason string) {
	var body []byte
	if buf != nil {
		start := len(o.buf)
		o.buf = buf
		body = buf[start:len(buf):len(buf)]
	}
	o.Effects = append(o.Effects, Effect{Kind: EfRecovery, Group: QueueGroup(q), Queue: q, Stage: stage, Offset: epoch, Body: body, Reason: reason})
}

// SetAside emits queue q's StageSetAside mark: its attempt at the
// transition to epoch was set aside for why (detail: the prose).
func (o *Out) SetAside(q QueueID, epoch uint64, why AsideReason, detail string) {
	o.Effects = append(o.Effects, Effect{Kind: EfRecovery, Group: QueueGroup(q), Queue: q, Stage: StageSetAside, Offset: epoch, Aside: why, Reason: detail})
}

// Watermark emits queue q's new high watermark.
func (o *Out) Watermark(q QueueID, end uint64) {
	o.Effects = append(o.Effects, Effect{Kind: EfWatermark, Group: QueueGroup(q), Queue: q, Offset: end})
}
