package world

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
)

// A scripted operator (Profile.Operator), for named scenarios that need a
// timeline rather than the swarm's random operator: each step is one line,
//
//	at=MS set KEY VALUE                          a runtime setting
//	at=MS declare NAME REPLICAS POLICY MIN_INSYNC
//	at=MS publish NAME RATE                      publishes/s to NAME from now on (0: stop)
//
// in order of MS. Settings and declarations are sent to the metadata group
// at their instants (each retried until it commits, following redirects);
// nothing else is. Every declared name gets placed publishers
// (scriptPublishersFor), each one publish at a time, which share the rate the last
// publish step gave (evenly spaced, no draw). With no script the operator
// is the swarm's: random settings, declarations and deletions of sim-q0..2.

// scriptPublishers is how many placed publishers a scripted queue gets at
// least, and scriptRatePerPublisher the rate one is given at most: a
// confirm takes a few ms, so four keep a rate of a few hundred per second,
// and a queue published at 1,000/s gets ten.
const (
	scriptPublishers       = 4
	scriptRatePerPublisher = 100
)

// scriptPublishersFor returns how many placed publishers the script gives
// queue name: enough for the highest rate a publish step gives it.
func scriptPublishersFor(script []operatorStep, name string) int {
	rate := 0
	for _, s := range script {
		if s.cmd.Kind == 0 && s.name == name {
			rate = max(rate, s.rate)
		}
	}
	return max(scriptPublishers, (rate+scriptRatePerPublisher-1)/scriptRatePerPublisher)
}

// operatorStep is one parsed step.
type operatorStep struct {
	atNs int64
	cmd  metadata.Command // set and declare
	// publish: the queue name and the rate (cmd.Kind is 0)
	name string
	rate int
}

// parseOperator reads a script's lines.
func parseOperator(lines []string) ([]operatorStep, error) {
	var steps []operatorStep
	for i, line := range lines {
		f := strings.Fields(line)
		bad := func(format string, a ...any) error {
			return fmt.Errorf("operator[%d] %q: %s", i, line, fmt.Sprintf(format, a...))
		}
		if len(f) < 2 || !strings.HasPrefix(f[0], "at=") {
			return nil, bad("want at=MS set|declare|publish ...")
		}
		ms, err := strconv.ParseInt(strings.TrimPrefix(f[0], "at="), 10, 64)
		if err != nil || ms < 0 || ms > DurationMsMax {
			return nil, bad("at: want 0..%d ms", DurationMsMax)
		}
		if len(steps) > 0 && ms*1e6 < steps[len(steps)-1].atNs {
			return nil, bad("steps must come in order of their instants")
		}
		s := operatorStep{atNs: ms * 1e6}
		num := func(v string, lo, hi int64) (int64, bool) {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil && n >= lo && n <= hi
		}
		switch {
		case f[1] == "set" && len(f) == 4:
			v, ok := num(f[3], -1<<62, 1<<62)
			if !ok {
				return nil, bad("value: want an integer")
			}
			s.cmd = metadata.Command{Kind: metadata.SetSetting, Key: f[2], Value: v}
		case f[1] == "declare" && len(f) == 6:
			n, ok1 := num(f[3], 1, core.ReplicasMax)
			m, ok2 := num(f[5], 1, core.ReplicasMax)
			p, err := core.ParsePolicy(f[4])
			if !ok1 || !ok2 || err != nil {
				return nil, bad("want declare NAME REPLICAS(1..%d) POLICY MIN_INSYNC", core.ReplicasMax)
			}
			s.cmd = metadata.Command{Kind: metadata.DeclareQueue, Queue: f[2], Replicas: int(n), Policy: p, MinInsync: int(m)}
		case f[1] == "publish" && len(f) == 4:
			r, ok := num(f[3], 0, PublishesPerSMax)
			if !ok {
				return nil, bad("rate: want 0..%d publishes/s", PublishesPerSMax)
			}
			s.name, s.rate = f[2], int(r)
		default:
			return nil, bad("want at=MS set KEY VALUE | declare NAME REPLICAS POLICY MIN_INSYNC | publish NAME RATE")
		}
		if s.cmd.Kind != 0 {
			if err := s.cmd.Validate(); err != nil {
				return nil, bad("%v", err)
			}
		}
		steps = append(steps, s)
	}
	for _, s := range steps {
		if s.cmd.Kind == 0 && !scriptDeclares(steps, s.name) {
			return nil, fmt.Errorf("operator: publish to %q, which the script never declares", s.name)
		}
	}
	return steps, nil
}

