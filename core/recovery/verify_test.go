package recovery

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// history builds a log of publishes: one record per epoch given, from
// offset 0, bodies naming the offset and a variant.
func history(epochs []uint64, variant string) []record.Record {
	var rs []record.Record
	for o, e := range epochs {
		rs = append(rs, record.Record{Epoch: e, Offset: uint64(o), Kind: record.KindPublish, Body: []byte(variant + string(rune('a'+o)))})
	}
	return rs
}

// sealOf is node n's honest seal of rs.
func sealOf(t *testing.T, n seam.NodeID, rs []record.Record) Seal {
	t.Helper()
	id, err := IdentityOf(7, 0, uint64(len(rs)), rs)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	if len(rs) > 0 {
		last = rs[len(rs)-1].Epoch
	}
	return Seal{Queue: 7, Node: n, End: uint64(len(rs)), LastEpoch: last, Identity: id}
}

// verify runs a verifier over logs (by node), reading pages of size page:
// each round, a page of every log wanted, the last wanted first (the
// pages of logs read at once arrive in any order).
func verify(t *testing.T, src Seal, witnesses []Seal, logs map[seam.NodeID][]record.Record, page int) *Verifier {
	t.Helper()
	return run(t, NewVerifier(src, witnesses, DefaultBudget), logs, page)
}

// heldMaxes are the bounds on the source's held bodies the comparisons
// are run with: all held, the first few held and the rest summed, all
// summed.
var heldMaxes = []int{SourceHeldBytesMax, 3, 0}

// verifyHeld is verify with the source's held bodies bounded by heldMax.
func verifyHeld(t *testing.T, heldMax int, src Seal, witnesses []Seal, logs map[seam.NodeID][]record.Record, page int) *Verifier {
	t.Helper()
	v := NewVerifier(src, witnesses, DefaultBudget)
	v.heldMax = heldMax
	v = run(t, v, logs, page)
	if held := len(v.held); held > heldMax {
		t.Fatalf("%d bytes of bodies held, at most %d", held, heldMax)
	}
	return v
}

func run(t *testing.T, v *Verifier, logs map[seam.NodeID][]record.Record, page int) *Verifier {
	t.Helper()
	for range 100_000 {
		wants := v.Wants(nil)
		if len(wants) == 0 {
			return v
		}
		if len(wants) > ReadsAtOnce {
			t.Fatalf("%d logs read at once, at most %d", len(wants), ReadsAtOnce)
		}
		for i := len(wants) - 1; i >= 0; i-- {
			w := wants[i]
			l := logs[w.Node]
			end := min(int(w.From)+page, len(l))
			v.AddPage(w.Node, w.From, l[w.From:end])
		}
	}
	t.Fatal("the verifier never finished")
	return nil
}

func TestVerifierAcceptsOneHistory(t *testing.T) {
	src := history([]uint64{1, 1, 2, 2, 3}, "")
	prefix := src[:3]
	superseded := append(history([]uint64{1, 1, 2, 2}, ""), record.Record{Epoch: 2, Offset: 4, Kind: record.KindPublish, Body: []byte("lost")},
		record.Record{Epoch: 2, Offset: 5, Kind: record.KindPublish, Body: []byte("lost too")})
	logs := map[seam.NodeID][]record.Record{1: src, 2: prefix, 3: superseded, 4: nil}
	s := sealOf(t, 1, src)
	ws := []Seal{sealOf(t, 2, prefix), s, sealOf(t, 3, superseded), sealOf(t, 4, nil)}
	for _, page := range []int{1, 2, 4096} {
		v := verify(t, s, ws, logs, page)
		if !v.Done() {
			t.Fatalf("page %d: one history blocked: %s", page, v.Blocked())
		}
		for _, held := range heldMaxes {
			if v := verifyHeld(t, held, s, ws, logs, page); !v.Done() {
				t.Fatalf("page %d, %d bytes held: one history blocked: %s", page, held, v.Blocked())
			}
		}
		if pages, recs, _ := v.Inspected(); recs != len(src)+len(prefix)+len(superseded) || pages < 3 {
			t.Fatalf("page %d: inspected %d pages, %d records", page, pages, recs)
		}
	}
}

