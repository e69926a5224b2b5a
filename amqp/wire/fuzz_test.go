package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// The fuzz targets check that decoders never panic, that what they refuse
// is refused with an *Error of an expected code, and that what they accept
// is stable: encode(decode(x)) decodes again and re-encodes to the same
// bytes. Comparing bytes rather than values keeps NaN floats comparable.

func methodSeeds() [][]byte {
	var seeds [][]byte
	for _, m := range allMethods() {
		for _, k := range []int{0, 1, 31} {
			seeds = append(seeds, mustAppendMethod(fill(fresh(m), k)))
		}
	}
	return seeds
}

func checkCode(t *testing.T, err error, codes ...uint16) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	for _, c := range codes {
		if e.Code == c {
			if len(e.ReplyText()) > ShortStrBytesMax {
				t.Fatalf("reply text of %d bytes", len(e.ReplyText()))
			}
			return
		}
	}
	t.Fatalf("reply code %d, want one of %v: %v", e.Code, codes, err)
}

func FuzzMethod(f *testing.F) {
	for _, s := range methodSeeds() {
		f.Add(s)
	}
	f.Add([]byte{0x00, 0x0a, 0x00, 0x28, 0x01, '/', 0x03, 'x', 'y', 'z', 0x01})
	f.Add([]byte{0x00, 0x5a, 0x00, 0x0a})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMethod(data)
		if err != nil {
			checkCode(t, err, SyntaxError, CommandInvalid, NotImplemented)
			return
		}
		b1, err := AppendMethod(nil, m)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", m, err)
		}
		m2, err := DecodeMethod(b1)
		if err != nil {
			t.Fatalf("re-encoded %#v does not decode: %v", m, err)
		}
		b2, _ := AppendMethod(nil, m2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("unstable:\n% x\n% x", b1, b2)
		}
	})
}

func FuzzTable(f *testing.F) {
	for _, tb := range []Table{sampleTable(), nil, {{"a", int32(1)}}, deepTable(TableDepthMax)} {
		b, err := AppendTable(nil, tb)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := DecodeTable(data)
		if err != nil {
			checkCode(t, err, SyntaxError)
			return
		}
		// Table encoding is canonical: what decodes re-encodes to itself.
		b, err := AppendTable(nil, tb)
		if err != nil {
			t.Fatalf("decoded table does not encode: %v", err)
		}
		if !bytes.Equal(b, data) {
			t.Fatalf("re-encoding differs:\n% x\n% x", data, b)
		}
	})
}

func FuzzContentHeader(f *testing.F) {
	h := sampleHeader()
	b, _ := AppendContentHeader(nil, &h)
	f.Add(b)
	f.Add([]byte{0x00, 0x3c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0x90, 0x01, 0x00, 0x00, 0x01, 'x', 0x02})
	f.Add([]byte{0x00, 0x3c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeContentHeader(data)
		if err != nil {
			checkCode(t, err, SyntaxError, NotImplemented)
			return
		}
		b1, err := AppendContentHeader(nil, &h)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", h, err)
		}
		h2, err := DecodeContentHeader(b1)
		if err != nil {
			t.Fatalf("re-encoded header does not decode: %v", err)
		}
		b2, _ := AppendContentHeader(nil, &h2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("unstable:\n% x\n% x", b1, b2)
		}
	})
}

func FuzzFrame(f *testing.F) {
	var stream bytes.Buffer
	fw, _ := NewFrameWriter(&stream, FrameBytesMin)
	_ = fw.WriteHeartbeat()
	_ = fw.WriteMethod(0, &ConnectionTuneOk{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60})
	_ = fw.WriteMethod(1, &BasicPublish{Exchange: "ex", RoutingKey: "rk"})
	h := sampleHeader()
	_ = fw.WriteContentHeader(1, &h)
	_ = fw.WriteBody(1, []byte("hello"))
	f.Add(stream.Bytes())
	f.Add([]byte{0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xce})
	f.Add([]byte{0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0xaa, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := NewFrameReader(bytes.NewReader(data), FrameBytesMin)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		fw, _ := NewFrameWriter(&out, FrameBytesMin)
		off := 0
		for range 64 {
			fr0, err := fr.ReadFrame()
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return
			}
			if err != nil {
				checkCode(t, err, FrameError)
				return
			}
			n := FrameOverheadBytes + len(fr0.Payload)
			out.Reset()
			if err := fw.WriteFrame(fr0); err != nil {
				t.Fatalf("read frame %+v does not write: %v", fr0, err)
			}
			// Frames are canonical: the frame read writes back to its bytes.
			if !bytes.Equal(out.Bytes(), data[off:off+n]) {
				t.Fatalf("frame at %d re-encodes differently:\n% x\n% x", off, data[off:off+n], out.Bytes())
			}
			off += n
			// What the frame carries must not crash its decoder either.
			switch fr0.Type {
			case FrameMethod:
				if _, err := DecodeMethod(fr0.Payload); err != nil {
					checkCode(t, err, SyntaxError, CommandInvalid, NotImplemented)
				}
			case FrameHeader:
				if _, err := DecodeContentHeader(fr0.Payload); err != nil {
					checkCode(t, err, SyntaxError, NotImplemented)
				}
			}
		}
	})
}
