package recovery

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/core/seam"
)

// Digest is a BLAKE3-256 digest (a transition's, or a content identity).
type Digest [32]byte

// The version markers that open each message.
const (
	markerSealRequest = "RSL1"
	markerSealOk      = "RSO1"
	markerSealRefused = "RSN1"
)

// Limits of the messages.
const (
	// MsgBytesMax bounds every recovery message (seed 004's control
	// frames: 64 KiB).
	MsgBytesMax = 64 << 10
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
	Damaged     bool
}

// SealRefused says why a replica did not seal: Busy (another seal runs;
// retry), or a reason that retrying the same request will not change
// (a stale or unknown transition).
type SealRefused struct {
	Queue      seam.QueueID
	Transition Digest
	Busy       bool
	Reason     string
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
	return append(dst, boolByte(s.Damaged))
}

// AppendSealRefused appends r's encoding; a reason over ReasonBytesMax is
// cut to it.
func AppendSealRefused(dst []byte, r *SealRefused) []byte {
	dst = append(dst, markerSealRefused...)
	dst = binary.AppendUvarint(dst, uint64(r.Queue))
	dst = append(dst, r.Transition[:]...)
	dst = append(dst, boolByte(r.Busy))
	reason := r.Reason[:min(len(r.Reason), ReasonBytesMax)]
	dst = append(dst, byte(len(reason)))
	return append(dst, reason...)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Kind says which message an encoding holds.
type Kind uint8

const (
	KindSealRequest Kind = 1
	KindSeal        Kind = 2
	KindSealRefused Kind = 3
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
	case markerSealRefused:
		return KindSealRefused, nil
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
	s.Damaged = d.bool()
	if d.err == nil && s.Start > s.End {
		d.fail("bounds [%d, %d)", s.Start, s.End)
	}
	return s, d.finish()
}

// DecodeSealRefused decodes a refusal, strictly.
func DecodeSealRefused(b []byte) (SealRefused, error) {
	d := decoder{b: b}
	d.marker(markerSealRefused)
	r := SealRefused{Queue: d.queue()}
	d.digest(&r.Transition)
	r.Busy = d.bool()
	n := int(d.byte())
	r.Reason = string(d.bytes(n))
	return r, d.finish()
}

// decoder reads a message, remembering the first error.
type decoder struct {
	b   []byte
	err error
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
	if d.err == nil && len(d.b) > MsgBytesMax {
		d.fail("%d bytes, over %d", len(d.b), MsgBytesMax)
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
				return fmt.Appendf(dst, "seal q=%d epoch=%d n%d/%d/%d [%d,%d) last-epoch=%d damaged=%v id=%x",
					s.Queue, s.Epoch, s.Node, s.Process, s.Storage, s.Start, s.End, s.LastEpoch, s.Damaged, s.Identity[:6])
			}
		case KindSealRefused:
			var r SealRefused
			if r, err = DecodeSealRefused(b); err == nil {
				return fmt.Appendf(dst, "seal-refused q=%d busy=%v %q", r.Queue, r.Busy, r.Reason)
			}
		}
	}
	return fmt.Appendf(dst, "recovery undecodable=%q", err.Error())
}
