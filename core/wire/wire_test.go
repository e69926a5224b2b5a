package wire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

func samples() []core.Message {
	return []core.Message{
		{Kind: core.MsgAppend, Queue: 3, Epoch: 7, Prev: 10, PrevEpoch: 6, Commit: 9, Records: []record.Record{
			{Epoch: 7, Offset: 10, Kind: record.KindEpoch, Body: []byte{}},
			{Epoch: 7, Offset: 11, Kind: record.KindPublish, Body: []byte("hello")},
		}},
		{Kind: core.MsgAppend, Queue: 1, Epoch: 1},
		{Kind: core.MsgAppendReply, Queue: 1, Epoch: 2, Ok: true, End: 44},
		{Kind: core.MsgAppendReply, Queue: 1, Epoch: 2, End: 4, Epochs: []core.EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 3}}},
		{Kind: core.MsgLogQuery, Queue: 2, Epoch: 3, Process: 4},
		{Kind: core.MsgLogReport, Queue: 2, Epoch: 3, Process: 9, End: 7, Epochs: []core.EpochStart{{Epoch: 1, Offset: 0}}},
		{Kind: core.MsgFetch, Queue: 2, Epoch: 3, Prev: 5},
		{Kind: core.MsgFetchReply, Queue: 2, Epoch: 3, Prev: 5, PrevEpoch: 1, End: 7, Records: []record.Record{
			{Epoch: 1, Offset: 5, Kind: record.KindPublish, Body: []byte("x")},
			{Epoch: 3, Offset: 6, Kind: record.KindAck, Body: make([]byte, 8)},
		}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range samples() {
		b := Append(nil, &m)
		got, n, err := Decode(b)
		if err != nil || n != len(b) {
			t.Fatalf("%v: decode: %v (n=%d of %d)", m.String(), err, n, len(b))
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip changed the message:\n got %v\nwant %v", got.String(), m.String())
		}
	}
}

func TestEveryBitFlipIsRefused(t *testing.T) {
	m := samples()[0]
	b := Append(nil, &m)
	for bit := 0; bit < len(b)*8; bit++ {
		c := append([]byte(nil), b...)
		c[bit/8] ^= 1 << (bit % 8)
		if _, _, err := Decode(c); err == nil {
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
	if _, _, err := Decode(h); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
}

func TestTruncatedFrameRefused(t *testing.T) {
	m := samples()[0]
	b := Append(nil, &m)
	for n := 0; n < len(b); n++ {
		if _, _, err := Decode(b[:n]); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", n, len(b))
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		f.Add(Append(nil, &m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to the same bytes.
		again := Append(nil, &m)
		if string(again) != string(b[:n]) {
			t.Fatalf("decode/encode not inverse")
		}
	})
}

func TestSizeIsExact(t *testing.T) {
	for _, m := range samples() {
		if got, want := len(Append(nil, &m)), Size(&m); got != want {
			t.Fatalf("%v: encoded %d bytes, Size says %d", m.String(), got, want)
		}
	}
}