// A witness's branch of an epoch the source's history passed over (epoch
// 2 at o=2, where the source holds epoch 1 and then epoch 3: epoch 3's
// recovery took a history without it) was never confirmed: accepted and
// dropped. A record there of the source's last epoch is contradictory.
func TestVerifierDropsABranchALaterEpochPassedOver(t *testing.T) {
	src := history([]uint64{1, 1, 1, 3}, "")
	s := sealOf(t, 1, src)
	branch := append(history([]uint64{1, 1}, ""), record.Record{Epoch: 2, Offset: 2, Kind: record.KindPublish, Body: []byte("x")})
	if v := verify(t, s, []Seal{sealOf(t, 2, branch)}, map[seam.NodeID][]record.Record{1: src, 2: branch}, 2); !v.Done() {
		t.Fatalf("an epoch-2 branch under an epoch-3 source: blocked %q", v.Blocked())
	}
	planted := NewVerifier(s, []Seal{sealOf(t, 2, branch)}, DefaultBudget)
	planted.PlantBranchBlocks()
	if v := run(t, planted, map[seam.NodeID][]record.Record{1: src, 2: branch}, 2); v.Done() || !strings.Contains(v.Blocked(), "above the source") {
		t.Fatalf("with branch-contradiction planted: done=%v blocked=%q", v.Done(), v.Blocked())
	}
	last := append(history([]uint64{1, 1}, ""), record.Record{Epoch: 3, Offset: 2, Kind: record.KindPublish, Body: []byte("x")})
	if v := verify(t, s, []Seal{sealOf(t, 2, last)}, map[seam.NodeID][]record.Record{1: src, 2: last}, 2); v.Done() || !strings.Contains(v.Blocked(), "above the source") {
		t.Fatalf("the source's last epoch at o=2 where the source holds epoch 1: done=%v blocked=%q", v.Done(), v.Blocked())
	}
}

func TestVerifierBlocks(t *testing.T) {
	src := history([]uint64{1, 1, 2, 2}, "")
	s := sealOf(t, 1, src)
	cases := map[string]struct {
		log  []record.Record
		seal func(Seal) Seal
		want string
		why  seam.AsideReason
	}{
		"same epoch, another record": {history([]uint64{1, 1, 2}, "x"), nil, "contradictory history", seam.AsideContradictoryHistory},
		// (Bodies "a", "b", "xc" against "a", "b", "c": held, the third is
		// past 2 bytes held.)
		"same epoch, a longer record":    {append(history([]uint64{1, 1}, ""), record.Record{Epoch: 2, Offset: 2, Kind: record.KindPublish, Body: []byte("xc")}), nil, "contradictory history", seam.AsideContradictoryHistory},
		"same epoch, another kind":       {append(history([]uint64{1, 1}, ""), record.Record{Epoch: 2, Offset: 2, Kind: record.KindAck, Body: []byte("c")}), nil, "contradictory history", seam.AsideContradictoryHistory},
		"an epoch above the source's":    {history([]uint64{1, 1, 3}, ""), nil, "above the source", seam.AsideContradictoryHistory},
		"the source's last epoch beyond": {history([]uint64{1, 1, 2, 2, 2}, ""), nil, "past the source", seam.AsideContradictoryHistory},
		"a log changed since its seal": {history([]uint64{1, 1}, ""), func(w Seal) Seal {
			w.Identity[0] ^= 1
			return w
		}, "no longer matches", seam.AsideSealMismatch},
		"a log shorter than its seal": {history([]uint64{1, 1}, ""), func(w Seal) Seal {
			w.End = 3
			return w
		}, "page of 0 records", seam.AsideSealMismatch},
	}
	for what, c := range cases {
		w := sealOf(t, 2, c.log)
		if c.seal != nil {
			w = c.seal(w)
		}
		v := verify(t, s, []Seal{w}, map[seam.NodeID][]record.Record{1: src, 2: c.log}, 2)
		if v.Done() || !strings.Contains(v.Blocked(), c.want) {
			t.Fatalf("%s: done=%v blocked=%q, want %q", what, v.Done(), v.Blocked(), c.want)
		}
		if v.BlockedWhy() != c.why {
			t.Fatalf("%s: blocked for %s, want %s", what, v.BlockedWhy(), c.why)
		}
		for _, held := range heldMaxes {
			if v := verifyHeld(t, held, s, []Seal{w}, map[seam.NodeID][]record.Record{1: src, 2: c.log}, 2); v.Done() || !strings.Contains(v.Blocked(), c.want) {
				t.Fatalf("%s, %d bytes held: done=%v blocked=%q, want %q", what, held, v.Done(), v.Blocked(), c.want)
			}
		}
		if on, ok := v.BlockedOn(); !ok || on != 2 {
			t.Fatalf("%s: blocked on n%d (%v), want the witness n2 whose log was read", what, on, ok)
		}
	}
	// A source whose log changed since its seal blocks before any witness.
	lying := s
	lying.Identity[3] ^= 1
	if v := verify(t, lying, nil, map[seam.NodeID][]record.Record{1: src}, 3); v.Done() || !strings.Contains(v.Blocked(), "n1's sealed log no longer matches") {
		t.Fatalf("a changed source: %q", v.Blocked())
	} else if on, ok := v.BlockedOn(); !ok || on != 1 {
		t.Fatalf("a changed source: blocked on n%d (%v), want the source n1", on, ok)
	}
}

