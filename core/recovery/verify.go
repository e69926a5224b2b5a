package recovery

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/digest"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// Sealed reads (docs/design/recovery.md, "Sealed reads and
// verification"). Before a source is
// accepted, the worker reads the source's whole sealed log and every other
// complete witness's, a page at a time, two logs at once (ReadsAtOnce),
// and the Verifier checks:
//
//   - each log read hashes to the identity its seal reported (a log that
//     changed since its seal, or a seal that lied, blocks the recovery);
//   - where a witness and the source hold a record at the same offset in
//     the same epoch, it is the same record (one owner writes each offset
//     once per epoch: two different records are contradictory history);
//   - a witness never holds, at an offset, an epoch above the source's
//     there that is the source's last epoch or later, nor, past the
//     source's end, a record of the source's last epoch or later (either
//     would mean the source is not the furthest log, contrary to the
//     choice; an isr queue's source is the furthest member of the in-sync
//     set, and what a witness outside the set holds past its end, of any
//     epoch, was never confirmed);
//   - a witness's records of epochs the source superseded (below the
//     source's epoch at that offset; above it but below the source's last
//     epoch, a branch a later epoch's recovery did not take; or past its
//     end) are unconfirmed suffixes: accepted and dropped.
//
// A witness whose seal reports the source's very identity is not read:
// the identity is BLAKE3 over an unambiguous encoding of the bounds and
// every record (identity.go), and its own sealer hashed its frozen log to
// it, so once the source's log is read and hashes to it, the two hold the
// same records, and every record-by-record check above holds of them
// (nothing of such a witness is installed; it is evidence by its seal,
// like every witness's bounds). Reading it again cost a recovery as much
// as the source's read, per witness, for no check. Only a witness with
// another identity is read and compared record by record, and the
// source's records are kept only when one is among the witnesses. They are kept as they are, bodies and
// all, up to SourceHeldBytesMax of bodies, and compared byte for byte; past
// that, as digests (BLAKE3 of the epoch, kind and body, sumOf). Summing
// each record apart cost more than all the rest of a read (a record's
// digest is one chunk, with none of the identity's many-chunk SIMD), so it
// is left to logs too large to hold.
//
// Every inspection is bounded (pages, records, bytes: a Budget, runtime
// settings of the metadata); exhausting a bound blocks the recovery with a
// diagnostic, never weakens a check.

// Page bounds and the default inspection budget (docs/design/recovery.md,
// "Budgets and limits").
const (
	PageRecordsMax    = 4096
	PageBytesMax      = 16 << 20
	InspectPagesMax   = 1024
	InspectRecordsMax = 1_000_000
	InspectBytesMax   = 1 << 30
	// recordWireBytes is what a record costs a budget beyond its body.
	recordWireBytes = 18
)

// Budget bounds one inspection, each log it reads on its own: pages,
// records, and bytes (each record's body and recordWireBytes). Per log,
// so that what a queue's history may hold does not shrink with the number
// of witnesses read (R of a four-replica leader_durable queue is four).
type Budget struct {
	PagesMax, RecordsMax int
	BytesMax             int64
}

// BudgetBytes is what record r costs a byte budget: its body and
// recordWireBytes (the inspection's and the staging's alike).
func BudgetBytes(r *record.Record) int64 {
	return int64(len(r.Body) + recordWireBytes)
}

// DefaultBudget is the default inspection budget, per log read: 1,024
// pages, 1,000,000 records, 1 GiB (the stage's byte budget).
var DefaultBudget = Budget{PagesMax: InspectPagesMax, RecordsMax: InspectRecordsMax, BytesMax: InspectBytesMax}

// SourceHeldBytesMax bounds the source's record bodies a Verifier holds to
// compare a witness of another identity with, byte for byte; the records
// past it are held as digests.
const SourceHeldBytesMax = 32 << 20

