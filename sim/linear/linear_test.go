package linear

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func app(client int, call, ret int64, key, offset uint64) Op {
	return Op{Kind: Append, Client: int32(client), CallNs: call, ReturnNs: ret, Key: key, Offset: offset, Outcome: Confirmed}
}

func failed(client int, call, ret int64, key uint64) Op {
	return Op{Kind: Append, Client: int32(client), CallNs: call, ReturnNs: ret, Key: key, Outcome: Failed}
}

func unknown(client int, call int64, key uint64) Op {
	return Op{Kind: Append, Client: int32(client), CallNs: call, ReturnNs: call + 1, Key: key, Outcome: Unknown}
}

func read(client int, call, ret int64, offset, key uint64) Op {
	return Op{Kind: Read, Client: int32(client), CallNs: call, ReturnNs: ret, Key: key, Offset: offset}
}

func TestLinearizable(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
	}{
		{"empty", nil},
		{"sequential", []Op{
			app(0, 0, 10, 100, 0),
			app(0, 20, 30, 101, 1),
			read(1, 40, 50, 0, 100),
			read(1, 60, 70, 1, 101),
			app(1, 80, 90, 102, 2),
		}},
		{"concurrent appends take either order", []Op{
			app(0, 0, 100, 100, 1),
			app(1, 10, 50, 101, 0),
			read(2, 20, 30, 0, 101), // before append 101 returned
			read(2, 40, 60, 1, 100),
		}},
		{"touching intervals are concurrent", []Op{
			app(0, 10, 20, 100, 1),
			app(1, 20, 30, 101, 0),
		}},
		{"read overlapping the append's call", []Op{
			read(1, 0, 20, 0, 100),
			app(0, 10, 30, 100, 0),
		}},
		{"failed appends take no offset", []Op{
			app(0, 0, 10, 100, 0),
			failed(1, 5, 15, 101),
			app(0, 20, 30, 102, 1),
			read(2, 40, 50, 1, 102),
		}},
		{"unknown append observed", []Op{
			unknown(0, 0, 100),
			app(1, 10, 20, 101, 1),
			read(2, 30, 40, 0, 100),
		}},
		{"unknown append observed long after its call", []Op{
			unknown(0, 0, 100),
			app(1, 10, 20, 101, 0),
			app(1, 30, 40, 102, 1),
			read(2, 1000, 1010, 2, 100),
			app(1, 1020, 1030, 103, 3),
		}},
		{"unknown append unobserved, never took effect", []Op{
			unknown(0, 0, 100),
			app(1, 10, 20, 101, 0),
			app(1, 30, 40, 102, 1),
			read(2, 50, 60, 1, 102),
		}},
		{"unknown append unobserved, fills a gap", []Op{
			app(1, 10, 20, 101, 0),
			unknown(0, 15, 100),
			app(1, 30, 40, 102, 2), // offset 1 must be the unknown append
			read(2, 50, 60, 2, 102),
		}},
		{"two gaps filled by two unknowns", []Op{
			unknown(0, 0, 100),
			unknown(1, 5, 101),
			unknown(2, 500, 102), // not needed
			app(3, 10, 20, 103, 2),
		}},
		{"only unknown and failed appends", []Op{
			unknown(0, 0, 100),
			failed(1, 0, 10, 101),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if ok, detail := Check(c.ops); !ok {
				t.Fatalf("Check = false (%s), want true", detail)
			}
		})
	}
}