// Late or duplicate pages change nothing.
func TestVerifierIgnoresStalePages(t *testing.T) {
	src := history([]uint64{1, 1, 2}, "")
	s := sealOf(t, 1, src)
	v := NewVerifier(s, nil, DefaultBudget)
	v.AddPage(1, 1, src[1:]) // not the page wanted
	v.AddPage(2, 0, src)     // not the node wanted
	if w := v.Wants(nil); len(w) != 1 || w[0] != (Want{Node: 1, From: 0}) || v.Blocked() != "" {
		t.Fatalf("stale pages moved the verifier to %v (%q)", w, v.Blocked())
	}
	v.AddPage(1, 0, src)
	if !v.Done() {
		t.Fatalf("not done: %q", v.Blocked())
	}
}

// The inspection budget blocks, with a diagnostic, rather than reading on.
func TestVerifierBudget(t *testing.T) {
	epochs := make([]uint64, InspectPagesMax+10)
	for i := range epochs {
		epochs[i] = 1
	}
	src := history(epochs, "")
	v := verify(t, sealOf(t, 1, src), nil, map[seam.NodeID][]record.Record{1: src}, 1)
	if v.Done() || !strings.Contains(v.Blocked(), "inspection budget exhausted") {
		t.Fatalf("%d one-record pages: done=%v blocked=%q", len(src), v.Done(), v.Blocked())
	}
}

// An isr queue's source is the furthest member of the in-sync set; a
// witness outside it may hold more of the source's last epoch (never
// confirmed: a confirm needs every member of the set). The isr verifier
// accepts it; the R verifier, whose source is the furthest of all
// witnesses, takes it as a contradiction (seed 4456 had the isr one
// blocked for good, and every queue behind it waited).
func TestVerifierISRAcceptsAFurtherWitness(t *testing.T) {
	src := history([]uint64{1, 1}, "")
	further := history([]uint64{1, 1, 1, 1}, "")
	logs := map[seam.NodeID][]record.Record{3: src, 1: further}
	s := sealOf(t, 3, src)
	ws := []Seal{s, sealOf(t, 1, further)}
	if v := run(t, NewISRVerifier(s, ws, DefaultBudget), logs, 4096); !v.Done() {
		t.Fatalf("isr: %s", v.Blocked())
	}
	if v := run(t, NewVerifier(s, ws, DefaultBudget), logs, 4096); v.Done() || !strings.Contains(v.Blocked(), "past the source") {
		t.Fatalf("R: done=%v blocked=%q, want blocked past the source", v.Done(), v.Blocked())
	}
}

