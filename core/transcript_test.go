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
//	  plan-request source=N last-epoch= [start=] recs=[...]
//	  | activate-request owner=N members=[1,3]
//	    (a recovery worker's request to the leader, for q's pending
//	    transition: the plan of source N's history recs=, or the
//	    activation of the members, as the metadata registered them)
//	  the recovery group's messages (core/recovery's Append* functions),
//	  for q's pending transition as the node applied it unless
//	  incarnation=, e= or transition=<hex> (zero-padded) say otherwise;
//	  an identity is that of recs=[...] retained from start= (default 0)
//	  to end= (default: the records' end), or id=<hex>:
//	  seal-request | seal p= storage= last-epoch= [start= end=] recs=[...]|id= [damaged|lost]
//	  | seal-refused|read-refused|install-refused code=busy|refused|... reason="..."
//	  | read-request o= [count=] | read-page o= recs=[...]
//	  | install-request source=N [start= end=] recs=[...]|id= epochs=[e@o,...]
//	  | installed p= storage= [start= end=] recs=[...]|id=
//	  (a seal, page or receipt speaks for its sender: node from)
//	peer-lost from=2 process=3      (eager failover's signal)
//	client c=9 publish q=1 id=1 body=hello|size=N | subscribe q=1 id=2 prefetch=8 [exclusive] | ack q=1 id=3 o=5
//	  | requeue q=1 id=3 o=5 | count q=1 id=4
//	  | meta id=4 cmd="set liveness.expiry_ms 5000"|"declare NAME REPLICAS POLICY MIN-INSYNC"|"drain NODE true"
//	  | topology id=5 name=NAME
//	gone c=9              (the client's connection closed)
//	done <op> q=1 [log=stage] [o=N] [tag=N recs=[...]] [n=N] [err="..."]
//	    (verify: o is where it started, n how many records it verified)
//	  a storage completion; op is append, sync, read, truncate, discard,
//	  repaired, persist (with seq=N: the metadata group's batch), open
//	  (a placed queue's log, new and empty unless end= says; with
//	  log=stage, an installation's stage of generation o=), seal (a seal
//	  receipt stored) or publish (a stage made the queue's log). The
//	  harness holds it to the driver contract (core/doc.go): it must
//	  complete the oldest outstanding operation of its log (the group's
//	  log 0, or its stage with log=stage; earlier appends, truncations,
//	  discards, repaired marks, reseeds and bindings complete silently),
//	  with the operation's tag, and the sync's or read's offset; nothing
//	  queued behind a failure ever completes. The recovery roles' tags
//	  have names: tag=seal, serve (a sealed read served), install,
//	  bind, replace (the sync behind a replaced group) and quiet.
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
	"github.com/sluicemq/sluice/core/recovery"
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
	ops     map[logKey][]Effect // outstanding storage operations, oldest first
	failed  map[logKey]bool     // a completion failed: nothing behind it runs
}

// logKey names one log: a group's log 0, or its stage (seam.LogStage),
// each of which runs its operations in order of its own (core/doc.go).
type logKey struct {
	group GroupID
	log   LogID
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
		kinds := map[string]RequestKind{"publish": ReqPublish, "subscribe": ReqSubscribe, "ack": ReqAck, "requeue": ReqRequeue, "count": ReqCount, "meta": ReqMeta, "topology": ReqTopology}
		in.Kind, in.Req = InClient, Request{Kind: kinds[word(c, 1)], ID: c.Uint("id", 0),
			Queue: QueueID(c.Uint("q", 0)), Body: []byte(c.Str("body", "")), Offset: c.Uint("o", 0), Prefetch: int(c.Uint("prefetch", 0)), Exclusive: c.Has("exclusive")}
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
	h.cfg, h.ops, h.failed, h.refused = Config{Process: 1}, map[logKey][]Effect{}, map[logKey]bool{}, 0
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
	case len(f) == 3 && f[0] == "drain" && (f[2] == "true" || f[2] == "false"):
		c = metadata.Command{Kind: metadata.Drain, Node: NodeID(h.uint(f[1])), Draining: f[2] == "true"}
	default:
		h.fatalf("cmd %q: want set KEY VALUE, declare NAME REPLICAS POLICY MIN-INSYNC or drain NODE true|false", s)
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
	case kind == "plan-request" || kind == "activate-request":
		in.Group = seam.GroupCtrlPeer
		in.Data = h.activateRequest(kind, QueueID(c.Uint("q", 1)), f)
		return
	case recoveryKinds[kind]:
		in.Group = seam.GroupRecovery
		in.Data = h.recoveryMsg(kind, QueueID(c.Uint("q", 1)), in.From, f)
		return
	case m.Kind == 0:
		h.fatalf("unknown message kind %q", kind)
	}
	m.Ok = f.Has("ok")
	in.Data = queue.AppendMsg(nil, &m)
}

// storageTags name the tags of the recovery roles' storage operations,
// which the node's text forms print as numbers.
var storageTags = map[string]uint64{"seal": sealTag, "serve": sealTag | sealServe, "install": sealTag | installTag,
	"bind": sealTag | bindTag, "replace": sealTag | replaceTag, "quiet": sealTag | quietTag}