func TestViolations(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want string // substring of the detail
	}{
		{"stale offset order", []Op{
			app(0, 0, 10, 100, 5),
			app(1, 20, 30, 101, 4),
			unknown(2, 0, 102), unknown(2, 0, 103), unknown(2, 0, 104), unknown(2, 0, 105),
		}, "returned at t=10, before confirmed append #1"},
		{"read of a failed append", []Op{
			failed(0, 0, 10, 100),
			read(1, 20, 30, 0, 100),
		}, "that key's append failed"},
		{"read before the append was called", []Op{
			read(1, 0, 10, 0, 100),
			app(0, 20, 30, 100, 0),
		}, "returned before its append was called"},
		{"read of an unknown append before its call", []Op{
			read(1, 0, 10, 0, 100),
			unknown(0, 20, 100),
		}, "returned before its append was called"},
		{"two appends with one offset", []Op{
			app(0, 0, 10, 100, 0),
			app(1, 20, 30, 101, 0),
		}, "two confirmed appends returned offset 0"},
		{"read of an offset returns another key", []Op{
			app(0, 0, 10, 100, 0),
			app(0, 20, 30, 101, 1),
			read(1, 40, 50, 0, 101),
		}, "that key was placed at offset 1"},
		{"read of a confirmed offset returns an unknown append's key", []Op{
			app(0, 0, 10, 100, 0),
			unknown(0, 20, 101),
			read(1, 40, 50, 0, 101),
		}, "offset 0 holds key 100"},
		{"read of a key nobody appended", []Op{
			read(1, 40, 50, 0, 7),
		}, "no append of that key exists"},
		{"one offset read as two keys", []Op{
			unknown(0, 0, 100), unknown(0, 0, 101),
			read(1, 40, 50, 0, 100),
			read(1, 60, 70, 0, 101),
		}, "offset 0 read as two keys"},
		{"one key read at two offsets", []Op{
			unknown(0, 0, 100), unknown(0, 0, 101),
			read(1, 40, 50, 0, 100),
			read(1, 60, 70, 1, 100),
		}, "key 100 read at two offsets"},
		{"read of an offset before it could be filled", []Op{
			app(0, 0, 10, 100, 0),
			app(0, 100, 110, 101, 1),
			read(1, 20, 30, 1, 101),
		}, "returned before its append was called"},
		{"read of a higher offset before a lower one's append", []Op{
			app(0, 100, 110, 100, 0),
			app(1, 0, 120, 101, 1),
			read(2, 20, 30, 1, 101),
		}, "offset 1 cannot be filled before t=100"},
		{"unknown append observed by a read that returned before a lower offset's append", []Op{
			unknown(0, 0, 100),
			app(0, 100, 110, 101, 0),
			read(1, 20, 30, 1, 100),
		}, "must take effect by t=30 (read #2"},
		{"gap with no unknown append to fill it", []Op{
			app(0, 0, 10, 100, 0),
			app(0, 20, 30, 101, 2),
			failed(0, 20, 30, 102),
		}, "needs 3 appends to have taken effect, but the history has only 2"},
		{"offset beyond every append", []Op{
			app(0, 0, 10, 100, 3),
		}, "needs 4 appends to have taken effect"},
		{"gap filled only by an append called too late", []Op{
			app(0, 0, 10, 100, 0),
			app(0, 20, 30, 101, 2),
			unknown(1, 40, 102),
		}, "the unacknowledged append that must fill offset 1 (no op names it; earliest possible call t=40) cannot take effect before its call at t=40, but confirmed append #1"},
		{"unknown append observed, but a later offset returned before its call", []Op{
			app(0, 0, 10, 100, 1),
			unknown(1, 20, 101),
			read(2, 30, 40, 0, 101),
		}, "unknown-outcome append #1 (client 1, called t=20) of key 101, observed at offset 0 cannot take effect before its call"},
		{"duplicate key", []Op{
			app(0, 0, 10, 100, 0),
			unknown(0, 20, 100),
		}, "malformed history"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, detail := Check(c.ops)
			if ok {
				t.Fatalf("Check = true, want a violation containing %q", c.want)
			}
			t.Log(detail)
			if !strings.Contains(detail, c.want) {
				t.Fatalf("detail %q does not contain %q", detail, c.want)
			}
			if strings.Contains(detail, "\n") {
				t.Fatalf("detail is not one line: %q", detail)
			}
		})
	}
}

// TestPorcupineAgrees feeds histories whose violation is one of ordering
// (they pass pin and fail the sweep) straight to porcupine, which must reject
// them too, and legal ones, which it must accept.
func TestPorcupineAgrees(t *testing.T) {
	bad := [][]Op{
		{app(0, 0, 10, 100, 1), app(1, 20, 30, 101, 0)},
		{unknown(0, 0, 100), app(0, 100, 110, 101, 0), read(1, 20, 30, 1, 100)},
		{app(0, 40, 50, 100, 0), unknown(1, 0, 102), app(2, 20, 30, 101, 2)},
		{app(0, 100, 110, 100, 0), app(1, 0, 120, 101, 1), read(2, 20, 30, 1, 101)},
	}
	for i, ops := range bad {
		p, detail := pin(ops)
		if detail != "" {
			t.Fatalf("bad[%d]: pin: %s", i, detail)
		}
		if p.sweep() == "" {
			t.Fatalf("bad[%d]: sweep accepts", i)
		}
		if !p.windowsOpen() {
			t.Fatalf("bad[%d]: not representable in porcupine", i)
		}
		if p.porcupine() {
			t.Fatalf("bad[%d]: porcupine accepts", i)
		}
	}
	ops := generate(7, 2000)
	p, detail := pin(ops)
	if detail != "" {
		t.Fatal(detail)
	}
	if !p.porcupine() {
		t.Fatal("porcupine rejects a generated legal history")
	}
	// Porcupine sees every partition: a key changed under the last read
	// of the history (in its last partitions) makes it reject.
	last := p.reads[len(p.reads)-1]
	o := ops[last].Offset
	if int(o) < 2*partitionMin {
		t.Fatalf("the generated history's last read is at offset %d, in its first partitions: the test proves nothing", o)
	}
	p.slots[o].key++
	if p.porcupine() {
		t.Fatalf("porcupine accepts a read of offset %d whose key is not there", o)
	}
}

