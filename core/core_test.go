package core

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
)

func TestDivergence(t *testing.T) {
	cases := []struct {
		a    []EpochStart
		aEnd uint64
		b    []EpochStart
		bEnd uint64
		want uint64
	}{
		{[]EpochStart{{1, 0}}, 10, []EpochStart{{1, 0}}, 5, 5},
		{[]EpochStart{{1, 0}, {2, 5}}, 10, []EpochStart{{1, 0}}, 8, 5},
		{[]EpochStart{{1, 0}, {3, 7}}, 10, []EpochStart{{1, 0}, {2, 6}}, 9, 6},
		{nil, 0, []EpochStart{{1, 0}}, 4, 0},
		{[]EpochStart{{2, 0}}, 4, []EpochStart{{1, 0}}, 4, 0},
	}
	for i, c := range cases {
		if got := divergence(c.a, c.aEnd, c.b, c.bEnd); got != c.want {
			t.Errorf("case %d: divergence = %d, want %d", i, got, c.want)
		}
		if got := divergence(c.b, c.bEnd, c.a, c.aEnd); got != c.want {
			t.Errorf("case %d (swapped): divergence = %d, want %d", i, got, c.want)
		}
	}
}

func TestPolicyQuorum(t *testing.T) {
	for n, want := range map[int][3]int{1: {1, 1, 1}, 3: {1, 2, 3}, 5: {1, 3, 5}, 4: {1, 3, 4}} {
		got := [3]int{LeaderDurable.WriteQuorum(n), MajorityDurable.WriteQuorum(n), AllDurable.WriteQuorum(n)}
		if got != want {
			t.Errorf("n=%d: %v, want %v", n, got, want)
		}
	}
}

func queue3(p Policy) QueueConfig {
	return QueueConfig{Queue: 1, Replicas: []NodeID{1, 2, 3}, Owner: 1, Policy: p}
}

func find(effects []Effect, kind EffectKind) []Effect {
	var out []Effect
	for _, e := range effects {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func texts(effects []Effect) string {
	var b strings.Builder
	for i := range effects {
		b.WriteString(effects[i].String())
		b.WriteByte('\n')
	}
	return b.String()
}

// startOwner brings an owner of a fresh log to a ready epoch 1.
func startOwner(t *testing.T, p Policy) *Broker {
	t.Helper()
	b := New(Config{Node: 1, Queues: []QueueConfig{queue3(p)}})
	eff := b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1}}})
	if len(find(eff, EfStorage)) != 2 {
		t.Fatalf("start: want the epoch record appended and synced, got\n%s", texts(eff))
	}
	eff = b.Step(&Input{Kind: InStorage, NowNs: 2, Done: StorageDone{Op: OpAppend, Queue: 1}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 3, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 1}})
	if sends := find(eff, EfSend); len(sends) != 2 {
		t.Fatalf("epoch durable: want the epoch record sent to both followers, got\n%s", texts(eff))
	}
	return b
}

func TestConfirmWaitsForWDurableCopies(t *testing.T) {
	b := startOwner(t, MajorityDurable)
	eff := b.Step(&Input{Kind: InClient, NowNs: 4, Client: 9, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1, Body: []byte("hello")}})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("publish confirmed before any sync:\n%s", texts(eff))
	}
	b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpAppend, Queue: 1}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 2}})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("confirmed with only the owner's copy under majority of 3:\n%s", texts(eff))
	}
	eff = b.Step(&Input{Kind: InMessage, NowNs: 7, From: 2, Msg: Message{Kind: MsgAppendReply, Queue: 1, Epoch: 1, Ok: true, End: 2}})
	r := find(eff, EfReply)
	if len(r) != 1 || r[0].Outcome != Confirmed || r[0].Offset != 1 {
		t.Fatalf("want publish confirmed at offset 1 after a follower's durable report, got\n%s", texts(eff))
	}
}

