package metadata

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/route"
	"github.com/sluicemq/sluice/core/seam"
)

var examples = []Command{
	{Kind: SetSetting, Key: "liveness.expiry_ms", Value: 5000},
	{Kind: RegisterBroker, Node: 3, Process: 7, Storage: 99},
	{Kind: BrokerDown, Node: 3, Process: 7},
	{Kind: Drain, Node: 2, Draining: true},
	{Kind: DeclareQueue, Queue: "orders", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 2},
	{Kind: DeclareLifetime, Queue: "", Replicas: 1, Policy: seam.LeaderDurable, MinInsync: 1, ServerNamed: true,
		Life: Lifetime{AutoDelete: true, Transient: true, Exclusive: true, OwnerNode: 2, OwnerProcess: 9, OwnerConn: 4, Home: 2}},
	{Kind: DeleteQueue, Queue: "orders", Incarnation: 12},
	{Kind: Assign, Queue: "orders", Incarnation: 12, Epoch: 1, Owner: 2, Members: members(m(1, 3, 4), m(2, 5, 6))},
	{Kind: Transition, Queue: "orders", Incarnation: 12, Epoch: 1, Proposed: nodes(1, 3), Digest: Digest{1, 2, 3}},
	{Kind: SetInSync, Queue: "orders", Incarnation: 12, Epoch: 1, InSync: nodes(1, 2), InSyncVersion: 4},
	{Kind: Activate, Queue: "orders", Incarnation: 12, Epoch: 1, Digest: Digest{4, 5}, Owner: 3, Members: members(m(1, 3, 4), m(3, 8, 9)), InSync: nodes(3)},
	{Kind: AddLearner, Queue: "orders", Incarnation: 12, Epoch: 1, Learner: m(1, 9, 4)},
	{Kind: AdmitLearner, Queue: "orders", Incarnation: 12, Epoch: 1, Learner: m(1, 9, 4)},
	{Kind: Handoff, Queue: "orders", Incarnation: 12, Epoch: 1, Digest: Digest{7}, Node: 2, Candidate: 3},
	{Kind: RetryRecovery, Queue: "orders", Incarnation: 12, Epoch: 2},
	{Kind: Plan, Queue: "orders", Incarnation: 12, Epoch: 1, Digest: Digest{7}, Plan: RecoveryPlan{Source: 2, Storage: 6, Start: 3, End: 900, LastEpoch: 1, Identity: Digest{8, 9}}, Replaces: Digest{4}},
	{Kind: DeclareExchange, Exchange: "logs", ExchangeKind: route.Topic, Durable: true, AutoDelete: true, Internal: true, Alternate: "unrouted"},
	{Kind: DeleteExchange, Exchange: "logs", IfUnused: true},
	{Kind: Bind, Exchange: "logs", Queue: "orders", RoutingKey: "eu.*.#", Args: BindingArgs([]route.Field{{Key: "x-match", Class: route.ClassString, Value: "any"}})},
	{Kind: Unbind, Exchange: "logs", Dest: "archive", RoutingKey: ""},
}

func m(n seam.NodeID, p, s uint64) Member { return Member{Node: n, Process: p, Storage: s} }

func members(ms ...Member) Members {
	var out Members
	out.N = copy(out.M[:], ms)
	return out
}

func nodes(ns ...seam.NodeID) Nodes {
	var out Nodes
	out.N = copy(out.ID[:], ns)
	return out
}

func TestCodecRoundTrips(t *testing.T) {
	for _, c := range examples {
		b := c.Encode(nil)
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", c.String(), err)
		}
		if d != c {
			t.Fatalf("%s decoded as %s", c.String(), d.String())
		}
		// Every strict prefix is truncated; any extra byte is trailing.
		for n := 0; n < len(b); n++ {
			if _, err := Decode(b[:n]); !errors.Is(err, ErrDecode) {
				t.Fatalf("%s: a %d-byte prefix decoded", c.String(), n)
			}
		}
		if _, err := Decode(append(b, 0)); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Fatalf("%s: trailing byte accepted: %v", c.String(), err)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	set := examples[0].Encode(nil)
	cases := map[string][]byte{
		"version":       append([]byte{2}, set[1:]...),
		"unknown kind":  {version, 99},
		"empty":         nil,
		"bad bool":      {version, byte(Drain), 2, 7},
		"out of range":  (&Command{Kind: SetSetting, Key: "liveness.expiry_ms", Value: 1}).Encode(nil),
		"unknown key":   (&Command{Kind: SetSetting, Key: "no.such", Value: 1}).Encode(nil),
		"zero replicas": (&Command{Kind: DeclareQueue, Queue: "q", Replicas: 0, Policy: seam.LeaderDurable, MinInsync: 1}).Encode(nil),
		"name":          (&Command{Kind: DeclareQueue, Queue: "a\tb", Replicas: 1, Policy: seam.LeaderDurable, MinInsync: 1}).Encode(nil),
		"not utf-8":     (&Command{Kind: DeclareQueue, Queue: "a\xffb", Replicas: 1, Policy: seam.LeaderDurable, MinInsync: 1}).Encode(nil),
		"long string":   {version, byte(DeleteQueue), 200, 'x'},
		"too big":       make([]byte, CommandBytesMax+1),
	}
	for name, b := range cases {
		if c, err := Decode(b); !errors.Is(err, ErrDecode) {
			t.Errorf("%s: decoded as %s, err %v", name, c.String(), err)
		}
	}
}

