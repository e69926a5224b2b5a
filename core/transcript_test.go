package core

// Transcript tests, in the manner of etcd-raft's data-driven tests: each
// file under testdata/ drives one Node through Step with a sequence of
// commands, each followed by what that step must produce:
//
//	# comments and blank lines are kept as they are
//	<command>
//	----
//	> <the input's stable text form>
//	<one line per effect, in order, in their stable text forms>
//	refused=N           (only when the node's refused counter changed)
//
// internal/transcript reads the files (its doc.go gives the format, the
// words of a command and how failures are reported). `go test ./core -run
// TestTranscripts -rewrite` writes what the node does now into every
// expected block; review the diff before committing it. After every step
// the harness also runs node.Invariants(); a panic in Step or in the
// invariants fails the test at the command's file:line.
//
// Commands. Every one takes an optional t=<time>, absolute (150ms) or
// relative (+100ms); time stays put when not given and never goes back.
//
//	node 1 queue=1:[1,2,3]:owner=1:majority_durable [queue=...] [process=2]
//	     [ctrl=1,2,3 learners=4,5 storage=9]   (the metadata group: its voters)
//	     [window= batch-recs= batch-bytes= cache-bytes= read-recs= pending=
//	      ready= consumers= prefetch-max= epochs-max= resend=D scrub=D heartbeat=D]
//	  (re)create the node: a new process, memory gone (process defaults to 1)
//	start [q=1 end=4 epochs=1@0,2@3 damage="crc mismatch" unrepaired] [q=2 ...]
//	  the start input; with no q=, an empty log for every queue
//	recv from=2 [q=1] <kind> e=<epoch> p=<process> <fields>
//	  a peer message, encoded with queue.AppendMsg; q defaults to 1; kinds:
//	  append prev= preve= commit= recs=[...] | append-reply ok|reject end= [epochs=]
//	  raw bytes=<hex>     (bytes as they came: for messages that must be refused)
//	  raft type=MsgVoteResp term=1 [index= logterm= commit= reject]   (the metadata group's)
//	  heartbeat process= storage=   (a controller heartbeat of node from)
//	peer-lost from=2 process=3      (eager failover's signal)
//	client c=9 publish q=1 id=1 body=hello|size=N | subscribe q=1 id=2 prefetch=8 | ack q=1 id=3 o=5
//	  | meta id=4 cmd="set liveness.expiry_ms 5000"|"declare NAME REPLICAS POLICY MIN-INSYNC"
//	  | topology id=5 name=NAME
//	gone c=9              (the client's connection closed)
//	done <op> q=1 [o=N] [tag=N recs=[...]] [n=N] [err="..."]
//	    (verify: o is where it started, n how many records it verified)
//	  a storage completion; op is append, sync, read, truncate, discard,
//	  repaired, persist (with seq=N: the metadata group's batch) or open
//	  (a placed queue's log, new and empty unless end= says). The harness holds it to the driver contract (core/doc.go):
//	  it must complete the group's oldest outstanding operation (earlier
//	  appends, truncations, discards and repaired marks complete silently),
//	  with the sync's offset or the read's offset and tag; nothing queued
//	  behind a failure ever completes.
//	tick [draw=N]
//
// Records are epoch:kind[:body], kinds pub, ack (body: the acked offset)
// and epoch; offsets follow prev= (messages) or o= (reads):
// recs=[2:epoch 2:pub:hello 2:ack:5].

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/queue"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/internal/transcript"
	"github.com/sluicemq/sluice/io/meta"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestTranscripts(t *testing.T) {
	transcript.RunDir(t, "testdata/*.txt", func(*testing.T) transcript.Runner {
		h := &harness{}
		return transcript.Runner{Step: h.run, After: h.invariants}
	})
}