// srcRecord is one of the source's records, held for comparison: its body
// at held[at:at+n], or (summed) its digest at sums[at].
type srcRecord struct {
	epoch  uint64
	at, n  uint32
	kind   record.Kind
	summed bool
}

func sumOf(r *record.Record, scratch []byte) ([32]byte, []byte) {
	b := binary.AppendUvarint(scratch[:0], r.Epoch)
	b = append(b, byte(r.Kind))
	b = append(b, r.Body...)
	return digest.Sum256(b), b
}

// hold keeps the source's record r for comparison: its body while the
// held bodies stay within heldMax, else its digest.
func (v *Verifier) hold(r *record.Record) {
	s := srcRecord{epoch: r.Epoch, kind: r.Kind, n: uint32(len(r.Body))}
	if len(v.held)+len(r.Body) <= v.heldMax {
		s.at = uint32(len(v.held))
		v.held = append(v.held, r.Body...)
	} else {
		var sum [32]byte
		sum, v.scratch = sumOf(r, v.scratch)
		s.at, s.summed = uint32(len(v.sums)), true
		v.sums = append(v.sums, sum)
	}
	v.src = append(v.src, s)
}

// sameRecord reports whether a witness's record r, at the offset and in
// the epoch of the source's s, is the same record.
func (v *Verifier) sameRecord(s *srcRecord, r *record.Record) bool {
	if s.summed {
		var sum [32]byte
		sum, v.scratch = sumOf(r, v.scratch)
		return sum == v.sums[s.at]
	}
	return r.Kind == s.kind && bytes.Equal(r.Body, v.held[s.at:s.at+s.n])
}

// ReadsAtOnce is how many logs a Verifier reads at once: the worker
// pipelines source inspection for up to two replicas at once.
const ReadsAtOnce = 2

// Verifier checks a chosen source against the other complete witnesses by
// their sealed records. It reads up to ReadsAtOnce logs at once: the
// source and the witnesses of its identity from the start, since each of
// them is only hashed, and a witness of another identity once the
// source's records are summed, since each of its records is compared with
// the source's.
type Verifier struct {
	q       seam.QueueID
	logs    []Seal            // the source first, then the witnesses of its identity, then the others
	next    int               // the next log to start reading; logs start in order
	reads   []reading         // the logs being read, at most ReadsAtOnce
	srcDone bool              // the source was read and verified
	src     []srcRecord       // the source's records, from its start
	held    []byte            // their bodies, up to heldMax bytes
	sums    [][32]byte        // the digests of those past heldMax
	heldMax int               // SourceHeldBytesMax (tests make it smaller)
	epochs  []seam.EpochStart // the source's epoch history
	budget  Budget
	pages   int
	records int
	bytes   int64
	// byIdentity counts the witnesses taken by their seal's identity,
	// the source's, without a read
	byIdentity int
	tookSource bool // the source taken by its seal (TakeSource)
	blocked    string
	blockedWhy seam.AsideReason // the block's typed cause (0: not blocked)
	// blockedOn: the replica whose log was being read when the
	// verification blocked (0: none)
	blockedOn seam.NodeID
	scratch   []byte
	// compare: some witness's identity differs from the source's, so the
	// source's records are summed for a record-by-record comparison
	compare bool
	// past: a witness may hold records past the source's end, in the
	// source's last epoch or a later one (an isr queue's source is the
	// furthest member of the in-sync set, and a member outside it may be
	// further: what it holds past the source was never confirmed, since a
	// confirm needs every member of the set)
	past bool
	// pastSameEpochOnly: planted (plantPastSameEpochOnly); branchBlocks:
	// planted (PlantBranchBlocks); epochsWhole: planted
	// (PlantEpochsWhole)
	pastSameEpochOnly, branchBlocks, epochsWhole bool
}

// PlantEpochsWhole plants the bug own-source-epochs-whole (planted by its
// caller): a source taken by its seal keeps its whole epoch history, its
// entries below the sealed start among them.
func (v *Verifier) PlantEpochsWhole() { v.epochsWhole = true }

