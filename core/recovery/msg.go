package recovery

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// Digest is a BLAKE3-256 digest (a transition's, or a content identity).
type Digest [32]byte

// The version markers that open each message.
const (
	markerSealRequest = "RSL1"
	markerSealOk      = "RSO1"
	markerSealRefused = "RSN1"
	markerReadRequest = "RRD1"
	markerReadPage    = "RRO1"
	markerReadRefused = "RRN1"
	markerInstall     = "RIS1"
	markerInstalled   = "RIO1"
	markerInstallNo   = "RIN1"
)

// Limits of the messages.
const (
	// MsgBytesMax bounds every recovery message but a page (a control
	// frame's 64 KiB: docs/design/recovery.md, "Budgets and limits").
	MsgBytesMax = 64 << 10
	// PageMsgBytesMax bounds a page of sealed records (a data frame): its
	// records' bytes within PageBytesMax, and their headers.
	PageMsgBytesMax = PageBytesMax + PageRecordsMax*(recordWireBytes+16) + 1024
	// ReasonBytesMax bounds a refusal's reason.
	ReasonBytesMax = 255
)

// ErrDecode is wrapped by every decoding error.
var ErrDecode = errors.New("recovery: malformed message")

// SealRequest asks a replica of the previous assignment to seal its log of
// Queue for the pending transition bound by Transition, whose proposed
// fencing epoch is Epoch.
type SealRequest struct {
	Queue       seam.QueueID
	Incarnation uint64
	Epoch       uint64
	Transition  Digest
}

// Seal is a sealed replica's evidence: who it is (node and exact
// instances), the transition it sealed for, its retained bounds [Start,
// End), the highest epoch its log holds, the content identity of what it
// retains, and whether its log has detected damage.
type Seal struct {
	Queue       seam.QueueID
	Incarnation uint64
	Epoch       uint64
	Transition  Digest
	Node        seam.NodeID
	Process     uint64
	Storage     uint64
	Start, End  uint64
	LastEpoch   uint64
	Identity    Digest
	// Damaged: the log met damage (it may lack records: a torn tail past
	// its synced end looks the same as a lost write); Lost, with it: the
	// log certainly lost what it acknowledged (it opened without its
	// storage binding, its directory lost or emptied, or with damage to
	// records a later sync's frames lie beyond). Encoded as one byte: 0,
	// 1 (damaged), 2 (lost).
	Damaged, Lost bool
}

// SealRefused says why a replica did not seal (or, Read, did not serve a
// sealed read, or, Install, did not install): Code is what the asker
// decides by, Reason the detail for people.
type SealRefused struct {
	Queue      seam.QueueID
	Transition Digest
	Code       Refusal
	Reason     string
	Read       bool // a refused read ("RRN1"), not a refused seal
	Install    bool // a refused installation ("RIN1")
}

// Refusal is a refused seal's, read's or installation's typed cause. It is
// encoded as one byte (0 and 1 are the values a busy flag had).
type Refusal uint8

const (
	// RefusedFor: a reason that asking the same again will not change at
	// once (a stale or unknown transition, a log that did not open).
	RefusedFor Refusal = 0
	// RefusedBusy: another seal, read or installation runs; ask again soon.
	RefusedBusy Refusal = 1
	// RefusedSourceChanged: the source's sealed log no longer holds what
	// it reported when it was chosen; the worker chooses again.
	RefusedSourceChanged Refusal = 2
	// RefusedNotSealedHere: a sealed read asked of a process that did not
	// seal the log (it restarted); sealing again answers it.
	RefusedNotSealedHere Refusal = 3
	// RefusedStageBudget: the installation's stage would exceed the
	// staging budget (recovery.stage_records_max or stage_bytes_max); the
	// queue stays fenced until an operator raises it.
	RefusedStageBudget Refusal = 4
	// RefusedStorageReplaced: the replica's storage is not the instance
	// the transition names (its disk was replaced): it never seals this
	// transition, so the worker counts it out of the witnesses for good.
	RefusedStorageReplaced Refusal = 5
	// RefusedSourceSilent: the installation's source sent no page it
	// asked for within the installation's deadline (the source paused,
	// cut off or gone): the worker chooses again.
	RefusedSourceSilent Refusal = 6
	refusalMax                  = RefusedSourceSilent
)