// The further witness's records past the isr source's end may be of a
// later epoch than the source's last: a member of the in-sync set that
// never heard its epoch's owner (its log empty, or of an older epoch)
// is the set's furthest, and what the owner wrote was confirmed nowhere:
// blocking it as contradictory history would keep the queue fenced for
// good. The R verifier still takes it for a contradiction.
func TestVerifierISRAcceptsALaterEpochPastTheSource(t *testing.T) {
	for name, src := range map[string][]record.Record{
		"empty":       nil,
		"older epoch": history([]uint64{1, 1}, ""),
	} {
		further := history([]uint64{1, 1, 2, 2}, "")
		logs := map[seam.NodeID][]record.Record{3: src, 1: further}
		s := sealOf(t, 3, src)
		ws := []Seal{s, sealOf(t, 1, further)}
		if v := run(t, NewISRVerifier(s, ws, DefaultBudget), logs, 4096); !v.Done() {
			t.Fatalf("%s: isr: %s", name, v.Blocked())
		}
		planted := NewISRVerifier(s, ws, DefaultBudget)
		planted.plantPastSameEpochOnly()
		if v := run(t, planted, logs, 4096); v.Done() || !strings.Contains(v.Blocked(), "past the source") {
			t.Fatalf("%s: isr with the rule before planted: done=%v blocked=%q", name, v.Done(), v.Blocked())
		}
		if v := run(t, NewVerifier(s, ws, DefaultBudget), logs, 4096); v.Done() || !strings.Contains(v.Blocked(), "past the source") {
			t.Fatalf("%s: R: done=%v blocked=%q, want blocked past the source", name, v.Done(), v.Blocked())
		}
	}
}

// A witness sealed with the source's identity is taken by that identity:
// its log is never read (whatever it holds now), and the verification is
// done once the source's log hashes to it; beside a witness of another
// identity, the source's records are still compared one by one.
func TestVerifierTakesSameIdentityBySeal(t *testing.T) {
	src := history([]uint64{1, 1, 2, 2}, "")
	s := sealOf(t, 1, src)
	same := s
	same.Node = 2
	changed := history([]uint64{1, 1, 2, 2}, "")
	changed[2].Body = []byte("x")
	v := verify(t, s, []Seal{same}, map[seam.NodeID][]record.Record{1: src, 2: changed}, 3)
	if !v.Done() || v.ByIdentity() != 1 {
		t.Fatalf("a witness of the source's identity: done=%v by identity %d, blocked %q", v.Done(), v.ByIdentity(), v.Blocked())
	}
	if pages, recs, _ := v.Inspected(); pages != 2 || recs != len(src) {
		t.Fatalf("inspected %d pages, %d records: want the source's alone", pages, recs)
	}
	other := history([]uint64{1, 1, 2}, "x")
	v = verify(t, s, []Seal{same, sealOf(t, 3, other)}, map[seam.NodeID][]record.Record{1: src, 2: src, 3: other}, 3)
	if v.Done() || !strings.Contains(v.Blocked(), "contradictory history: n3") {
		t.Fatalf("a copy beside a contradicting witness: done=%v blocked=%q", v.Done(), v.Blocked())
	}
	// A source whose log no longer hashes to its seal blocks, whatever the
	// witnesses of its identity.
	if v := verify(t, s, []Seal{same}, map[seam.NodeID][]record.Record{1: changed}, 3); v.Done() || !strings.Contains(v.Blocked(), "n1's sealed log no longer matches") {
		t.Fatalf("a changed source: done=%v blocked=%q", v.Done(), v.Blocked())
	}
}