// PlantBranchBlocks plants the bug branch-contradiction (planted by its
// caller): a witness's record of an epoch
// above the source's at its offset blocks as contradictory history even
// when the source's history moved on to a later epoch than the witness's.
func (v *Verifier) PlantBranchBlocks() { v.branchBlocks = true }

// plantPastSameEpochOnly plants, for this package's tests, the rule
// before: the isr verifier takes a record past the source's end of a
// later epoch than the source's last for contradictory history.
func (v *Verifier) plantPastSameEpochOnly() { v.pastSameEpochOnly = true }

// reading is a log being read: its index in logs and its identity so far.
type reading struct {
	log int
	id  *Identity
	// what this log's reads took of the budget
	pages, records int
	bytes          int64
}

// Want is a page a Verifier wants: node's sealed log from offset From, at
// most PageRecordsMax records.
type Want struct {
	Node seam.NodeID
	From uint64
}

// NewVerifier starts the verification of source src against witnesses
// (complete witnesses of the same transition; src itself among them is
// skipped) within budget b.
func NewVerifier(src Seal, witnesses []Seal, b Budget) *Verifier {
	return newVerifier(src, witnesses, false, b)
}

// NewISRVerifier is NewVerifier for an isr queue's clean election: the
// source is the furthest member of the last committed in-sync set, and a
// witness outside the set may hold more of the source's last epoch past
// its end (unconfirmed: dropped, not contradictory).
func NewISRVerifier(src Seal, witnesses []Seal, b Budget) *Verifier {
	return newVerifier(src, witnesses, true, b)
}

func newVerifier(src Seal, witnesses []Seal, past bool, b Budget) *Verifier {
	v := &Verifier{q: src.Queue, logs: []Seal{src}, past: past, heldMax: SourceHeldBytesMax, budget: b}
	for _, w := range witnesses {
		switch {
		case w.Node == src.Node:
		case w.Identity == src.Identity && w.Start == src.Start && w.End == src.End:
			v.byIdentity++
		default:
			v.logs = append(v.logs, w)
			v.compare = true
		}
	}
	v.start()
	return v
}

// TakeSource takes the source by its seal, unread, with epochs its epoch
// history: for a caller that hashed the source's log to that seal itself
// (its own log, sealed by its own process, unchanged since), whose read
// would only hash it again. It does nothing (false) once a page was read,
// or when a witness of another identity needs the source's records for
// its comparison.
func (v *Verifier) TakeSource(epochs []seam.EpochStart) bool {
	if v.compare || v.pages > 0 || v.srcDone || v.blockedWhy != 0 || len(epochs) > EpochsMax {
		return false
	}
	v.reads = slices.DeleteFunc(v.reads, func(r reading) bool { return r.log == 0 })
	v.srcDone, v.tookSource = true, true
	v.epochs = epochsFrom(epochs, v.logs[0].Start)
	if v.epochsWhole {
		v.epochs = slices.Clone(epochs) // planted
	}
	v.start()
	return true
}

// epochsFrom returns epoch history h of a log from start on, as a read of
// its records from start builds it (and an installation request carries
// it, within the sealed range): the entries below start fold into one at
// start, the epoch of the first retained record. A log whose retention
// went past the start of its first epoch keeps that entry in its history
// (its START file), which a request must not carry below its range.
func epochsFrom(h []seam.EpochStart, start uint64) []seam.EpochStart {
	i := 0
	for i+1 < len(h) && h[i+1].Offset <= start {
		i++
	}
	out := slices.Clone(h[i:])
	if len(out) > 0 && out[0].Offset < start {
		out[0].Offset = start
	}
	return out
}

// TookSource says whether the source was taken by its seal (TakeSource).
func (v *Verifier) TookSource() bool { return v.tookSource }

// ByIdentity returns how many witnesses were taken by their identity,
// the source's, without being read.
func (v *Verifier) ByIdentity() int { return v.byIdentity }

