package ctrl

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/meta"
)

// soloGroup drives a one-voter group (node 1, learners 2 and 3) that leads
// alone, completing every persist at once; it collects what was applied.
type soloGroup struct {
	t       *testing.T
	g       *Group
	nowNs   int64
	applied []string
	notes   []string
}

func newSolo(t *testing.T) *soloGroup {
	cfg := DefaultConfig(1, []uint64{1})
	cfg.Learners = []uint64{2, 3}
	cfg.Process, cfg.Storage = 5, 9
	g, err := New(cfg, meta.State{})
	if err != nil {
		t.Fatal(err)
	}
	s := &soloGroup{t: t, g: g}
	s.effects(g.Begin(0))
	return s
}

func (s *soloGroup) effects(effs []Effect) {
	for _, e := range effs {
		switch e.Kind {
		case EfPersist:
			s.step(Input{Kind: InPersisted, Seq: e.Seq})
		case EfApplied:
			s.applied = append(s.applied, e.Note)
		case EfNote:
			s.notes = append(s.notes, e.Note)
		}
	}
}

func (s *soloGroup) step(in Input) {
	in.NowNs = s.nowNs
	s.effects(s.g.Step(in))
}

// run ticks every 10 ms for ms milliseconds.
func (s *soloGroup) run(ms int64) {
	for end := s.nowNs + ms*1e6; s.nowNs < end; {
		s.nowNs += 10e6
		s.step(Input{Kind: InTick, Draw: 1})
	}
}

func (s *soloGroup) heartbeat(node, process, storage uint64) {
	s.step(Input{Kind: InPeerMessage, From: node, Msg: AppendHeartbeat(nil, node, process, storage)})
}

// appliedSince returns what was applied since mark, joined.
func (s *soloGroup) appliedSince(mark int) string { return strings.Join(s.applied[mark:], "\n") }

func TestLiveness(t *testing.T) {
	s := newSolo(t)
	s.run(1000)
	if _, _, leader := s.g.Status(); !leader {
		t.Fatal("the solo voter does not lead")
	}
	if !strings.Contains(s.appliedSince(0), "register n1 process=5 storage=9") {
		t.Fatalf("the leader did not register itself:\n%s", s.appliedSince(0))
	}

	// A heartbeat registers a broker with its exact instances.
	m := len(s.applied)
	s.heartbeat(2, 3, 4)
	s.run(100)
	if !strings.Contains(s.appliedSince(m), "register n2 process=3 storage=4 => n2 live") {
		t.Fatalf("a heartbeat did not register n2:\n%s", s.appliedSince(m))
	}

	// Heartbeats every 500 ms keep it live; silence past the expiry (9 s
	// by default) removes it, and not much later.
	m = len(s.applied)
	for range 30 {
		s.heartbeat(2, 3, 4)
		s.run(500)
	}
	if got := s.appliedSince(m); strings.Contains(got, "down") {
		t.Fatalf("a broker heartbeating every 500 ms went down:\n%s", got)
	}
	m = len(s.applied)
	s.run(8500)
	if got := s.appliedSince(m); strings.Contains(got, "down") {
		t.Fatalf("n2 went down before its expiry:\n%s", got)
	}
	s.run(1000)
	if !strings.Contains(s.appliedSince(m), "down n2 process=3 => n2 down") {
		t.Fatalf("n2 silent past its expiry is still live:\n%s", s.appliedSince(m))
	}

	// A new process registers again; a delayed heartbeat of the old one
	// changes nothing.
	m = len(s.applied)
	s.heartbeat(2, 4, 4)
	s.run(100)
	s.heartbeat(2, 3, 4)
	s.run(1500)
	if got := s.appliedSince(m); !strings.Contains(got, "register n2 process=4") || strings.Contains(got, "process=3") {
		t.Fatalf("re-registration:\n%s", got)
	}

	// Eager failover: a lost connection of the committed process removes
	// it at once; one of an older process does nothing.
	m = len(s.applied)
	s.step(Input{Kind: InPeerLost, From: 2, Process: 3})
	s.run(100)
	if got := s.appliedSince(m); strings.Contains(got, "down") {
		t.Fatalf("a stale connection loss removed n2:\n%s", got)
	}
	s.step(Input{Kind: InPeerLost, From: 2, Process: 4})
	s.run(100)
	if got := s.appliedSince(m); !strings.Contains(got, "down n2 process=4 => n2 down") {
		t.Fatalf("a connection loss did not remove n2 at once:\n%s", got)
	}

	// A heartbeat that is not what its sender is, or does not decode, is
	// refused with a note.
	n := len(s.notes)
	s.step(Input{Kind: InPeerMessage, From: 3, Msg: AppendHeartbeat(nil, 2, 9, 9)})
	s.step(Input{Kind: InPeerMessage, From: 3, Msg: append(AppendHeartbeat(nil, 3, 1, 1), 0)})
	if refused := strings.Count(strings.Join(s.notes[n:], "\n"), "refused peer message"); refused != 2 {
		t.Fatalf("%d of 2 bad heartbeats refused: %q", refused, s.notes[n:])
	}
}

