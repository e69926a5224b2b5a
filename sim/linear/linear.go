package linear

import (
	"fmt"
	"math"
	"slices"

	"github.com/anishathalye/porcupine"
)

// OpKind says what a client did.
type OpKind uint8

const (
	Append OpKind = 1
	Read   OpKind = 2
)

// Outcome is what the client learned about an append.
type Outcome uint8

const (
	Confirmed Outcome = 1
	Failed    Outcome = 2
	Unknown   Outcome = 3
)

// Op is one client operation on one queue, with call and return instants (ns).
type Op struct {
	CallNs   int64
	ReturnNs int64  // for Unknown appends, ignored (the op may take effect any time after the call, or never)
	Key      uint64 // Append: the published body's key. Read: the key read
	Offset   uint64 // Append Confirmed: returned offset. Read: the offset read
	// Client, Kind and Outcome last: 40 bytes an op (a run's history
	// holds tens of thousands).
	Client  int32 // client index (porcupine ClientId)
	Kind    OpKind
	Outcome Outcome
}

// Check reports whether the history is linearizable against a log: a sequence
// of keys where Append(key) places key at the next offset and returns it,
// and Read(offset) returns the key at that offset (which must already be
// appended). Failed appends never take effect. Unknown appends may take
// effect at any point after their call, or never. It returns ok and, when not
// ok, a one-line explanation.
func Check(ops []Op) (ok bool, detail string) {
	p, detail := pin(ops)
	if detail != "" {
		return false, detail
	}
	swept := p.sweep()
	if !p.windowsOpen() {
		// Some append's window is empty (it must take effect before it
		// was called), which porcupine cannot represent; the sweep has
		// reported it.
		return false, swept
	}
	linearizable := p.porcupine()
	switch {
	case linearizable && swept == "":
		return true, ""
	case !linearizable && swept != "":
		return false, swept
	case linearizable:
		// Both deciders are exact for a pinned history, so a
		// disagreement is a bug here (or in porcupine), not a verdict
		// on the system under test.
		return false, "checker disagreement: porcupine accepts the history, the offset sweep does not: " + swept
	default:
		return false, "checker disagreement: porcupine finds the history not linearizable, the offset sweep found a linearization"
	}
}

const inf = int64(math.MaxInt64)

// Where a pinned append came from.
type origin uint8

const (
	fromConfirmed   origin = iota // a confirmed append: its own return and offset
	fromObserved                  // an Unknown append some read saw: offset from the read
	fromPlaceholder               // an offset no op names: filled by some unobserved Unknown append
)

// slot is the append pinned at one offset.
type slot struct {
	key    uint64 // meaningless for a placeholder
	callNs int64
	// retNs is the latest instant the append can take effect: a confirmed
	// append's return, otherwise the earliest return of any op that must
	// linearize after it (see pin), which is ops[bound].
	retNs int64
	// (Indices into ops fit 32 bits, opsMax: a slot is 40 bytes, not 56,
	// one per offset of the history.)
	op     int32 // index into ops (-1 for a placeholder)
	bound  int32
	client int32
	origin origin
}

// plan is a history whose every append has a known offset: slots[o] is the
// one append at offset o, for every offset 0..len(slots)-1 that any op
// depends on; reads index ops. With offsets pinned, the log's content is
// fixed (slots[o].key at o), so the model's state is just the log's length.
type plan struct {
	ops   []Op
	slots []slot
	reads []int
}

func describe(ops []Op, i int) string {
	op := ops[i]
	switch op.Kind {
	case Read:
		return fmt.Sprintf("read #%d (client %d, t=[%d,%d]) of offset %d -> key %d",
			i, op.Client, op.CallNs, op.ReturnNs, op.Offset, op.Key)
	case Append:
		switch op.Outcome {
		case Confirmed:
			return fmt.Sprintf("confirmed append #%d (client %d, t=[%d,%d]) of key %d -> offset %d",
				i, op.Client, op.CallNs, op.ReturnNs, op.Key, op.Offset)
		case Failed:
			return fmt.Sprintf("failed append #%d (client %d, t=[%d,%d]) of key %d",
				i, op.Client, op.CallNs, op.ReturnNs, op.Key)
		default:
			return fmt.Sprintf("unknown-outcome append #%d (client %d, called t=%d) of key %d",
				i, op.Client, op.CallNs, op.Key)
		}
	}
	return fmt.Sprintf("op #%d", i)
}

