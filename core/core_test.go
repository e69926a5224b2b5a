package core

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/queue"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

func TestDivergence(t *testing.T) {
	cases := []struct {
		a    []EpochStart
		aEnd uint64
		b    []EpochStart
		bEnd uint64
		want uint64
	}{
		{[]EpochStart{{Epoch: 1, Offset: 0}}, 10, []EpochStart{{Epoch: 1, Offset: 0}}, 5, 5},
		{[]EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 5}}, 10, []EpochStart{{Epoch: 1, Offset: 0}}, 8, 5},
		{[]EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 3, Offset: 7}}, 10, []EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 6}}, 9, 6},
		{nil, 0, []EpochStart{{Epoch: 1, Offset: 0}}, 4, 0},
		{[]EpochStart{{Epoch: 2, Offset: 0}}, 4, []EpochStart{{Epoch: 1, Offset: 0}}, 4, 0},
	}
	for i, c := range cases {
		if got := seam.Divergence(c.a, c.aEnd, c.b, c.bEnd); got != c.want {
			t.Errorf("case %d: divergence = %d, want %d", i, got, c.want)
		}
		if got := seam.Divergence(c.b, c.bEnd, c.a, c.aEnd); got != c.want {
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
		b.Write(effects[i].AppendText(nil, MsgTexts))
		b.WriteByte('\n')
	}
	return b.String()
}

// startOwner brings an owner of a fresh log to a ready epoch 1.
func startOwner(t *testing.T, p Policy) *Node {
	t.Helper()
	b := New(Config{Node: 1, Queues: []QueueConfig{queue3(p)}})
	eff := b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1}}})
	if len(find(eff, EfStorage)) != 2 {
		t.Fatalf("start: want the epoch record appended and synced, got\n%s", texts(eff))
	}
	eff = b.Step(&Input{Kind: InStorage, NowNs: 2, Done: StorageDone{Op: OpAppend, Group: 1}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 3, Done: StorageDone{Op: OpSync, Group: 1, Offset: 1}})
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
	b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpAppend, Group: 1}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Group: 1, Offset: 2}})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("confirmed with only the owner's copy under majority of 3:\n%s", texts(eff))
	}
	eff = b.Step(&Input{Kind: InMessage, NowNs: 7, From: 2, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppendReply, Epoch: 1, Ok: true, End: 2})})
	r := find(eff, EfReply)
	if len(r) != 1 || r[0].Outcome != Confirmed || r[0].Offset != 1 {
		t.Fatalf("want publish confirmed at offset 1 after a follower's durable report, got\n%s", texts(eff))
	}
}

func TestAllDurableWaitsForEveryReplica(t *testing.T) {
	b := startOwner(t, AllDurable)
	b.Step(&Input{Kind: InClient, NowNs: 4, Client: 9, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1, Body: []byte("x")}})
	b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpAppend, Group: 1}})
	b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Group: 1, Offset: 2}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 7, From: 2, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppendReply, Epoch: 1, Ok: true, End: 2})})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("all_durable confirmed with 2 of 3:\n%s", texts(eff))
	}
	eff = b.Step(&Input{Kind: InMessage, NowNs: 8, From: 3, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppendReply, Epoch: 1, Ok: true, End: 2})})
	if len(find(eff, EfReply)) != 1 {
		t.Fatalf("all_durable not confirmed with 3 of 3:\n%s", texts(eff))
	}
}

func TestStaleEpochReplyIgnored(t *testing.T) {
	b := startOwner(t, MajorityDurable)
	b.Step(&Input{Kind: InClient, NowNs: 4, Client: 9, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1, Body: []byte("x")}})
	b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpAppend, Group: 1}})
	b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Group: 1, Offset: 2}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 7, From: 2, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppendReply, Epoch: 0, Ok: true, End: 2})})
	if len(find(eff, EfReply)) != 0 {
		t.Fatalf("a reply of an older epoch confirmed a publish:\n%s", texts(eff))
	}
}