// The source is read first, alone; then the witnesses of other
// identities, compared record by record with it, two logs at a time
// (ReadsAtOnce); the witnesses of its identity are not read.
func TestVerifierReadsTwoLogsAtOnce(t *testing.T) {
	src := history([]uint64{1, 1, 2, 2, 2, 2}, "")
	s := sealOf(t, 1, src)
	same := func(n seam.NodeID) Seal { c := s; c.Node = n; return c }
	prefix, shorter := src[:3], src[:2]
	v := NewVerifier(s, []Seal{sealOf(t, 4, prefix), same(2), sealOf(t, 5, shorter), same(3)}, DefaultBudget)
	if w := v.Wants(nil); len(w) != 1 || w[0] != (Want{1, 0}) {
		t.Fatalf("first wants %v, want the source n1 alone", w)
	}
	v.AddPage(1, 0, src[:2])
	v.AddPage(1, 2, src[2:])
	if w := v.Wants(nil); len(w) != 2 || w[0] != (Want{4, 0}) || w[1] != (Want{5, 0}) {
		t.Fatalf("after the source: %v, want n4 and n5 at once", w)
	}
	v.AddPage(5, 0, shorter) // n5's page first: the logs are independent
	v.AddPage(4, 0, prefix)
	if !v.Done() {
		t.Fatalf("not done: %q", v.Blocked())
	}
	if pages, recs, _ := v.Inspected(); pages != 4 || recs != len(src)+len(prefix)+len(shorter) || v.ByIdentity() != 2 {
		t.Fatalf("inspected %d pages, %d records, %d by identity", pages, recs, v.ByIdentity())
	}
}

// A budget is a runtime value: a smaller one blocks sooner, naming the
// settings that raise it.
func TestVerifierSmallBudget(t *testing.T) {
	src := history([]uint64{1, 1, 1, 1, 1}, "")
	why := map[string]seam.AsideReason{"recovery.inspect_pages_max": seam.AsideInspectPages, "recovery.inspect_records_max": seam.AsideInspectRecords,
		"recovery.inspect_bytes_max": seam.AsideInspectBytes}
	for setting, b := range map[string]Budget{"recovery.inspect_pages_max": {PagesMax: 2, RecordsMax: 100, BytesMax: 1 << 20},
		"recovery.inspect_records_max": {PagesMax: 100, RecordsMax: 4, BytesMax: 1 << 20}, "recovery.inspect_bytes_max": {PagesMax: 100, RecordsMax: 100, BytesMax: 40}} {
		v := run(t, NewVerifier(sealOf(t, 1, src), nil, b), map[seam.NodeID][]record.Record{1: src}, 1)
		if v.Done() || !strings.Contains(v.Blocked(), "inspection budget exhausted") || !strings.Contains(v.Blocked(), "raise the setting "+setting) {
			t.Fatalf("budget %+v: done=%v blocked=%q", b, v.Done(), v.Blocked())
		}
		if v.BlockedWhy() != why[setting] {
			t.Fatalf("budget %+v: blocked for %s, want %s", b, v.BlockedWhy(), why[setting])
		}
	}
	if v := run(t, NewVerifier(sealOf(t, 1, src), nil, Budget{PagesMax: 5, RecordsMax: 5, BytesMax: 1 << 20}), map[seam.NodeID][]record.Record{1: src}, 1); !v.Done() {
		t.Fatalf("a budget that fits: %q", v.Blocked())
	}
}