func (p *plan) describeSlot(o int) string {
	s := p.slots[o]
	if s.origin == fromPlaceholder {
		return fmt.Sprintf("the unacknowledged append that must fill offset %d (no op names it; earliest possible call t=%d)", o, s.callNs)
	}
	if s.origin == fromObserved {
		return describe(p.ops, int(s.op)) + fmt.Sprintf(", observed at offset %d", o)
	}
	return describe(p.ops, int(s.op))
}

// pin runs the direct checks and, if they pass, pins every append that took
// effect to its offset.
//
// Reasoning, for the history as the checker receives it:
//
//   - A confirmed append that returned offset N is at offset N; a read of
//     offset o that returned key k puts k at offset o. Keys are unique per
//     append, so a key names its append.
//   - Failed appends never take effect; a read of their key is a violation.
//   - An Unknown append whose key some read returned took effect at the
//     offset read, before the earliest such read returned: it is pinned
//     there with that return as the end of its window (the model would
//     force the same bound; stating it shrinks porcupine's search).
//   - Every offset up to the highest one any op names (a confirmed append's
//     offset, or a read's) is occupied: a confirmed offset N means exactly N
//     appends took effect before it, a read of o means o+1 did. An occupied
//     offset with neither a confirmed append nor a read naming it can only
//     hold an Unknown append nobody observed. If m such "missing" offsets
//     exist, the j-th (in offset order) gets a placeholder append whose call
//     is the j-th earliest call among the unobserved Unknown appends: its
//     filler took effect after the fillers of the j-1 lower missing offsets
//     and after its own call, so after at least j distinct calls, and giving
//     the j-th earliest call to the j-th missing offset is achievable, so
//     this loses no linearization and admits none that is not real.
//   - Any other unobserved Unknown append is dropped: linearizing it as never
//     taking effect is allowed, and if instead it took effect above every
//     named offset nothing in the history can tell.
//
// So offsets fully determine the log: the state of the model is its length.
func pin(ops []Op) (*plan, string) {
	p := &plan{ops: ops}
	if len(ops) > opsMax {
		return nil, fmt.Sprintf("malformed history: %d ops, more than the %d a check takes", len(ops), opsMax)
	}
	appends, reads := 0, 0
	for i := range ops {
		if ops[i].Kind == Append {
			appends++
		} else {
			reads++
		}
	}
	appendOf := newIndex(appends)    // key -> index of its append
	confirmedAt := newIndex(appends) // offset -> index of the confirmed append there
	p.reads = make([]int, 0, reads)
	var live, confirmed int // appends that may have taken effect; of them, confirmed
	var maxOffset uint64
	anyNamed := false
	for i, op := range ops {
		switch op.Kind {
		case Append:
			switch op.Outcome {
			case Confirmed, Failed, Unknown:
			default:
				return nil, fmt.Sprintf("malformed history: op #%d is an append with outcome %d", i, op.Outcome)
			}
			if op.Outcome != Unknown && op.ReturnNs < op.CallNs {
				return nil, fmt.Sprintf("malformed history: %s returns before its call", describe(ops, i))
			}
			if j, dup := appendOf.get(op.Key); dup {
				return nil, fmt.Sprintf("malformed history: key %d is appended twice (#%d and #%d); keys must be unique per append", op.Key, j, i)
			}
			appendOf.put(op.Key, i)
			if op.Outcome == Failed {
				continue
			}
			live++
			if op.Outcome != Confirmed {
				continue
			}
			if j, dup := confirmedAt.get(op.Offset); dup {
				return nil, fmt.Sprintf("two confirmed appends returned offset %d: %s and %s",
					op.Offset, describe(ops, j), describe(ops, i))
			}
			confirmedAt.put(op.Offset, i)
			confirmed++
			if !anyNamed || op.Offset > maxOffset {
				maxOffset = op.Offset
			}
			anyNamed = true
		case Read:
			if op.ReturnNs < op.CallNs {
				return nil, fmt.Sprintf("malformed history: %s returns before its call", describe(ops, i))
			}
			p.reads = append(p.reads, i)
			if !anyNamed || op.Offset > maxOffset {
				maxOffset = op.Offset
			}
			anyNamed = true
		default:
			return nil, fmt.Sprintf("malformed history: op #%d has kind %d", i, op.Kind)
		}
	}

	// Each read against its append, and reads against each other.
	readAt := newIndex(len(p.reads))  // offset -> first read of it
	keyRead := newIndex(len(p.reads)) // key -> first read of it
	for _, r := range p.reads {
		op := ops[r]
		a, ok := appendOf.get(op.Key)
		if !ok {
			return nil, fmt.Sprintf("%s: no append of that key exists", describe(ops, r))
		}
		app := ops[a]
		if app.Outcome == Failed {
			return nil, fmt.Sprintf("%s: that key's append failed (%s)", describe(ops, r), describe(ops, a))
		}
		if app.Outcome == Confirmed && app.Offset != op.Offset {
			return nil, fmt.Sprintf("%s: that key was placed at offset %d by %s", describe(ops, r), app.Offset, describe(ops, a))
		}
		if c, ok := confirmedAt.get(op.Offset); ok && c != a {
			return nil, fmt.Sprintf("%s: offset %d holds key %d (%s)", describe(ops, r), op.Offset, ops[c].Key, describe(ops, c))
		}
		if op.ReturnNs < app.CallNs {
			return nil, fmt.Sprintf("%s: returned before its append was called (%s)", describe(ops, r), describe(ops, a))
		}
		if q, ok := readAt.get(op.Offset); ok && ops[q].Key != op.Key {
			return nil, fmt.Sprintf("offset %d read as two keys: %s and %s", op.Offset, describe(ops, q), describe(ops, r))
		}
		if q, ok := keyRead.get(op.Key); ok && ops[q].Offset != op.Offset {
			return nil, fmt.Sprintf("key %d read at two offsets: %s and %s", op.Key, describe(ops, q), describe(ops, r))
		}
		if _, ok := readAt.get(op.Offset); !ok {
			readAt.put(op.Offset, r)
		}
		if _, ok := keyRead.get(op.Key); !ok {
			keyRead.put(op.Key, r)
		}
	}
	if !anyNamed {
		return p, "" // only unobserved Unknown and Failed appends: all can be no-ops
	}
	// Offsets 0..maxOffset are occupied, each by a distinct append that may
	// have taken effect. Checking this first also bounds the slots below.
	if maxOffset >= uint64(live) {
		who := ""
		if c, ok := confirmedAt.get(maxOffset); ok {
			who = describe(ops, c)
		} else {
			r, _ := readAt.get(maxOffset)
			who = describe(ops, r)
		}
		return nil, fmt.Sprintf("%s needs %d appends to have taken effect, but the history has only %d that were not failed",
			who, maxOffset+1, live)
	}

	n := int(maxOffset) + 1
	p.slots = make([]slot, n)
	filled := make([]bool, n)
	for o := range n {
		if c, ok := confirmedAt.get(uint64(o)); ok {
			op := ops[c]
			p.slots[o] = slot{origin: fromConfirmed, op: int32(c), key: op.Key, callNs: op.CallNs, retNs: op.ReturnNs, client: op.Client}
			filled[o] = true
		} else if r, ok := readAt.get(uint64(o)); ok {
			a, _ := appendOf.get(ops[r].Key) // an Unknown append, by the checks above
			op := ops[a]
			p.slots[o] = slot{origin: fromObserved, op: int32(a), key: op.Key, callNs: op.CallNs, client: op.Client}
			filled[o] = true
		}
	}
	// The pool of unobserved Unknown appends, by call instant (at most
	// the live appends not confirmed).
	pool := make([]int64, 0, live-confirmed)
	for _, op := range ops {
		if op.Kind == Append && op.Outcome == Unknown {
			if _, seen := keyRead.get(op.Key); !seen {
				pool = append(pool, op.CallNs)
			}
		}
	}
	slices.Sort(pool)
	j := 0
	for o := range n {
		if filled[o] {
			continue
		}
		if j == len(pool) {
			// Unreachable after the count check above (every offset
			// not pinned by a confirmed append or a read needs its own
			// unobserved Unknown append); kept so that a change there
			// cannot index past the pool.
			return nil, fmt.Sprintf("offset %d is occupied (offsets up to %d are named) but no append in the history can have put a key there: %d unobserved unknown-outcome appends fill only the lower gaps",
				o, maxOffset, len(pool))
		}
		p.slots[o] = slot{origin: fromPlaceholder, op: -1, callNs: pool[j], client: -1}
		j++
	}

	// Window ends for appends without a return of their own: the earliest
	// return among ops that must follow them (reads of offsets >= o, appends
	// at offsets > o).
	readRet := make([]int64, n)
	readBy := make([]int32, n) // the read returning at readRet
	for o := range readRet {
		readRet[o] = inf
	}
	for _, r := range p.reads {
		o := ops[r].Offset
		if ops[r].ReturnNs < readRet[o] {
			readRet[o], readBy[o] = ops[r].ReturnNs, int32(r)
		}
	}
	need, needOp := inf, -1
	for o := n - 1; o >= 0; o-- {
		if r := readRet[o]; r < need {
			need, needOp = r, int(readBy[o])
		}
		s := &p.slots[o]
		if s.origin == fromConfirmed {
			s.bound = s.op
		} else {
			s.retNs, s.bound = need, int32(needOp)
		}
		if s.retNs < need {
			need, needOp = s.retNs, int(s.bound)
		}
	}
	return p, ""
}

