package recovery

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/seam"
)

// transition3 is a majority_durable queue's transition over n1, n2, n3
// (E = 3, W = 2, so R = 2).
func transition3() Transition {
	return Transition{Queue: 7, Incarnation: 40, Epoch: 9, Digest: Digest{0xd1},
		Previous: []Replica{{1, 11}, {2, 12}, {3, 13}}, W: 2}
}

// seal is n's seal for t, its log reaching end in lastEpoch.
func seal(t Transition, n seam.NodeID, lastEpoch, end uint64) Seal {
	return Seal{Queue: t.Queue, Incarnation: t.Incarnation, Epoch: t.Epoch, Transition: t.Digest, Node: n, Process: 100 + uint64(n),
		Storage: 10 + uint64(n), End: end, LastEpoch: lastEpoch, Identity: Digest{byte(n), byte(end)}}
}

func mustCollection(t *testing.T, tr Transition) *Collection {
	t.Helper()
	c, err := NewCollection(tr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// R = E - W + 1 distinct complete witnesses, counted once each, from the
// previous replicas only; the source reaches furthest.
func TestCollectionNeedsR(t *testing.T) {
	tr := transition3()
	c := mustCollection(t, tr)
	if c.Threshold() != 2 {
		t.Fatalf("R = %d, want 2", c.Threshold())
	}
	if err := c.Add(seal(tr, 2, 8, 1200)); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(seal(tr, 2, 8, 1200)); err != nil || c.Witnesses() != 1 || c.Complete() {
		t.Fatalf("an identical retry: %v, %d witnesses, complete=%v; want it counted once", err, c.Witnesses(), c.Complete())
	}
	if _, ok := c.Source(); ok {
		t.Fatal("a source with one witness of R = 2")
	}
	// Not previous replicas: another node, or n3 with another data directory.
	stranger := seal(tr, 4, 9, 9999)
	stranger.Storage = 14
	wiped := seal(tr, 3, 9, 9999)
	wiped.Storage = 99
	for _, s := range []Seal{stranger, wiped} {
		if err := c.Add(s); err == nil || c.Witnesses() != 1 {
			t.Fatalf("n%d storage %d counted (%v)", s.Node, s.Storage, err)
		}
	}
	// Another transition's seal is refused.
	stale := seal(tr, 3, 8, 1300)
	stale.Transition = Digest{0xee}
	if err := c.Add(stale); err == nil {
		t.Fatal("a seal of another transition was accepted")
	}
	// A restarted process of n3's data directory witnesses.
	restarted := seal(tr, 3, 8, 1300)
	restarted.Process = 999
	if err := c.Add(restarted); err != nil || !c.Complete() {
		t.Fatalf("n3's restarted process: %v, complete=%v", err, c.Complete())
	}
	if s, ok := c.Source(); !ok || s.Node != 3 {
		t.Fatalf("source n%d (%v), want n3 (end 1300)", s.Node, ok)
	}
}

// The source is the highest (last epoch, end), not the first witness nor
// the longest log of an older epoch; ties go to the lowest node.
func TestCollectionSource(t *testing.T) {
	tr := transition3()
	tr.Previous = append(tr.Previous, Replica{4, 14}, Replica{5, 15})
	tr.W = 3 // E = 5, R = 3
	cases := []struct {
		seals []Seal
		want  seam.NodeID
	}{
		{[]Seal{seal(tr, 1, 8, 100), seal(tr, 2, 8, 120), seal(tr, 3, 8, 110)}, 2},
		{[]Seal{seal(tr, 1, 7, 500), seal(tr, 2, 8, 120), seal(tr, 3, 6, 900)}, 2}, // a longer log of an older epoch loses
		{[]Seal{seal(tr, 4, 8, 120), seal(tr, 2, 8, 120), seal(tr, 5, 8, 100)}, 2}, // a tie: the lowest node
	}
	for i, cs := range cases {
		c := mustCollection(t, tr)
		for _, s := range cs.seals {
			if err := c.Add(s); err != nil {
				t.Fatal(err)
			}
		}
		if s, ok := c.Source(); !ok || s.Node != cs.want {
			t.Fatalf("case %d: source n%d (%v), want n%d", i, s.Node, ok, cs.want)
		}
	}
}

// A damaged log is recorded but is no complete witness (nor a source);
// contradictory seals from one replica block the collection for good.
func TestCollectionDamageAndContradiction(t *testing.T) {
	tr := transition3()
	c := mustCollection(t, tr)
	damaged := seal(tr, 1, 8, 5000)
	damaged.Damaged = true
	c.Add(damaged)
	c.Add(seal(tr, 2, 8, 1200))
	if c.Complete() {
		t.Fatal("complete with one complete witness and one damaged")
	}
	c.Add(seal(tr, 3, 8, 1100))
	if s, ok := c.Source(); !ok || s.Node != 2 {
		t.Fatalf("source n%d (%v), want n2: the damaged n1 is no source", s.Node, ok)
	}
	other := seal(tr, 3, 8, 1150)
	if err := c.Add(other); err != nil {
		t.Fatal(err)
	}
	if c.Complete() || !strings.Contains(c.Blocked(), "n3 sealed twice") || c.BlockedWhy() != seam.AsideContradictorySeals {
		t.Fatalf("contradictory seals from n3: complete=%v blocked=%q", c.Complete(), c.Blocked())
	}
	if _, ok := c.Source(); ok {
		t.Fatal("a blocked collection gave a source")
	}
}

// An isr queue: one complete witness from the last committed in-sync set
// suffices (clean election), and only such a witness is a source; a
// witness outside the set, however long its log, never is.
func TestCollectionISR(t *testing.T) {
	tr := transition3()
	tr.ISR, tr.InSync = true, []seam.NodeID{1, 2}
	c := mustCollection(t, tr)
	c.Add(seal(tr, 3, 8, 9000)) // out of the set: no witness
	if c.Complete() || c.Witnesses() != 0 {
		t.Fatalf("a witness outside the in-sync set counted: %d", c.Witnesses())
	}
	c.Add(seal(tr, 2, 8, 1200))
	if s, ok := c.Source(); !ok || s.Node != 2 {
		t.Fatalf("source n%d (%v), want n2", s.Node, ok)
	}
}

// Malformed transitions are refused.
func TestCollectionRefusesMalformed(t *testing.T) {
	bad := []func(*Transition){
		func(t *Transition) { t.Previous = nil },
		func(t *Transition) { t.W = 0 },
		func(t *Transition) { t.W = 4 },
		func(t *Transition) { t.Previous[2].Node = 1 },
		func(t *Transition) { t.ISR = true },
		func(t *Transition) {
			for n := seam.NodeID(4); n <= seam.ReplicasMax+1; n++ {
				t.Previous = append(t.Previous, Replica{n, 10 + uint64(n)})
			}
		},
	}
	for i, change := range bad {
		tr := transition3()
		change(&tr)
		if _, err := NewCollection(tr); err == nil {
			t.Fatalf("malformed transition %d accepted", i)
		}
	}
}

// A replica that met damage since its seal stops counting, without
// blocking the collection; a damaged replica's later seals change nothing.
func TestCollectionLaterDamage(t *testing.T) {
	tr := transition3()
	c := mustCollection(t, tr)
	c.Add(seal(tr, 1, 8, 1200))
	c.Add(seal(tr, 2, 8, 1100))
	if !c.Complete() {
		t.Fatal("not complete with two witnesses")
	}
	damaged := seal(tr, 1, 8, 900)
	damaged.Damaged = true
	c.Add(damaged)
	if c.Complete() || c.Blocked() != "" || c.Witnesses() != 1 {
		t.Fatalf("after n1 met damage: complete=%v blocked=%q witnesses=%d", c.Complete(), c.Blocked(), c.Witnesses())
	}
	c.Add(seal(tr, 1, 8, 1200))
	if c.Witnesses() != 1 || c.Blocked() != "" {
		t.Fatalf("a damaged replica's later seal counted: %d witnesses, blocked %q", c.Witnesses(), c.Blocked())
	}
}

// Fewer than R complete witnesses, but a seal from every previous replica:
// the collection completes (within the fault budget every confirmed record
// is intact on one of them), and its source is the furthest valid prefix,
// damaged or not. Short of every seal it waits, whatever the damaged ones
// hold.
func TestCollectionAllSealed(t *testing.T) {
	tr := transition3()
	c := mustCollection(t, tr)
	for _, n := range []seam.NodeID{1, 2} {
		s := seal(tr, n, 8, 1000*uint64(n))
		s.Damaged = true
		c.Add(s)
	}
	if c.Complete() || c.AllSealed() {
		t.Fatal("complete with two damaged seals of three replicas")
	}
	c.Add(seal(tr, 3, 8, 1100))
	if c.Witnesses() != 1 || !c.AllSealed() || !c.Complete() {
		t.Fatalf("witnesses %d, all sealed %v, complete %v: want 1, true, true", c.Witnesses(), c.AllSealed(), c.Complete())
	}
	if s, ok := c.Source(); !ok || s.Node != 2 || s.End != 2000 {
		t.Fatalf("source n%d [.., %d) (%v), want n2 [.., 2000): the furthest of all", s.Node, s.End, ok)
	}
	// An isr queue likewise, with no complete member of its in-sync set.
	tr.ISR, tr.InSync = true, []seam.NodeID{1}
	c = mustCollection(t, tr)
	d := seal(tr, 1, 8, 900)
	d.Damaged = true
	c.Add(d)
	c.Add(seal(tr, 2, 8, 700))
	if c.Complete() {
		t.Fatal("an isr collection complete with no complete in-sync witness and a seal missing")
	}
	c.Add(seal(tr, 3, 8, 800))
	if s, ok := c.Source(); !ok || s.Node != 1 {
		t.Fatalf("isr source n%d (%v), want the damaged n1's longer prefix", s.Node, ok)
	}
}

// Lost copies (opened without their storage binding): no witnesses, and
// when every previous replica sealed but W or more of them lost what they
// acknowledged, the collection blocks instead of taking the furthest of
// what is left; with fewer lost it completes on every seal as before. A
// lost seal round-trips its codec.
func TestCollectionLostCopies(t *testing.T) {
	tr := transition3()
	lost := func(n seam.NodeID) Seal {
		s := seal(tr, n, 0, 0)
		s.Damaged, s.Lost = true, true
		return s
	}
	back, err := DecodeSeal(AppendSeal(nil, &Seal{Queue: 7, Incarnation: 1, Epoch: 2, Node: 3, Process: 4, Storage: 5, Damaged: true, Lost: true}))
	if err != nil || !back.Lost || !back.Damaged {
		t.Fatalf("a lost seal decoded as %+v (%v)", back, err)
	}
	bad := AppendSeal(nil, &Seal{Queue: 7, Incarnation: 1, Epoch: 2, Node: 3, Process: 4, Storage: 5})
	bad[len(bad)-1] = 3
	if _, err := DecodeSeal(bad); err == nil {
		t.Fatal("a seal's damage byte of 3 decoded")
	}

	one := mustCollection(t, tr)
	for _, s := range []Seal{lost(1), seal(tr, 2, 8, 50), func() Seal { s := seal(tr, 3, 8, 40); s.Damaged = true; return s }()} {
		if err := one.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if src, ok := one.Source(); !ok || src.Node != 2 || one.Blocked() != "" {
		t.Fatalf("one lost of three (W = 2): source %+v ok=%v blocked %q, want n2 from every seal", src, ok, one.Blocked())
	}

	two := mustCollection(t, tr)
	for _, s := range []Seal{lost(1), lost(3)} {
		if err := two.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if two.Blocked() != "" || two.Complete() {
		t.Fatalf("two lost, n2 not sealed: blocked %q complete %v", two.Blocked(), two.Complete())
	}
	if err := two.Add(seal(tr, 2, 8, 50)); err != nil {
		t.Fatal(err)
	}
	if _, ok := two.Source(); ok || !strings.Contains(two.Blocked(), "2 of the 3 previous replicas lost") || two.BlockedWhy() != seam.AsideLostCopies {
		t.Fatalf("two lost of three (W = 2): ok=%v blocked %q, want blocked", ok, two.Blocked())
	}

	single := Transition{Queue: 7, Incarnation: 40, Epoch: 9, Digest: Digest{0xd1}, Previous: []Replica{{1, 11}}, W: 1}
	c := mustCollection(t, single)
	s := lost(1)
	s.Transition = single.Digest
	if err := c.Add(s); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Source(); ok || c.Blocked() == "" {
		t.Fatal("a single copy that lost its directory was taken as the source")
	}
}
