package driver

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/memfs"
)

// script is a scripted world: it records every call the host makes, runs
// writes inline, and leaves syncs and reads pending until the test runs
// them.
type script struct {
	calls   []string
	pending []int // logs whose head operation waits for Host.Run, in start order
	later   []int // RunLater requests
	timer   int64
	exited  *core.StorageDone
}

func (s *script) Send(to core.NodeID, g core.GroupID, msg []byte) {
	s.calls = append(s.calls, fmt.Sprintf("send to=%d %s", to, core.AppendMsgText(nil, g, msg)))
}

func (s *script) Client(e *core.Effect) {
	s.calls = append(s.calls, "client "+string(e.AppendText(nil, core.MsgTexts)))
}

func (s *script) StartStorage(l int, op *core.Effect) bool {
	s.calls = append(s.calls, fmt.Sprintf("start l%d %s", l, op.Op))
	if op.Op != core.OpSync && op.Op != core.OpRead && op.Op != core.OpVerify && op.Op != core.OpPersist {
		return true
	}
	s.pending = append(s.pending, l)
	return false
}

func (s *script) RunLater(l int) {
	s.calls = append(s.calls, fmt.Sprintf("run-later l%d", l))
	s.later = append(s.later, l)
}

func (s *script) Timer(at int64) {
	s.calls = append(s.calls, fmt.Sprintf("timer %d", at))
	s.timer = at
}

func (s *script) Exit(d *core.StorageDone) {
	s.calls = append(s.calls, "exit "+d.Op.String()+" "+d.Err)
	s.exited = d
}

func (s *script) Draw() uint64 { return 7 }

func (s *script) take() []string {
	c := s.calls
	s.calls = nil
	return c
}

func queue1(replicas ...core.NodeID) core.QueueConfig {
	return core.QueueConfig{Queue: 1, Replicas: replicas, Owner: replicas[0], Policy: core.LeaderDurable}
}

func newHost(t *testing.T, fs vfs.FS, env *script, process uint64, trace *Trace) *Host {
	t.Helper()
	cfg := core.Config{Node: 1, Process: process, Queues: []core.QueueConfig{queue1(1)}}
	h := NewHost(cfg, fs, []LogSpec{{Group: 1, Dir: "q1"}}, nil, env, nil, trace, Options{CheckInvariants: true})
	if err := h.Open(); err != nil {
		t.Fatal(err)
	}
	return h
}

