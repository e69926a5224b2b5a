package netio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/sluicemq/sluice/core/seam"
)

// The frame header, little-endian like core/wire:
//
//	offset  size  field
//	0       2     magic "SL"
//	2       1     version (1)
//	3       1     opcode
//	4       4     body length in bytes
//	8       4     CRC32C of bytes 0..8 and the body
const (
	HeaderBytes = 12
	Version     = 1

	// ControlBodyBytesMax and DataBodyBytesMax are the body limits of the two
	// opcode classes: 64 KiB requests and replies, 64 MiB envelopes.
	ControlBodyBytesMax = 64 << 10
	DataBodyBytesMax    = 64 << 20

	// GroupIDBytes is the group id at the head of a GroupMessage body.
	GroupIDBytes = 8
)

// Magic opens every frame, so that a stray client (an AMQP client on the
// wrong port, an HTTP probe) is refused on its first two bytes.
var Magic = [2]byte{'S', 'L'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of the codec, each wrapped with detail. A stream reader also wraps
// the underlying I/O error (io.ErrUnexpectedEOF, a deadline), so errors.Is
// sees both.
var (
	ErrMagic           = errors.New("netio: bad magic, not a sluice peer frame")
	ErrVersion         = errors.New("netio: unknown frame version")
	ErrOpcode          = errors.New("netio: unknown opcode")
	ErrTooLarge        = errors.New("netio: body length over the opcode's limit")
	ErrChecksum        = errors.New("netio: checksum mismatch")
	ErrTruncatedHeader = errors.New("netio: truncated frame header")
	ErrTruncatedBody   = errors.New("netio: truncated frame body")
	ErrTrailing        = errors.New("netio: trailing bytes after the frame")
	ErrMalformed       = errors.New("netio: malformed body")
)

// Opcode names what a frame's body is. Its class sets the body limit.
type Opcode uint8

// The opcodes. Values are wire format: never renumber, only add.
const (
	OpHello     Opcode = 1 // handshake: dialer's id and nonce
	OpChallenge Opcode = 2 // handshake: listener's id, nonce and MAC
	OpProof     Opcode = 3 // handshake: dialer's MAC
	OpWelcome   Opcode = 4 // handshake: the listener accepts

	OpGroupMessage Opcode = 16 // replication: u64 group id + the group's message

	// Placeholders for peer control operations with no bodies of their own
	// (sealed recovery's messages travel as GroupMessage frames); their
	// bodies are opaque here. They exist so that the authentication gate is tested
	// against every kind of peer operation.
	OpSeal         Opcode = 32
	OpSealReply    Opcode = 33
	OpRead         Opcode = 34
	OpReadReply    Opcode = 35
	OpInstall      Opcode = 36
	OpInstallReply Opcode = 37

	// Client forwarding (daemon/forward.go has the bodies): a broker that
	// does not own a queue carries its clients' requests to the owner on
	// a connection of their own, and the owner answers on it.
	OpClientRequest Opcode = 48 // a client's core request, forwarded to the broker that serves it
	OpClientEffect  Opcode = 49 // the core's reply, delivery or cancel for a forwarded client
	OpClientGone    Opcode = 50 // a forwarded client is gone
)

// Class is an opcode's limit class.
type Class uint8

// The classes.
const (
	ClassControl Class = 1 // body at most ControlBodyBytesMax
	ClassData    Class = 2 // body at most DataBodyBytesMax
)

type opInfo struct {
	name      string
	class     Class
	handshake bool
}

// ops is the opcode table (doc.go prints it). Absent opcodes are unknown.
var ops = [256]opInfo{
	OpHello:        {"Hello", ClassControl, true},
	OpChallenge:    {"Challenge", ClassControl, true},
	OpProof:        {"Proof", ClassControl, true},
	OpWelcome:      {"Welcome", ClassControl, true},
	OpGroupMessage: {"GroupMessage", ClassData, false},
	OpSeal:         {"Seal", ClassControl, false},
	OpSealReply:    {"SealReply", ClassControl, false},
	OpRead:         {"Read", ClassControl, false},
	OpReadReply:    {"ReadReply", ClassData, false},
	OpInstall:      {"Install", ClassData, false},
	OpInstallReply: {"InstallReply", ClassData, false},

	OpClientRequest: {"ClientRequest", ClassData, false},
	OpClientEffect:  {"ClientEffect", ClassData, false},
	OpClientGone:    {"ClientGone", ClassControl, false},
}

// Opcodes returns every known opcode in ascending order.
func Opcodes() []Opcode {
	var out []Opcode
	for i := range ops {
		if ops[i].class != 0 {
			out = append(out, Opcode(i))
		}
	}
	return out
}

// Known reports whether op is in the opcode table.
func (op Opcode) Known() bool { return ops[op].class != 0 }

// Class returns the opcode's class (0 for an unknown opcode).
func (op Opcode) Class() Class { return ops[op].class }

// Handshake reports whether op belongs to the handshake. A handshake opcode
// after the handshake, or any other opcode before its end, is refused.
func (op Opcode) Handshake() bool { return ops[op].handshake }

// BodyBytesMax returns the body limit of op's class (0 when unknown).
func (op Opcode) BodyBytesMax() int {
	switch ops[op].class {
	case ClassControl:
		return ControlBodyBytesMax
	case ClassData:
		return DataBodyBytesMax
	}
	return 0
}

func (op Opcode) String() string {
	if op.Known() {
		return ops[op].name
	}
	return fmt.Sprintf("Opcode(%d)", uint8(op))
}

// Header is a decoded frame header.
type Header struct {
	Op        Opcode
	BodyBytes int
	Sum       uint32 // CRC32C of header bytes 0..8 and the body
}

// DecodeHeader checks the header at the start of b and returns it. It refuses
// unknown magic, version or opcode, and a body length over the opcode's
// limit, from these 12 bytes alone: a reader calls it before it allocates or
// reads any of the body.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderBytes {
		return Header{}, fmt.Errorf("%w: %d of %d bytes", ErrTruncatedHeader, len(b), HeaderBytes)
	}
	if b[0] != Magic[0] || b[1] != Magic[1] {
		return Header{}, fmt.Errorf("%w: %#02x %#02x", ErrMagic, b[0], b[1])
	}
	if b[2] != Version {
		return Header{}, fmt.Errorf("%w: %d, this build speaks %d", ErrVersion, b[2], Version)
	}
	op := Opcode(b[3])
	if !op.Known() {
		return Header{}, fmt.Errorf("%w: %d", ErrOpcode, b[3])
	}
	n := binary.LittleEndian.Uint32(b[4:])
	// Compare as uint32 so a length above MaxInt on a 32-bit build is refused too.
	if n > uint32(op.BodyBytesMax()) {
		return Header{}, fmt.Errorf("%w: %s announces %d bytes, limit %d", ErrTooLarge, op, n, op.BodyBytesMax())
	}
	return Header{Op: op, BodyBytes: int(n), Sum: binary.LittleEndian.Uint32(b[8:])}, nil
}