// TakeSource takes the source by its seal, unread, with the epochs given;
// not once a witness of another identity needs the source's records.
func TestVerifierTakeSource(t *testing.T) {
	src := history([]uint64{1, 1, 2, 2}, "")
	s := sealOf(t, 1, src)
	same := s
	same.Node = 2
	epochs := []seam.EpochStart{{Epoch: src[0].Epoch, Offset: 0}, {Epoch: src[2].Epoch, Offset: 2}}
	v := NewVerifier(s, []Seal{same}, DefaultBudget)
	if !v.TakeSource(epochs) || !v.Done() || !v.TookSource() {
		t.Fatalf("take the source: done=%v blocked=%q", v.Done(), v.Blocked())
	}
	if pages, _, _ := v.Inspected(); pages != 0 || len(v.SourceEpochs()) != 2 {
		t.Fatalf("inspected %d pages, epochs %v", pages, v.SourceEpochs())
	}
	// A source whose retention passed its first epochs' starts: the history
	// the installation carries begins at its sealed start, as a read of
	// its records would have built it (an entry below the start would make
	// an install request its members refuse to decode).
	retained := s
	retained.Start = 3
	v = NewVerifier(retained, nil, DefaultBudget)
	long := []seam.EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 1}, {Epoch: 3, Offset: 3}, {Epoch: 5, Offset: 4}}
	if !v.TakeSource(long) {
		t.Fatal("took no retained source")
	}
	if got := v.SourceEpochs(); len(got) != 2 || got[0] != (seam.EpochStart{Epoch: 3, Offset: 3}) || got[1] != (seam.EpochStart{Epoch: 5, Offset: 4}) {
		t.Fatalf("a retained source's epochs from its start: %v", got)
	}
	v = NewVerifier(retained, nil, DefaultBudget)
	if v.TakeSource(long[:2]); v.SourceEpochs()[0] != (seam.EpochStart{Epoch: 2, Offset: 3}) || len(v.SourceEpochs()) != 1 {
		t.Fatalf("an epoch begun below the start, moved to it: %v", v.SourceEpochs())
	}
	r := InstallRequest{Queue: 1, Incarnation: 1, Epoch: 6, Source: 1, Start: 3, End: 4, Epochs: v.SourceEpochs()}
	if _, err := DecodeInstallRequest(AppendInstallRequest(nil, &r)); err != nil {
		t.Fatalf("an install request with those epochs: %v", err)
	}
	other := history([]uint64{1, 1, 2}, "x")
	v = NewVerifier(s, []Seal{sealOf(t, 3, other)}, DefaultBudget)
	if v.TakeSource(epochs) {
		t.Fatal("took the source beside a witness of another identity")
	}
	v = run(t, v, map[seam.NodeID][]record.Record{1: src, 3: other}, 4)
	if v.Done() || !strings.Contains(v.Blocked(), "contradictory history: n3") {
		t.Fatalf("read instead: done=%v blocked=%q", v.Done(), v.Blocked())
	}
}

// The budget bounds each log read, not their sum: four witnesses of
// different ends, each within it and together over it, verify (R of a
// four-replica leader_durable queue is four; summed, a queue a quarter of
// the bound deep stayed fenced).
func TestVerifierBudgetPerLog(t *testing.T) {
	src := history([]uint64{1, 1, 1, 1, 1, 1, 1, 1}, "")
	logs := map[seam.NodeID][]record.Record{1: src}
	ws := []Seal{}
	for n := seam.NodeID(2); n <= 4; n++ {
		logs[n] = src[:len(src)-int(n)]
		ws = append(ws, sealOf(t, n, logs[n]))
	}
	b := Budget{PagesMax: 100, RecordsMax: len(src), BytesMax: 1 << 20}
	v := run(t, NewVerifier(sealOf(t, 1, src), ws, b), logs, 2)
	if !v.Done() {
		t.Fatalf("each log within the budget: %q", v.Blocked())
	}
	if _, recs, _ := v.Inspected(); recs <= len(src) {
		t.Fatalf("%d records read in all, want more than one log's %d (the test reads several)", recs, len(src))
	}
	b.RecordsMax = len(src) - 1
	if v := run(t, NewVerifier(sealOf(t, 1, src), ws, b), logs, 2); v.Done() || v.BlockedWhy() != seam.AsideInspectRecords {
		t.Fatalf("the source's log over the budget: done=%v %q", v.Done(), v.Blocked())
	}
}