// tag reads a completion's tag=: a number, or a name of storageTags.
func (h *harness) tag(c *transcript.Cmd) uint64 {
	if t, ok := storageTags[c.Str("tag", "")]; ok {
		return t
	}
	return c.Uint("tag", 0)
}

// done builds a storage completion and holds it to the driver contract.
func (h *harness) done(in *Input, c *transcript.Cmd) {
	d := &in.Done
	d.Group, d.Offset, d.Tag, d.Err = in.Group, c.Uint("o", 0), h.tag(c), c.Str("err", "")
	d.Records = h.records(c.Str("recs", ""), d.Offset)
	if v := c.Str("log", ""); v == "stage" {
		d.Log = LogStage
	} else if v != "" {
		h.fatalf("done: log=%s: want log=stage (or no log=: log 0)", v)
	}
	if d.Op = 0; d.Group == 0 && word(c, 0) == OpPersist.String() {
		d.Group, d.Tag = GroupCtrl, c.Uint("seq", 0)
	}
	for op := OpAppend; op <= OpBind; op++ {
		if word(c, 0) == op.String() {
			d.Op = op
		}
	}
	silent := func(op StorageOp) bool {
		return op == OpAppend || op == OpTruncate || op == OpDiscard || op == OpRepaired || op == OpReseed || op == OpBind
	}
	if d.Op == OpOpen && d.Err == "" {
		// A new, empty log unless end= says; a stage opens as the
		// generation asked (o=).
		d.State = &LogState{Group: d.Group, Log: d.Log, End: c.Uint("end", 0)}
		if d.Log == LogStage {
			d.State.Generation = d.Offset
		}
	}
	key := logKey{d.Group, d.Log}
	q := h.ops[key]
	for len(q) > 0 && q[0].Op != d.Op && silent(q[0].Op) {
		q = q[1:] // completed silently
	}
	switch {
	case d.Op == 0:
		h.fatalf("done: want append, sync, read, verify, truncate, discard, repaired, persist, open, seal, publish, retain or reseed")
	case h.failed[key]:
		h.fatalf("done: nothing behind a failed operation completes")
	case len(q) == 0 || q[0].Op != d.Op || q[0].Tag != d.Tag || (!silent(d.Op) && q[0].Offset != d.Offset && !(d.Op == OpRetain && d.Offset <= q[0].Offset)):
		// (A retention completes with the log's start: at most the
		// offset asked for. Every completion carries its operation's
		// tag: the node routes a recovery role's by it.)
		h.fatalf("done: the oldest outstanding operation of q=%d log=%d is not %s o=%d tag=%d", d.Group, d.Log, d.Op, d.Offset, d.Tag)
	}
	h.ops[key], h.failed[key] = q[1:], d.Err != ""
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
		if k := (logKey{effects[i].Group, effects[i].Log}); effects[i].Kind == EfStorage {
			h.ops[k] = append(h.ops[k], effects[i])
		}
	}
	if r := h.node.Refused(); r != h.refused {
		h.refused = r
		lines = append(lines, fmt.Sprintf("refused=%d", r))
	}
	return lines
}

// recoveryKinds are the recv kinds of the recovery group's messages.
var recoveryKinds = map[string]bool{"seal-request": true, "seal": true, "seal-refused": true, "read-refused": true,
	"install-refused": true, "read-request": true, "read-page": true, "install-request": true, "installed": true}

