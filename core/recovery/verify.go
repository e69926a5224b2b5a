package recovery

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicemq/sluice/core/digest"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// Sealed reads (seed 004, "Explicit sealed-source reads" and "Explicit
// retained-history inspection"; issue 11 point 4). Before a source is
// accepted, the worker reads the source's whole sealed log and then every
// other complete witness's, a page at a time, and the Verifier checks:
//
//   - each log read hashes to the identity its seal reported (a log that
//     changed since its seal, or a seal that lied, blocks the recovery);
//   - where a witness and the source hold a record at the same offset in
//     the same epoch, it is the same record (one owner writes each offset
//     once per epoch: two different records are contradictory history);
//   - a witness never holds, at an offset, an epoch above the source's
//     there, nor, past the source's end, a record of the source's last
//     epoch or later (either would mean the source is not the furthest
//     log, contrary to the choice);
//   - a witness's records of epochs the source superseded (below the
//     source's epoch at that offset, or past its end) are unconfirmed
//     suffixes: accepted and dropped.
//
// A witness whose seal reports the source's very identity is compared by
// that identity: the identity is BLAKE3 over an unambiguous encoding of
// the bounds and every record (identity.go), so once both logs are read
// and hash to it, they hold the same records, and every record-by-record
// check above holds of them. Only a witness with another identity is
// compared record by record, and the source's records are summed only
// when one is among the witnesses (summing each record apart costs more
// than all the rest of a read: a record's digest is one chunk, with none
// of the identity's many-chunk SIMD).
//
// Every inspection is bounded (pages, records, bytes); exhausting a bound
// blocks the recovery with a diagnostic, never weakens a check.

// Page and inspection bounds (seed 004).
const (
	PageRecordsMax    = 4096
	PageBytesMax      = 16 << 20
	InspectPagesMax   = 1024
	InspectRecordsMax = 1_000_000
	InspectBytesMax   = 256 << 20
	// recordWireBytes is what a record costs a budget beyond its body.
	recordWireBytes = 18
)

// recordSum identifies one record for comparison.
type recordSum struct {
	epoch uint64
	sum   [32]byte
}

func sumOf(r *record.Record, scratch []byte) ([32]byte, []byte) {
	b := binary.AppendUvarint(scratch[:0], r.Epoch)
	b = append(b, byte(r.Kind))
	b = append(b, r.Body...)
	return digest.Sum256(b), b
}

// Verifier checks a chosen source against the other complete witnesses by
// their sealed records.
type Verifier struct {
	q       seam.QueueID
	logs    []Seal // the source first, then the witnesses to compare
	at      int    // the log being read
	id      *Identity
	src     []recordSum       // the source's records, from its start
	epochs  []seam.EpochStart // the source's epoch history
	pages   int
	records int
	bytes   int64
	blocked string
	scratch []byte
	// compare: some witness's identity differs from the source's, so the
	// source's records are summed for a record-by-record comparison
	compare bool
	// past: a witness may hold records past the source's end in the
	// source's last epoch (an isr queue's source is the furthest member
	// of the in-sync set, and a member outside it may be further: what it
	// holds past the source was never confirmed, since a confirm needs
	// every member of the set)
	past bool
}

// NewVerifier starts the verification of source src against witnesses
// (complete witnesses of the same transition; src itself among them is
// skipped).
func NewVerifier(src Seal, witnesses []Seal) *Verifier {
	return newVerifier(src, witnesses, false)
}

// NewISRVerifier is NewVerifier for an isr queue's clean election: the
// source is the furthest member of the last committed in-sync set, and a
// witness outside the set may hold more of the source's last epoch past
// its end (unconfirmed: dropped, not contradictory).
func NewISRVerifier(src Seal, witnesses []Seal) *Verifier {
	return newVerifier(src, witnesses, true)
}

func newVerifier(src Seal, witnesses []Seal, past bool) *Verifier {
	v := &Verifier{q: src.Queue, logs: []Seal{src}, past: past}
	for _, w := range witnesses {
		if w.Node != src.Node {
			v.logs = append(v.logs, w)
			v.compare = v.compare || w.Identity != src.Identity
		}
	}
	v.start()
	return v
}

// start begins reading the next log; an empty one is verified at once.
func (v *Verifier) start() {
	for ; v.at < len(v.logs); v.at++ {
		l := &v.logs[v.at]
		id, err := NewIdentity(v.q, l.Start, l.End)
		if err != nil {
			v.block("n%d's seal: %v", l.Node, err)
			return
		}
		v.id = id
		if l.Start < l.End {
			return
		}
		if got, _ := id.Sum(); got != l.Identity {
			v.block("n%d's empty sealed log does not match its seal", l.Node)
			return
		}
	}
}

func (v *Verifier) block(format string, a ...any) {
	if v.blocked == "" {
		v.blocked = fmt.Sprintf(format, a...)
	}
}

// Blocked says why the source cannot be accepted, or "".
func (v *Verifier) Blocked() string { return v.blocked }

