// Package wire is the codec of peer messages: how a core.Message travels as
// bytes between brokers, in the simulator and on TCP alike. A frame is
//
//	u32 length of what follows the 8-byte header
//	u32 CRC32C (Castagnoli) of what follows the header
//	payload: kind, queue, epoch, then the kind's fields
//
// all little-endian. Decode refuses a frame from its header when the length
// exceeds FrameBytesMax, and refuses any frame whose checksum, lengths or
// counts do not add up, with an error that says why. It never panics on
// untrusted bytes. Decoded record bodies alias the frame's bytes.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// Limits of one frame.
const (
	HeaderBytes   = 8
	FrameBytesMax = 64 << 20
	RecordsMax    = 1 << 16
	EpochsMax     = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors Decode returns, wrapped with detail.
var (
	ErrShort     = errors.New("wire: frame shorter than its header says")
	ErrTooLarge  = errors.New("wire: frame length over the limit")
	ErrChecksum  = errors.New("wire: checksum mismatch")
	ErrMalformed = errors.New("wire: malformed payload")
)

// Append encodes m as one frame appended to dst.
func Append(dst []byte, m *core.Message) []byte {
	dst = slices.Grow(dst, Size(m))
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = append(dst, byte(m.Kind))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(m.Queue))
	dst = binary.LittleEndian.AppendUint64(dst, m.Epoch)
	dst = binary.LittleEndian.AppendUint64(dst, m.Process)
	switch m.Kind {
	case core.MsgAppend, core.MsgFetchReply:
		dst = binary.LittleEndian.AppendUint64(dst, m.Prev)
		dst = binary.LittleEndian.AppendUint64(dst, m.PrevEpoch)
		dst = binary.LittleEndian.AppendUint64(dst, m.Commit)
		dst = binary.LittleEndian.AppendUint64(dst, m.End)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.Records)))
		for i := range m.Records {
			r := &m.Records[i]
			dst = binary.LittleEndian.AppendUint64(dst, r.Epoch)
			dst = binary.LittleEndian.AppendUint64(dst, r.Offset)
			dst = append(dst, byte(r.Kind))
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.Body)))
			dst = append(dst, r.Body...)
		}
	case core.MsgLogQuery:
	case core.MsgFetch:
		dst = binary.LittleEndian.AppendUint64(dst, m.Prev)
	case core.MsgLogReport:
		dst = binary.LittleEndian.AppendUint64(dst, m.End)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.Epochs)))
		for _, e := range m.Epochs {
			dst = binary.LittleEndian.AppendUint64(dst, e.Epoch)
			dst = binary.LittleEndian.AppendUint64(dst, e.Offset)
		}
	case core.MsgAppendReply:
		ok := byte(0)
		if m.Ok {
			ok = 1
		}
		dst = append(dst, ok)
		dst = binary.LittleEndian.AppendUint64(dst, m.End)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.Epochs)))
		for _, e := range m.Epochs {
			dst = binary.LittleEndian.AppendUint64(dst, e.Epoch)
			dst = binary.LittleEndian.AppendUint64(dst, e.Offset)
		}
	default:
		panic("wire: encoding an unknown message kind")
	}
	payload := dst[start+HeaderBytes:]
	if len(payload) > FrameBytesMax {
		panic("wire: message over the frame limit")
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

// Size returns the encoded length of m's frame.
func Size(m *core.Message) int {
	n := HeaderBytes + 1 + 4 + 8 + 8
	switch m.Kind {
	case core.MsgAppend, core.MsgFetchReply:
		n += 8 + 8 + 8 + 8 + 4
		for i := range m.Records {
			n += 8 + 8 + 1 + 4 + len(m.Records[i].Body)
		}
	case core.MsgAppendReply:
		n += 1 + 8 + 4 + 16*len(m.Epochs)
	case core.MsgFetch:
		n += 8
	case core.MsgLogReport:
		n += 8 + 4 + 16*len(m.Epochs)
	}
	return n
}

// FrameLen reads a frame header and returns the whole frame's length, or an
// error when the header announces more than the limit. Stream readers use it
// to refuse an oversized frame before reading its body.
func FrameLen(header []byte) (int, error) {
	if len(header) < HeaderBytes {
		return 0, ErrShort
	}
	n := binary.LittleEndian.Uint32(header)
	if n > FrameBytesMax {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, FrameBytesMax)
	}
	return HeaderBytes + int(n), nil
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

// Decode decodes one whole frame. It returns the message and the frame's
// length, or an error saying why the bytes are refused.
func Decode(frame []byte) (core.Message, int, error) {
	var m core.Message
	n, err := FrameLen(frame)
	if err != nil {
		return m, 0, err
	}
	if len(frame) < n {
		return m, 0, fmt.Errorf("%w: %d of %d bytes", ErrShort, len(frame), n)
	}
	payload := frame[HeaderBytes:n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(frame[4:]) {
		return m, 0, ErrChecksum
	}
	r := reader{b: payload}
	m.Kind = core.MsgKind(r.u8())
	m.Queue = core.QueueID(r.u32())
	m.Epoch = r.u64()
	m.Process = r.u64()
	switch m.Kind {
	case core.MsgAppend, core.MsgFetchReply:
		m.Prev = r.u64()
		m.PrevEpoch = r.u64()
		m.Commit = r.u64()
		m.End = r.u64()
		count := r.u32()
		if count > RecordsMax || int(count)*21 > len(r.b) {
			return m, 0, fmt.Errorf("%w: %d records", ErrMalformed, count)
		}
		if count > 0 {
			m.Records = make([]record.Record, count)
		}
		for i := range m.Records {
			rec := &m.Records[i]
			rec.Epoch = r.u64()
			rec.Offset = r.u64()
			rec.Kind = record.Kind(r.u8())
			size := r.u32()
			if size > record.BodyBytesMax {
				return m, 0, fmt.Errorf("%w: record body of %d bytes", ErrMalformed, size)
			}
			rec.Body = r.take(int(size))
			if r.err == nil && (!rec.Kind.Valid() || rec.Offset != m.Prev+uint64(i)) {
				return m, 0, fmt.Errorf("%w: record %d (kind %d, offset %d) out of place", ErrMalformed, i, rec.Kind, rec.Offset)
			}
			// Epochs never decrease along a log and never exceed the
			// sender's: the core relies on both.
			lo := m.PrevEpoch
			if i > 0 {
				lo = m.Records[i-1].Epoch
			}
			if r.err == nil && (rec.Epoch < lo || rec.Epoch > m.Epoch) {
				return m, 0, fmt.Errorf("%w: record %d has epoch %d outside [%d, %d]", ErrMalformed, i, rec.Epoch, lo, m.Epoch)
			}
		}
	case core.MsgLogQuery:
	case core.MsgFetch:
		m.Prev = r.u64()
	case core.MsgAppendReply, core.MsgLogReport:
		if m.Kind == core.MsgAppendReply {
			ok := r.u8()
			if ok > 1 {
				return m, 0, fmt.Errorf("%w: ok flag %d", ErrMalformed, ok)
			}
			m.Ok = ok == 1
		}
		m.End = r.u64()
		count := r.u32()
		if count > EpochsMax || int(count)*16 > len(r.b) {
			return m, 0, fmt.Errorf("%w: %d epochs", ErrMalformed, count)
		}
		if count > 0 {
			m.Epochs = make([]core.EpochStart, count)
		}
		for i := range m.Epochs {
			m.Epochs[i] = core.EpochStart{Epoch: r.u64(), Offset: r.u64()}
			if i > 0 && r.err == nil && (m.Epochs[i].Epoch <= m.Epochs[i-1].Epoch || m.Epochs[i].Offset < m.Epochs[i-1].Offset) {
				return m, 0, fmt.Errorf("%w: epoch history out of order at entry %d", ErrMalformed, i)
			}
		}
	default:
		return m, 0, fmt.Errorf("%w: unknown message kind %d", ErrMalformed, m.Kind)
	}
	if r.err != nil {
		return m, 0, r.err
	}
	if len(r.b) != 0 {
		return m, 0, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b))
	}
	return m, n, nil
}