// start begins reading the next logs while fewer than ReadsAtOnce are read
// and the next may be (the source, one of its identity, or any once the
// source is done); an empty one is verified at once.
func (v *Verifier) start() {
	for v.blockedWhy == 0 && len(v.reads) < ReadsAtOnce && v.next < len(v.logs) {
		i := v.next
		l := &v.logs[i]
		if i > 0 && !v.srcDone {
			return // compared with the source's records: after them
		}
		v.next++
		id, err := NewIdentity(v.q, l.Start, l.End)
		if err != nil {
			v.block(l.Node, seam.AsideSealMismatch, "n%d's seal: %v", l.Node, err)
			return
		}
		if l.Start < l.End {
			v.reads = append(v.reads, reading{log: i, id: id})
			continue
		}
		if got, _ := id.Sum(); got != l.Identity {
			v.block(l.Node, seam.AsideSealMismatch, "n%d's empty sealed log does not match its seal", l.Node)
			return
		}
		v.srcDone = v.srcDone || i == 0
	}
}

func (v *Verifier) block(on seam.NodeID, why seam.AsideReason, format string, a ...any) {
	if v.blockedWhy == 0 {
		v.blocked, v.blockedOn, v.blockedWhy = fmt.Sprintf(format, a...), on, why
	}
}

// Blocked says why the source cannot be accepted, or "".
func (v *Verifier) Blocked() string { return v.blocked }

// BlockedWhy returns the typed cause of the block (0: not blocked).
func (v *Verifier) BlockedWhy() seam.AsideReason { return v.blockedWhy }

// BlockedOn returns the replica whose sealed log was being read when the
// verification blocked (ok false: not blocked, or on no one log): its log
// may have changed since its seal on purpose (an installation), which a
// fresh seal of it tells.
func (v *Verifier) BlockedOn() (node seam.NodeID, ok bool) {
	if v.blockedWhy == 0 || v.blockedOn == 0 {
		return 0, false
	}
	return v.blockedOn, true
}

// Done reports whether every log was read and verified.
func (v *Verifier) Done() bool {
	return v.blockedWhy == 0 && v.next >= len(v.logs) && len(v.reads) == 0
}

// Wants appends to dst the pages the verification wants next, one per log
// being read, and returns it: none when done or blocked.
func (v *Verifier) Wants(dst []Want) []Want {
	if v.blockedWhy != 0 {
		return dst
	}
	for _, r := range v.reads {
		dst = append(dst, Want{Node: v.logs[r.log].Node, From: r.id.Next()})
	}
	return dst
}

// SourceEpochs returns the source's epoch history, once Done (the caller
// must not change it).
func (v *Verifier) SourceEpochs() []seam.EpochStart { return v.epochs }

// Inspected returns the budget used: pages, records and bytes read.
func (v *Verifier) Inspected() (pages, records int, bytes int64) { return v.pages, v.records, v.bytes }