// harness is one transcript's world: the node, the clock, and the storage
// operations the node issued that a driver has not completed yet.
type harness struct {
	cmd     *transcript.Cmd // the command being run
	cfg     Config
	node    *Node
	nowNs   int64
	refused uint64
	ops     map[GroupID][]Effect // outstanding storage operations, oldest first
	failed  map[GroupID]bool     // a completion failed: nothing behind it runs
}

func (h *harness) fatalf(format string, a ...any) {
	h.cmd.Fatalf(format, a...)
}

// invariants checks the node's invariants after every step: Invariants
// panics with what broke, which the runner reports at the command's line.
func (h *harness) invariants() error {
	if h.node != nil {
		h.node.Invariants()
	}
	return nil
}

func (h *harness) uint(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil && s != "" {
		h.fatalf("%q: want a number", s)
	}
	return n
}

func (h *harness) epochs(v string) (out []EpochStart) {
	for _, f := range strings.FieldsFunc(strings.Trim(v, "[]"), func(r rune) bool { return r == ',' || r == ' ' }) {
		e, o, _ := strings.Cut(f, "@")
		out = append(out, EpochStart{Epoch: h.uint(e), Offset: h.uint(o)})
	}
	return out
}

// records reads [epoch:kind[:body] ...], offsets from first on.
func (h *harness) records(v string, first uint64) (out []record.Record) {
	for i, f := range strings.Fields(strings.Trim(v, "[]")) {
		p := append(strings.SplitN(f, ":", 3), "", "")
		rec := record.Record{Epoch: h.uint(p[0]), Offset: first + uint64(i)}
		switch p[1] {
		case "pub":
			rec.Kind, rec.Body = record.KindPublish, []byte(p[2])
		case "ack":
			rec.Kind, rec.Body = record.KindAck, record.AckBody(h.uint(p[2]))
		case "epoch":
			rec.Kind = record.KindEpoch
		default:
			h.fatalf("record %q: want epoch:pub:body, epoch:ack:offset or epoch:epoch", f)
		}
		out = append(out, rec)
	}
	return out
}

// run carries out one command and returns its output lines.
func (h *harness) run(c *transcript.Cmd) []string {
	h.cmd = c
	if c.Has("t") {
		v := c.Str("t", "")
		d, err := time.ParseDuration(strings.TrimPrefix(v, "+"))
		at := int64(d)
		if strings.HasPrefix(v, "+") {
			at += h.nowNs
		}
		if err != nil || at < h.nowNs {
			h.fatalf("t=%s: want a duration not before %v (%v)", v, time.Duration(h.nowNs), err)
		}
		h.nowNs = at
	}
	if c.Name == "node" {
		h.newNode(c.Args)
		return nil
	}
	if h.node == nil {
		h.fatalf("the first command must be node")
	}
	in := Input{NowNs: h.nowNs, Group: QueueGroup(QueueID(c.Uint("q", 0))), Client: ClientID(c.Uint("c", 0))}
	switch c.Name {
	case "start":
		in.Kind = InStart
		h.start(&in, c.Args)
	case "recv":
		in.Kind, in.From = InMessage, NodeID(c.Uint("from", 0))
		in.Group = max(in.Group, 1)
		h.recv(&in, c)
	case "peer-lost":
		in.Kind, in.From, in.Process = InPeerLost, NodeID(c.Uint("from", 0)), c.Uint("process", 0)
	case "client":
		kinds := map[string]RequestKind{"publish": ReqPublish, "subscribe": ReqSubscribe, "ack": ReqAck, "meta": ReqMeta, "topology": ReqTopology}
		in.Kind, in.Req = InClient, Request{Kind: kinds[word(c, 1)], ID: c.Uint("id", 0),
			Queue: QueueID(c.Uint("q", 0)), Body: []byte(c.Str("body", "")), Offset: c.Uint("o", 0), Prefetch: int(c.Uint("prefetch", 0))}
		if n := c.Uint("size", 0); n > 0 {
			in.Req.Body = []byte(strings.Repeat("x", int(n)))
		}
		if in.Req.Kind == ReqMeta {
			in.Req.Body = h.metaCmd(c.Str("cmd", ""))
		}
		if in.Req.Kind == ReqTopology {
			in.Req.Body = []byte(c.Str("name", ""))
		}
		if in.Req.Kind == 0 {
			h.fatalf("client: want publish, subscribe or ack")
		}
	case "gone":
		in.Kind = InClientGone
	case "done":
		in.Kind = InStorage
		h.done(&in, c)
	case "tick":
		in.Kind, in.Draw = InTick, c.Uint("draw", 0)
	default:
		h.fatalf("unknown command %q", c.Name)
	}
	return h.step(&in)
}