func apply(t *testing.T, s *State, index uint64, c Command) (string, error) {
	t.Helper()
	return s.Apply(index, &c)
}

func TestCatalogueIncarnations(t *testing.T) {
	var s State
	decl := Command{Kind: DeclareQueue, Queue: "orders", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 2}
	if r, err := apply(t, &s, 5, decl); err != nil || !strings.Contains(r, "incarnation=5") {
		t.Fatalf("declare: %q %v", r, err)
	}
	// A concurrent declaration keeps the first.
	if r, err := apply(t, &s, 6, decl); err != nil || !strings.Contains(r, "exists") || !strings.Contains(r, "incarnation=5") {
		t.Fatalf("second declare: %q %v", r, err)
	}
	other := decl
	other.Replicas = 5
	other.MinInsync = 3
	if _, err := apply(t, &s, 7, other); err == nil {
		t.Fatal("a declaration with other arguments was accepted")
	}
	// A deletion names the incarnation it observed.
	if _, err := apply(t, &s, 8, Command{Kind: DeleteQueue, Queue: "orders", Incarnation: 4}); err == nil {
		t.Fatal("a delete of another incarnation was accepted")
	}
	if _, err := apply(t, &s, 9, Command{Kind: DeleteQueue, Queue: "orders", Incarnation: 5}); err != nil {
		t.Fatal(err)
	}
	// Recreation gets a new id and incarnation; the delayed delete of the
	// old one cannot remove it.
	if _, err := apply(t, &s, 10, decl); err != nil {
		t.Fatal(err)
	}
	q, _ := s.Queue("orders")
	if q.Incarnation != 10 || q.ID != FirstQueueID+1 {
		t.Fatalf("recreated as %+v", q)
	}
	if _, err := apply(t, &s, 11, Command{Kind: DeleteQueue, Queue: "orders", Incarnation: 5}); err == nil {
		t.Fatal("a delayed delete removed the recreated queue")
	}
	if s.Applied() != 11 {
		t.Fatalf("applied %d", s.Applied())
	}
}