// declares reports whether an operator script declares a queue.
func declares(lines []string) bool {
	steps, err := parseOperator(lines)
	return err == nil && slices.ContainsFunc(steps, func(s operatorStep) bool { return s.cmd.Kind == metadata.DeclareQueue })
}

func scriptDeclares(steps []operatorStep, name string) bool {
	for _, s := range steps {
		if s.cmd.Kind == metadata.DeclareQueue && s.cmd.Queue == name {
			return true
		}
	}
	return false
}

// scriptCommand returns the scripted operator's next command to send, or
// when none is due now, the instant of the next (0: none left).
func (w *World) scriptCommand() (c metadata.Command, due bool, nextNs int64) {
	a := &w.admin
	for a.scriptNext < len(w.script) && w.script[a.scriptNext].cmd.Kind == 0 {
		a.scriptNext++ // publish steps are the publishers' business
	}
	if a.scriptNext >= len(w.script) {
		return c, false, 0
	}
	s := &w.script[a.scriptNext]
	if s.atNs > w.now {
		return c, false, s.atNs
	}
	return s.cmd, true, 0
}

// scriptOwed reports whether, in the drain, the scripted operator still
// owes a setting or declaration that came due in the workload phase: its
// steps are the operator's, not the workload's, so one that had not
// committed when the workload ended (its requests lost to a broker's
// death, or waiting out a leader change) is still sent, before the
// drain's probe. A step due after the workload's end is never sent.
func (w *World) scriptOwed() bool {
	if w.working {
		return false
	}
	for i := w.admin.scriptNext; i < len(w.script); i++ {
		if s := &w.script[i]; s.cmd.Kind != 0 {
			return s.atNs <= w.prof.DurationMs*1e6
		}
	}
	return false
}

// scriptRuns reports whether the scripted operator sends its steps now:
// in the workload phase, and in the drain for the steps it still owes.
func (w *World) scriptRuns() bool {
	return len(w.script) > 0 && (w.working || w.scriptOwed())
}

// scriptGap returns the gap between one placed publisher's publishes to
// queue name at now (0: stopped), and when the rate changes next (0:
// never).
func (w *World) scriptGap(name string, publishers int) (gapNs, nextNs int64) {
	rate := 0
	for _, s := range w.script {
		if s.cmd.Kind != 0 || s.name != name {
			continue
		}
		if s.atNs > w.now {
			nextNs = s.atNs
			break
		}
		rate = s.rate
	}
	if rate == 0 {
		return 0, nextNs
	}
	return 1e9 * int64(publishers) / int64(rate), nextNs
}

// scriptDone moves the scripted operator past the step it sent, once the
// metadata group committed it (confirmed, or refused by the metadata).
func (w *World) scriptDone() {
	if w.scriptRuns() && !w.admin.probing {
		w.admin.scriptNext++
	}
}

// The drain fault (FaultDrain): the operator drains a broker, as `sluice
// drain` does, by the metadata group's Drain command, and undrains it
// after the fault's duration, or at the heal. Its requests go out in the
// operator's next turns, before its own draws (after the profile's
// declarations), each retried until it commits, so a drain is undone
// by the undrain behind it whatever the outcome of a request (raft
// commits an entry an old leader took before any the next leader takes
// later). In two draws of three the broker's process is killed 1 to 300 ms
// after its drain applies and restarts 1 ms to 3 s later: a maintenance
// restart, whose followers are lost while their broker drains (no hold
// may keep them: hold-ended judges the fence). The draws come from a
// stream of their own (rDrain).

// drainStep is one drain or undrain request, due from dueNs.
type drainStep struct {
	cmd   metadata.Command
	dueNs int64
}