func FuzzHeartbeat(f *testing.F) {
	f.Add(AppendHeartbeat(nil, 2, 3, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		hb, err := decodeHeartbeat(b)
		if err != nil {
			return
		}
		if e := AppendHeartbeat(nil, hb.node, hb.process, hb.storage); string(e) != string(b) {
			t.Fatalf("%x decodes to %+v, which encodes as %x", b, hb, e)
		}
	})
}

// soloWithBrokers is a solo group that elected itself, with brokers 2
// (process 3, storage 4) and 3 (process 7, storage 8) registered live.
func soloWithBrokers(t *testing.T) *soloGroup {
	s := newSolo(t)
	s.run(1000)
	s.heartbeat(2, 3, 4)
	s.heartbeat(3, 7, 8)
	s.run(200)
	return s
}

func TestPlacement(t *testing.T) {
	s := soloWithBrokers(t)
	m := len(s.applied)
	for i, name := range []string{"a", "b", "c"} {
		c := metadata.Command{Kind: metadata.DeclareQueue, Queue: name, Replicas: 2, Policy: seam.MajorityDurable, MinInsync: 1}
		s.step(Input{Kind: InPropose, Msg: c.Encode(nil), Client: 1, ReqID: uint64(i)})
	}
	s.run(500)
	got := s.appliedSince(m)
	// Owners balance: one queue per broker.
	for _, owner := range []string{"owner=n1", "owner=n2", "owner=n3"} {
		if !strings.Contains(got, owner) {
			t.Fatalf("no queue placed with %s:\n%s", owner, got)
		}
	}
	if strings.Count(got, "=> placed") != 3 {
		t.Fatalf("want 3 placements:\n%s", got)
	}
	// n3 leaves the live set: the queues it holds are fenced by a
	// transition that keeps the survivors and replaces it.
	m = len(s.applied)
	s.step(Input{Kind: InPeerLost, From: 3, Process: 7})
	s.run(500)
	got = s.appliedSince(m)
	if strings.Count(got, "=> fenced") != 2 || !strings.Contains(got, "proposed=[1 2]") {
		t.Fatalf("want the 2 queues on n3 fenced with [1 2] proposed:\n%s", got)
	}
	// Nothing is placed on a broker outside the live set.
	c := metadata.Command{Kind: metadata.DeclareQueue, Queue: "d", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 1}
	m = len(s.applied)
	s.step(Input{Kind: InPropose, Msg: c.Encode(nil)})
	s.run(2000)
	if got := s.appliedSince(m); strings.Contains(got, "assign") {
		t.Fatalf("a 3-replica queue was placed with 2 live brokers:\n%s", got)
	}
	// n2 leaves too: the queue on [1 2] is not moved to n1 alone (a
	// majority of one would confirm on one copy of a queue of two): it
	// waits, unfenced, for live brokers.
	m = len(s.applied)
	s.step(Input{Kind: InPeerLost, From: 2, Process: 3})
	s.run(2000)
	if got := s.appliedSince(m); strings.Contains(got, "=> fenced") {
		t.Fatalf("a 2-replica majority queue was proposed onto one broker:\n%s", got)
	}
}