func (r Refusal) String() string {
	switch r {
	case RefusedFor:
		return "refused"
	case RefusedBusy:
		return "busy"
	case RefusedSourceChanged:
		return "source-changed"
	case RefusedNotSealedHere:
		return "not-sealed-here"
	case RefusedStageBudget:
		return "stage-budget"
	case RefusedStorageReplaced:
		return "storage-replaced"
	case RefusedSourceSilent:
		return "source-silent"
	}
	return "refusal?"
}

// EpochsMax bounds the source's epoch history an installation carries.
const EpochsMax = 1024

// InstallRequest asks a proposed member of Queue's pending transition to
// install the verified source's history: the source node's sealed log
// [Start, End) with content identity Identity and epoch history Epochs.
type InstallRequest struct {
	Queue       seam.QueueID
	Incarnation uint64
	Epoch       uint64
	Transition  Digest
	Source      seam.NodeID
	Start, End  uint64
	Identity    Digest
	Epochs      []seam.EpochStart
}

// Installed is a proposed member's receipt: Node's log (exact instances)
// holds the source's history [.., End) with identity Identity, durably.
type Installed struct {
	Queue      seam.QueueID
	Transition Digest
	Node       seam.NodeID
	Process    uint64
	Storage    uint64
	End        uint64
	Identity   Digest
}

// ReadRequest asks a sealed replica for a page of its sealed log of Queue
// for the transition bound by Transition: up to Count records from From.
type ReadRequest struct {
	Queue       seam.QueueID
	Incarnation uint64
	Epoch       uint64
	Transition  Digest
	From        uint64
	Count       int
}

// ReadPage is a page of Node's sealed log: Records from From on, in
// offset order.
type ReadPage struct {
	Queue      seam.QueueID
	Transition Digest
	Node       seam.NodeID
	From       uint64
	Records    []record.Record
}

// AppendSealRequest appends r's encoding.
func AppendSealRequest(dst []byte, r *SealRequest) []byte {
	dst = append(dst, markerSealRequest...)
	dst = binary.AppendUvarint(dst, uint64(r.Queue))
	dst = binary.AppendUvarint(dst, r.Incarnation)
	dst = binary.AppendUvarint(dst, r.Epoch)
	return append(dst, r.Transition[:]...)
}