// drainKillNsMax bounds the delay from a drain's application to its
// maintenance restart's kill; drainRestartNsMax the restart's delay.
const (
	drainKillNsMax    = 300e6
	drainRestartNsMax = 3e9
)

// drainStrike asks for broker b's drain now and its undrain after durNs,
// unless b drains already or has a request of the drain fault pending.
func (w *World) drainStrike(b *broker, f Fault) bool {
	a := &w.admin
	if w.hold.brokers[b.id-1].draining || slices.ContainsFunc(a.drains, func(s drainStep) bool { return s.cmd.Node == b.id }) {
		return false
	}
	w.drainKill[b.id-1] = 0
	if w.rDrain.Chance(2, 3) {
		w.drainKill[b.id-1] = w.rDrain.Range(1e6, drainRestartNsMax)
	}
	a.drains = append(a.drains,
		drainStep{cmd: metadata.Command{Kind: metadata.Drain, Node: b.id, Draining: true}, dueNs: w.now},
		drainStep{cmd: metadata.Command{Kind: metadata.Drain, Node: b.id, Draining: false}, dueNs: w.now + f.DurNs})
	w.notef("fault %s", f)
	if a.asleep {
		a.asleep = false
		w.schedule1(w.now+scriptGapNs, evAdmin)
	}
	return true
}

// drainDue returns the first of the drain fault's requests that is due
// (-1: none) and, when none is, the instant the next one is (0: none).
func (w *World) drainDue() (i int, nextNs int64) {
	a := &w.admin
	if !w.working {
		// No drain is asked for after the heal (one outstanding then
		// was, and timed out: its undrain follows it).
		a.drains = slices.DeleteFunc(a.drains, func(s drainStep) bool { return s.cmd.Draining })
	}
	for i, s := range a.drains {
		if s.dueNs <= w.now {
			return i, 0
		}
		if nextNs == 0 || s.dueNs < nextNs {
			nextNs = s.dueNs
		}
	}
	return -1, nextNs
}

// drainDone forgets the drain request the metadata group committed (the
// outstanding one: the first of its bytes).
func (w *World) drainDone() {
	a := &w.admin
	c, err := metadata.Decode(a.cmd)
	if err != nil {
		panic(fmt.Sprintf("world: the operator's drain request: %v", err))
	}
	if i := slices.IndexFunc(a.drains, func(s drainStep) bool { return s.cmd == c }); i >= 0 {
		a.drains = slices.Delete(a.drains, i, i+1)
	}
}

// drainHeal is the heal's part: every undrain is due now (and no drain
// is asked for any more: drainDue), and no maintenance restart is to come.
func (w *World) drainHeal() {
	a := &w.admin
	for i := range a.drains {
		if !a.drains[i].cmd.Draining {
			a.drains[i].dueNs = w.now
		}
	}
	clear(w.drainKill)
}

// drainApplied follows a committed drain of node, undrained before (its
// first application): the fault has struck, and its maintenance restart, if it
// drew one, kills the broker's process soon.
func (w *World) drainApplied(node core.NodeID) {
	if !w.working {
		return
	}
	w.stats.Struck[FaultDrain]++
	b := w.brokers[node-1]
	if restartNs := w.drainKill[node-1]; restartNs != 0 && b.up && !b.gone {
		w.drainKill[node-1] = 0
		e := w.schedule1(w.now+w.rDrain.Range(1e6, drainKillNsMax), evDrainKill)
		e.node, e.inc, e.q = int32(node-1), b.inc, int32(max(restartNs/1e6, 1))
	}
}

// drainKilled is a drain fault's maintenance restart: the draining
// broker's process is killed (its peers see the exit) and restarts after
// the drawn delay, if it still runs the process and drains, in the
// workload phase.
func (w *World) drainKilled(e *event) {
	b := w.brokers[e.node]
	if !w.working || !b.up || b.gone || b.inc != e.inc || !w.hold.brokers[e.node].draining {
		return
	}
	w.notef("fault drain n%d inc=%d: restarted while it drains, in %d ms", b.id, b.inc, e.q)
	w.stopProcess(b, int64(e.q)*1e6, true)
}