func hasPrefix(calls []string, prefix string) bool {
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

// Contract 1: the start input carries what each log recovered, before any
// other input; a damaged tail is reported, not repaired by the driver.
func TestHostStartsWithWhatTheLogsRecovered(t *testing.T) {
	fs := memfs.New()
	l, _, err := seglog.Open(fs, "q1", seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]record.Record{{Epoch: 1, Offset: 0, Kind: record.KindEpoch}, {Epoch: 1, Offset: 1, Kind: record.KindPublish, Body: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := &script{}
	h := newHost(t, fs, env, 1, NewTrace(&out, TraceFilter{}))
	h.Start(1)
	if first := strings.SplitN(out.String(), "\n", 2)[0]; !strings.Contains(first, "< start q=1 start=0 end=2 epochs=[1@0]") {
		t.Fatalf("the first line is not the start input with the recovered log: %q", first)
	}

	// A torn tail: the start input says so, and the core, not the driver,
	// discards it.
	fs2 := memfs.New()
	l2, _, _ := seglog.Open(fs2, "q1", seglog.Options{})
	_ = l2.Append([]record.Record{{Epoch: 1, Offset: 0, Kind: record.KindEpoch}})
	_ = l2.Sync()
	names, _ := fs2.List("q1")
	seg := "q1/" + names[0]
	if err := fs2.Corrupt(seg, 32+32*seglog.SlotsPerSegmentDefault+10); err != nil {
		t.Fatal(err)
	}
	fs2.CrashClean()
	out.Reset()
	env = &script{}
	h = newHost(t, fs2, env, 1, NewTrace(&out, TraceFilter{}))
	h.Start(1)
	if !strings.Contains(out.String(), "damage=") || !strings.Contains(out.String(), "> storage discard q=1") {
		t.Fatalf("want damage reported and discarded by the core:\n%s", out.String())
	}
}

// Contracts 2, 3 and 5: effects start in order; a log's storage effects run
// strictly in order, one at a time, and sync and read completions come back
// in that order; a sync completion follows the log's real sync.
func TestHostRunsOneLogInOrder(t *testing.T) {
	fs := memfs.New()
	env := &script{}
	h := newHost(t, fs, env, 1, nil)
	h.Start(1)
	// The epoch record: append (inline), then the sync waits for the world.
	calls := env.take()
	if len(calls) < 2 || calls[0] != "start l0 append" || calls[1] != "start l0 sync" || len(env.pending) != 1 {
		t.Fatalf("want the append run inline and the sync started: %q", calls)
	}
	env.pending = env.pending[:0]
	h.Run(2, 0) // the epoch record is durable: the owner is ready
	env.take()
	h.Request(3, 7, core.Request{Kind: core.ReqPublish, ID: 1, Queue: 1, Body: []byte("a")})
	if calls := env.take(); len(calls) < 2 || calls[0] != "start l0 append" || calls[1] != "start l0 sync" {
		t.Fatalf("want the publish's append inline and its sync started: %q", calls)
	}
	// A second publish while the sync is out: its append queues behind it.
	h.Request(4, 7, core.Request{Kind: core.ReqPublish, ID: 2, Queue: 1, Body: []byte("b")})
	if calls := env.take(); hasPrefix(calls, "start l0") {
		t.Fatalf("an effect started while the log's head was running: %q", calls)
	}
	syncsBefore := fs.Stats().Syncs
	env.pending = env.pending[:0]
	h.Run(5, 0) // the sync completes: the first publish is confirmed, then the queued append runs and a sync starts
	if fs.Stats().Syncs <= syncsBefore {
		t.Fatal("a sync completion went in without the log's real sync")
	}
	calls = env.take()
	want := []string{"client reply c=7 id=1 confirmed q=1 o=1", "start l0 append", "start l0 sync"}
	for _, w := range want {
		j := 0
		for j < len(calls) && calls[j] != w {
			j++
		}
		if j == len(calls) {
			t.Fatalf("want %q (in order %q), got %q", w, want, calls)
		}
		calls = calls[j+1:]
	}
	env.pending = env.pending[:0]
	h.Run(6, 0)
	if calls := env.take(); !hasPrefix(calls, "client reply c=7 id=2 confirmed q=1 o=2") {
		t.Fatalf("want the second publish confirmed by the next sync: %q", calls)
	}
}

// Contracts 3 and 4: a failed inline operation comes back as its own input,
// nothing queued behind it runs, and the process ends.
func TestHostFailurePolicy(t *testing.T) {
	fs := memfs.New()
	env := &script{}
	h := newHost(t, fs, env, 1, nil)
	h.Start(1)
	env.pending = env.pending[:0]
	h.Run(2, 0) // the epoch record is durable: the owner is ready
	env.take()
	fs.SetCapacity(fs.Usage()) // the next write fails: no space
	h.Request(3, 7, core.Request{Kind: core.ReqPublish, ID: 1, Queue: 1, Body: make([]byte, 1<<20)})
	calls := env.take()
	if !hasPrefix(calls, "run-later l0") || hasPrefix(calls, "exit") {
		t.Fatalf("want the failure handed back later, not at once: %q", calls)
	}
	h.Request(4, 7, core.Request{Kind: core.ReqPublish, ID: 2, Queue: 1, Body: []byte("b")})
	if calls := env.take(); hasPrefix(calls, "start l0") {
		t.Fatalf("an operation ran behind a failed one: %q", calls)
	}
	h.Run(5, 0)
	calls = env.take()
	if env.exited == nil || env.exited.Err == "" || !hasPrefix(calls, "client reply c=7 id=1 unknown") {
		t.Fatalf("want the publish in flight unknown and the process ended: %q", calls)
	}
	h.Request(6, 7, core.Request{Kind: core.ReqPublish, ID: 3, Queue: 1, Body: []byte("c")})
	if calls := env.take(); len(calls) != 0 || !h.Exited() {
		t.Fatalf("an exited host still acts: %q", calls)
	}
}

// Contract 8: one timer for the latest deadline; a superseded tick is
// ignored; an early tick asks again; a reset re-arms.
func TestHostKeepsOneTimer(t *testing.T) {
	fs := memfs.New()
	env := &script{}
	h := newHost(t, fs, env, 1, nil)
	h.Start(1)
	at := env.timer
	if at == 0 {
		t.Fatal("no timer asked for")
	}
	env.take()
	h.Tick(at, at+1) // not the timer the host expects
	if calls := env.take(); len(calls) != 0 {
		t.Fatalf("a superseded tick was acted on: %q", calls)
	}
	h.deadline = at + 500 // the core's deadline moved later meanwhile
	h.Tick(at, at)
	if calls := env.take(); len(calls) != 1 || calls[0] != fmt.Sprintf("timer %d", at+500) {
		t.Fatalf("an early tick must ask again for the deadline: %q", calls)
	}
	h.ResetTimer(at + 1000)
	if env.timer != at+1000 {
		t.Fatalf("a reset must re-arm at now at the earliest, got %d", env.timer)
	}
}

// Contract 6: a message that does not decode is refused by its group and
// counted, never asserted on.
func TestHostRefusesMalformedMessages(t *testing.T) {
	fs := memfs.New()
	env := &script{}
	h := newHost(t, fs, env, 1, nil)
	h.Start(1)
	h.Message(2, 2, 1, []byte{0xff, 1, 2})
	h.Message(3, 2, 99, []byte{1})
	if h.Node().Refused() != 2 {
		t.Fatalf("refused = %d, want 2", h.Node().Refused())
	}
}

// Contract 12: a group's stage opens beside its log, reopens in its queue
// behind what was issued on it, and its publish makes it the group's log
// 0 (durably: a new open finds the new generation) while the generation
// it replaced stays on the disk; the published stage's index is reused.
// (White-box: the completions are not handed to a core, which would want
// an installation behind them.)
func TestHostStagesAndPublishes(t *testing.T) {
	fs := memfs.New()
	env := &script{}
	h := newHost(t, fs, env, 1, nil)
	h.Start(1)
	storage := func(op core.StorageOp, log core.LogID, off uint64, recs ...record.Record) {
		h.storage(&core.Effect{Kind: core.EfStorage, Op: op, Group: 1, Log: log, Offset: off, Records: recs})
	}
	settle := func(l int) { // the pending completion, as if handed over
		q := &h.logs[l]
		q.failed, q.busy = nil, false
		h.kick(l)
	}
	live := h.logIndex(1, 0)
	liveEnd := h.Log(live).End()
	storage(core.OpOpen, core.LogStage, 5)
	stage := h.logIndex(1, core.LogStage)
	if d := h.logs[stage].failed; d == nil || d.Op != core.OpOpen || d.State == nil || d.State.Generation != 5 || d.State.End != 0 {
		t.Fatalf("the stage's open completion: %+v", d)
	}
	settle(stage)
	storage(core.OpAppend, core.LogStage, 0, record.Record{Epoch: 5, Offset: 0, Kind: record.KindEpoch},
		record.Record{Epoch: 5, Offset: 1, Kind: record.KindPublish, Body: []byte("staged")})
	storage(core.OpSync, core.LogStage, 2)
	// A reopen queued behind the sync runs only after it.
	storage(core.OpOpen, core.LogStage, 5)
	if h.logs[stage].head != 0 || len(h.logs[stage].ops) != 2 {
		t.Fatalf("the stage's queue: head %d of %d", h.logs[stage].head, len(h.logs[stage].ops))
	}
	h.exec(stage) // the sync
	h.logs[stage].busy = false
	h.kick(stage) // the reopen
	if d := h.logs[stage].failed; d == nil || d.Op != core.OpOpen || d.State.End != 2 || d.State.Generation != 5 {
		t.Fatalf("the reopened stage: %+v", d)
	}
	settle(stage)
	if h.Log(live).End() != liveEnd {
		t.Fatalf("the live log changed under the stage: end %d, was %d", h.Log(live).End(), liveEnd)
	}
	storage(core.OpPublish, core.LogStage, 0)
	if g := h.Log(live).Generation(); g != 5 || h.Log(live).End() != 2 || !h.logs[stage].retired {
		t.Fatalf("after the publish: log 0 is generation %d ending at %d; the stage retired: %v", g, h.Log(live).End(), h.logs[stage].retired)
	}
	fs.CrashClean()
	l, rec, err := seglog.Open(fs, "q1", seglog.Options{})
	if err != nil || rec.Generation != 5 || rec.End != 2 {
		t.Fatalf("a new open after a crash: generation %d end %d, %v", rec.Generation, rec.End, err)
	}
	l.Close()
	storage(core.OpOpen, core.LogStage, 9)
	if got := h.logIndex(1, core.LogStage); got != stage {
		t.Fatalf("the next stage opened at index %d, not the retired %d", got, stage)
	}
}
