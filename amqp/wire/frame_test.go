package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestProtocolHeader(t *testing.T) {
	ok, answer, err := ReadProtocolHeader(strings.NewReader("AMQP\x00\x00\x09\x01rest"))
	if !ok || answer != nil || err != nil {
		t.Fatalf("0-9-1: %v %q %v", ok, answer, err)
	}
	for _, other := range []string{"AMQP\x01\x01\x00\x09", "AMQP\x00\x00\x09\x00", "AMQP\x03\x01\x00\x00", "GET / HTTP/1.1\r\n", "\x16\x03\x01\x02\x00\x01\x00\x01"} {
		ok, answer, err := ReadProtocolHeader(strings.NewReader(other))
		if ok || err != nil || !bytes.Equal(answer, []byte("AMQP\x00\x00\x09\x01")) {
			t.Errorf("%q: %v %q %v", other, ok, answer, err)
		}
	}
	if _, _, err := ReadProtocolHeader(strings.NewReader("AMQP")); err != io.ErrUnexpectedEOF {
		t.Fatalf("short: %v", err)
	}
}

// A heartbeat frame, from the spec: type 8, channel 0, size 0, frame-end.
func TestHeartbeatGolden(t *testing.T) {
	want := []byte{0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xce}
	var buf bytes.Buffer
	fw, err := NewFrameWriter(&buf, FrameBytesDefault)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteHeartbeat(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("% x, want % x", buf.Bytes(), want)
	}
	fr, _ := NewFrameReader(bytes.NewReader(want), FrameBytesMin)
	f, err := fr.ReadFrame()
	if err != nil || f.Type != FrameHeartbeat || f.Channel != 0 || len(f.Payload) != 0 {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := fr.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func wantCode(t *testing.T, err error, code uint16) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want reply code %d", err, code)
	}
}

// headerOnly fails the test if more than the 7 header bytes are read.
type headerOnly struct {
	t    *testing.T
	b    []byte
	read int
}

func (r *headerOnly) Read(p []byte) (int, error) {
	if r.read+len(p) > FrameHeaderBytes {
		r.t.Fatalf("reader asked for bytes %d..%d, past the 7-byte header", r.read, r.read+len(p))
	}
	n := copy(p, r.b[r.read:])
	r.read += n
	return n, nil
}

func TestOversizeFrameRefusedFromHeader(t *testing.T) {
	for _, tc := range []struct {
		frameMax uint32
		size     uint32
	}{
		{FrameBytesMin, FrameBytesMin - FrameOverheadBytes + 1},
		{FrameBytesDefault, FrameBytesDefault},
		{FrameBytesMax, 0xffffffff},
	} {
		hdr := []byte{FrameBody, 0, 1, byte(tc.size >> 24), byte(tc.size >> 16), byte(tc.size >> 8), byte(tc.size)}
		fr, err := NewFrameReader(&headerOnly{t: t, b: hdr}, tc.frameMax)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fr.ReadFrame()
		wantCode(t, err, FrameError)
		if cap(fr.buf) != 0 {
			t.Fatalf("reader allocated %d bytes for a refused frame", cap(fr.buf))
		}
	}
	// The largest allowed payload is frame_max minus 8.
	size := FrameBytesMin - FrameOverheadBytes
	b := append([]byte{FrameBody, 0, 1, 0, 0, byte(size >> 8), byte(size)}, make([]byte, size)...)
	b = append(b, FrameEnd)
	fr, _ := NewFrameReader(bytes.NewReader(b), FrameBytesMin)
	if f, err := fr.ReadFrame(); err != nil || len(f.Payload) != size {
		t.Fatalf("frame of exactly frame_max: %v", err)
	}
}

func TestFrameErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"missing frame-end", []byte{FrameMethod, 0, 0, 0, 0, 0, 1, 0xAA, 0x00}},
		{"unknown type", []byte{4, 0, 0, 0, 0, 0, 0, FrameEnd}},
		{"type 0", []byte{0, 0, 0, 0, 0, 0, 0, FrameEnd}},
		{"heartbeat on channel 1", []byte{FrameHeartbeat, 0, 1, 0, 0, 0, 0, FrameEnd}},
		{"heartbeat with payload", []byte{FrameHeartbeat, 0, 0, 0, 0, 0, 1, 0, FrameEnd}},
		{"size one short of the frame-end", []byte{FrameBody, 0, 0, 0, 0, 0, 1, FrameEnd, 0xCF}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr, _ := NewFrameReader(bytes.NewReader(tc.frame), FrameBytesMin)
			_, err := fr.ReadFrame()
			wantCode(t, err, FrameError)
		})
	}
}

