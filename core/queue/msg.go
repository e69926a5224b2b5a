package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// MsgKind says what a queue replica's peer message is.
type MsgKind uint8

const (
	// MsgAppend: owner to follower. Records continue the owner's log at
	// Prev; the record before Prev has epoch PrevEpoch. Commit is the owner's
	// confirmed end, Start its log's start (a follower deletes its head up
	// to it). An append with no records is a probe or heartbeat. Reset: the
	// follower's log, if it does not match at Prev, is to be reseeded:
	// emptied and restarted at Prev (the owner's start), with Epochs as the
	// history below it.
	MsgAppend MsgKind = 1
	// MsgAppendReply: follower to owner. Ok: the follower's log matches the
	// owner's below End and holds it durably. Not Ok: the follower could not
	// match Prev; Start, End and Epochs describe its log so the owner can
	// find where the two diverge.
	MsgAppendReply MsgKind = 2
	// (Kinds 3 to 6 were the messages of an owner that rebuilt its damaged
	// log from its followers, before sealed recovery replaced it: never
	// reused, refused as unknown.)
)

// Msg is one peer message between replicas of a queue.
//
// Epoch is the sender's epoch: on the owner's messages the epoch it writes
// in (it fences older owners' messages); on a follower's, the highest epoch
// it has seen from an owner (which may be above the last epoch its log
// holds). Process is the
// sender's process sequence number: it grows with every start of a broker,
// so a receiver can tell a restarted peer (whose earlier reports may no
// longer hold) from a stale message of an old one.
type Msg struct {
	Kind    MsgKind
	Epoch   uint64
	Process uint64

	Prev      uint64          // append
	PrevEpoch uint64          // append
	Commit    uint64          // append
	Reset     bool            // append
	Records   []record.Record // append

	Start  uint64            // append: the owner's log start; reply: the follower's
	Ok     bool              // append-reply
	End    uint64            // append-reply
	Epochs []seam.EpochStart // append-reply when not Ok; append with Reset: the history below Prev
}

// Codec limits of one message.
const (
	RecordsMax = 1 << 16
	EpochsMax  = 1 << 16
)

// ErrMalformed is wrapped by every refusal of DecodeMsg.
var ErrMalformed = errors.New("queue: malformed message")

// AppendMsg encodes m after dst:
//
//	kind u8 | epoch u64 | process u64 | the kind's fields
//
// little-endian. append: prev, prev epoch, commit, end, start u64, reset
// u8, epoch count u32, epochs (epoch u64, offset u64 each), record count
// u32, then per record epoch u64, offset u64, kind u8, body length u32,
// body. append-reply: ok u8, end, start u64, epoch count u32, epochs.
func AppendMsg(dst []byte, m *Msg) []byte {
	le := binary.LittleEndian
	dst = append(dst, byte(m.Kind))
	dst = le.AppendUint64(dst, m.Epoch)
	dst = le.AppendUint64(dst, m.Process)
	switch m.Kind {
	case MsgAppend:
		dst = le.AppendUint64(dst, m.Prev)
		dst = le.AppendUint64(dst, m.PrevEpoch)
		dst = le.AppendUint64(dst, m.Commit)
		dst = le.AppendUint64(dst, m.End)
		dst = le.AppendUint64(dst, m.Start)
		reset := byte(0)
		if m.Reset {
			reset = 1
		}
		dst = append(dst, reset)
		dst = appendEpochsWire(dst, m.Epochs)
		dst = le.AppendUint32(dst, uint32(len(m.Records)))
		for i := range m.Records {
			r := &m.Records[i]
			dst = le.AppendUint64(dst, r.Epoch)
			dst = le.AppendUint64(dst, r.Offset)
			dst = append(dst, byte(r.Kind))
			dst = le.AppendUint32(dst, uint32(len(r.Body)))
			dst = append(dst, r.Body...)
		}
	case MsgAppendReply:
		ok := byte(0)
		if m.Ok {
			ok = 1
		}
		dst = append(dst, ok)
		dst = le.AppendUint64(dst, m.End)
		dst = le.AppendUint64(dst, m.Start)
		dst = appendEpochsWire(dst, m.Epochs)
	default:
		panic("queue: encoding an unknown message kind")
	}
	return dst
}