// AppendSeal appends s's encoding.
func AppendSeal(dst []byte, s *Seal) []byte {
	dst = append(dst, markerSealOk...)
	dst = binary.AppendUvarint(dst, uint64(s.Queue))
	dst = binary.AppendUvarint(dst, s.Incarnation)
	dst = binary.AppendUvarint(dst, s.Epoch)
	dst = append(dst, s.Transition[:]...)
	dst = binary.AppendUvarint(dst, uint64(s.Node))
	dst = binary.AppendUvarint(dst, s.Process)
	dst = binary.AppendUvarint(dst, s.Storage)
	dst = binary.AppendUvarint(dst, s.Start)
	dst = binary.AppendUvarint(dst, s.End)
	dst = binary.AppendUvarint(dst, s.LastEpoch)
	dst = append(dst, s.Identity[:]...)
	switch {
	case s.Lost:
		return append(dst, 2)
	case s.Damaged:
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendInstallRequest appends r's encoding.
func AppendInstallRequest(dst []byte, r *InstallRequest) []byte {
	dst = append(dst, markerInstall...)
	dst = binary.AppendUvarint(dst, uint64(r.Queue))
	dst = binary.AppendUvarint(dst, r.Incarnation)
	dst = binary.AppendUvarint(dst, r.Epoch)
	dst = append(dst, r.Transition[:]...)
	dst = binary.AppendUvarint(dst, uint64(r.Source))
	dst = binary.AppendUvarint(dst, r.Start)
	dst = binary.AppendUvarint(dst, r.End)
	dst = append(dst, r.Identity[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(r.Epochs)))
	for _, e := range r.Epochs {
		dst = binary.AppendUvarint(dst, e.Epoch)
		dst = binary.AppendUvarint(dst, e.Offset)
	}
	return dst
}

// AppendInstalled appends r's encoding.
func AppendInstalled(dst []byte, r *Installed) []byte {
	dst = append(dst, markerInstalled...)
	dst = binary.AppendUvarint(dst, uint64(r.Queue))
	dst = append(dst, r.Transition[:]...)
	dst = binary.AppendUvarint(dst, uint64(r.Node))
	dst = binary.AppendUvarint(dst, r.Process)
	dst = binary.AppendUvarint(dst, r.Storage)
	dst = binary.AppendUvarint(dst, r.End)
	return append(dst, r.Identity[:]...)
}

// AppendReadRequest appends r's encoding.
func AppendReadRequest(dst []byte, r *ReadRequest) []byte {
	dst = append(dst, markerReadRequest...)
	dst = binary.AppendUvarint(dst, uint64(r.Queue))
	dst = binary.AppendUvarint(dst, r.Incarnation)
	dst = binary.AppendUvarint(dst, r.Epoch)
	dst = append(dst, r.Transition[:]...)
	dst = binary.AppendUvarint(dst, r.From)
	return binary.AppendUvarint(dst, uint64(r.Count))
}

// AppendReadPage appends p's encoding.
func AppendReadPage(dst []byte, p *ReadPage) []byte {
	dst = append(dst, markerReadPage...)
	dst = binary.AppendUvarint(dst, uint64(p.Queue))
	dst = append(dst, p.Transition[:]...)
	dst = binary.AppendUvarint(dst, uint64(p.Node))
	dst = binary.AppendUvarint(dst, p.From)
	dst = binary.AppendUvarint(dst, uint64(len(p.Records)))
	for i := range p.Records {
		r := &p.Records[i]
		dst = binary.AppendUvarint(dst, r.Epoch)
		dst = append(dst, byte(r.Kind))
		dst = binary.AppendUvarint(dst, uint64(len(r.Body)))
		dst = append(dst, r.Body...)
	}
	return dst
}

// PageSize is the encoding's size of a page of recs, to Grow by.
func PageSize(recs []record.Record) int {
	n := 64
	for i := range recs {
		n += recordWireBytes + 8 + len(recs[i].Body)
	}
	return n
}

// AppendSealRefused appends r's encoding; a reason over ReasonBytesMax is
// cut to it.
func AppendSealRefused(dst []byte, r *SealRefused) []byte {
	switch {
	case r.Install:
		dst = append(dst, markerInstallNo...)
	case r.Read:
		dst = append(dst, markerReadRefused...)
	default:
		dst = append(dst, markerSealRefused...)
	}
	dst = binary.AppendUvarint(dst, uint64(r.Queue))
	dst = append(dst, r.Transition[:]...)
	dst = append(dst, byte(r.Code))
	reason := r.Reason[:min(len(r.Reason), ReasonBytesMax)]
	dst = append(dst, byte(len(reason)))
	return append(dst, reason...)
}

// Kind says which message an encoding holds.
type Kind uint8

const (
	KindSealRequest Kind = 1
	KindSeal        Kind = 2
	KindSealRefused Kind = 3 // a refused seal or read
	KindReadRequest Kind = 4
	KindReadPage    Kind = 5
	KindInstall     Kind = 6
	KindInstalled   Kind = 7
)

// KindOf returns the kind of message b holds by its marker, or an error.
func KindOf(b []byte) (Kind, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: %d bytes, no marker", ErrDecode, len(b))
	}
	switch string(b[:4]) {
	case markerSealRequest:
		return KindSealRequest, nil
	case markerSealOk:
		return KindSeal, nil
	case markerSealRefused, markerReadRefused, markerInstallNo:
		return KindSealRefused, nil
	case markerInstall:
		return KindInstall, nil
	case markerInstalled:
		return KindInstalled, nil
	case markerReadRequest:
		return KindReadRequest, nil
	case markerReadPage:
		return KindReadPage, nil
	}
	return 0, fmt.Errorf("%w: unknown marker %q", ErrDecode, b[:4])
}

// DecodeSealRequest decodes a seal request, strictly.
func DecodeSealRequest(b []byte) (SealRequest, error) {
	d := decoder{b: b}
	d.marker(markerSealRequest)
	r := SealRequest{Queue: d.queue(), Incarnation: d.uvarint(), Epoch: d.uvarint()}
	d.digest(&r.Transition)
	return r, d.finish()
}

// DecodeSeal decodes a seal, strictly.
func DecodeSeal(b []byte) (Seal, error) {
	d := decoder{b: b}
	d.marker(markerSealOk)
	s := Seal{Queue: d.queue(), Incarnation: d.uvarint(), Epoch: d.uvarint()}
	d.digest(&s.Transition)
	s.Node = d.node()
	s.Process, s.Storage = d.uvarint(), d.uvarint()
	s.Start, s.End, s.LastEpoch = d.uvarint(), d.uvarint(), d.uvarint()
	d.digest(&s.Identity)
	switch k := d.byte(); k {
	case 0:
	case 1:
		s.Damaged = true
	case 2:
		s.Damaged, s.Lost = true, true
	default:
		d.fail("a seal's damage is 0, 1 or 2, not %d", k)
	}
	if d.err == nil && s.Start > s.End {
		d.fail("bounds [%d, %d)", s.Start, s.End)
	}
	return s, d.finish()
}

// DecodeInstallRequest decodes an installation request, strictly: the
// epoch history ascending in both epoch and offset, within [Start, End).
func DecodeInstallRequest(b []byte) (InstallRequest, error) {
	d := decoder{b: b}
	d.marker(markerInstall)
	r := InstallRequest{Queue: d.queue(), Incarnation: d.uvarint(), Epoch: d.uvarint()}
	d.digest(&r.Transition)
	r.Source = d.node()
	r.Start, r.End = d.uvarint(), d.uvarint()
	d.digest(&r.Identity)
	n := d.count(EpochsMax)
	for i := uint64(0); i < n && d.err == nil; i++ {
		e := seam.EpochStart{Epoch: d.uvarint(), Offset: d.uvarint()}
		if d.err == nil && (e.Offset < r.Start || e.Offset >= r.End || (i > 0 && (e.Epoch <= r.Epochs[i-1].Epoch || e.Offset <= r.Epochs[i-1].Offset))) {
			d.fail("epoch history entry %d (%d at %d) out of order or bounds", i, e.Epoch, e.Offset)
		}
		r.Epochs = append(r.Epochs, e)
	}
	if d.err == nil && r.Start > r.End {
		d.fail("bounds [%d, %d)", r.Start, r.End)
	}
	if err := d.finish(); err != nil {
		return InstallRequest{}, err
	}
	return r, nil
}

// DecodeInstalled decodes an installation receipt, strictly.
func DecodeInstalled(b []byte) (Installed, error) {
	d := decoder{b: b}
	d.marker(markerInstalled)
	r := Installed{Queue: d.queue()}
	d.digest(&r.Transition)
	r.Node = d.node()
	r.Process, r.Storage, r.End = d.uvarint(), d.uvarint(), d.uvarint()
	d.digest(&r.Identity)
	return r, d.finish()
}

// DecodeReadRequest decodes a sealed read's request, strictly.
func DecodeReadRequest(b []byte) (ReadRequest, error) {
	d := decoder{b: b}
	d.marker(markerReadRequest)
	r := ReadRequest{Queue: d.queue(), Incarnation: d.uvarint(), Epoch: d.uvarint()}
	d.digest(&r.Transition)
	r.From = d.uvarint()
	r.Count = int(d.count(PageRecordsMax))
	return r, d.finish()
}

// DecodeReadPage decodes a page, strictly: records in offset order from
// From, of known kinds, within the page bounds.
func DecodeReadPage(b []byte) (ReadPage, error) {
	d := decoder{b: b, max: PageMsgBytesMax}
	d.marker(markerReadPage)
	p := ReadPage{Queue: d.queue()}
	d.digest(&p.Transition)
	p.Node = d.node()
	p.From = d.uvarint()
	n := d.count(PageRecordsMax)
	if d.err == nil && n > 0 {
		p.Records = make([]record.Record, 0, n)
	}
	bodies := 0
	for i := uint64(0); i < n && d.err == nil; i++ {
		r := record.Record{Offset: p.From + i, Epoch: d.uvarint(), Kind: record.Kind(d.byte())}
		size := d.count(record.BodyBytesMax)
		r.Body = d.bytes(int(size))
		bodies += int(size)
		if d.err == nil && (!r.Kind.Valid() || bodies > PageBytesMax) {
			d.fail("record %d: kind %d, %d body bytes in the page", i, r.Kind, bodies)
		}
		p.Records = append(p.Records, r)
	}
	if err := d.finish(); err != nil {
		return ReadPage{}, err
	}
	return p, nil
}

// DecodeSealRefused decodes a refusal of a seal or a read, strictly.
func DecodeSealRefused(b []byte) (SealRefused, error) {
	d := decoder{b: b}
	var r SealRefused
	switch {
	case len(b) >= 4 && string(b[:4]) == markerReadRefused:
		d.marker(markerReadRefused)
		r.Read = true
	case len(b) >= 4 && string(b[:4]) == markerInstallNo:
		d.marker(markerInstallNo)
		r.Install = true
	default:
		d.marker(markerSealRefused)
	}
	r.Queue = d.queue()
	d.digest(&r.Transition)
	r.Code = Refusal(d.byte())
	if r.Code > refusalMax {
		d.fail("refusal code %d", r.Code)
	}
	n := int(d.byte())
	r.Reason = string(d.bytes(n))
	return r, d.finish()
}

// decoder reads a message, remembering the first error.
type decoder struct {
	b   []byte
	err error
	max int // the message's size limit (0: MsgBytesMax)
}

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrDecode}, a...)...)
	}
	d.b = nil
}