func TestBrokersAndSettings(t *testing.T) {
	var s State
	if s.Setting(LivenessExpiryMs) != 9000 {
		t.Fatal("default")
	}
	if _, err := apply(t, &s, 1, Command{Kind: SetSetting, Key: "liveness.expiry_ms", Value: 3000}); err != nil || s.Setting(LivenessExpiryMs) != 3000 {
		t.Fatalf("set: %v", err)
	}
	if _, err := apply(t, &s, 2, Command{Kind: RegisterBroker, Node: 2, Process: 4, Storage: 1}); err != nil {
		t.Fatal(err)
	}
	// A stale down (an older process) changes nothing; the right one does.
	if _, err := apply(t, &s, 3, Command{Kind: BrokerDown, Node: 2, Process: 3}); err == nil {
		t.Fatal("a down of an older process was applied")
	}
	if b, _ := s.Broker(2); !b.Live {
		t.Fatal("live lost")
	}
	if _, err := apply(t, &s, 4, Command{Kind: BrokerDown, Node: 2, Process: 4}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Broker(2); b.Live || b.Since != 4 {
		t.Fatalf("after down: %+v", b)
	}
	// An older process cannot come back; a newer one can.
	if _, err := apply(t, &s, 5, Command{Kind: RegisterBroker, Node: 2, Process: 3, Storage: 1}); err == nil {
		t.Fatal("an older process registered")
	}
	if _, err := apply(t, &s, 6, Command{Kind: RegisterBroker, Node: 2, Process: 5, Storage: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSetting("liveness.expiry_ms", "12x"); err == nil {
		t.Fatal("a malformed value parsed")
	}
	if _, err := ParseSetting("replica.lag_time_max_ms", "99"); err == nil {
		t.Fatal("a value below the range parsed")
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range examples {
		f.Add(c.Encode(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes (one encoding per
		// command) and applies without a panic.
		if e := c.Encode(nil); !bytes.Equal(e, b) {
			t.Fatalf("%x decoded as %s, which encodes as %x", b, c.String(), e)
		}
		var s State
		_, _ = s.Apply(1, &c)
	})
}

func TestPlacementAndTransitions(t *testing.T) {
	var s State
	for i, n := range []seam.NodeID{1, 2, 3} {
		if _, err := apply(t, &s, uint64(1+i), Command{Kind: RegisterBroker, Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := apply(t, &s, 4, Command{Kind: DeclareQueue, Queue: "q", Replicas: 2, Policy: seam.MajorityDurable, MinInsync: 1}); err != nil {
		t.Fatal(err)
	}
	good := Command{Kind: Assign, Queue: "q", Incarnation: 4, Epoch: 1, Owner: 1, Members: members(m(1, 11, 21), m(2, 12, 22))}
	bad := []Command{good, good, good, good}
	bad[0].Members = members(m(1, 11, 21), m(2, 99, 22))               // another process
	bad[1].Members = members(m(1, 11, 21), m(4, 14, 24))               // unknown broker
	bad[2].Incarnation = 3                                             // another incarnation
	bad[3].Members = members(m(1, 11, 21), m(2, 12, 22), m(3, 13, 23)) // three of two replicas
	for i, c := range bad {
		if _, err := apply(t, &s, uint64(5+i), c); err == nil {
			t.Fatalf("bad placement %d accepted: %s", i, c.String())
		}
	}
	if _, err := apply(t, &s, 10, good); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 11, good); err == nil {
		t.Fatal("a queue was placed twice")
	}
	// The in-sync set: every member at placement; an owner's proposal of
	// members, the owner among them, for the current epoch.
	if q, _ := s.Queue("q"); q.Assignment.InSync != nodes(1, 2) {
		t.Fatalf("in-sync at placement: %v", q.Assignment.InSync.Slice())
	}
	for i, c := range []Command{
		{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: nodes(2)},                   // without the owner
		{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: nodes(1, 3)},                // a non-member
		{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 2, InSync: nodes(1)},                   // another epoch
		{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: nodes(1), InSyncVersion: 1}, // from a version not current
	} {
		if _, err := apply(t, &s, uint64(20+i), c); err == nil {
			t.Fatalf("bad in-sync set %d accepted: %s", i, c.String())
		}
	}
	if r, err := apply(t, &s, 30, Command{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: nodes(1)}); err != nil || r != `in-sync "q" [1] version=1 under-replicated` {
		t.Fatalf("%q %v", r, err)
	}
	// A delayed request from the version before is refused: the owner
	// moved on. The same set again makes the next version (the owner
	// withdrawing a request that asked a follower back).
	if _, err := apply(t, &s, 31, Command{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: nodes(1, 2)}); err == nil {
		t.Fatal("an in-sync change from an old version was accepted")
	}
	if r, err := apply(t, &s, 32, Command{Kind: SetInSync, Queue: "q", Incarnation: 4, Epoch: 1, InSync: nodes(1), InSyncVersion: 1}); err != nil || r != `in-sync "q" [1] version=2 under-replicated` {
		t.Fatalf("%q %v", r, err)
	}
	// Placement refuses a broker that left the live set.
	if _, err := apply(t, &s, 33, Command{Kind: BrokerDown, Node: 2, Process: 12}); err != nil {
		t.Fatal(err)
	}
	q, _ := s.Queue("q")
	proposed := nodes(1, 3)
	tr := Command{Kind: Transition, Queue: "q", Incarnation: 4, Epoch: 1, Proposed: proposed, Digest: TransitionDigest(&q, &proposed)}
	forged := tr
	forged.Proposed = nodes(1, 2)
	if _, err := apply(t, &s, 34, forged); err == nil {
		t.Fatal("a transition whose digest binds other members was accepted")
	}
	if _, err := apply(t, &s, 35, tr); err != nil {
		t.Fatal(err)
	}
	q, _ = s.Queue("q")
	if !q.Assignment.Fenced || q.Assignment.Pending.Epoch != 2 {
		t.Fatalf("after the transition: %+v", q.Assignment)
	}
	if _, err := apply(t, &s, 36, tr); err == nil {
		t.Fatal("a second transition was accepted")
	}
	// Activation ends the pending transition: exactly the proposed
	// members, live with the instances named, W of them installed with the
	// owner. (q has 2 replicas, majority_durable: W = 2.)
	act := Command{Kind: Activate, Queue: "q", Incarnation: 4, Epoch: 1, Digest: tr.Digest, Owner: 1,
		Members: members(m(1, 11, 21), m(3, 13, 23)), InSync: nodes(1, 3)}
	badAct := []Command{act, act, act, act, act, act}
	badAct[0].Digest[0]++                                                 // another transition
	badAct[1].Members = members(m(1, 11, 21), m(2, 12, 22))               // not the proposed members
	badAct[2].Members = members(m(1, 11, 21), m(3, 99, 23))               // another process
	badAct[3].InSync = nodes(1)                                           // one installed of W = 2
	badAct[4].Epoch = 2                                                   // not the fenced epoch
	badAct[5].Members, badAct[5].InSync = members(m(1, 11, 21)), nodes(1) // one live member left: W 1 below the replicas' 2
	for i, c := range badAct {
		if _, err := apply(t, &s, uint64(41+i), c); err == nil {
			t.Fatalf("bad activation %d accepted: %s", i, c.String())
		}
	}
	if noOwner := act; noOwner.InSync == nodes(3) || noOwner.Validate() != nil {
		t.Fatal("setup")
	}
	ownerless := act
	ownerless.InSync = nodes(3)
	if ownerless.Validate() == nil {
		t.Fatal("an activation whose owner did not install validated")
	}
	if r, err := apply(t, &s, 50, act); err != nil || r != `activated "q" epoch=2 owner=n1 in-sync=[1 3]` {
		t.Fatalf("activation: %q %v", r, err)
	}
	if a, _ := s.Queue("q"); a.Assignment.Fenced || a.Assignment.Epoch != 2 || a.Assignment.Members != act.Members || a.Assignment.InSync != nodes(1, 3) {
		t.Fatalf("after activation: %+v", a.Assignment)
	}
	if _, err := apply(t, &s, 51, act); err == nil {
		t.Fatal("a second activation was accepted")
	}

	// The digest binds every part: another incarnation, epoch or member
	// instance changes it.
	q2 := q
	q2.Incarnation++
	q3 := q
	q3.Assignment.Members.M[0].Process++
	if TransitionDigest(&q2, &proposed) == TransitionDigest(&q, &proposed) || TransitionDigest(&q3, &proposed) == TransitionDigest(&q, &proposed) {
		t.Fatal("the digest does not bind the incarnation and the members' instances")
	}
}

// A learner: a member's broker back with a newer process on
// the same storage is named by one guarded command, never the owner's;
// admission makes it the member, and a pending transition refuses it.
func TestLearnerAddAndAdmit(t *testing.T) {
	var s State
	for i, n := range []seam.NodeID{1, 2, 3} {
		if _, err := apply(t, &s, uint64(1+i), Command{Kind: RegisterBroker, Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := apply(t, &s, 4, Command{Kind: DeclareQueue, Queue: "q", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 5, Command{Kind: Assign, Queue: "q", Incarnation: 4, Epoch: 1, Owner: 1, Members: members(m(1, 11, 21), m(2, 12, 22), m(3, 13, 23))}); err != nil {
		t.Fatal(err)
	}
	// n2 restarts: process 30, the same storage.
	if _, err := apply(t, &s, 6, Command{Kind: RegisterBroker, Node: 2, Process: 30, Storage: 22}); err != nil {
		t.Fatal(err)
	}
	add := Command{Kind: AddLearner, Queue: "q", Incarnation: 4, Epoch: 1, Learner: m(2, 30, 22)}
	bad := []Command{add, add, add, add, add}
	bad[0].Learner = m(2, 31, 22) // not the live process
	bad[1].Learner = m(2, 30, 99) // another storage
	bad[2].Learner = m(1, 11, 21) // the owner
	bad[3].Epoch = 2              // another epoch
	bad[4].Learner = m(4, 30, 22) // no member
	for i, c := range bad {
		if _, err := apply(t, &s, uint64(10+i), c); err == nil {
			t.Fatalf("bad learner %d accepted: %s", i, c.String())
		}
	}
	if r, err := apply(t, &s, 20, add); err != nil || r != `learner of "q" n2/30/22` {
		t.Fatalf("%q %v", r, err)
	}
	if _, err := apply(t, &s, 21, add); err == nil {
		t.Fatal("a second learner accepted while the first runs")
	}
	// The image keeps it.
	img := s.AppendImage(nil)
	back, err := DecodeImage(img)
	if err != nil || !bytes.Equal(back.AppendImage(nil), img) {
		t.Fatalf("image with a learner: %v", err)
	}
	if q, _ := back.Queue("q"); q.Assignment.Learner != m(2, 30, 22) {
		t.Fatalf("the image's learner: %+v", q.Assignment.Learner)
	}
	admit := Command{Kind: AdmitLearner, Queue: "q", Incarnation: 4, Epoch: 1, Learner: m(2, 30, 22)}
	wrong := admit
	wrong.Learner = m(3, 13, 23)
	if _, err := apply(t, &s, 22, wrong); err == nil {
		t.Fatal("an admission of another instance accepted")
	}
	// A pending transition blocks admission and clears the learner.
	fenced := s
	fenced.queues = append([]Queue(nil), s.queues...)
	q, _ := fenced.Queue("q")
	proposed := nodes(1, 3)
	if _, err := apply(t, &fenced, 23, Command{Kind: Transition, Queue: "q", Incarnation: 4, Epoch: 1, Proposed: proposed, Digest: TransitionDigest(&q, &proposed)}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &fenced, 24, admit); err == nil {
		t.Fatal("an admission accepted while a transition is pending")
	}
	if q, _ := fenced.Queue("q"); q.Assignment.Learner != (Member{}) {
		t.Fatalf("the transition kept the learner: %+v", q.Assignment.Learner)
	}
	if r, err := apply(t, &s, 25, admit); err != nil || r != `admitted n2/30/22 to "q"` {
		t.Fatalf("%q %v", r, err)
	}
	if q, _ := s.Queue("q"); q.Assignment.Members != members(m(1, 11, 21), m(2, 30, 22), m(3, 13, 23)) || q.Assignment.Learner != (Member{}) || q.Assignment.Epoch != 1 {
		t.Fatalf("after admission: %+v", q.Assignment)
	}
	if _, err := apply(t, &s, 26, admit); err == nil {
		t.Fatal("a second admission accepted")
	}
}

// A new copy's learner: a queue running on fewer members than its
// replicas (a recovery left it two of three) names a broker outside them
// its learner, and admission adds it (E grows, members ascending, W
// unchanged); a full assignment or a draining broker refuses one, and an
// all_durable queue is never activated short (its W would change).
func TestLearnerNewCopy(t *testing.T) {
	for _, policy := range []seam.Policy{seam.MajorityDurable, seam.AllDurable} {
		var s State
		for i, n := range []seam.NodeID{1, 2, 3, 4} {
			if _, err := apply(t, &s, uint64(1+i), Command{Kind: RegisterBroker, Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)}); err != nil {
				t.Fatal(err)
			}
		}
		steps := []Command{
			{Kind: DeclareQueue, Queue: "q", Replicas: 3, Policy: policy, MinInsync: 1},
			{Kind: Assign, Queue: "q", Incarnation: 5, Epoch: 1, Owner: 1, Members: members(m(1, 11, 21), m(2, 12, 22), m(3, 13, 23))},
		}
		for i, c := range steps {
			if _, err := apply(t, &s, uint64(5+i), c); err != nil {
				t.Fatal(err)
			}
		}
		q, _ := s.Queue("q")
		proposed := nodes(1, 3)
		tr := Command{Kind: Transition, Queue: "q", Incarnation: 5, Epoch: 1, Proposed: proposed, Digest: TransitionDigest(&q, &proposed)}
		act := Command{Kind: Activate, Queue: "q", Incarnation: 5, Epoch: 1, Digest: tr.Digest, Owner: 1,
			Members: members(m(1, 11, 21), m(3, 13, 23)), InSync: nodes(1, 3)}
		if _, err := apply(t, &s, 10, tr); err != nil {
			t.Fatal(err)
		}
		if policy == seam.AllDurable {
			// Two members would confirm on two copies, not the three its
			// replicas ask: no activation (nor placement) leaves it so.
			if _, err := apply(t, &s, 11, act); err == nil {
				t.Fatal("all_durable: an activation on 2 of 3 members accepted")
			}
			continue
		}
		if _, err := apply(t, &s, 11, act); err != nil {
			t.Fatal(err)
		}
		add := Command{Kind: AddLearner, Queue: "q", Incarnation: 5, Epoch: 2, Learner: m(2, 12, 22)}
		drain := Command{Kind: Drain, Node: 4, Draining: true}
		if _, err := apply(t, &s, 19, drain); err != nil {
			t.Fatal(err)
		}
		toDraining := add
		toDraining.Learner = m(4, 14, 24)
		if _, err := apply(t, &s, 20, toDraining); err == nil {
			t.Fatal("a new copy on a draining broker accepted")
		}
		if r, err := apply(t, &s, 21, add); err != nil || r != `learner of "q" n2/12/22` {
			t.Fatalf("%q %v", r, err)
		}
		admit := Command{Kind: AdmitLearner, Queue: "q", Incarnation: 5, Epoch: 2, Learner: m(2, 12, 22)}
		if r, err := apply(t, &s, 22, admit); err != nil || r != `admitted n2/12/22 to "q": 3 members under-replicated` {
			t.Fatalf("%q %v", r, err)
		}
		q, _ = s.Queue("q")
		if a := q.Assignment; a.Members != members(m(1, 11, 21), m(2, 12, 22), m(3, 13, 23)) || a.Learner != (Member{}) || a.Epoch != 2 || a.Owner != 1 || a.InSync != nodes(1, 3) {
			t.Fatalf("after admission: %+v", a)
		}
		// Under-replicated until its owner has it join the in-sync set.
		join := Command{Kind: SetInSync, Queue: "q", Incarnation: 5, Epoch: 2, InSync: nodes(1, 2, 3), InSyncVersion: q.Assignment.InSyncVersion}
		if _, err := apply(t, &s, 23, join); err != nil || !q.UnderReplicated() {
			t.Fatalf("join: %v, under-replicated before: %t", err, q.UnderReplicated())
		}
		if q, _ = s.Queue("q"); q.UnderReplicated() {
			t.Fatal("three members of three in sync under-replicated")
		}
		undrain := drain
		undrain.Draining = false
		if _, err := apply(t, &s, 24, undrain); err != nil {
			t.Fatal(err)
		}
		full := add
		full.Learner = m(4, 14, 24)
		if _, err := apply(t, &s, 25, full); err == nil {
			t.Fatal("a fourth copy of a three-replica queue accepted")
		}
		img := s.AppendImage(nil)
		if back, err := DecodeImage(img); err != nil || !bytes.Equal(back.AppendImage(nil), img) {
			t.Fatalf("image after a new copy: %v", err)
		}
	}
}

// Every kind has its name (a bare kindEnd once repeated the last kind's
// value, and the last kind printed as "kind10").
func TestKindNames(t *testing.T) {
	for k := SetSetting; k < kindEnd; k++ {
		if s := k.String(); s == "" || strings.HasPrefix(s, "kind") {
			t.Errorf("kind %d has no name: %q", k, s)
		}
	}
	if int(kindEnd) != len(kindNames) {
		t.Errorf("kindEnd %d, %d names", kindEnd, len(kindNames))
	}
}

// A fenced queue's recovery is handed from its candidate only while that
// one is gone or draining, to a live, undrained proposed member, under the
// pending transition's epoch and digest; the one handed to stays the
// candidate when the first returns, and the image keeps it.
func TestHandoff(t *testing.T) {
	s := placedOnThree(t, 4)
	hand := Command{Kind: Handoff, Queue: "q", Incarnation: 5, Epoch: 1, Node: 2, Candidate: 3}
	if _, err := apply(t, &s, 7, hand); err == nil {
		t.Fatal("a handoff of a queue with no pending transition was accepted")
	}
	q, _ := s.Queue("q")
	proposed := nodes(2, 3, 4)
	digest := TransitionDigest(&q, &proposed)
	if _, err := apply(t, &s, 8, Command{Kind: BrokerDown, Node: 1, Process: 11}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 9, Command{Kind: Transition, Queue: "q", Incarnation: 5, Epoch: 1, Proposed: proposed, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	if q, _ := s.Queue("q"); q.Assignment.Candidate() != 2 {
		t.Fatalf("candidate n%d, want n2: the first proposed previous member", q.Assignment.Candidate())
	}
	hand.Digest = digest
	index := uint64(10)
	refused := refuser(t, &s, &index)
	refused("the candidate is live", hand)
	if _, err := apply(t, &s, 20, Command{Kind: BrokerDown, Node: 2, Process: 12}); err != nil {
		t.Fatal(err)
	}
	index = 20
	other := hand
	other.Digest = Digest{9}
	refused("another transition's digest", other)
	other = hand
	other.Epoch = 2
	refused("another epoch", other)
	other = hand
	other.Node = 3
	other.Candidate = 4
	refused("from a broker that is not the candidate", other)
	other = hand
	other.Candidate = 1
	refused("to a broker not proposed", other)
	if _, err := apply(t, &s, 30, Command{Kind: Drain, Node: 3, Draining: true}); err != nil {
		t.Fatal(err)
	}
	index = 30
	refused("to a draining broker", hand)
	if _, err := apply(t, &s, 40, Command{Kind: Drain, Node: 3, Draining: false}); err != nil {
		t.Fatal(err)
	}
	if r, err := apply(t, &s, 41, hand); err != nil || r != `handed "q"'s recovery from n2 to n3` {
		t.Fatalf("%q %v", r, err)
	}
	if _, err := apply(t, &s, 42, Command{Kind: RegisterBroker, Node: 2, Process: 15, Storage: 22}); err != nil {
		t.Fatal(err)
	}
	q, _ = s.Queue("q")
	if q.Assignment.Candidate() != 3 {
		t.Fatalf("candidate n%d after n2's return, want n3 still", q.Assignment.Candidate())
	}
	index = 42
	refused("again from the first candidate", hand)
	img, err := DecodeImage(s.AppendImage(nil))
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := img.Queue("q"); q.Assignment.Candidate() != 3 || q.Assignment.Pending.Candidate != 3 {
		t.Fatalf("the image's candidate n%d", q.Assignment.Candidate())
	}
	// Activation ends the transition, and with it the handed candidate.
	if _, err := apply(t, &s, 50, Command{Kind: Activate, Queue: "q", Incarnation: 5, Epoch: 1, Digest: digest, Owner: 3,
		Members: members(m(2, 15, 22), m(3, 13, 23), m(4, 14, 24)), InSync: nodes(2, 3)}); err != nil {
		t.Fatal(err)
	}
	if q, _ := s.Queue("q"); q.Assignment.Pending != (PendingTransition{}) || q.Assignment.Candidate() != 0 {
		t.Fatalf("after the activation: pending %+v", q.Assignment.Pending)
	}
}

// refuser returns a check that applying c at the index after *index is
// refused (why: the reason it must be).
func refuser(t *testing.T, s *State, index *uint64) func(why string, c Command) {
	return func(why string, c Command) {
		t.Helper()
		*index++
		if _, err := apply(t, s, *index, c); err == nil {
			t.Fatalf("%s: %s accepted", why, c.String())
		}
	}
}

// placedOnThree returns the metadata of brokers n1..n<brokers>
// registered (process 10+n, storage 20+n) and queue "q" (3 replicas,
// majority, incarnation brokers+1) placed on n1, n2, n3 with n1 its owner.
func placedOnThree(t *testing.T, brokers int) State {
	t.Helper()
	var s State
	for n := 1; n <= brokers; n++ {
		if _, err := apply(t, &s, uint64(n), Command{Kind: RegisterBroker, Node: seam.NodeID(n), Process: 10 + uint64(n), Storage: 20 + uint64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	inc := uint64(brokers + 1)
	if _, err := apply(t, &s, inc, Command{Kind: DeclareQueue, Queue: "q", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, inc+1, Command{Kind: Assign, Queue: "q", Incarnation: inc, Epoch: 1, Owner: 1,
		Members: members(m(1, 11, 21), m(2, 12, 22), m(3, 13, 23))}); err != nil {
		t.Fatal(err)
	}
	return s
}

// A retry counts on the pending transition the operator saw: refused for a
// queue not fenced, another incarnation or another pending epoch; each
// one applied counts one more; a new transition starts at none.
func TestRetryRecovery(t *testing.T) {
	var s State
	for i, n := range []seam.NodeID{1, 2, 3} {
		if _, err := apply(t, &s, uint64(1+i), Command{Kind: RegisterBroker, Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := apply(t, &s, 4, Command{Kind: DeclareQueue, Queue: "q", Replicas: 2, Policy: seam.MajorityDurable, MinInsync: 1}); err != nil {
		t.Fatal(err)
	}
	retry := Command{Kind: RetryRecovery, Queue: "q", Incarnation: 4, Epoch: 2}
	if _, err := apply(t, &s, 5, retry); err == nil || !strings.Contains(err.Error(), "not fenced") {
		t.Fatalf("a retry of a queue not placed: %v", err)
	}
	if _, err := apply(t, &s, 6, Command{Kind: Assign, Queue: "q", Incarnation: 4, Epoch: 1, Owner: 1, Members: members(m(1, 11, 21), m(2, 12, 22))}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 7, retry); err == nil || !strings.Contains(err.Error(), "not fenced") {
		t.Fatalf("a retry of a queue serving: %v", err)
	}
	q, _ := s.Queue("q")
	proposed := nodes(1, 3)
	if _, err := apply(t, &s, 8, Command{Kind: Transition, Queue: "q", Incarnation: 4, Epoch: 1, Proposed: proposed, Digest: TransitionDigest(&q, &proposed)}); err != nil {
		t.Fatal(err)
	}
	other, stale := retry, retry
	other.Incarnation, stale.Epoch = 3, 3
	for i, c := range []Command{other, stale} {
		if _, err := apply(t, &s, uint64(9+i), c); err == nil {
			t.Fatalf("retry %d accepted: %s", i, c.String())
		}
	}
	if q, _ := s.Queue("q"); q.Assignment.Pending.Retries != 0 {
		t.Fatalf("refused retries counted: %d", q.Assignment.Pending.Retries)
	}
	for i := uint64(1); i <= 2; i++ {
		r, err := apply(t, &s, 10+i, retry)
		if q, _ := s.Queue("q"); err != nil || q.Assignment.Pending.Retries != i {
			t.Fatalf("retry %d: %q %v, %d counted", i, r, err, q.Assignment.Pending.Retries)
		}
	}
	if _, err := Decode((&Command{Kind: RetryRecovery, Queue: "q", Incarnation: 4}).Encode(nil)); !errors.Is(err, ErrDecode) {
		t.Fatalf("a retry without an epoch decoded: %v", err)
	}
}

// A pending transition's first plan stays: the same plan again, a plan
// naming no plan it replaces and one naming another are refused; a
// Handoff and a Repropose keep it; a plan that names it replaces it; the
// image keeps it; a plan must name a previous member on its storage,
// under the pending transition's epoch and digest. (A repropose names no
// broker down or draining that it did not propose before.)
func TestPlanIsKept(t *testing.T) {
	s := placedOnThree(t, 5)
	first := Command{Kind: Plan, Queue: "q", Incarnation: 6, Epoch: 1,
		Plan: RecoveryPlan{Source: 2, Storage: 22, Start: 0, End: 500, LastEpoch: 1, Identity: Digest{1}}}
	index := uint64(10)
	refused := refuser(t, &s, &index)
	refused("no pending transition", first)
	q, _ := s.Queue("q")
	proposed := nodes(2, 3, 4)
	digest := TransitionDigest(&q, &proposed)
	if _, err := apply(t, &s, 20, Command{Kind: BrokerDown, Node: 1, Process: 11}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 21, Command{Kind: Transition, Queue: "q", Incarnation: 6, Epoch: 1, Proposed: proposed, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	index = 21
	refused("another transition's digest", first)
	first.Digest = digest
	other := first
	other.Plan.Storage = 99
	refused("a source on storage the assignment does not name", other)
	other = first
	other.Plan.Source, other.Plan.Storage = 4, 24
	refused("a source that was no member", other)
	other = first
	other.Replaces = Digest{5}
	refused("a first plan that names one it replaces", other)
	if r, err := apply(t, &s, 30, first); err != nil || !strings.HasPrefix(r, `planned "q"'s recovery: source=n2/22 [0,500)`) {
		t.Fatalf("%q %v", r, err)
	}
	index = 30
	refused("the same plan again", first)
	second := first
	second.Plan = RecoveryPlan{Source: 3, Storage: 23, Start: 0, End: 400, LastEpoch: 1, Identity: Digest{2}}
	refused("another plan naming none it replaces", second)
	second.Replaces = Digest{3}
	refused("another plan naming another it replaces", second)
	planOf := func() RecoveryPlan { q, _ := s.Queue("q"); return q.Assignment.Pending.Plan }
	// A handoff keeps it.
	if _, err := apply(t, &s, 40, Command{Kind: BrokerDown, Node: 2, Process: 12}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 41, Command{Kind: Handoff, Queue: "q", Incarnation: 6, Epoch: 1, Digest: digest, Node: 2, Candidate: 3}); err != nil {
		t.Fatal(err)
	}
	if planOf() != first.Plan {
		t.Fatalf("after the handoff: plan %s", planOf().String())
	}
	img, err := DecodeImage(s.AppendImage(nil))
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := img.Queue("q"); q.Assignment.Pending.Plan != first.Plan {
		t.Fatalf("the image's plan %s", q.Assignment.Pending.Plan.String())
	}
	second.Replaces = first.Plan.Identity
	if r, err := apply(t, &s, 50, second); err != nil || !strings.HasPrefix(r, "re-planned") || planOf() != second.Plan {
		t.Fatalf("%q %v: plan %s", r, err, planOf().String())
	}
	// A repropose keeps the plan under the new digest.
	for i, n := range []seam.NodeID{3, 4} {
		if _, err := apply(t, &s, uint64(60+i), Command{Kind: BrokerDown, Node: n, Process: 10 + uint64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := apply(t, &s, 70, Command{Kind: Repropose, Queue: "q", Incarnation: 6, Epoch: 1, Digest: digest, Proposed: nodes(2, 5)}); err == nil {
		t.Fatal("a repropose to a broker down was accepted")
	}
	if _, err := apply(t, &s, 71, Command{Kind: RegisterBroker, Node: 2, Process: 16, Storage: 22}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 72, Command{Kind: Drain, Node: 5, Draining: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 73, Command{Kind: Repropose, Queue: "q", Incarnation: 6, Epoch: 1, Digest: digest, Proposed: nodes(2, 5)}); err == nil {
		t.Fatal("a repropose to a draining broker was accepted")
	}
	if _, err := apply(t, &s, 74, Command{Kind: Drain, Node: 5, Draining: false}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, &s, 75, Command{Kind: Repropose, Queue: "q", Incarnation: 6, Epoch: 1, Digest: digest, Proposed: nodes(2, 5)}); err != nil {
		t.Fatal(err)
	}
	if q, _ := s.Queue("q"); planOf() != second.Plan || q.Assignment.Pending.Digest == digest {
		t.Fatalf("after the repropose: plan %s, digest %x", planOf().String(), q.Assignment.Pending.Digest[:6])
	}
}