// word is the key of c's argument i (a subcommand's name), or "".
func word(c *transcript.Cmd, i int) string {
	if i < len(c.Args) {
		return c.Args[i].Key
	}
	return ""
}

func (h *harness) newNode(args []transcript.Arg) {
	h.cfg, h.ops, h.failed, h.refused = Config{Process: 1}, map[GroupID][]Effect{}, map[GroupID]bool{}, 0
	l := &h.cfg.Limits
	ints := map[string]*int{"window": &l.WindowBatchesMax, "batch-recs": &l.BatchRecordsMax, "batch-bytes": &l.BatchBytesMax,
		"read-recs": &l.ReadRecordsMax, "pending": &l.PendingPublishesMax, "ready": &l.ReadyMax,
		"consumers": &l.ConsumersMax, "prefetch-max": &l.PrefetchMax, "epochs-max": &l.EpochsMax, "retain-recs": &l.RetainRecordsMin}
	ms := map[string]*int64{"resend": &l.ResendMs, "scrub": &l.ScrubIntervalMs, "heartbeat": &l.HeartbeatMs, "retain-silent": &l.RetainSilentMs}
	for _, a := range args {
		switch f := strings.Split(a.Val, ":"); {
		case a.Bare:
			h.cfg.Node = NodeID(h.uint(a.Key))
		case a.Key == "process":
			h.cfg.Process = h.uint(a.Val)
		case a.Key == "storage":
			h.cfg.Storage = h.uint(a.Val)
		case a.Key == "ctrl" || a.Key == "learners":
			if h.cfg.Ctrl == nil {
				h.cfg.Ctrl = &ctrl.Config{}
			}
			var ids []uint64
			for _, v := range strings.Split(a.Val, ",") {
				ids = append(ids, h.uint(v))
			}
			if a.Key == "ctrl" {
				h.cfg.Ctrl.Voters = ids
			} else {
				h.cfg.Ctrl.Learners = ids
			}
		case a.Key == "cache-bytes":
			l.CacheBytesMax = int64(h.uint(a.Val))
		case ints[a.Key] != nil:
			*ints[a.Key] = int(h.uint(a.Val))
		case ms[a.Key] != nil:
			d, err := time.ParseDuration(a.Val)
			if err != nil {
				h.fatalf("%s=%s: %v", a.Key, a.Val, err)
			}
			*ms[a.Key] = d.Milliseconds()
		case a.Key == "queue" && len(f) == 4 && strings.HasPrefix(f[2], "owner="):
			qc := QueueConfig{Queue: QueueID(h.uint(f[0])), Owner: NodeID(h.uint(f[2][len("owner="):]))}
			for _, r := range strings.Split(strings.Trim(f[1], "[]"), ",") {
				qc.Replicas = append(qc.Replicas, NodeID(h.uint(r)))
			}
			var err error
			if qc.Policy, err = ParsePolicy(f[3]); err != nil {
				h.fatalf("%v", err)
			}
			h.cfg.Queues = append(h.cfg.Queues, qc)
		case a.Key != "t":
			h.fatalf("node: cannot read %s=%s", a.Key, a.Val)
		}
	}
	if c := h.cfg.Ctrl; c != nil {
		d := ctrl.DefaultConfig(uint64(h.cfg.Node), c.Voters)
		d.Learners = c.Learners
		h.cfg.Ctrl = &d
	}
	h.node = New(h.cfg)
}

