// Package record defines the unit of a queue's log: one record, its kinds, and
// its stable text form. Both the core and the storage engine speak it, so a
// record read back from disk is the same value the core appended.
package record

import (
	"encoding/binary"
	"strconv"
)

// Kind says what a record means to the queue state rebuilt from the log.
type Kind uint8

const (
	// KindPublish carries a message body published by a client.
	KindPublish Kind = 1
	// KindAck settles the delivery of an earlier publish; its body is the
	// acked offset as 8 little-endian bytes.
	KindAck Kind = 2
	// KindEpoch opens an epoch: the first record an owner writes in a new
	// epoch. It carries no body. It makes the epoch durable before any record
	// of that epoch leaves the owner.
	KindEpoch Kind = 3
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k >= KindPublish && k <= KindEpoch }

func (k Kind) String() string {
	switch k {
	case KindPublish:
		return "pub"
	case KindAck:
		return "ack"
	case KindEpoch:
		return "epoch"
	}
	return "kind" + strconv.Itoa(int(k))
}

// Record is one entry of a queue log. (Epoch, Offset) identifies it: one
// owner writes each offset at most once per epoch.
type Record struct {
	Epoch  uint64
	Offset uint64
	Kind   Kind
	Body   []byte
}

// BodyBytesMax bounds a record body; larger publishes are refused at the edge.
const BodyBytesMax = 1 << 20

// AppendText appends the record's stable one-line text form (without the body
// bytes, which are summarised by length) to dst.
func (r Record) AppendText(dst []byte) []byte {
	dst = append(dst, "rec e="...)
	dst = strconv.AppendUint(dst, r.Epoch, 10)
	dst = append(dst, " o="...)
	dst = strconv.AppendUint(dst, r.Offset, 10)
	dst = append(dst, ' ')
	dst = append(dst, r.Kind.String()...)
	dst = append(dst, " len="...)
	dst = strconv.AppendInt(dst, int64(len(r.Body)), 10)
	return dst
}

func (r Record) String() string { return string(r.AppendText(nil)) }

// AckBodyBytes is the size of an ack record's body.
const AckBodyBytes = 8

// AckBody returns the body of the ack record of the delivery at offset o:
// o as 8 little-endian bytes.
func AckBody(o uint64) []byte {
	b := make([]byte, AckBodyBytes)
	binary.LittleEndian.PutUint64(b, o)
	return b
}

// AckedOffset returns the offset an ack record's body settles; ok is false
// when the body is not an ack's.
func AckedOffset(body []byte) (o uint64, ok bool) {
	if len(body) != AckBodyBytes {
		return 0, false
	}
	return binary.LittleEndian.Uint64(body), true
}

// EpochStart says that a log's records from Offset on carry Epoch, up to the
// next EpochStart: a log's epoch history is a list of them, ascending. The
// segment log, the core and the checkers share this one definition.
type EpochStart struct {
	Epoch  uint64
	Offset uint64
}