// generate simulates a log under nClients concurrent clients: each op takes
// effect at an instant inside its interval (an Unknown append at any instant
// after its call, or never), and the log records appends in the order they
// take effect.
func generate(seed uint64, n int) []Op {
	const clients = 5
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type gen struct {
		op     Op
		effect int64
		lands  bool
	}
	gens := make([]gen, 0, n)
	var next [clients]int64
	for i := range n {
		c := i % clients
		call := next[c] + rng.Int64N(50)
		ret := call + 1 + rng.Int64N(300)
		next[c] = ret
		g := gen{op: Op{Client: int32(c), CallNs: call, ReturnNs: ret}, lands: true}
		g.effect = call + rng.Int64N(ret-call+1)
		if rng.IntN(3) == 0 {
			g.op.Kind = Read
		} else {
			g.op.Kind = Append
			g.op.Key = uint64(i) + 1
			g.op.Outcome = Confirmed
			switch r := rng.IntN(100); {
			case r < 25:
				g.op.Outcome = Unknown
				g.op.ReturnNs = 0
				switch rng.IntN(3) {
				case 0:
					g.lands = false
				case 1:
					g.effect = call + rng.Int64N(5000) // long after the client gave up
				}
			case r < 30:
				g.op.Outcome = Failed
				g.lands = false
			}
		}
		gens = append(gens, g)
	}
	order := make([]int, len(gens))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return int(gens[a].effect - gens[b].effect)
	})
	var log []uint64
	ops := make([]Op, 0, n)
	for _, i := range order {
		g := &gens[i]
		switch {
		case g.op.Kind == Append && g.lands:
			g.op.Offset = uint64(len(log))
			log = append(log, g.op.Key)
		case g.op.Kind == Read:
			if len(log) == 0 {
				continue // nothing to read yet: drop the read
			}
			// Mostly recent offsets, sometimes anything.
			o := len(log) - 1 - rng.IntN(min(len(log), 8))
			if rng.IntN(4) == 0 {
				o = rng.IntN(len(log))
			}
			g.op.Offset, g.op.Key = uint64(o), log[o]
		}
	}
	for _, g := range gens {
		if g.op.Kind == Read && g.op.Key == 0 {
			continue
		}
		ops = append(ops, g.op)
	}
	return ops
}

// TestPerturbedAgree perturbs generated histories (moving ops in time) and
// requires porcupine and the offset sweep to agree on every one: Check
// reports any disagreement as such.
func TestPerturbedAgree(t *testing.T) {
	for _, size := range []struct {
		n, histories, moves int
	}{{12, 3000, 1}, {40, 1000, 2}, {3000, 20, 3}} {
		illegal, byPorcupine := 0, 0
		for seed := range uint64(size.histories) {
			ops := generate(seed, size.n)
			rng := rand.New(rand.NewPCG(seed, 99))
			for range size.moves {
				i := rng.IntN(len(ops))
				d := rng.Int64N(1001) - 500
				ops[i].CallNs += d
				ops[i].ReturnNs += d
			}
			ok, detail := Check(ops)
			if strings.Contains(detail, "disagreement") {
				t.Fatalf("n=%d seed %d: %s", size.n, seed, detail)
			}
			if ok {
				continue
			}
			illegal++
			// Count the violations that reached porcupine.
			if p, d := pin(ops); d == "" && p.windowsOpen() {
				byPorcupine++
			}
		}
		t.Logf("n=%d: %d of %d perturbed histories not linearizable, %d of them rejected by porcupine (the rest by the direct checks)",
			size.n, illegal, size.histories, byPorcupine)
		if byPorcupine == 0 {
			t.Fatalf("n=%d: no perturbation produced an ordering violation", size.n)
		}
	}
}