// metaCmd encodes an operator's metadata command.
func (h *harness) metaCmd(s string) []byte {
	f := strings.Fields(s)
	var c metadata.Command
	switch {
	case len(f) == 3 && f[0] == "set":
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			h.fatalf("cmd %q: %v", s, err)
		}
		c = metadata.Command{Kind: metadata.SetSetting, Key: f[1], Value: v}
	case len(f) == 5 && f[0] == "declare":
		p, err := ParsePolicy(f[3])
		if err != nil {
			h.fatalf("cmd %q: %v", s, err)
		}
		c = metadata.Command{Kind: metadata.DeclareQueue, Queue: f[1], Replicas: int(h.uint(f[2])), Policy: p, MinInsync: int(h.uint(f[4]))}
	default:
		h.fatalf("cmd %q: want set KEY VALUE or declare NAME REPLICAS POLICY MIN-INSYNC", s)
	}
	return c.Encode(nil)
}

func (h *harness) start(in *Input, args []transcript.Arg) {
	for _, a := range args {
		n := len(in.Logs) - 1
		switch {
		case a.Key == "q":
			in.Logs = append(in.Logs, LogState{Group: GroupID(h.uint(a.Val))})
		case a.Key == "t":
		case n < 0:
			h.fatalf("start: %s before q=", a.Key)
		case a.Key == "end":
			in.Logs[n].End = h.uint(a.Val)
		case a.Key == "epochs":
			in.Logs[n].Epochs = h.epochs(a.Val)
		case a.Key == "damage":
			in.Logs[n].Damage = a.Val
		case a.Key == "unrepaired":
			in.Logs[n].Unrepaired = true
		default:
			h.fatalf("start: cannot read %s", a.Key)
		}
	}
	for i := 0; len(in.Logs) == 0 && i < len(h.cfg.Queues); i++ {
		in.Logs = append(in.Logs, LogState{Group: QueueGroup(h.cfg.Queues[i].Queue)})
	}
	if h.cfg.Ctrl != nil {
		in.Meta = &meta.State{} // a new metadata store
	}
}

func (h *harness) recv(in *Input, c *transcript.Cmd) {
	i := 0
	for i < len(c.Args) && !c.Args[i].Bare {
		i++ // from=, q=, t= come before the kind
	}
	if i == len(c.Args) {
		h.fatalf("recv: no message kind")
	}
	kind, f := c.Args[i].Key, c.Tail(i+1)
	m := queue.Msg{Epoch: f.Uint("e", 0), Process: f.Uint("p", 0), Prev: f.Uint("prev", 0), PrevEpoch: f.Uint("preve", 0),
		Commit: f.Uint("commit", 0), End: f.Uint("end", 0), Start: f.Uint("start", 0), Epochs: h.epochs(f.Str("epochs", ""))}
	m.Reset = f.Has("reset")
	m.Records = h.records(f.Str("recs", ""), m.Prev)
	kinds := map[string]queue.MsgKind{"append": queue.MsgAppend, "append-reply": queue.MsgAppendReply}
	switch m.Kind = kinds[kind]; {
	case kind == "raft":
		in.Group = GroupCtrl
		types := map[string]pb.MessageType{"MsgVoteResp": pb.MsgVoteResp, "MsgPreVoteResp": pb.MsgPreVoteResp,
			"MsgAppResp": pb.MsgAppResp, "MsgHeartbeatResp": pb.MsgHeartbeatResp}
		typ, ok := types[f.Str("type", "")]
		if !ok {
			h.fatalf("raft: type=%q is not one the harness writes", f.Str("type", ""))
		}
		reject := f.Has("reject")
		b, err := proto.Marshal(&pb.Message{Type: typ.Enum(), From: new(uint64(in.From)), To: new(uint64(h.cfg.Node)),
			Term: new(f.Uint("term", 0)), Index: new(f.Uint("index", 0)), LogTerm: new(f.Uint("logterm", 0)),
			Commit: new(f.Uint("commit", 0)), Reject: new(reject)})
		if err != nil {
			h.fatalf("raft: %v", err)
		}
		in.Data = b
		return
	case kind == "heartbeat":
		in.Group = seam.GroupCtrlPeer
		in.Data = ctrl.AppendHeartbeat(nil, uint64(in.From), f.Uint("process", 0), f.Uint("storage", 0))
		return
	case kind == "raw":
		b, err := hex.DecodeString(f.Str("bytes", ""))
		if err != nil {
			h.fatalf("bytes: %v", err)
		}
		in.Data = b
		return
	case m.Kind == 0:
		h.fatalf("unknown message kind %q", kind)
	}
	m.Ok = f.Has("ok")
	in.Data = queue.AppendMsg(nil, &m)
}

