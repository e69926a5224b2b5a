package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/sluicemq/sluice/core"
)

type sample struct {
	g   core.GroupID
	msg []byte
}

func samples() []sample {
	return []sample{{3, []byte("a queue message")}, {1 << 32, nil}, {7, bytes.Repeat([]byte{0xab}, 1000)}}
}

func TestRoundTrip(t *testing.T) {
	for _, s := range samples() {
		b := Append(nil, s.g, s.msg)
		if len(b) != Size(len(s.msg)) {
			t.Fatalf("encoded %d bytes, Size says %d", len(b), Size(len(s.msg)))
		}
		g, msg, n, err := Decode(b)
		if err != nil || n != len(b) || g != s.g || !bytes.Equal(msg, s.msg) {
			t.Fatalf("round trip of group %d: %d %q %d %v", s.g, g, msg, n, err)
		}
	}
}

func TestEveryBitFlipIsRefused(t *testing.T) {
	s := samples()[0]
	b := Append(nil, s.g, s.msg)
	for bit := 0; bit < len(b)*8; bit++ {
		c := append([]byte(nil), b...)
		c[bit/8] ^= 1 << (bit % 8)
		if _, _, _, err := Decode(c); err == nil {
			t.Fatalf("flipping bit %d went unnoticed", bit)
		}
	}
}

func TestOversizedFrameRefusedFromHeader(t *testing.T) {
	h := make([]byte, HeaderBytes)
	binary.LittleEndian.PutUint32(h, FrameBytesMax+1)
	if _, err := FrameLen(h); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	if _, _, _, err := Decode(h); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
}

func TestTruncatedFrameRefused(t *testing.T) {
	s := samples()[0]
	b := Append(nil, s.g, s.msg)
	for n := 0; n < len(b); n++ {
		if _, _, _, err := Decode(b[:n]); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", n, len(b))
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range samples() {
		f.Add(Append(nil, s.g, s.msg))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, msg, n, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to the same bytes.
		if again := Append(nil, g, msg); !bytes.Equal(again, b[:n]) {
			t.Fatalf("decode/encode not inverse")
		}
	})
}
