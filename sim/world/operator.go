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
	if len(w.script) > 0 && w.working && !w.admin.probing {
		w.admin.scriptNext++
	}
}
