package core

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/recovery"
)

// wantPanic runs f and fails unless it panics with a message containing
// want.
func wantPanic(t *testing.T, name, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", name)
			return
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Errorf("%s: panicked with %v, want %q", name, r, want)
		}
	}()
	f()
}

// Each role's invariants hold of a sound state and catch each break
// planted in it: what the simulator relies on when it checks them after
// every step.
func TestRecoveryRolesInvariants(t *testing.T) {
	tr := recovery.Transition{Queue: 1, Incarnation: 1, Epoch: 2, W: 2, Previous: []recovery.Replica{{Node: 1, Storage: 1}, {Node: 2, Storage: 2}, {Node: 3, Storage: 3}}}
	coll, err := recovery.NewCollection(tr)
	if err != nil {
		t.Fatal(err)
	}
	sound := func() *recoveryWork {
		return &recoveryWork{t: tr, phase: recoveryCollect, coll: coll, asks: make([]recoveryAsk, 3), detectNs: 5, startNs: 10}
	}
	sound().invariants(20)
	verifier := recovery.NewVerifier(recovery.Seal{Node: 1}, nil, recovery.Budget{PagesMax: 1, RecordsMax: 1, BytesMax: 1})
	for _, c := range []struct {
		name, want string
		plant      func(w *recoveryWork)
	}{
		{"verifying while collecting", "a verification while collecting", func(w *recoveryWork) { w.verify = verifier }},
		{"installing unverified", "no verification", func(w *recoveryWork) { w.phase = recoveryInstall }},
		{"no phase", "no such phase", func(w *recoveryWork) { w.phase = 0 }},
		{"installs asked early", "installations asked before", func(w *recoveryWork) { w.installs = make([]installAsk, 1) }},
		{"an ask lost", "previous members asked", func(w *recoveryWork) { w.asks = w.asks[:2] }},
		{"started in the future", "started at", func(w *recoveryWork) { w.startNs = 30 }},
		{"a block without its reason", "without its reason", func(w *recoveryWork) { w.blockedOn = 2 }},
	} {
		w := sound()
		c.plant(w)
		wantPanic(t, c.name, c.want, func() { w.invariants(20) })
	}

	n := &Node{}
	n.x.NowNs = 20
	n.recoveries = []*recoveryWork{sound(), sound()}
	wantPanic(t, "two recoveries of one queue", "two recoveries", n.recoveriesInvariants)

	in := &installer{job: &installJob{req: recovery.InstallRequest{Queue: 1, Start: 0, End: 10}, phase: installCopy}}
	in.job.st.End = 4
	in.invariants()
	in.job.st.End = 11
	wantPanic(t, "a stage past the history", "not within the history", in.invariants)
	in.job.st.End, in.job.inPlace = 4, true
	wantPanic(t, "in place yet copying", "in place", in.invariants)
	in.job.inPlace, in.job.stagedBytes, in.job.stageBytesMax = false, 9, 8
	wantPanic(t, "over the staging budget", "bytes staged", in.invariants)

	s := &sealer{done: make([]recovery.Seal, 1)}
	wantPanic(t, "a seal without its epochs", "epoch histories", s.invariants)

	l := &lease{askedNs: 100, untilNs: 100 + ownerLeaseNs}
	l.invariants(100)
	wantPanic(t, "a lease asked in the future", "after now", func() { l.invariants(99) })
	l.untilNs++
	wantPanic(t, "a lease past its read's", "past its last read", func() { l.invariants(200) })
	l.askedNs = 0
	wantPanic(t, "a lease longer than a lease from now", "ns after now (0)", func() { l.invariants(0) })

	n = &Node{placed: []placedGroup{{queue: 1}, {queue: 1}}}
	wantPanic(t, "a queue placed twice", "placed twice", n.placedInvariants)
	n = &Node{placed: []placedGroup{{queue: 1, phase: placedOpen, heldBytes: 3}}}
	wantPanic(t, "bytes held of no message", "holds 0 messages", n.placedInvariants)
	n = &Node{placed: []placedGroup{{queue: 1, phase: placedOpen, copy: copyQuieting}, {queue: 2, phase: placedOpen, copy: copyOpening, fresh: 4}}}
	n.placedInvariants()
	n.placed[0].copy = copyQuiet
	wantPanic(t, "quiet past its step", "outlived the step", n.placedInvariants)
	n.placed[0].copy, n.placed[1].fresh = copyQuieting, 0
	wantPanic(t, "a fresh copy opening no generation", "fresh generation 0", n.placedInvariants)
	n.placed[1].fresh, n.placed[1].phase = 4, placedOpening
	wantPanic(t, "a fresh copy begun on an opening log", "is opening", n.placedInvariants)
	n.placed[1].phase = placedReplacing
	wantPanic(t, "replaced with no old group", "no sealed old group", n.placedInvariants)
	n.placed[1].phase = placedOpen + 7
	wantPanic(t, "a phase out of range", "in phase placedPhase(8)", n.placedInvariants)
}
