// Package wire is the frame of peer messages: how a group's message travels
// as bytes between brokers, in the simulator and on TCP alike. A frame is
//
//	u32 length of what follows the 8-byte header
//	u32 CRC32C (Castagnoli) of what follows the header
//	u64 group id
//	the group's message, as its kind of state machine encodes it
//
// all little-endian. Decode refuses a frame from its header when the length
// exceeds FrameBytesMax, and refuses any frame whose checksum or length does
// not add up, with an error that says why; it never panics on untrusted
// bytes. What a group's message holds is the group's business: the node
// decodes it strictly and refuses (and counts) what does not decode.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/ctrl"
)

// Limits of one frame.
const (
	HeaderBytes   = 8
	GroupBytes    = 8
	FrameBytesMax = 64 << 20
)

// A frame holds the metadata group's largest message (a snapshot with the
// largest image): this constant does not compile otherwise.
const _ = uint(FrameBytesMax - GroupBytes - ctrl.MsgBytesMax)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors Decode returns, wrapped with detail.
var (
	ErrShort     = errors.New("wire: frame shorter than its header says")
	ErrTooLarge  = errors.New("wire: frame length over the limit")
	ErrChecksum  = errors.New("wire: checksum mismatch")
	ErrMalformed = errors.New("wire: malformed frame")
)

// Append encodes a message of group g as one frame appended to dst.
func Append(dst []byte, g core.GroupID, msg []byte) []byte {
	n := GroupBytes + len(msg)
	if n > FrameBytesMax {
		panic("wire: message over the frame limit")
	}
	dst = slices.Grow(dst, HeaderBytes+n)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(g))
	dst = append(dst, msg...)
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+HeaderBytes:], castagnoli))
	return dst
}

// Size returns the length of the frame of a message of n bytes.
func Size(n int) int { return HeaderBytes + GroupBytes + n }

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
	if n < GroupBytes {
		return 0, fmt.Errorf("%w: %d bytes cannot hold a group id", ErrMalformed, n)
	}
	return HeaderBytes + int(n), nil
}

// Decode decodes one whole frame: the group, its message (aliasing frame)
// and the frame's length, or an error saying why the bytes are refused.
func Decode(frame []byte) (g core.GroupID, msg []byte, n int, err error) {
	n, err = FrameLen(frame)
	if err != nil {
		return 0, nil, 0, err
	}
	if len(frame) < n {
		return 0, nil, 0, fmt.Errorf("%w: %d of %d bytes", ErrShort, len(frame), n)
	}
	payload := frame[HeaderBytes:n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(frame[4:]) {
		return 0, nil, 0, ErrChecksum
	}
	return core.GroupID(binary.LittleEndian.Uint64(payload)), payload[GroupBytes:], n, nil
}