func TestGeneratedSmall(t *testing.T) {
	for seed := range uint64(200) {
		ops := generate(seed, 60)
		if ok, detail := Check(ops); !ok {
			t.Fatalf("seed %d: %s", seed, detail)
		}
	}
}

// TestScale checks 20,000 operations of 5 overlapping clients, a quarter of
// the appends with unknown outcome. No timing assertion: it must finish.
func TestScale(t *testing.T) {
	ops := generate(1, 20000)
	unknowns := 0
	for _, op := range ops {
		if op.Kind == Append && op.Outcome == Unknown {
			unknowns++
		}
	}
	start := time.Now()
	ok, detail := Check(ops)
	t.Logf("%d ops (%d unknown-outcome appends): %v", len(ops), unknowns, time.Since(start))
	if !ok {
		t.Fatal(detail)
	}
	again, _ := Check(ops)
	if again != ok {
		t.Fatal("verdict changed between runs")
	}

	// The same history with the last confirmed append moved to t=[0,1]:
	// it returned an offset near the end before the appends below it were
	// called.
	bad := slices.Clone(ops)
	for i := len(bad) - 1; i >= 0; i-- {
		if bad[i].Kind == Append && bad[i].Outcome == Confirmed {
			bad[i].CallNs, bad[i].ReturnNs = 0, 1
			break
		}
	}
	start = time.Now()
	ok, detail = Check(bad)
	t.Logf("violating variant: %v: %s", time.Since(start), detail)
	if ok {
		t.Fatal("a confirmed append that returned before most of the log was written passed")
	}
}

// brute decides linearizability of a tiny history from the definition:
// it tries every order of the ops consistent with real time, with each
// Unknown append either taking effect (at any point after its call) or not,
// and Failed appends never taking effect.
func brute(ops []Op) bool {
	must := make([]bool, len(ops)) // must be linearized
	ret := make([]int64, len(ops))
	for i, op := range ops {
		ret[i] = op.ReturnNs
		switch {
		case op.Kind == Read, op.Outcome == Confirmed:
			must[i] = true
		case op.Outcome == Unknown:
			ret[i] = inf
		}
	}
	done := make([]bool, len(ops))
	var log []uint64
	var dfs func() bool
	dfs = func() bool {
		all := true
		for i := range ops {
			if must[i] && !done[i] {
				all = false
			}
		}
		if all {
			return true
		}
		for i, op := range ops {
			if done[i] || (op.Kind == Append && op.Outcome == Failed) {
				continue
			}
			minimal := true
			for j := range ops {
				if j != i && must[j] && !done[j] && ret[j] < op.CallNs {
					minimal = false
				}
			}
			if !minimal {
				continue
			}
			switch {
			case op.Kind == Read:
				if op.Offset >= uint64(len(log)) || log[op.Offset] != op.Key {
					continue
				}
				done[i] = true
				if dfs() {
					return true
				}
				done[i] = false
			default:
				if op.Outcome == Confirmed && op.Offset != uint64(len(log)) {
					continue
				}
				done[i] = true
				log = append(log, op.Key)
				if dfs() {
					return true
				}
				log = log[:len(log)-1]
				done[i] = false
			}
		}
		return false
	}
	return dfs()
}

// TestAgainstBruteForce compares Check with the definition on random tiny
// histories, to test the reductions pin makes (unknown appends pinned by
// reads, dropped, or standing in for gaps) and the direct checks.
func TestAgainstBruteForce(t *testing.T) {
	legal, illegal := 0, 0
	for seed := range uint64(20000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(7)
		ops := make([]Op, n)
		var keys []uint64
		for i := range ops {
			call := rng.Int64N(40)
			op := Op{Client: int32(i), CallNs: call, ReturnNs: call + rng.Int64N(20)}
			if len(keys) > 0 && rng.IntN(3) == 0 {
				op.Kind = Read
				op.Key = keys[rng.IntN(len(keys))]
				op.Offset = uint64(rng.IntN(3))
			} else {
				op.Kind = Append
				op.Key = uint64(100 + i)
				keys = append(keys, op.Key)
				op.Offset = uint64(rng.IntN(3))
				op.Outcome = []Outcome{Confirmed, Confirmed, Failed, Unknown, Unknown}[rng.IntN(5)]
			}
			ops[i] = op
		}
		want := brute(ops)
		got, detail := Check(ops)
		if got != want {
			t.Fatalf("seed %d: Check = %v (%s), definition says %v; history %+v", seed, got, detail, want, ops)
		}
		if want {
			legal++
		} else {
			illegal++
		}
	}
	t.Logf("%d linearizable, %d not", legal, illegal)
}
