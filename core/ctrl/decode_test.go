package ctrl

import (
	"bytes"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// checkDecode holds decodeMessage and MsgTypeTerm to proto.Unmarshal on b:
// both refuse it with the same text, or both decode it to equal messages
// that marshal to the same bytes.
func checkDecode(t testing.TB, b []byte) {
	t.Helper()
	want := &pb.Message{}
	werr := proto.Unmarshal(b, want)
	got, gerr := decodeMessage(b)
	typ, term, ok := MsgTypeTerm(b)
	if werr != nil {
		if gerr == nil || gerr.Error() != werr.Error() || ok {
			t.Fatalf("%x: proto refuses (%v), the hand decoder says %v (MsgTypeTerm ok %v)", b, werr, gerr, ok)
		}
		return
	}
	if gerr != nil || !ok {
		t.Fatalf("%x: proto decodes, the hand decoder refuses: %v (MsgTypeTerm ok %v)", b, gerr, ok)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%x: hand decoded %v, proto %v", b, got, want)
	}
	if typ != want.GetType() || term != want.GetTerm() {
		t.Fatalf("%x: MsgTypeTerm %s %d, proto %s %d", b, typ, term, want.GetType(), want.GetTerm())
	}
	opt := proto.MarshalOptions{Deterministic: true}
	gb, err1 := opt.Marshal(got)
	wb, err2 := opt.Marshal(want)
	if err1 != nil || err2 != nil || !bytes.Equal(gb, wb) {
		t.Fatalf("%x: re-marshalled %x (%v), proto's %x (%v)", b, gb, err1, wb, err2)
	}
	for i, e := range got.GetEntries() {
		if (e.Data == nil) != (want.Entries[i].Data == nil) {
			t.Fatalf("%x: entry %d's data nil %v, proto's %v", b, i, e.Data == nil, want.Entries[i].Data == nil)
		}
	}
}

func marshal(t testing.TB, m *pb.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func u64(v uint64) *uint64 { return &v }

// handMessages are marshalled messages of the kinds raft sends, and some
// it does not (each of the fields the hand decoder leaves to proto).
func handMessages(t testing.TB) [][]byte {
	typ := func(mt pb.MessageType) *pb.MessageType { return &mt }
	et := func(t pb.EntryType) *pb.EntryType { return &t }
	yes := true
	ms := []*pb.Message{
		{},
		{Type: typ(pb.MsgHeartbeat), To: u64(2), From: u64(1), Term: u64(3), Commit: u64(17)},
		{Type: typ(pb.MsgHeartbeatResp), To: u64(1), From: u64(2), Term: u64(3)},
		{Type: typ(pb.MsgApp), To: u64(2), From: u64(1), Term: u64(3), LogTerm: u64(3), Index: u64(16), Commit: u64(16),
			Entries: []*pb.Entry{
				{Type: et(pb.EntryNormal), Term: u64(3), Index: u64(17), Data: []byte("cmd one")},
				{Type: et(pb.EntryNormal), Term: u64(3), Index: u64(18), Data: []byte{}},
				{Type: et(pb.EntryNormal), Term: u64(3), Index: u64(19)},
				{Term: u64(3), Index: u64(20), Data: []byte("x")},
				{},
			}},
		{Type: typ(pb.MsgAppResp), To: u64(1), From: u64(2), Term: u64(3), Index: u64(16), Reject: &yes, RejectHint: u64(9), LogTerm: u64(2)},
		{Type: typ(pb.MsgPreVote), To: u64(2), From: u64(1), Term: u64(4), LogTerm: u64(3), Index: u64(16), Vote: u64(0)},
		{Type: typ(pb.MsgVoteResp), To: u64(1), From: u64(2), Term: u64(4), Reject: new(bool)},
		{Type: typ(pb.MsgApp), Entries: []*pb.Entry{{Type: et(pb.EntryConfChange), Data: []byte("cc")}}},
		{Type: typ(pb.MsgHeartbeat), To: u64(2), From: u64(1), Context: []byte("ctx")},
		{Type: typ(pb.MsgHeartbeatResp), To: u64(1), From: u64(2), Context: []byte{}},
		// left to proto: a snapshot, responses
		{Type: typ(pb.MsgSnap), To: u64(2), From: u64(1), Term: u64(3), Snapshot: &pb.Snapshot{Data: []byte("image"),
			Metadata: &pb.SnapshotMetadata{Index: u64(40), Term: u64(3), ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}}}},
		{Type: typ(pb.MsgStorageAppend), Responses: []*pb.Message{{Type: typ(pb.MsgStorageAppendResp), Index: u64(3)}}},
	}
	var out [][]byte
	for _, m := range ms {
		out = append(out, marshal(t, m))
	}
	// Wire forms raft never writes: repeated scalars (the last wins),
	// unknown fields and enum values, wrong wire types, non-minimal
	// varints, truncations, bad tags.
	hb := marshal(t, ms[1])
	app := marshal(t, ms[3])
	var b []byte
	b = protowire.AppendTag(nil, fTerm, protowire.VarintType)
	b = protowire.AppendVarint(b, 5)
	out = append(out, append(append([]byte{}, hb...), b...))
	b = protowire.AppendTag(nil, 99, protowire.VarintType)
	out = append(out, append(protowire.AppendVarint(b, 1), hb...))
	b = protowire.AppendTag(nil, fType, protowire.VarintType)
	out = append(out, protowire.AppendVarint(b, 24), protowire.AppendVarint(b[:len(b):len(b)], 1<<32+3))
	b = protowire.AppendTag(nil, fTo, protowire.Fixed64Type)
	out = append(out, protowire.AppendFixed64(b, 2))
	b = protowire.AppendTag(nil, fTo, protowire.BytesType)
	out = append(out, protowire.AppendBytes(b, []byte{2}))
	b = protowire.AppendTag(nil, fReject, protowire.VarintType)
	out = append(out, protowire.AppendVarint(b, 2))
	out = append(out, []byte{0x10, 0x82, 0x80, 0x00}) // to = 2, non-minimal
	out = append(out, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	out = append(out, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	b = protowire.AppendTag(nil, fContext, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("first"))
	b = protowire.AppendTag(b, fContext, protowire.BytesType)
	out = append(out, protowire.AppendBytes(b, []byte("2nd")), append(app, b...))
	b = protowire.AppendTag(nil, fContext, protowire.VarintType)
	out = append(out, protowire.AppendVarint(b, 1))
	out = append(out, []byte{0x00, 0x01}, []byte{0x10}, []byte{0x3a, 0x05, 0x10})
	ent := func(fields []byte) []byte {
		b := protowire.AppendTag(nil, fEntries, protowire.BytesType)
		return protowire.AppendBytes(b, fields)
	}
	out = append(out, ent([]byte{0x08, 0x03}), ent([]byte{0x08, 0x01, 0x10, 0x02, 0x10, 0x04}),
		ent([]byte{0x22, 0x01, 'a', 0x22, 0x02, 'b', 'c'}), ent([]byte{0x22, 0x00}), ent([]byte{0x28, 0x01}),
		ent([]byte{0x22, 0x05, 'a'}), ent([]byte{0x11, 0, 0, 0, 0, 0, 0, 0, 0}))
	for n := range app {
		out = append(out, app[:n])
	}
	return out
}

// clusterMessages are the messages of an in-test cluster's run, with
// crashes and images (and so snapshots).
func clusterMessages(t testing.TB) [][]byte {
	c := newCluster(t, 7, []uint64{1, 2, 3}, false)
	c.imageEntries = 8
	seen := map[string]bool{}
	var out [][]byte
	for range 40 {
		c.run(50, 20)
		for _, p := range c.net {
			if !seen[string(p.msg)] && len(out) < 200 {
				seen[string(p.msg)] = true
				out = append(out, p.msg)
			}
		}
	}
	return out
}

func TestDecodeMessage(t *testing.T) {
	for _, b := range handMessages(t) {
		checkDecode(t, b)
	}
	ms := clusterMessages(t)
	kinds := map[pb.MessageType]int{}
	for _, b := range ms {
		checkDecode(t, b)
		var f msgFields
		if !f.scan(b) {
			var m pb.Message
			if proto.Unmarshal(b, &m) != nil || m.GetType() != pb.MsgSnap {
				t.Errorf("%x: a message raft sent (%s) is left to proto", b, m.GetType())
			}
		}
		typ, _, _ := MsgTypeTerm(b)
		kinds[typ]++
	}
	for _, k := range []pb.MessageType{pb.MsgApp, pb.MsgAppResp, pb.MsgHeartbeat, pb.MsgHeartbeatResp} {
		if kinds[k] == 0 {
			t.Errorf("the cluster sent no %s: %v", k, kinds)
		}
	}
}

// TestDecodeAllocs: a heartbeat is one allocation, an append with entries
// four, and MsgTypeTerm none.
func TestDecodeAllocs(t *testing.T) {
	hms := handMessages(t)
	hb, app := hms[1], hms[3]
	for _, c := range []struct {
		name string
		b    []byte
		max  float64
	}{{"heartbeat", hb, 1}, {"append", app, 4}} {
		if n := testing.AllocsPerRun(100, func() { decodeMessage(c.b) }); n > c.max {
			t.Errorf("%s: %v allocations, want at most %v", c.name, n, c.max)
		}
		if n := testing.AllocsPerRun(100, func() { MsgTypeTerm(c.b) }); n != 0 {
			t.Errorf("%s: MsgTypeTerm: %v allocations, want none", c.name, n)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, b := range handMessages(f) {
		f.Add(b)
	}
	for _, b := range clusterMessages(f) {
		f.Add(b)
	}
	f.Add(marshal(f, &pb.Message{Entries: []*pb.Entry{{Data: []byte("a setting")}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
	})
}