func appendEpochsWire(dst []byte, h []seam.EpochStart) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, uint32(len(h)))
	for _, e := range h {
		dst = le.AppendUint64(dst, e.Epoch)
		dst = le.AppendUint64(dst, e.Offset)
	}
	return dst
}

// MsgSize returns the encoded length of m.
func MsgSize(m *Msg) int {
	n := 1 + 8 + 8
	switch m.Kind {
	case MsgAppend:
		n += 8 + 8 + 8 + 8 + 8 + 1 + 4 + 16*len(m.Epochs) + 4
		for i := range m.Records {
			n += 8 + 8 + 1 + 4 + len(m.Records[i].Body)
		}
	case MsgAppendReply:
		n += 1 + 8 + 8 + 4 + 16*len(m.Epochs)
	}
	return n
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: %d bytes wanted, %d left", ErrMalformed, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// DecodeMsg decodes a whole message, refusing truncated or trailing bytes,
// unknown kinds, counts over the limits, records out of place and epoch
// histories out of order, with an error that says why. Record bodies alias
// data.
func DecodeMsg(data []byte) (Msg, error) {
	var m Msg
	err := DecodeMsgInto(&m, data)
	return m, err
}

// DecodeMsgInto is DecodeMsg into m, reusing the capacity of m's Records
// and Epochs: a replica decodes every message into one scratch Msg, so
// decoding allocates nothing once it has grown.
func DecodeMsgInto(m *Msg, data []byte) error {
	recs, epochs := m.Records[:0], m.Epochs[:0]
	*m = Msg{Records: recs, Epochs: epochs}
	r := reader{b: data}
	m.Kind = MsgKind(r.u8())
	m.Epoch = r.u64()
	m.Process = r.u64()
	switch m.Kind {
	case MsgAppend:
		m.Prev = r.u64()
		m.PrevEpoch = r.u64()
		m.Commit = r.u64()
		m.End = r.u64()
		m.Start = r.u64()
		reset := r.u8()
		if reset > 1 {
			return fmt.Errorf("%w: reset flag %d", ErrMalformed, reset)
		}
		m.Reset = reset == 1
		if err := m.decodeEpochs(&r, epochs); err != nil {
			return err
		}
		if len(m.Epochs) > 0 && (!m.Reset || m.Epochs[len(m.Epochs)-1].Offset >= m.Prev) {
			return fmt.Errorf("%w: an epoch history on an append that resets nothing below it", ErrMalformed)
		}
		count := r.u32()
		if count > RecordsMax || int(count)*21 > len(r.b) {
			return fmt.Errorf("%w: %d records", ErrMalformed, count)
		}
		if count > 0 {
			m.Records = slices.Grow(recs, int(count))[:count]
		}
		for i := range m.Records {
			rec := &m.Records[i]
			rec.Epoch = r.u64()
			rec.Offset = r.u64()
			rec.Kind = record.Kind(r.u8())
			size := r.u32()
			if size > record.BodyBytesMax {
				return fmt.Errorf("%w: record body of %d bytes", ErrMalformed, size)
			}
			rec.Body = r.take(int(size))
			if r.err == nil && (!rec.Kind.Valid() || rec.Offset != m.Prev+uint64(i)) {
				return fmt.Errorf("%w: record %d (kind %d, offset %d) out of place", ErrMalformed, i, rec.Kind, rec.Offset)
			}
			// Epochs never decrease along a log and never exceed the
			// sender's: the replica relies on both.
			lo := m.PrevEpoch
			if i > 0 {
				lo = m.Records[i-1].Epoch
			}
			if r.err == nil && (rec.Epoch < lo || rec.Epoch > m.Epoch) {
				return fmt.Errorf("%w: record %d has epoch %d outside [%d, %d]", ErrMalformed, i, rec.Epoch, lo, m.Epoch)
			}
		}
	case MsgAppendReply:
		ok := r.u8()
		if ok > 1 {
			return fmt.Errorf("%w: ok flag %d", ErrMalformed, ok)
		}
		m.Ok = ok == 1
		m.End = r.u64()
		m.Start = r.u64()
		if err := m.decodeEpochs(&r, epochs); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: unknown message kind %d", ErrMalformed, m.Kind)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b))
	}
	return nil
}

// decodeEpochs reads an epoch history (count u32, entries) into m.Epochs,
// reusing epochs' capacity.
func (m *Msg) decodeEpochs(r *reader, epochs []seam.EpochStart) error {
	count := r.u32()
	if count > EpochsMax || int(count)*16 > len(r.b) {
		return fmt.Errorf("%w: %d epochs", ErrMalformed, count)
	}
	m.Epochs = epochs[:0]
	if count > 0 {
		m.Epochs = slices.Grow(epochs, int(count))[:count]
	}
	for i := range m.Epochs {
		m.Epochs[i] = seam.EpochStart{Epoch: r.u64(), Offset: r.u64()}
		if i > 0 && r.err == nil && (m.Epochs[i].Epoch <= m.Epochs[i-1].Epoch || m.Epochs[i].Offset < m.Epochs[i-1].Offset) {
			return fmt.Errorf("%w: epoch history out of order at entry %d", ErrMalformed, i)
		}
	}
	return r.err
}

// appendHead writes what every message's text starts with: kind, queue,
// epoch and sender process.
func (m *Msg) appendHead(dst []byte, kind string, g seam.GroupID) []byte {
	dst = append(dst, kind...)
	dst = seam.AppendKV(dst, "q", uint64(g))
	dst = seam.AppendKV(dst, "e", m.Epoch)
	return seam.AppendKV(dst, "p", m.Process)
}

// AppendText appends the message's stable one-line text form; g is the
// queue's group.
func (m *Msg) AppendText(dst []byte, g seam.GroupID) []byte {
	switch m.Kind {
	case MsgAppend:
		dst = m.appendHead(dst, "append", g)
		dst = seam.AppendKV(dst, "prev", m.Prev)
		dst = seam.AppendKV(dst, "preve", m.PrevEpoch)
		dst = seam.AppendKV(dst, "commit", m.Commit)
		if m.Start > 0 {
			dst = seam.AppendKV(dst, "start", m.Start)
		}
		if m.Reset {
			dst = seam.AppendEpochs(append(dst, " reset"...), m.Epochs)
		}
		// The records start at prev: say only how many and how big.
		dst = seam.AppendKV(dst, "recs", uint64(len(m.Records)))
		var bytes int
		for i := range m.Records {
			bytes += len(m.Records[i].Body)
		}
		return seam.AppendKV(dst, "bytes", uint64(bytes))
	case MsgAppendReply:
		dst = m.appendHead(dst, "append-reply", g)
		if m.Ok {
			dst = append(dst, " ok"...)
		} else {
			dst = append(dst, " reject"...)
		}
		dst = seam.AppendKV(dst, "end", m.End)
		if m.Start > 0 {
			dst = seam.AppendKV(dst, "start", m.Start)
		}
		if !m.Ok {
			dst = seam.AppendEpochs(dst, m.Epochs)
		}
		return dst
	}
	return seam.AppendKV(append(dst, "msg?"...), "kind", uint64(m.Kind))
}

// AppendMsgText renders an encoded message of group g, or says why it does
// not decode.
func AppendMsgText(dst []byte, g seam.GroupID, data []byte) []byte {
	m, err := DecodeMsg(data)
	if err != nil {
		dst = seam.AppendKV(append(dst, "bad-msg"...), "q", uint64(g))
		return seam.AppendKVStr(dst, "err", err.Error())
	}
	return m.AppendText(dst, g)
}