// AddPage takes a page of node's sealed log starting at from. A page that
// is not one wanted (a late duplicate) is ignored; an empty page of a log
// not read to its end blocks (the log shrank since its seal).
func (v *Verifier) AddPage(node seam.NodeID, from uint64, recs []record.Record) {
	if v.blockedWhy != 0 {
		return
	}
	k := slices.IndexFunc(v.reads, func(r reading) bool { return v.logs[r.log].Node == node && r.id.Next() == from })
	if k < 0 {
		return
	}
	rd := v.reads[k]
	l := &v.logs[rd.log]
	if len(recs) == 0 || len(recs) > PageRecordsMax {
		v.block(node, seam.AsideSealMismatch, "n%d's sealed log gave a page of %d records at o=%d, below its sealed end %d", node, len(recs), from, l.End)
		return
	}
	v.pages++
	v.records += len(recs)
	rp := &v.reads[k]
	rp.pages++
	rp.records += len(recs)
	for i := range recs {
		n := BudgetBytes(&recs[i])
		v.bytes += n
		rp.bytes += n
	}
	if b := &v.budget; rp.pages > b.PagesMax || rp.records > b.RecordsMax || rp.bytes > b.BytesMax {
		setting, why := "recovery.inspect_pages_max", seam.AsideInspectPages
		switch {
		case rp.records > b.RecordsMax:
			setting, why = "recovery.inspect_records_max", seam.AsideInspectRecords
		case rp.bytes > b.BytesMax:
			setting, why = "recovery.inspect_bytes_max", seam.AsideInspectBytes
		}
		v.block(node, why, "inspection budget exhausted (n%d's log: %d pages, %d records, %d bytes; at most %d, %d, %d): raise the setting %s",
			node, rp.pages, rp.records, rp.bytes, b.PagesMax, b.RecordsMax, b.BytesMax, setting)
		return
	}
	src := &v.logs[0]
	for i := range recs {
		r := &recs[i]
		if err := rd.id.Add(r); err != nil {
			v.block(node, seam.AsideSealMismatch, "n%d's sealed log: %v", node, err)
			return
		}
		if rd.log == 0 {
			n := len(v.epochs)
			switch {
			case n > 0 && r.Epoch < v.epochs[n-1].Epoch:
				v.block(node, seam.AsideContradictoryHistory, "the source n%d's log goes back from epoch %d to %d at o=%d", node, v.epochs[n-1].Epoch, r.Epoch, r.Offset)
				return
			case n == 0 || r.Epoch > v.epochs[n-1].Epoch:
				if n >= EpochsMax {
					v.block(node, seam.AsideEpochsMax, "the source n%d's log holds more than %d epochs", node, EpochsMax)
					return
				}
				v.epochs = append(v.epochs, seam.EpochStart{Epoch: r.Epoch, Offset: r.Offset})
			}
			if v.compare {
				v.hold(r)
			}
			continue
		}
		switch {
		case r.Offset >= src.End:
			// (For an isr queue, whatever its epoch: the source is the
			// furthest member of the last committed in-sync set, which
			// holds every confirmed record, so a record past its end was
			// confirmed nowhere. A member of the set that never heard its
			// epoch's owner, its log empty or of an older epoch, makes
			// every record its owner wrote such a record.)
			if (!v.past && r.Epoch >= src.LastEpoch) || (v.pastSameEpochOnly && r.Epoch > src.LastEpoch) {
				v.block(node, seam.AsideContradictoryHistory, "n%d holds o=%d of epoch %d past the source n%d's end %d (last epoch %d)", node, r.Offset, r.Epoch, src.Node, src.End, src.LastEpoch)
				return
			}
		case r.Offset >= src.Start:
			s := &v.src[r.Offset-src.Start]
			if r.Epoch > s.epoch && (r.Epoch >= src.LastEpoch || v.branchBlocks) {
				v.block(node, seam.AsideContradictoryHistory, "n%d holds o=%d of epoch %d, above the source n%d's epoch %d there", node, r.Offset, r.Epoch, src.Node, s.epoch)
				return
			}
			if r.Epoch != s.epoch {
				// Below the source's epoch there, or above it but below
				// the source's last epoch: a later epoch's recovery took a
				// history without it (every confirmed record passes into
				// each later epoch's history), so it was never confirmed.
				// A superseded suffix, never compared.
				break
			}
			if !v.sameRecord(s, r) {
				v.block(node, seam.AsideContradictoryHistory, "contradictory history: n%d and the source n%d hold different records at o=%d in epoch %d", node, src.Node, r.Offset, r.Epoch)
				return
			}
		}
	}
	if rd.id.Next() < l.End {
		return
	}
	got, err := rd.id.Sum()
	if err != nil || got != l.Identity {
		v.block(node, seam.AsideSealMismatch, "n%d's sealed log no longer matches its seal (identity %x, sealed %x)", node, got[:6], l.Identity[:6])
		return
	}
	v.reads = slices.Delete(v.reads, k, k+1)
	v.srcDone = v.srcDone || rd.log == 0
	v.start()
}