func TestFrameEOF(t *testing.T) {
	full := []byte{FrameBody, 0, 5, 0, 0, 0, 2, 'h', 'i', FrameEnd}
	for n := 1; n < len(full); n++ {
		fr, _ := NewFrameReader(bytes.NewReader(full[:n]), FrameBytesMin)
		if _, err := fr.ReadFrame(); err != io.ErrUnexpectedEOF {
			t.Fatalf("cut at %d: %v, want unexpected EOF", n, err)
		}
	}
	fr, _ := NewFrameReader(bytes.NewReader(full), FrameBytesMin)
	f, err := fr.ReadFrame()
	if err != nil || !reflect.DeepEqual(f, Frame{Type: FrameBody, Channel: 5, Payload: []byte("hi")}) {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestFrameMaxRefused(t *testing.T) {
	for _, n := range []uint32{0, FrameBytesMin - 1, FrameBytesMax + 1} {
		if _, err := NewFrameReader(nil, n); err == nil {
			t.Errorf("reader accepted frame_max %d", n)
		}
		if _, err := NewFrameWriter(nil, n); err == nil {
			t.Errorf("writer accepted frame_max %d", n)
		}
	}
	fr, _ := NewFrameReader(nil, FrameBytesMin)
	if err := fr.SetFrameMax(0); err == nil || fr.frameMaxBytes != FrameBytesMin {
		t.Fatalf("SetFrameMax(0): %v", err)
	}
}

// A whole message through writer and reader: method, header, body split
// at frame_max, heartbeat.
func TestFrameWriterReaderMessage(t *testing.T) {
	var buf bytes.Buffer
	fw, _ := NewFrameWriter(&buf, FrameBytesMin)
	body := make([]byte, 10000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	pub := &BasicPublish{Exchange: "ex", RoutingKey: "rk", Mandatory: true}
	h := ContentHeader{ClassID: ClassBasic, BodySize: uint64(len(body)), Properties: Properties{Flags: FlagDeliveryMode, DeliveryMode: 2}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fw.WriteMethod(3, pub))
	must(fw.WriteContentHeader(3, &h))
	must(fw.WriteBody(3, body))
	must(fw.WriteBody(3, nil))
	must(fw.WriteHeartbeat())

	fr, _ := NewFrameReader(&buf, FrameBytesMin)
	f, err := fr.ReadFrame()
	must(err)
	m, err := DecodeMethod(f.Payload)
	must(err)
	if f.Type != FrameMethod || f.Channel != 3 || !reflect.DeepEqual(m, pub) {
		t.Fatalf("method frame %+v -> %#v", f, m)
	}
	f, err = fr.ReadFrame()
	must(err)
	got, err := DecodeContentHeader(f.Payload)
	must(err)
	if f.Type != FrameHeader || !reflect.DeepEqual(got, h) {
		t.Fatalf("header %#v", got)
	}
	var rebuilt []byte
	var sizes []int
	for len(rebuilt) < len(body) {
		f, err = fr.ReadFrame()
		must(err)
		if f.Type != FrameBody || f.Channel != 3 {
			t.Fatalf("frame %+v, want body", f)
		}
		sizes = append(sizes, len(f.Payload))
		rebuilt = append(rebuilt, f.Payload...)
	}
	if !bytes.Equal(rebuilt, body) || !reflect.DeepEqual(sizes, []int{4088, 4088, 1824}) {
		t.Fatalf("body frames %v", sizes)
	}
	f, err = fr.ReadFrame()
	must(err)
	if f.Type != FrameHeartbeat {
		t.Fatalf("%+v, want heartbeat", f)
	}
}

func TestFrameWriterRefuses(t *testing.T) {
	var buf bytes.Buffer
	fw, _ := NewFrameWriter(&buf, FrameBytesMin)
	big := Table{{"k", string(make([]byte, FrameBytesMin))}}
	if err := fw.WriteMethod(1, &QueueDeclare{Queue: "q", Arguments: big}); !errors.Is(err, ErrEncode) {
		t.Fatalf("oversized method: %v", err)
	}
	if err := fw.WriteFrame(Frame{Type: FrameBody, Channel: 1, Payload: make([]byte, FrameBytesMin)}); !errors.Is(err, ErrEncode) {
		t.Fatalf("oversized frame: %v", err)
	}
	if err := fw.WriteFrame(Frame{Type: 9}); !errors.Is(err, ErrEncode) {
		t.Fatalf("unknown type: %v", err)
	}
	if err := fw.WriteFrame(Frame{Type: FrameHeartbeat, Channel: 2}); !errors.Is(err, ErrEncode) {
		t.Fatalf("heartbeat on channel 2: %v", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("refused frames wrote %d bytes", buf.Len())
	}
}

func TestReplyText(t *testing.T) {
	e := &Error{Code: FrameError, Text: "bad"}
	if e.ReplyText() != "FRAME_ERROR - bad" {
		t.Fatalf("%q", e.ReplyText())
	}
	e.Text = strings.Repeat("é", 200)
	if s := e.ReplyText(); len(s) > ShortStrBytesMax || !strings.HasSuffix(s, "é") {
		t.Fatalf("clipped to %d bytes: %q", len(s), s[len(s)-4:])
	}
	for code := uint16(0); code < 600; code++ {
		if IsHardError(code) && ReplyName(code) == "" {
			t.Fatalf("hard error %d has no name", code)
		}
	}
}