// putHeader writes the header of a frame of op with body into h, which
// holds at least HeaderBytes.
func putHeader(h []byte, op Opcode, body []byte) {
	if !op.Known() {
		panic(fmt.Sprintf("netio: encoding unknown opcode %d", uint8(op)))
	}
	if len(body) > op.BodyBytesMax() {
		panic(fmt.Sprintf("netio: encoding %s with %d bytes, limit %d", op, len(body), op.BodyBytesMax()))
	}
	h[0], h[1], h[2], h[3] = Magic[0], Magic[1], Version, byte(op)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[8:], checksum(h[:8], body))
}

// checksum covers the header's first 8 bytes as well as the body, so that a
// flipped opcode bit (which could turn one known opcode into another) or a
// flipped length bit is caught like a flipped body bit.
func checksum(head, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, body)
}

// AppendFrame appends the frame of op with body to dst. It allocates only
// when dst lacks the capacity. Encoding an unknown opcode or a body over its
// limit is a programmer error and panics.
func AppendFrame(dst []byte, op Opcode, body []byte) []byte {
	dst = slices.Grow(dst, HeaderBytes+len(body))
	start := len(dst)
	dst = append(dst, make([]byte, HeaderBytes)...)
	putHeader(dst[start:], op, body)
	return append(dst, body...)
}

// Frame is one decoded frame. Body aliases the buffer it was decoded from.
type Frame struct {
	Op   Opcode
	Body []byte
}