// done builds a storage completion and holds it to the driver contract.
func (h *harness) done(in *Input, c *transcript.Cmd) {
	d := &in.Done
	d.Group, d.Offset, d.Tag, d.Err = in.Group, c.Uint("o", 0), c.Uint("tag", 0), c.Str("err", "")
	d.Records = h.records(c.Str("recs", ""), d.Offset)
	if d.Op = 0; d.Group == 0 && word(c, 0) == OpPersist.String() {
		d.Group, d.Tag = GroupCtrl, c.Uint("seq", 0)
	}
	for op := OpAppend; op <= OpReseed; op++ {
		if word(c, 0) == op.String() {
			d.Op = op
		}
	}
	silent := func(op StorageOp) bool {
		return op != OpSync && op != OpRead && op != OpVerify && op != OpPersist && op != OpOpen && op != OpRetain
	}
	if d.Op == OpOpen && d.Err == "" {
		d.State = &LogState{Group: d.Group, End: c.Uint("end", 0)} // a new, empty log unless end= says
	}
	q := h.ops[d.Group]
	for len(q) > 0 && q[0].Op != d.Op && silent(q[0].Op) {
		q = q[1:] // completed silently
	}
	switch {
	case d.Op == 0:
		h.fatalf("done: want append, sync, read, verify, truncate, discard, repaired, retain or reseed")
	case h.failed[d.Group]:
		h.fatalf("done: nothing behind a failed operation completes")
	case len(q) == 0 || q[0].Op != d.Op || (!silent(d.Op) && (q[0].Offset != d.Offset && !(d.Op == OpRetain && d.Offset <= q[0].Offset) || q[0].Tag != d.Tag)):
		// (A retention completes with the log's start: at most the
		// offset asked for.)
		h.fatalf("done: the oldest outstanding operation of q=%d is not %s o=%d tag=%d", d.Group, d.Op, d.Offset, d.Tag)
	}
	h.ops[d.Group], h.failed[d.Group] = q[1:], d.Err != ""
	if d.Op == OpVerify {
		d.Offset += c.Uint("n", 0) // the end verified: from o, n records
	}
}

// step passes one input to the node and renders the input and its
// effects.
func (h *harness) step(in *Input) []string {
	lines := []string{"> " + string(in.AppendText(nil, MsgTexts))}
	effects := h.node.Step(in)
	for i := range effects {
		lines = append(lines, string(effects[i].AppendText(nil, MsgTexts)))
		if g := effects[i].Group; effects[i].Kind == EfStorage {
			h.ops[g] = append(h.ops[g], effects[i])
		}
	}
	if r := h.node.Refused(); r != h.refused {
		h.refused = r
		lines = append(lines, fmt.Sprintf("refused=%d", r))
	}
	return lines
}