func FuzzInSyncRequest(f *testing.F) {
	var ns metadata.Nodes
	ns.N = copy(ns.ID[:], []seam.NodeID{1, 3})
	f.Add(AppendInSyncRequest(nil, 1<<20, 7, 1, 3, &ns))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeInSync(b)
		if err != nil {
			return
		}
		if e := AppendInSyncRequest(nil, r.queue, r.incarnation, r.epoch, r.version, &r.inSync); string(e) != string(b) {
			t.Fatalf("%x decodes to %+v, which encodes as %x", b, r, e)
		}
	})
}

// TestInSyncNeverAddsADownMember: the owner of an idle queue last heard
// its lost follower at the log's end and asks it back into the in-sync
// set; the leader refuses while the metadata holds it down (a stopped
// broker loses its place as soon as the controller sees it gone:
// docs/design/in-sync.md, "A broker that leaves the live set"),
// and grants a live member's return.
func TestInSyncNeverAddsADownMember(t *testing.T) {
	s := soloWithBrokers(t)
	c := metadata.Command{Kind: metadata.DeclareQueue, Queue: "a", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 1}
	s.step(Input{Kind: InPropose, Msg: c.Encode(nil), Client: 1, ReqID: 1})
	s.run(500)
	q, ok := s.g.Metadata().Queue("a")
	if !ok || !q.Assigned || q.Assignment.Owner != 1 {
		t.Fatalf("queue a not placed with n1 its owner: %+v", q)
	}
	ask := func(nodes ...seam.NodeID) {
		q, _ := s.g.Metadata().Queue("a")
		var ns metadata.Nodes
		for _, n := range nodes {
			ns.ID[ns.N] = n
			ns.N++
		}
		s.step(Input{Kind: InRequestInSync, Msg: AppendInSyncRequest(nil, q.ID, q.Incarnation, q.Assignment.Epoch, q.Assignment.InSyncVersion, &ns)})
		s.run(200)
	}
	ask(1, 2) // n3 out of the set, as its owner's lag timer would ask
	if q, _ := s.g.Metadata().Queue("a"); !slices.Equal(q.Assignment.InSync.Slice(), []seam.NodeID{1, 2}) {
		t.Fatalf("in-sync %v, want [1 2]", q.Assignment.InSync.Slice())
	}
	// The follower-loss hold keeps the queue on its assignment (only a
	// follower lost, W met): the case of the daemon's idle queues.
	s.step(Input{Kind: InPropose, Msg: setCmd(metadata.Settings[metadata.FollowerLossHoldMs].Key, 600000), Client: 1, ReqID: 2})
	s.run(200)
	s.step(Input{Kind: InPeerLost, From: 3, Process: 7})
	s.run(200)
	if q, _ := s.g.Metadata().Queue("a"); q.Assignment.Fenced {
		t.Fatal("the queue was fenced: the hold should keep it")
	}
	if b, _ := s.g.Metadata().Broker(3); b.Live {
		t.Fatal("n3 is still live after its loss")
	}
	m := len(s.applied)
	ask(1, 2, 3) // n3 back, its owner believes: it reported the log's end
	if got := s.appliedSince(m); strings.Contains(got, "in-sync") {
		t.Fatalf("a down member was asked back into the in-sync set and it committed:\n%s", got)
	}
	if !slices.ContainsFunc(s.notes, func(n string) bool { return strings.Contains(n, "n3 is not a live member") }) {
		t.Fatalf("the refusal was not noted; applied:\n%s\nnotes: %q", strings.Join(s.applied, "\n"), s.notes[max(0, len(s.notes)-8):])
	}
	s.heartbeat(3, 7, 8) // the same process back: live again
	s.run(200)
	if b, _ := s.g.Metadata().Broker(3); !b.Live {
		t.Skip("n3 is not registered live again by a heartbeat of its old process; the grant half needs it")
	}
	ask(1, 2, 3)
	if q, _ := s.g.Metadata().Queue("a"); !slices.Equal(q.Assignment.InSync.Slice(), []seam.NodeID{1, 2, 3}) {
		t.Fatalf("in-sync %v after a live member's return, want [1 2 3]", q.Assignment.InSync.Slice())
	}
}