// DecodeFrame decodes exactly one frame from b: b must hold the frame and
// nothing more (ErrTrailing otherwise). Body aliases b.
func DecodeFrame(b []byte) (Frame, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return Frame{}, err
	}
	n := HeaderBytes + h.BodyBytes
	if len(b) < n {
		return Frame{}, fmt.Errorf("%w: %s has %d of %d body bytes", ErrTruncatedBody, h.Op, len(b)-HeaderBytes, h.BodyBytes)
	}
	if len(b) > n {
		return Frame{}, fmt.Errorf("%w: %d bytes after a %d-byte %s frame", ErrTrailing, len(b)-n, n, h.Op)
	}
	body := b[HeaderBytes:n]
	if got := checksum(b[:8], body); got != h.Sum {
		return Frame{}, fmt.Errorf("%w: %s frame sums to %#08x, header says %#08x", ErrChecksum, h.Op, got, h.Sum)
	}
	return Frame{Op: h.Op, Body: body}, nil
}

// readHeader reads and checks one header from r. A clean end of stream
// before the first byte is io.EOF itself; an end inside the header is
// ErrTruncatedHeader.
func readHeader(r io.Reader, h *[HeaderBytes]byte) (Header, error) {
	n, err := io.ReadFull(r, h[:])
	if err != nil {
		if n == 0 && err == io.EOF {
			return Header{}, io.EOF
		}
		return Header{}, fmt.Errorf("%w: %d of %d bytes: %w", ErrTruncatedHeader, n, HeaderBytes, err)
	}
	return DecodeHeader(h[:])
}

// bodyChunkBytes is the first allocation for a body read into a new slice.
// The slice doubles only as bytes arrive, so a peer that announces 64 MiB
// and sends nothing costs this much memory, not the announced length.
const bodyChunkBytes = 64 << 10

// readBody reads the body announced by hd (already checked against its
// limit) into buf when it fits, else into a new slice, and verifies the sum.
func readBody(r io.Reader, head *[HeaderBytes]byte, hd Header, buf []byte) (Frame, error) {
	n := hd.BodyBytes
	if n > hd.Op.BodyBytesMax() {
		panic("netio: reading a body the header check should have refused")
	}
	var body []byte
	var err error
	if cap(buf) >= n {
		var k int
		k, err = io.ReadFull(r, buf[:n])
		body = buf[:k]
	} else {
		body = make([]byte, 0, min(n, bodyChunkBytes))
		for len(body) < n && err == nil {
			if len(body) == cap(body) {
				body = slices.Grow(body, min(n, 2*cap(body))-len(body))
			}
			var k int
			k, err = io.ReadFull(r, body[len(body):min(cap(body), n)])
			body = body[:len(body)+k]
		}
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the header promised a body
		}
		return Frame{}, fmt.Errorf("%w: %s has %d of %d body bytes: %w", ErrTruncatedBody, hd.Op, len(body), n, err)
	}
	if got := checksum(head[:8], body); got != hd.Sum {
		return Frame{}, fmt.Errorf("%w: %s frame sums to %#08x, header says %#08x", ErrChecksum, hd.Op, got, hd.Sum)
	}
	return Frame{Op: hd.Op, Body: body}, nil
}

// ReadFrame reads one frame from a stream. The header is checked before any
// of the body is read or allocated, so an oversized or unknown frame costs
// its 12 header bytes and nothing more. The body goes into buf when buf has
// the capacity (Body then aliases buf), else into a new slice. A clean end
// of stream between frames is io.EOF itself.
func ReadFrame(r io.Reader, buf []byte) (Frame, error) {
	var head [HeaderBytes]byte
	hd, err := readHeader(r, &head)
	if err != nil {
		return Frame{}, err
	}
	return readBody(r, &head, hd, buf)
}

// AppendGroupMessage appends the body of a GroupMessage: group g's message
// as core/wire carries it today, without core/wire's own length and sum
// (the netio frame has both).
func AppendGroupMessage(dst []byte, g seam.GroupID, msg []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(g))
	return append(dst, msg...)
}

// DecodeGroupMessage splits a GroupMessage body into its group and message
// (aliasing body). What the message holds is the group's business.
func DecodeGroupMessage(body []byte) (seam.GroupID, []byte, error) {
	if len(body) < GroupIDBytes {
		return 0, nil, fmt.Errorf("%w: GroupMessage body of %d bytes cannot hold a group id", ErrMalformed, len(body))
	}
	return seam.GroupID(binary.LittleEndian.Uint64(body)), body[GroupIDBytes:], nil
}