func TestAllDurableWaitsForEveryReplica(t *testing.T) {
	b := startOwner(t, AllDurable)
	b.Step(&Input{Kind: InClient, NowNs: 4, Client: 9, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1, Body: []byte("x")}})
	b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpAppend, Queue: 1}})
	b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 2}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 7, From: 2, Msg: Message{Kind: MsgAppendReply, Queue: 1, Epoch: 1, Ok: true, End: 2}})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("all_durable confirmed with 2 of 3:\n%s", texts(eff))
	}
	eff = b.Step(&Input{Kind: InMessage, NowNs: 8, From: 3, Msg: Message{Kind: MsgAppendReply, Queue: 1, Epoch: 1, Ok: true, End: 2}})
	if len(find(eff, EfReply)) != 1 {
		t.Fatalf("all_durable not confirmed with 3 of 3:\n%s", texts(eff))
	}
}

func TestStaleEpochReplyIgnored(t *testing.T) {
	b := startOwner(t, MajorityDurable)
	b.Step(&Input{Kind: InClient, NowNs: 4, Client: 9, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1, Body: []byte("x")}})
	b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpAppend, Queue: 1}})
	b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 2}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 7, From: 2, Msg: Message{Kind: MsgAppendReply, Queue: 1, Epoch: 0, Ok: true, End: 2}})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("a reply of an older epoch confirmed a publish:\n%s", texts(eff))
	}
}

func TestFollowerTruncatesDivergentSuffixAndAcksOnlyAfterSync(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	// The follower holds offsets 0..3 of epoch 1; the owner's epoch 2 began at 2.
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1, End: 4, Epochs: []EpochStart{{1, 0}}}}})
	recs := []record.Record{{Epoch: 2, Offset: 2, Kind: record.KindEpoch}}
	eff := b.Step(&Input{Kind: InMessage, NowNs: 2, From: 1, Msg: Message{Kind: MsgAppend, Queue: 1, Epoch: 2, Prev: 2, PrevEpoch: 1, Records: recs}})
	st := find(eff, EfStorage)
	if len(st) != 3 || st[0].Op != OpTruncate || st[0].Offset != 2 || st[1].Op != OpAppend || st[2].Op != OpSync {
		t.Fatalf("want truncate at 2, append, sync; got\n%s", texts(eff))
	}
	for _, s := range find(eff, EfSend) {
		if s.Msg.Ok && s.Msg.End > 2 {
			t.Fatalf("follower reported %d durable before its sync:\n%s", s.Msg.End, texts(eff))
		}
	}
	b.Step(&Input{Kind: InStorage, NowNs: 3, Done: StorageDone{Op: OpTruncate, Queue: 1, Offset: 2}})
	b.Step(&Input{Kind: InStorage, NowNs: 4, Done: StorageDone{Op: OpAppend, Queue: 1}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 3}})
	s := find(eff, EfSend)
	if len(s) != 1 || !s[0].Msg.Ok || s[0].Msg.End != 3 {
		t.Fatalf("want an ok reply with end 3 after the sync, got\n%s", texts(eff))
	}
}

func TestFollowerRejectsGapWithHistory(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1, End: 2, Epochs: []EpochStart{{1, 0}}}}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 2, From: 1, Msg: Message{Kind: MsgAppend, Queue: 1, Epoch: 1, Prev: 5, PrevEpoch: 1}})
	s := find(eff, EfSend)
	if len(s) != 1 || s[0].Msg.Ok || s[0].Msg.End != 2 || len(s[0].Msg.Epochs) != 1 {
		t.Fatalf("want a reject with end 2 and the epoch history, got\n%s", texts(eff))
	}
}

func TestFencedOlderEpoch(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1, End: 2, Epochs: []EpochStart{{3, 0}}}}})
	recs := []record.Record{{Epoch: 2, Offset: 2, Kind: record.KindPublish}}
	eff := b.Step(&Input{Kind: InMessage, NowNs: 2, From: 1, Msg: Message{Kind: MsgAppend, Queue: 1, Epoch: 2, Prev: 2, PrevEpoch: 3, Records: recs}})
	if len(eff) != 0 {
		t.Fatalf("an append of an older epoch was acted on:\n%s", texts(eff))
	}
}

