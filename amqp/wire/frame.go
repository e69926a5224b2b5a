package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ProtocolHeader is what a 0-9-1 client sends first, and what the server
// answers a client that asked for another protocol before closing.
var ProtocolHeader = [8]byte{'A', 'M', 'Q', 'P', 0, 0, 9, 1}

// ReadProtocolHeader reads the 8 octets a client opens with. ok is true when
// they are ProtocolHeader. Otherwise answer is the header the server must
// write before closing the socket (spec, connection.start rule
// protocol-name: the server "MUST respond with a valid protocol header and
// then close the socket connection"), whatever the client sent (another
// AMQP version, HTTP, TLS); it is a fresh copy of ProtocolHeader. err is an I/O error, io.ErrUnexpectedEOF when the client
// closed within the 8 octets; a client that sends fewer and waits blocks
// the read, so the caller sets a deadline on the connection.
func ReadProtocolHeader(r io.Reader) (ok bool, answer []byte, err error) {
	var got [8]byte
	if _, err := io.ReadFull(r, got[:]); err != nil {
		return false, nil, err
	}
	if got == ProtocolHeader {
		return true, nil, nil
	}
	answer = append([]byte(nil), ProtocolHeader[:]...)
	return false, answer, nil
}

// Frame is one frame. Payload excludes the frame-end octet.
type Frame struct {
	Type    uint8
	Channel uint16
	Payload []byte
}

// checkFrameMax validates a frame_max for a reader or writer: the server
// always negotiates a limit (0, "no limit" in the spec, is refused), at
// least the spec's frame-min-size and at most FrameBytesMax.
func checkFrameMax(frameMaxBytes uint32) error {
	if frameMaxBytes < FrameBytesMin || frameMaxBytes > FrameBytesMax {
		return fmt.Errorf("amqp/wire: frame_max %d bytes outside [%d, %d] (0 is no limit, which this server never negotiates)",
			frameMaxBytes, FrameBytesMin, FrameBytesMax)
	}
	return nil
}

// FrameReader reads frames from a stream under a frame_max. Until
// connection.tune-ok the front door reads with FrameBytesMin (the spec:
// peers accept frames of frame-min-size before tuning), then calls
// SetFrameMax with the negotiated value (spec: "Until the frame-max has
// been negotiated, both peers MUST accept frames of up to frame-min-size
// octets large").
type FrameReader struct {
	r             io.Reader
	frameMaxBytes uint32
	header        [FrameHeaderBytes]byte
	buf           []byte // payload and frame-end; reused, never over frameMaxBytes
}

// NewFrameReader returns a reader of r with the given frame_max.
func NewFrameReader(r io.Reader, frameMaxBytes uint32) (*FrameReader, error) {
	if err := checkFrameMax(frameMaxBytes); err != nil {
		return nil, err
	}
	return &FrameReader{r: r, frameMaxBytes: frameMaxBytes}, nil
}

// SetFrameMax changes the frame_max, after tuning.
func (fr *FrameReader) SetFrameMax(frameMaxBytes uint32) error {
	if err := checkFrameMax(frameMaxBytes); err != nil {
		return err
	}
	fr.frameMaxBytes = frameMaxBytes
	return nil
}

// ReadFrame reads one frame. The payload aliases the reader's buffer and is
// valid until the next call. The size is checked against frame_max from
// the 7-byte header, before the payload is read or any buffer grown.
//
// Errors: io.EOF when the stream ends cleanly between frames;
// io.ErrUnexpectedEOF (or the reader's own error) inside a frame; an
// *Error with 501 FRAME_ERROR for a frame over frame_max, a missing
// frame-end, an unknown frame type (the spec calls a frame of undefined
// type a fatal error; RabbitMQ answers it with FRAME_ERROR, as we do) or a
// heartbeat frame off channel 0 or with a payload (the spec's heartbeat
// frames are on channel 0 and empty; an invalid one is a 501 connection
// exception). After an error the stream
// is out of step and the connection must close.
func (fr *FrameReader) ReadFrame() (Frame, error) {
	if n, err := io.ReadFull(fr.r, fr.header[:]); err != nil {
		if err == io.EOF && n == 0 {
			return Frame{}, io.EOF
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	f := Frame{Type: fr.header[0], Channel: binary.BigEndian.Uint16(fr.header[1:])}
	size := binary.BigEndian.Uint32(fr.header[3:])
	if uint64(size)+FrameOverheadBytes > uint64(fr.frameMaxBytes) {
		return Frame{}, errorf(FrameError, "frame of %d payload bytes on channel %d exceeds frame_max %d (with %d bytes of framing)",
			size, f.Channel, fr.frameMaxBytes, FrameOverheadBytes)
	}
	switch f.Type {
	case FrameMethod, FrameHeader, FrameBody:
	case FrameHeartbeat:
		if f.Channel != 0 || size != 0 {
			return Frame{}, errorf(FrameError, "heartbeat frame on channel %d with %d payload bytes; must be channel 0, empty", f.Channel, size)
		}
	default:
		return Frame{}, errorf(FrameError, "unknown frame type %d on channel %d", f.Type, f.Channel)
	}
	n := int(size) + 1
	assert(n <= int(fr.frameMaxBytes), "payload checked against frame_max")
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n, max(n, min(2*cap(fr.buf), int(fr.frameMaxBytes))))
	}
	fr.buf = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, fr.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	if end := fr.buf[n-1]; end != FrameEnd {
		return Frame{}, errorf(FrameError, "frame type %d on channel %d with %d payload bytes ends in %#02x, not frame-end 0xce",
			f.Type, f.Channel, size, end)
	}
	f.Payload = fr.buf[:n-1]
	return f, nil
}