// BlockedOn returns the replica whose sealed log was being read when the
// verification blocked (ok false: not blocked, or on no one log): its log
// may have changed since its seal on purpose (an installation), which a
// fresh seal of it tells.
func (v *Verifier) BlockedOn() (node seam.NodeID, ok bool) {
	if v.blocked == "" || v.at >= len(v.logs) {
		return 0, false
	}
	return v.logs[v.at].Node, true
}

// Done reports whether every log was read and verified.
func (v *Verifier) Done() bool { return v.blocked == "" && v.at >= len(v.logs) }

// Want names the next page to read: node's sealed log from offset from,
// at most PageRecordsMax records. ok is false when done or blocked.
func (v *Verifier) Want() (node seam.NodeID, from uint64, ok bool) {
	if v.blocked != "" || v.at >= len(v.logs) {
		return 0, 0, false
	}
	return v.logs[v.at].Node, v.id.Next(), true
}

// SourceEpochs returns the source's epoch history, once Done (the caller
// must not change it).
func (v *Verifier) SourceEpochs() []seam.EpochStart { return v.epochs }

// Inspected returns the budget used: pages, records and bytes read.
func (v *Verifier) Inspected() (pages, records int, bytes int64) { return v.pages, v.records, v.bytes }

// AddPage takes a page of node's sealed log starting at from. A page that
// is not the one wanted (a late duplicate) is ignored; an empty page of a
// log not read to its end blocks (the log shrank since its seal).
func (v *Verifier) AddPage(node seam.NodeID, from uint64, recs []record.Record) {
	want, wantFrom, ok := v.Want()
	if !ok || node != want || from != wantFrom {
		return
	}
	l := &v.logs[v.at]
	if len(recs) == 0 || len(recs) > PageRecordsMax {
		v.block("n%d's sealed log gave a page of %d records at o=%d, below its sealed end %d", node, len(recs), from, l.End)
		return
	}
	v.pages++
	v.records += len(recs)
	for i := range recs {
		v.bytes += int64(len(recs[i].Body) + recordWireBytes)
	}
	if v.pages > InspectPagesMax || v.records > InspectRecordsMax || v.bytes > InspectBytesMax {
		v.block("inspection budget exhausted (%d pages, %d records, %d bytes; at most %d, %d, %d)",
			v.pages, v.records, v.bytes, InspectPagesMax, InspectRecordsMax, InspectBytesMax)
		return
	}
	src := &v.logs[0]
	// same: this witness's seal reports the source's identity, and its
	// log is compared by it (its last check below)
	same := v.at > 0 && l.Identity == src.Identity
	for i := range recs {
		r := &recs[i]
		if err := v.id.Add(r); err != nil {
			v.block("n%d's sealed log: %v", node, err)
			return
		}
		if same {
			continue
		}
		if v.at == 0 {
			n := len(v.epochs)
			switch {
			case n > 0 && r.Epoch < v.epochs[n-1].Epoch:
				v.block("the source n%d's log goes back from epoch %d to %d at o=%d", node, v.epochs[n-1].Epoch, r.Epoch, r.Offset)
				return
			case n == 0 || r.Epoch > v.epochs[n-1].Epoch:
				if n >= EpochsMax {
					v.block("the source n%d's log holds more than %d epochs", node, EpochsMax)
					return
				}
				v.epochs = append(v.epochs, seam.EpochStart{Epoch: r.Epoch, Offset: r.Offset})
			}
			if v.compare {
				var sum [32]byte
				sum, v.scratch = sumOf(r, v.scratch)
				v.src = append(v.src, recordSum{epoch: r.Epoch, sum: sum})
			}
			continue
		}
		switch {
		case r.Offset >= src.End:
			if r.Epoch > src.LastEpoch || (r.Epoch == src.LastEpoch && !v.past) {
				v.block("n%d holds o=%d of epoch %d past the source n%d's end %d (last epoch %d)", node, r.Offset, r.Epoch, src.Node, src.End, src.LastEpoch)
				return
			}
		case r.Offset >= src.Start:
			s := &v.src[r.Offset-src.Start]
			if r.Epoch > s.epoch {
				v.block("n%d holds o=%d of epoch %d, above the source n%d's epoch %d there", node, r.Offset, r.Epoch, src.Node, s.epoch)
				return
			}
			if r.Epoch != s.epoch {
				break // below the source's epoch there: a superseded suffix, never compared
			}
			var sum [32]byte
			if sum, v.scratch = sumOf(r, v.scratch); sum != s.sum {
				v.block("contradictory history: n%d and the source n%d hold different records at o=%d in epoch %d", node, src.Node, r.Offset, r.Epoch)
				return
			}
		}
	}
	if v.id.Next() < l.End {
		return
	}
	got, err := v.id.Sum()
	if err != nil || got != l.Identity {
		v.block("n%d's sealed log no longer matches its seal (identity %x, sealed %x)", node, got[:6], l.Identity[:6])
		return
	}
	v.at++
	v.start()
}