func TestNotOwnerFailsPublish(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1}}})
	eff := b.Step(&Input{Kind: InClient, NowNs: 2, Client: 4, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1}})
	r := find(eff, EfReply)
	if len(r) != 1 || r[0].Outcome != Failed {
		t.Fatalf("want a failed reply, got\n%s", texts(eff))
	}
}

func TestTextFormsAreOneLine(t *testing.T) {
	in := Input{Kind: InStart, Logs: []LogState{{Queue: 1, End: 3, Epochs: []EpochStart{{1, 0}}, Damage: "crc\nmismatch"}}}
	if s := in.String(); strings.Contains(s, "\n") || !strings.HasPrefix(s, "start q=1") {
		t.Fatalf("input text %q", s)
	}
	e := Effect{Kind: EfReply, Client: 3, ReqID: 4, Outcome: Failed, Reason: "a\nb"}
	if s := e.String(); strings.Contains(s, "\n") {
		t.Fatalf("effect text %q", s)
	}
}

func TestAppendUintMatchesStrconv(t *testing.T) {
	for _, v := range []uint64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 1<<32 + 7, 1<<64 - 1} {
		if got, want := string(appendUint(nil, v)), strconv.FormatUint(v, 10); got != want {
			t.Fatalf("appendUint(%d) = %q, want %q", v, got, want)
		}
	}
}

// An owner whose log lost records asks every follower, fetches from the most
// complete one, and opens its epoch only after that.
func TestDamagedOwnerRecoversFromMostCompleteFollower(t *testing.T) {
	b := New(Config{Node: 1, Process: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	eff := b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1, End: 3, Epochs: []EpochStart{{1, 0}}, Damage: "crc mismatch", Unrepaired: true}}})
	var queries int
	for _, e := range eff {
		if e.Kind == EfSend && e.Msg.Kind == MsgLogQuery {
			queries++
		}
		if e.Kind == EfStorage && e.Op == OpAppend {
			t.Fatalf("a damaged owner opened an epoch before recovering:\n%s", texts(eff))
		}
	}
	if queries != 2 {
		t.Fatalf("want a log query to each follower, got\n%s", texts(eff))
	}
	// n2 is behind; n3 holds more of epoch 1, then one record of epoch 2.
	b.Step(&Input{Kind: InMessage, NowNs: 2, From: 2, Msg: Message{Kind: MsgLogReport, Queue: 1, Epoch: 1, Process: 1, End: 4, Epochs: []EpochStart{{1, 0}}}})
	eff = b.Step(&Input{Kind: InMessage, NowNs: 3, From: 3, Msg: Message{Kind: MsgLogReport, Queue: 1, Epoch: 2, Process: 1, End: 6, Epochs: []EpochStart{{1, 0}, {2, 5}}}})
	f := find(eff, EfSend)
	if len(f) != 1 || f[0].To != 3 || f[0].Msg.Kind != MsgFetch || f[0].Msg.Prev != 3 {
		t.Fatalf("want a fetch from n3 at offset 3, got\n%s", texts(eff))
	}
	recs := []record.Record{
		{Epoch: 1, Offset: 3, Kind: record.KindPublish, Body: []byte("a")},
		{Epoch: 1, Offset: 4, Kind: record.KindPublish, Body: []byte("b")},
		{Epoch: 2, Offset: 5, Kind: record.KindEpoch},
	}
	eff = b.Step(&Input{Kind: InMessage, NowNs: 4, From: 3, Msg: Message{Kind: MsgFetchReply, Queue: 1, Epoch: 2, Process: 1, Prev: 3, PrevEpoch: 1, End: 6, Records: recs}})
	var appended []uint64
	for _, e := range eff {
		if e.Kind == EfStorage && e.Op == OpAppend {
			for _, r := range e.Records {
				appended = append(appended, r.Offset)
				if r.Kind == record.KindEpoch && r.Offset == 6 && r.Epoch != 3 {
					t.Fatalf("the new epoch must exceed every reported one: got %d", r.Epoch)
				}
			}
		}
		if e.Kind == EfStorage && e.Op == OpRepaired {
			t.Fatalf("the unrepaired mark went before the restored records were durable:\n%s", texts(eff))
		}
	}
	if len(appended) != 4 || appended[3] != 6 {
		t.Fatalf("want offsets 3..5 fetched and the epoch record at 6, got %v\n%s", appended, texts(eff))
	}
	eff = b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 4}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Queue: 1, Offset: 7}})
	var repaired bool
	for _, e := range eff {
		repaired = repaired || (e.Kind == EfStorage && e.Op == OpRepaired)
	}
	if !repaired {
		t.Fatalf("want the unrepaired mark cleared once the epoch record is durable, got\n%s", texts(eff))
	}
}

