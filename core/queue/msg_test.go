package queue

import (
	"reflect"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

func samples() []Msg {
	return []Msg{
		{Kind: MsgAppend, Epoch: 7, Prev: 10, PrevEpoch: 6, Commit: 9, Records: []record.Record{
			{Epoch: 7, Offset: 10, Kind: record.KindEpoch, Body: []byte{}},
			{Epoch: 7, Offset: 11, Kind: record.KindPublish, Body: []byte("hello")},
		}},
		{Kind: MsgAppend, Epoch: 1},
		{Kind: MsgAppendReply, Epoch: 2, Ok: true, End: 44},
		{Kind: MsgAppendReply, Epoch: 2, End: 4, Epochs: []seam.EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 3}}},
		{Kind: MsgAppend, Epoch: 3, Process: 9, Prev: 5, PrevEpoch: 1, Commit: 5, Records: []record.Record{
			{Epoch: 1, Offset: 5, Kind: record.KindPublish, Body: []byte("x")},
			{Epoch: 3, Offset: 6, Kind: record.KindAck, Body: make([]byte, 8)},
		}},
	}
}

func TestMsgRoundTrip(t *testing.T) {
	for _, m := range samples() {
		b := AppendMsg(nil, &m)
		if len(b) != MsgSize(&m) {
			t.Fatalf("%s: encoded %d bytes, MsgSize says %d", m.AppendText(nil, 1), len(b), MsgSize(&m))
		}
		got, err := DecodeMsg(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", m.AppendText(nil, 1), err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip changed the message:\n got %s\nwant %s", got.AppendText(nil, 1), m.AppendText(nil, 1))
		}
	}
}

// Truncated or trailing bytes, an unknown kind, records out of place and
// histories out of order are refused, never decoded into something else.
func TestMsgRefusals(t *testing.T) {
	for _, m := range samples() {
		b := AppendMsg(nil, &m)
		for n := 0; n < len(b); n++ {
			if _, err := DecodeMsg(b[:n]); err == nil {
				t.Fatalf("%s cut to %d of %d bytes decoded", m.AppendText(nil, 1), n, len(b))
			}
		}
		if _, err := DecodeMsg(append(b, 0)); err == nil {
			t.Fatalf("%s with a trailing byte decoded", m.AppendText(nil, 1))
		}
	}
	bad := []Msg{
		{Kind: MsgAppend, Epoch: 2, Prev: 3, Records: []record.Record{{Epoch: 2, Offset: 4, Kind: record.KindPublish}}}, // gap
		{Kind: MsgAppend, Epoch: 2, Prev: 3, Records: []record.Record{{Epoch: 3, Offset: 3, Kind: record.KindPublish}}}, // epoch above the sender's
		{Kind: MsgAppendReply, Epoch: 2, Epochs: []seam.EpochStart{{Epoch: 2, Offset: 0}, {Epoch: 1, Offset: 5}}},       // history out of order
	}
	for _, m := range bad {
		if _, err := DecodeMsg(AppendMsg(nil, &m)); err == nil {
			t.Fatalf("%s decoded", m.AppendText(nil, 1))
		}
	}
	if _, err := DecodeMsg([]byte{99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Fatal("an unknown kind decoded")
	}
}

func FuzzDecodeMsg(f *testing.F) {
	for _, m := range samples() {
		f.Add(AppendMsg(nil, &m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMsg(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to the same bytes.
		if again := AppendMsg(nil, &m); string(again) != string(b) {
			t.Fatalf("decode/encode not inverse")
		}
	})
}