// sweep decides linearizability of a pinned history exactly. Appends must
// take effect in offset order, each inside its window; taking each effect as
// early as possible, t[o] = max(call[o], t[o-1]), is optimal for every later
// constraint, so the history is linearizable iff t[o] <= ret[o] for every
// offset and every read of o returns at or after t[o]. (Intervals are closed,
// as in porcupine: ops touching at an instant may be ordered either way.)
func (p *plan) sweep() string {
	t := make([]int64, len(p.slots))
	from := make([]int32, len(p.slots)) // offset whose call sets t[o] (offsets fit 32 bits: opsMax)
	for o, s := range p.slots {
		t[o], from[o] = s.callNs, int32(o)
		if o > 0 && t[o-1] > t[o] {
			t[o], from[o] = t[o-1], from[o-1]
		}
		if t[o] > s.retNs {
			if s.origin == fromConfirmed {
				// from[o] != o: a confirmed append's call precedes
				// its return (checked in pin).
				return fmt.Sprintf("%s returned at t=%d, before %s was called (t=%d), which must take effect first",
					p.describeSlot(o), s.retNs, p.describeSlot(int(from[o])), t[o])
			}
			// An append without a return of its own is bounded by
			// an op that must follow it.
			by := describe(p.ops, int(s.bound))
			if int(from[o]) == o {
				return fmt.Sprintf("%s cannot take effect before its call at t=%d, but %s must follow it and returned at t=%d",
					p.describeSlot(o), t[o], by, s.retNs)
			}
			return fmt.Sprintf("%s must take effect by t=%d (%s must follow it), before %s was called (t=%d), which must take effect first",
				p.describeSlot(o), s.retNs, by, p.describeSlot(int(from[o])), t[o])
		}
	}
	for _, r := range p.reads {
		op := p.ops[r]
		o := op.Offset
		if op.ReturnNs < t[o] {
			return fmt.Sprintf("%s returned at t=%d, but offset %d cannot be filled before t=%d, when %s was called",
				describe(p.ops, r), op.ReturnNs, o, t[o], p.describeSlot(int(from[o])))
		}
	}
	return ""
}