// A recovering owner whose chosen source no longer continues its log (the
// source lost records since its report) starts over instead of waiting for
// a resend that would be answered the same way forever (seed 1001943).
func TestRecoveringOwnerStartsOverWhenSourceChanged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply Message
	}{
		{"epoch no longer continues", Message{Kind: MsgFetchReply, Queue: 1, Epoch: 1, Process: 1, Prev: 3, PrevEpoch: 7, End: 6}},
		{"source shrank", Message{Kind: MsgFetchReply, Queue: 1, Epoch: 1, Process: 1, Prev: 3, PrevEpoch: 1, End: 4}},
		{"source restarted", Message{Kind: MsgFetchReply, Queue: 1, Epoch: 1, Process: 2, Prev: 3, PrevEpoch: 1, End: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Config{Node: 1, Process: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
			b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1, End: 3, Epochs: []EpochStart{{1, 0}}, Unrepaired: true}}})
			b.Step(&Input{Kind: InMessage, NowNs: 2, From: 2, Msg: Message{Kind: MsgLogReport, Queue: 1, Epoch: 1, Process: 1, End: 4, Epochs: []EpochStart{{1, 0}}}})
			eff := b.Step(&Input{Kind: InMessage, NowNs: 3, From: 3, Msg: Message{Kind: MsgLogReport, Queue: 1, Epoch: 1, Process: 1, End: 6, Epochs: []EpochStart{{1, 0}}}})
			if f := find(eff, EfSend); len(f) != 1 || f[0].Msg.Kind != MsgFetch || f[0].To != 3 {
				t.Fatalf("want a fetch from n3, got\n%s", texts(eff))
			}
			m := tc.reply
			m.Records = []record.Record{{Epoch: 1, Offset: 3, Kind: record.KindPublish, Body: []byte("a")}}
			eff = b.Step(&Input{Kind: InMessage, NowNs: 4, From: 3, Msg: m})
			queries := 0
			for _, e := range eff {
				if e.Kind == EfSend && e.Msg.Kind == MsgLogQuery {
					queries++
				}
				if e.Kind == EfStorage {
					t.Fatalf("a reply from a changed source was used:\n%s", texts(eff))
				}
			}
			if queries != 2 {
				t.Fatalf("want the owner to ask both followers again, got\n%s", texts(eff))
			}
		})
	}
}

// A follower may have seen a higher epoch than its log holds; a rebuilding
// owner's new epoch must be above it too, or the follower fences it out
// forever (seed 431).
func TestRebuiltOwnerEpochAboveEveryEpochSeen(t *testing.T) {
	b := New(Config{Node: 1, Process: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Queue: 1, End: 3, Epochs: []EpochStart{{2, 0}}, Unrepaired: true}}})
	b.Step(&Input{Kind: InMessage, NowNs: 2, From: 2, Msg: Message{Kind: MsgLogReport, Queue: 1, Epoch: 4, Process: 1, End: 3, Epochs: []EpochStart{{2, 0}}}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 3, From: 3, Msg: Message{Kind: MsgLogReport, Queue: 1, Epoch: 2, Process: 1, End: 3, Epochs: []EpochStart{{2, 0}}}})
	for _, e := range eff {
		if e.Kind == EfStorage && e.Op == OpAppend {
			if r := e.Records[0]; r.Kind != record.KindEpoch || r.Epoch != 5 {
				t.Fatalf("want epoch 5 opened (above the follower's 4), got %v", r)
			}
			return
		}
	}
	t.Fatalf("no epoch opened:\n%s", texts(eff))
}