// FrameWriter encodes frames into one reused buffer and writes each frame
// with a single Write (wrap the connection in a bufio.Writer to batch
// them). It refuses, with ErrEncode, any frame over frame_max.
type FrameWriter struct {
	w             io.Writer
	frameMaxBytes uint32
	buf           []byte
}

// NewFrameWriter returns a writer to w with the given frame_max.
func NewFrameWriter(w io.Writer, frameMaxBytes uint32) (*FrameWriter, error) {
	if err := checkFrameMax(frameMaxBytes); err != nil {
		return nil, err
	}
	return &FrameWriter{w: w, frameMaxBytes: frameMaxBytes}, nil
}

// SetFrameMax changes the frame_max, after tuning.
func (fw *FrameWriter) SetFrameMax(frameMaxBytes uint32) error {
	if err := checkFrameMax(frameMaxBytes); err != nil {
		return err
	}
	fw.frameMaxBytes = frameMaxBytes
	return nil
}

// BodyChunkBytes is the largest body frame payload under the current
// frame_max.
func (fw *FrameWriter) BodyChunkBytes() int { return int(fw.frameMaxBytes) - FrameOverheadBytes }

// errFrameTooLarge is returned (wrapped) for an outgoing frame over frame_max.
var errFrameTooLarge = errors.New("frame over frame_max")

// begin starts a frame in the buffer, with its size to be patched by finish.
func (fw *FrameWriter) begin(frameType uint8, channel uint16) {
	fw.buf = append(fw.buf[:0], frameType, byte(channel>>8), byte(channel), 0, 0, 0, 0)
}

// finish patches the size, appends frame-end, checks frame_max and writes.
func (fw *FrameWriter) finish() error {
	size := len(fw.buf) - FrameHeaderBytes
	if size+FrameOverheadBytes > int(fw.frameMaxBytes) {
		return fmt.Errorf("%w: %w: %d payload bytes, frame_max %d", ErrEncode, errFrameTooLarge, size, fw.frameMaxBytes)
	}
	putU32(fw.buf[3:], uint32(size))
	fw.buf = append(fw.buf, FrameEnd)
	_, err := fw.w.Write(fw.buf)
	return err
}

// WriteMethod writes m as one method frame.
func (fw *FrameWriter) WriteMethod(channel uint16, m Method) error {
	fw.begin(FrameMethod, channel)
	var err error
	if fw.buf, err = AppendMethod(fw.buf, m); err != nil {
		return err
	}
	return fw.finish()
}

// WriteContentHeader writes h as one content header frame.
func (fw *FrameWriter) WriteContentHeader(channel uint16, h *ContentHeader) error {
	fw.begin(FrameHeader, channel)
	var err error
	if fw.buf, err = AppendContentHeader(fw.buf, h); err != nil {
		return err
	}
	return fw.finish()
}

// WriteBody writes body as body frames of at most BodyChunkBytes each, and
// nothing for an empty body (the spec sends no body frame when body-size
// is 0).
func (fw *FrameWriter) WriteBody(channel uint16, body []byte) error {
	chunk := fw.BodyChunkBytes()
	assert(chunk > 0, "frame_max leaves room for a body")
	for len(body) > 0 {
		n := min(len(body), chunk)
		fw.begin(FrameBody, channel)
		fw.buf = append(fw.buf, body[:n]...)
		if err := fw.finish(); err != nil {
			return err
		}
		body = body[n:]
	}
	return nil
}

// WriteHeartbeat writes a heartbeat frame (channel 0, empty).
func (fw *FrameWriter) WriteHeartbeat() error {
	fw.begin(FrameHeartbeat, 0)
	return fw.finish()
}

// WriteFrame writes a frame as given; the type must be one of the four.
func (fw *FrameWriter) WriteFrame(f Frame) error {
	switch f.Type {
	case FrameMethod, FrameHeader, FrameBody, FrameHeartbeat:
	default:
		return encodeErrorf("frame type %d is not one of 1, 2, 3, 8", f.Type)
	}
	if f.Type == FrameHeartbeat && (f.Channel != 0 || len(f.Payload) != 0) {
		return encodeErrorf("heartbeat on channel %d with %d payload bytes; must be channel 0, empty", f.Channel, len(f.Payload))
	}
	// Checked before copying, so an oversized payload costs no buffer.
	if len(f.Payload)+FrameOverheadBytes > int(fw.frameMaxBytes) {
		return fmt.Errorf("%w: %w: %d payload bytes, frame_max %d", ErrEncode, errFrameTooLarge, len(f.Payload), fw.frameMaxBytes)
	}
	fw.begin(f.Type, f.Channel)
	fw.buf = append(fw.buf, f.Payload...)
	return fw.finish()
}