func TestFollowerTruncatesDivergentSuffixAndAcksOnlyAfterSync(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	// The follower holds offsets 0..3 of epoch 1; the owner's epoch 2 began at 2.
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1, End: 4, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}}}})
	recs := []record.Record{{Epoch: 2, Offset: 2, Kind: record.KindEpoch}}
	eff := b.Step(&Input{Kind: InMessage, NowNs: 2, From: 1, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppend, Epoch: 2, Prev: 2, PrevEpoch: 1, Records: recs})})
	st := find(eff, EfStorage)
	if len(st) != 3 || st[0].Op != OpTruncate || st[0].Offset != 2 || st[1].Op != OpAppend || st[2].Op != OpSync {
		t.Fatalf("want truncate at 2, append, sync; got\n%s", texts(eff))
	}
	for _, s := range find(eff, EfSend) {
		if sent(s).Ok && sent(s).End > 2 {
			t.Fatalf("follower reported %d durable before its sync:\n%s", sent(s).End, texts(eff))
		}
	}
	b.Step(&Input{Kind: InStorage, NowNs: 3, Done: StorageDone{Op: OpTruncate, Group: 1, Offset: 2}})
	b.Step(&Input{Kind: InStorage, NowNs: 4, Done: StorageDone{Op: OpAppend, Group: 1}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpSync, Group: 1, Offset: 3}})
	s := find(eff, EfSend)
	if len(s) != 1 || !sent(s[0]).Ok || sent(s[0]).End != 3 {
		t.Fatalf("want an ok reply with end 3 after the sync, got\n%s", texts(eff))
	}
}

func TestFollowerRejectsGapWithHistory(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1, End: 2, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}}}})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 2, From: 1, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppend, Epoch: 1, Prev: 5, PrevEpoch: 1})})
	s := find(eff, EfSend)
	if len(s) != 1 || sent(s[0]).Ok || sent(s[0]).End != 2 || len(sent(s[0]).Epochs) != 1 {
		t.Fatalf("want a reject with end 2 and the epoch history, got\n%s", texts(eff))
	}
}

func TestFencedOlderEpoch(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1, End: 2, Epochs: []EpochStart{{Epoch: 3, Offset: 0}}}}})
	recs := []record.Record{{Epoch: 2, Offset: 2, Kind: record.KindPublish}}
	eff := b.Step(&Input{Kind: InMessage, NowNs: 2, From: 1, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgAppend, Epoch: 2, Prev: 2, PrevEpoch: 3, Records: recs})})
	if len(eff) != 0 {
		t.Fatalf("an append of an older epoch was acted on:\n%s", texts(eff))
	}
}

func TestNotOwnerFailsPublish(t *testing.T) {
	b := New(Config{Node: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1}}})
	eff := b.Step(&Input{Kind: InClient, NowNs: 2, Client: 4, Req: Request{Kind: ReqPublish, ID: 1, Queue: 1}})
	r := find(eff, EfReply)
	if len(r) != 1 || r[0].Outcome != Failed {
		t.Fatalf("want a failed reply, got\n%s", texts(eff))
	}
}

func TestTextFormsAreOneLine(t *testing.T) {
	in := Input{Kind: InStart, Logs: []LogState{{Group: 1, End: 3, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}, Damage: "crc\nmismatch"}}}
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
		if got, want := string(seam.AppendUint(nil, v)), strconv.FormatUint(v, 10); got != want {
			t.Fatalf("AppendUint(%d) = %q, want %q", v, got, want)
		}
	}
}