// recoveryMsg encodes a recovery message of queue q from peer from. What
// binds it to a transition (incarnation, epoch, digest) defaults to the
// queue's pending transition in the metadata the node applied, so that a
// transcript names only what the step is about; e=, incarnation= and
// transition= (hex, zero-padded to 32 bytes) override it.
func (h *harness) recoveryMsg(kind string, q QueueID, from NodeID, f *transcript.Cmd) []byte {
	var incarnation, epoch uint64
	var transition recovery.Digest
	if h.node.ctrl != nil {
		if mq, ok := placedQueue(h.node.ctrl.Metadata(), q); ok {
			incarnation, epoch, transition = mq.Incarnation, mq.Assignment.Pending.Epoch, recovery.Digest(mq.Assignment.Pending.Digest)
		}
	}
	incarnation, epoch = f.Uint("incarnation", incarnation), f.Uint("e", epoch)
	if f.Has("transition") {
		transition = h.digest(f.Str("transition", ""))
	}
	start := f.Uint("start", 0)
	// identity: id= (hex), else the content identity of recs= retained as
	// [start, end), end defaulting to the records' end
	identity := func() (recovery.Digest, uint64) {
		recs := h.records(f.Str("recs", ""), start)
		end := f.Uint("end", start+uint64(len(recs)))
		if f.Has("id") {
			return h.digest(f.Str("id", "")), end
		}
		id, err := recovery.IdentityOf(q, start, end, recs)
		if err != nil {
			h.fatalf("%s: %v", kind, err)
		}
		return id, end
	}
	switch kind {
	case "seal-request":
		return recovery.AppendSealRequest(nil, &recovery.SealRequest{Queue: q, Incarnation: incarnation, Epoch: epoch, Transition: transition})
	case "seal":
		id, end := identity()
		return recovery.AppendSeal(nil, &recovery.Seal{Queue: q, Incarnation: incarnation, Epoch: epoch, Transition: transition,
			Node: from, Process: f.Uint("p", 0), Storage: f.Uint("storage", 0), Start: start, End: end,
			LastEpoch: f.Uint("last-epoch", 0), Identity: id, Damaged: f.Has("damaged") || f.Has("lost"), Lost: f.Has("lost")})
	case "seal-refused", "read-refused", "install-refused":
		codes := map[string]recovery.Refusal{}
		for r := recovery.RefusedFor; r <= recovery.RefusedStorageReplaced; r++ {
			codes[r.String()] = r
		}
		code, ok := codes[f.Str("code", "refused")]
		if !ok {
			h.fatalf("%s: code=%q is no refusal", kind, f.Str("code", ""))
		}
		return recovery.AppendSealRefused(nil, &recovery.SealRefused{Queue: q, Transition: transition, Code: code,
			Reason: f.Str("reason", ""), Read: kind == "read-refused", Install: kind == "install-refused"})
	case "read-request":
		return recovery.AppendReadRequest(nil, &recovery.ReadRequest{Queue: q, Incarnation: incarnation, Epoch: epoch, Transition: transition,
			From: f.Uint("o", 0), Count: int(f.Uint("count", recovery.PageRecordsMax))})
	case "read-page":
		o := f.Uint("o", 0)
		return recovery.AppendReadPage(nil, &recovery.ReadPage{Queue: q, Transition: transition, Node: from, From: o,
			Records: h.records(f.Str("recs", ""), o)})
	case "install-request":
		id, end := identity()
		return recovery.AppendInstallRequest(nil, &recovery.InstallRequest{Queue: q, Incarnation: incarnation, Epoch: epoch, Transition: transition,
			Source: NodeID(f.Uint("source", 0)), Start: start, End: end, Identity: id, Epochs: h.epochs(f.Str("epochs", ""))})
	case "installed":
		id, end := identity()
		return recovery.AppendInstalled(nil, &recovery.Installed{Queue: q, Transition: transition, Node: from,
			Process: f.Uint("p", 0), Storage: f.Uint("storage", 0), End: end, Identity: id})
	}
	h.fatalf("unknown recovery message kind %q", kind)
	return nil
}

// digest reads a hex digest, zero-padded to its 32 bytes.
func (h *harness) digest(v string) (d recovery.Digest) {
	b, err := hex.DecodeString(v)
	if err != nil || len(b) > len(d) {
		h.fatalf("digest %q: want at most %d bytes of hex (%v)", v, len(d), err)
	}
	copy(d[:], b)
	return d
}

// activateRequest encodes a recovery worker's request to the leader to
// commit queue q's recovery plan (plan-request: the source node= and
// the history of recs=, as a seal names it) or its activation
// (activate-request: owner= and the installed members=, with the
// instances the metadata holds live), for the queue's pending
// transition as the node applied it.
func (h *harness) activateRequest(kind string, q QueueID, f *transcript.Cmd) []byte {
	md := h.node.ctrl.Metadata()
	mq, ok := placedQueue(md, q)
	if !ok {
		h.fatalf("%s: no queue %d in the metadata", kind, q)
	}
	c := metadata.Command{Queue: mq.Name, Incarnation: mq.Incarnation, Epoch: mq.Assignment.Epoch, Digest: mq.Assignment.Pending.Digest}
	member := func(v string) metadata.Member {
		b, ok := md.Broker(NodeID(h.uint(v)))
		if !ok {
			h.fatalf("%s: no broker n%s in the metadata", kind, v)
		}
		return metadata.Member{Node: b.Node, Process: b.Process, Storage: b.Storage}
	}
	switch kind {
	case "plan-request":
		src := member(f.Str("source", ""))
		start := f.Uint("start", 0)
		recs := h.records(f.Str("recs", ""), start)
		end := start + uint64(len(recs))
		id, err := recovery.IdentityOf(q, start, end, recs)
		if err != nil {
			h.fatalf("%s: %v", kind, err)
		}
		c.Kind = metadata.Plan
		c.Plan = metadata.RecoveryPlan{Source: src.Node, Storage: src.Storage, Start: start, End: end,
			LastEpoch: f.Uint("last-epoch", 0), Identity: metadata.Digest(id)}
	case "activate-request":
		c.Kind, c.Owner = metadata.Activate, NodeID(f.Uint("owner", 0))
		for _, v := range strings.Split(strings.Trim(f.Str("members", ""), "[]"), ",") {
			m := member(v)
			c.Members.M[c.Members.N] = m
			c.Members.N++
			c.InSync.ID[c.InSync.N] = m.Node
			c.InSync.N++
		}
	}
	return ctrl.AppendActivateRequest(nil, &c)
}