func (d *decoder) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("truncated")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) marker(m string) {
	limit := d.max
	if limit == 0 {
		limit = MsgBytesMax
	}
	if d.err == nil && len(d.b) > limit {
		d.fail("%d bytes, over %d", len(d.b), limit)
		return
	}
	if got := d.bytes(len(m)); d.err == nil && string(got) != m {
		d.fail("marker %q, want %q", got, m)
	}
}

func (d *decoder) byte() byte {
	if v := d.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("a bool is 0 or 1")
	return false
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	// Minimal encodings only, so that one value has one encoding.
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of at most max.
func (d *decoder) count(max uint64) uint64 {
	v := d.uvarint()
	if d.err == nil && v > max {
		d.fail("count %d over %d", v, max)
		return 0
	}
	return v
}

func (d *decoder) queue() seam.QueueID {
	v := d.uvarint()
	if d.err == nil && (v == 0 || v >= uint64(seam.GroupReservedMin)) {
		d.fail("queue id %d out of range", v)
	}
	return seam.QueueID(v)
}

func (d *decoder) node() seam.NodeID {
	v := d.uvarint()
	if d.err == nil && (v == 0 || v > 1<<32-1) {
		d.fail("node id %d out of range", v)
	}
	return seam.NodeID(v)
}

func (d *decoder) digest(dst *Digest) {
	copy(dst[:], d.bytes(len(dst)))
}

// AppendText appends the stable one-line text form of the recovery message
// b, or why it does not decode.
func AppendText(dst []byte, b []byte) []byte {
	k, err := KindOf(b)
	if err == nil {
		switch k {
		case KindSealRequest:
			var r SealRequest
			if r, err = DecodeSealRequest(b); err == nil {
				return fmt.Appendf(dst, "seal-request q=%d incarnation=%d epoch=%d transition=%x", r.Queue, r.Incarnation, r.Epoch, r.Transition[:6])
			}
		case KindSeal:
			var s Seal
			if s, err = DecodeSeal(b); err == nil {
				dst = fmt.Appendf(dst, "seal q=%d epoch=%d n%d/%d/%d [%d,%d) last-epoch=%d damaged=%v id=%x",
					s.Queue, s.Epoch, s.Node, s.Process, s.Storage, s.Start, s.End, s.LastEpoch, s.Damaged, s.Identity[:6])
				if s.Lost {
					dst = append(dst, " lost"...)
				}
				return dst
			}
		case KindSealRefused:
			var r SealRefused
			if r, err = DecodeSealRefused(b); err == nil {
				what := "seal-refused"
				if r.Read {
					what = "read-refused"
				}
				if r.Install {
					what = "install-refused"
				}
				return fmt.Appendf(dst, "%s q=%d code=%s %q", what, r.Queue, r.Code, r.Reason)
			}
		case KindInstall:
			var r InstallRequest
			if r, err = DecodeInstallRequest(b); err == nil {
				return fmt.Appendf(dst, "install-request q=%d epoch=%d source=n%d [%d,%d) id=%x epochs=%d", r.Queue, r.Epoch, r.Source, r.Start, r.End, r.Identity[:6], len(r.Epochs))
			}
		case KindInstalled:
			var r Installed
			if r, err = DecodeInstalled(b); err == nil {
				return fmt.Appendf(dst, "installed q=%d n%d/%d/%d end=%d id=%x", r.Queue, r.Node, r.Process, r.Storage, r.End, r.Identity[:6])
			}
		case KindReadRequest:
			var r ReadRequest
			if r, err = DecodeReadRequest(b); err == nil {
				return fmt.Appendf(dst, "read-request q=%d epoch=%d from=%d count=%d", r.Queue, r.Epoch, r.From, r.Count)
			}
		case KindReadPage:
			var p ReadPage
			if p, err = DecodeReadPage(b); err == nil {
				return fmt.Appendf(dst, "read-page q=%d n%d from=%d records=%d", p.Queue, p.Node, p.From, len(p.Records))
			}
		}
	}
	return fmt.Appendf(dst, "recovery undecodable=%q", err.Error())
}