// windowsOpen reports whether every pinned append's window is non-empty
// (call <= latest effect), as porcupine requires of an operation.
func (p *plan) windowsOpen() bool {
	for _, s := range p.slots {
		if s.callNs > s.retNs {
			return false
		}
	}
	return true
}

// step is a porcupine input: an append at (or a read of) offset, of key,
// in the partition whose first offset is base.
type step struct {
	read   bool
	base   uint64
	offset uint64
	key    uint64
}

// partitionMin is the fewest offsets a porcupine partition spans (except
// the last). Porcupine copies a bitset of its partition's operations on
// every step, so one partition of n operations costs O(n^2) time and
// memory; partitions of a few hundred keep the whole check near linear.
const partitionMin = 256

// porcupine checks the pinned history with porcupine against the log model.
//
// Model: the state is the log's length relative to the partition's base (a
// uint64). The log's content is slots[0..len), fixed by pin, so two states
// with one length are one state, and Equal and Hash are trivial. Append at
// offset o steps iff o is the next offset; Read of o steps iff o is below
// the length and slots[o] holds the key read.
//
// Partitions: the history is cut at offsets b where no lower slot's call
// is later than slot b's call. Appends take effect in offset order, each no
// earlier than its call, so the earliest instant slot b can take effect is
// then its own call whatever happened below b: nothing below b constrains
// the ops at or above b (a read of o is constrained only by the appends up
// to o). The history is therefore linearizable iff each part is, with its
// offsets counted from its base (porcupine's partition contract), and
// each part is handed to porcupine as a history of its own.
func (p *plan) porcupine() bool {
	// starts[k]: partition k's first offset; starts[parts] = len(slots).
	var starts []int
	latest := int64(math.MinInt64) // latest call among slots below o
	for o, s := range p.slots {
		if o == 0 || (o-starts[len(starts)-1] >= partitionMin && s.callNs >= latest) {
			starts = append(starts, o)
		}
		latest = max(latest, s.callNs)
	}
	parts := len(starts)
	starts = append(starts, len(p.slots))
	partOf := func(o uint64) int {
		k, found := slices.BinarySearch(starts, int(o))
		if !found {
			k--
		}
		return k
	}
	// The reads, grouped by partition in history order (a counting sort:
	// at[k] is where partition k's reads begin in byPart).
	at := make([]int, parts+1)
	for _, r := range p.reads {
		at[partOf(p.ops[r].Offset)+1]++
	}
	for k := 1; k <= parts; k++ {
		at[k] += at[k-1]
	}
	byPart := make([]int32, len(p.reads))
	next := slices.Clone(at[:parts])
	widest, longest := 0, 0 // the most operations, and slots, of a partition
	for _, r := range p.reads {
		k := partOf(p.ops[r].Offset)
		byPart[next[k]] = int32(r)
		next[k]++
	}
	for k := range parts {
		slots := starts[k+1] - starts[k]
		widest, longest = max(widest, slots+at[k+1]-at[k]), max(longest, slots)
	}
	// Porcupine checks each partition on its own: the history is one
	// partition at a time, in buffers reused from one to the next (it
	// keeps nothing of a history once it returns), instead of every
	// operation at once. Its inputs are pointers into steps (boxing a
	// pointer in an interface costs no allocation, boxing a step would
	// cost one per operation), and the model's states, log lengths within
	// a partition, pointers into lengths (lengths[k] == k).
	history := make([]porcupine.Operation, 0, widest)
	steps := make([]step, widest)
	lengths := make([]uint64, longest+1)
	for k := range lengths {
		lengths[k] = uint64(k)
	}
	m := p.model(lengths)
	for k := range parts {
		history = history[:0]
		base := uint64(starts[k])
		for o := starts[k]; o < starts[k+1]; o++ {
			s := &p.slots[o]
			i := len(history)
			steps[i] = step{base: base, offset: uint64(o), key: s.key}
			history = append(history, porcupine.Operation{ClientId: int(s.client), Input: &steps[i], Call: s.callNs, Return: s.retNs})
		}
		for _, r := range byPart[at[k]:at[k+1]] {
			op := &p.ops[r]
			i := len(history)
			steps[i] = step{read: true, base: base, offset: op.Offset, key: op.Key}
			history = append(history, porcupine.Operation{ClientId: int(op.Client), Input: &steps[i], Call: op.CallNs, Return: op.ReturnNs})
		}
		if !porcupine.CheckOperations(m, history) {
			return false
		}
	}
	return true
}

// model is the log model over pinned offsets. A state is a pointer to
// lengths[n] (the log's length n within the partition; lengths[k] == k for
// every k up to the slots' count), an input a *step.
func (p *plan) model(lengths []uint64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return &lengths[0] },
		Step: func(state, input, _ any) (bool, any) {
			st := state.(*uint64)
			n := *st
			in := input.(*step)
			o := in.offset - in.base
			if in.read {
				return o < n && p.slots[in.offset].key == in.key, st
			}
			if o != n {
				return false, st
			}
			return true, &lengths[n+1]
		},
		Equal: func(a, b any) bool { return *a.(*uint64) == *b.(*uint64) },
		Hash:  func(s any) uint64 { return *s.(*uint64) },
		DescribeOperation: func(input, _ any) string {
			in := input.(*step)
			if in.read {
				return fmt.Sprintf("read(%d) -> %d", in.offset, in.key)
			}
			return fmt.Sprintf("append(%d) -> %d", in.key, in.offset)
		},
	}
}