// An owner whose log lost records asks every follower, fetches from the most
// complete one, and opens its epoch only after that.
func TestDamagedOwnerRecoversFromMostCompleteFollower(t *testing.T) {
	b := New(Config{Node: 1, Process: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
	eff := b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1, End: 3, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}, Damage: "crc mismatch", Unrepaired: true}}})
	var queries int
	for _, e := range eff {
		if e.Kind == EfSend && sent(e).Kind == queue.MsgLogQuery {
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
	b.Step(&Input{Kind: InMessage, NowNs: 2, From: 2, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgLogReport, Epoch: 1, Process: 1, End: 4, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}})})
	eff = b.Step(&Input{Kind: InMessage, NowNs: 3, From: 3, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgLogReport, Epoch: 2, Process: 1, End: 6, Epochs: []EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 5}}})})
	f := find(eff, EfSend)
	if len(f) != 1 || f[0].To != 3 || sent(f[0]).Kind != queue.MsgFetch || sent(f[0]).Prev != 3 {
		t.Fatalf("want a fetch from n3 at offset 3, got\n%s", texts(eff))
	}
	recs := []record.Record{
		{Epoch: 1, Offset: 3, Kind: record.KindPublish, Body: []byte("a")},
		{Epoch: 1, Offset: 4, Kind: record.KindPublish, Body: []byte("b")},
		{Epoch: 2, Offset: 5, Kind: record.KindEpoch},
	}
	eff = b.Step(&Input{Kind: InMessage, NowNs: 4, From: 3, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgFetchReply, Epoch: 2, Process: 1, Prev: 3, PrevEpoch: 1, End: 6, Records: recs})})
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
	eff = b.Step(&Input{Kind: InStorage, NowNs: 5, Done: StorageDone{Op: OpSync, Group: 1, Offset: 4}})
	eff = b.Step(&Input{Kind: InStorage, NowNs: 6, Done: StorageDone{Op: OpSync, Group: 1, Offset: 7}})
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
		reply queue.Msg
	}{
		{"epoch no longer continues", queue.Msg{Kind: queue.MsgFetchReply, Epoch: 7, Process: 1, Prev: 3, PrevEpoch: 7, End: 6}},
		{"source shrank", queue.Msg{Kind: queue.MsgFetchReply, Epoch: 1, Process: 1, Prev: 3, PrevEpoch: 1, End: 4}},
		{"source restarted", queue.Msg{Kind: queue.MsgFetchReply, Epoch: 1, Process: 2, Prev: 3, PrevEpoch: 1, End: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Config{Node: 1, Process: 2, Queues: []QueueConfig{queue3(MajorityDurable)}})
			b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1, End: 3, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}, Unrepaired: true}}})
			b.Step(&Input{Kind: InMessage, NowNs: 2, From: 2, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgLogReport, Epoch: 1, Process: 1, End: 4, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}})})
			eff := b.Step(&Input{Kind: InMessage, NowNs: 3, From: 3, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgLogReport, Epoch: 1, Process: 1, End: 6, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}})})
			if f := find(eff, EfSend); len(f) != 1 || sent(f[0]).Kind != queue.MsgFetch || f[0].To != 3 {
				t.Fatalf("want a fetch from n3, got\n%s", texts(eff))
			}
			m := tc.reply
			m.Records = []record.Record{{Epoch: max(1, m.PrevEpoch), Offset: 3, Kind: record.KindPublish, Body: []byte("a")}}
			eff = b.Step(&Input{Kind: InMessage, NowNs: 4, From: 3, Group: 1, Data: enc(m)})
			queries := 0
			for _, e := range eff {
				if e.Kind == EfSend && sent(e).Kind == queue.MsgLogQuery {
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
	b.Step(&Input{Kind: InStart, NowNs: 1, Logs: []LogState{{Group: 1, End: 3, Epochs: []EpochStart{{Epoch: 2, Offset: 0}}, Unrepaired: true}}})
	b.Step(&Input{Kind: InMessage, NowNs: 2, From: 2, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgLogReport, Epoch: 4, Process: 1, End: 3, Epochs: []EpochStart{{Epoch: 2, Offset: 0}}})})
	eff := b.Step(&Input{Kind: InMessage, NowNs: 3, From: 3, Group: 1, Data: enc(queue.Msg{Kind: queue.MsgLogReport, Epoch: 2, Process: 1, End: 3, Epochs: []EpochStart{{Epoch: 2, Offset: 0}}})})
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

// enc encodes a queue message as a peer would send it.
func enc(m queue.Msg) []byte { return queue.AppendMsg(nil, &m) }

// sent decodes the message of a send effect.
func sent(e Effect) queue.Msg {
	m, err := queue.DecodeMsg(e.Data)
	if err != nil {
		panic(err)
	}
	return m
}
