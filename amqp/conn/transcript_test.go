package conn

// Transcript tests: each file under testdata/ drives one Conn, each command
// followed by the effects its inputs produced, one line each in their
// stable text forms. internal/transcript reads the files (its doc.go gives
// the format and the words of a command); `go test ./amqp/conn -run
// TestTranscripts -rewrite` (or -update) writes what the machine does now
// into every expected block; review the diff before committing.
// After every Step the test checks CheckInvariants and amqp/replycheck's
// view of the two byte streams (no reply that answers nothing or answers
// out of order); at the end of a machine's transcript the harness answers
// every broker operation and publish still open, and then every method
// that expects a reply must have had it, or a close.
//
// Commands (t= is absolute, in ms; it defaults to the previous instant):
//
//	new [loopback] [users=guest:guest:loopback,alice:pw] [heartbeat=S] [framemax=B]
//	    [channelmax=N] [msgmax=B] [inflight=N] [queued=N] [prefetchmax=N]
//	    [consumersmax=N] [getmax=N] [inputmax=B]     a machine, accepted at t=0
//	header [text]                        the protocol header (default AMQP 0-9-1)
//	handshake [mech=PLAIN|AMQPLAIN] [user=guest] [pass=guest] [heartbeat=S] [framemax=B] [channelmax=N] [vhost=/]
//	send [t=] ch=N class.method [Field=value ...]   one method frame
//	    values: strings, true/false, numbers; tables as name:type:value;...
//	    with type S (string), I (int32), l (int64), t (bool)
//	rawmethod ch=N class=C method=M [hex=..]        a method frame of any ids
//	header-frame ch=N size=N [mode=2] [user=U]      a content header frame (user: its user-id property)
//	body ch=N text                                  a body frame
//	frame type=T ch=N [hex=..] [size=N]             any frame (size overrides the length field)
//	publish ch=N [exchange=x] [rk=k] [mandatory] body=text   method, header and body in one chunk
//	raw hex                                         any bytes
//	heartbeats n=N                                  N heartbeat frames in one chunk
//	time t=N                                        InTime
//	published [t=] id=N:outcome[:code[:text]] ...   InPublished (outcome confirmed, unroutable, failed, refused, unknown)
//	result [t=] op=N [code=C] [text=..] [messages=N] [consumers=N] [handle=H body=.. [redelivered]]
//	deliver [t=] sub=N queue=q handle=H [redelivered] [rk=k] body=text
//	cancelled sub=N
//	broker-lost [reason]

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/replycheck"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/internal/transcript"
)

// transcriptBoundNs bounds nothing the transcripts check: they leave
// operations open on purpose, and answerAll checks the end instead.
const transcriptBoundNs = 1 << 62

// -update is -rewrite under the name golden-file tests often give it.
func init() { flag.Var(flag.Lookup("rewrite").Value, "update", "the same as -rewrite") }

func TestTranscripts(t *testing.T) {
	transcript.RunDir(t, "testdata/*.txt", func(t *testing.T) transcript.Runner {
		h := &harness{t: t}
		return transcript.Runner{Step: h.run, End: h.end}
	})
}

// harness drives one Conn for a transcript.
type harness struct {
	t     *testing.T
	cmd   *transcript.Cmd // the command being run, or the end of the file
	c     *Conn
	nowNs int64
	rc    *replycheck.Checker // the two byte streams of c
}

// end answers what the last machine left open, as a new machine does for
// the one before it.
func (h *harness) end(end *transcript.Cmd) {
	h.cmd = end
	h.answerAll()
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.cmd.Fatalf(format, args...)
}

// step feeds one input and returns its effects' texts.
func (h *harness) step(in Input) []string {
	h.t.Helper()
	var got []string
	if b, ok := in.(InBytes); ok {
		h.rc.ClientBytes(b.NowNs, b.Bytes)
	}
	for _, e := range h.c.Step(in) {
		got = append(got, e.String())
		switch x := e.(type) {
		case EfWrite:
			h.rc.ServerBytes(h.nowNs, x.Bytes)
		case EfClose:
			h.rc.SocketClosed(h.nowNs)
		}
	}
	if err := h.c.CheckInvariants(); err != nil {
		h.fatalf("invariant broken after %s: %v", in, err)
	}
	if err := h.rc.Check(h.nowNs); err != nil {
		h.fatalf("after %s: %v", in, err)
	}
	return got
}

// answerAll answers, as a broker would, every operation and publish the
// machine has open, until none is left, and then requires every method
// that expects a reply to have had one (or a close): once the broker has
// answered everything, nothing the client asked may still wait.
func (h *harness) answerAll() {
	h.t.Helper()
	if h.c == nil {
		return
	}
	for round := 0; h.c.state == stOpened && (len(h.c.ops) > 0 || len(h.c.pubs) > 0); round++ {
		if round > 10_000 {
			h.fatalf("operations still open after 10,000 rounds of answers")
		}
		ops := slices.Sorted(maps.Keys(h.c.ops))
		pubs := slices.Sorted(maps.Keys(h.c.pubs))
		for _, op := range ops {
			if _, open := h.c.ops[op]; open && !h.c.Closed() {
				h.step(InResult{NowNs: h.nowNs, Op: op})
			}
		}
		var results []PublishResult
		for _, id := range pubs {
			if _, open := h.c.pubs[id]; open {
				results = append(results, PublishResult{ID: id, Outcome: Confirmed})
			}
		}
		if len(results) > 0 && !h.c.Closed() {
			h.step(InPublished{NowNs: h.nowNs, Results: results})
		}
	}
	if left := h.rc.Outstanding(); len(left) > 0 {
		h.fatalf("with every broker operation answered, the client still waits for: %s", strings.Join(left, "; "))
	}
}

func (h *harness) bytes(b []byte) []string { return h.step(InBytes{NowNs: h.nowNs, Bytes: b}) }

func (h *harness) run(cmd *transcript.Cmd) []string {
	h.cmd = cmd
	if cmd.Has("t") {
		h.nowNs = cmd.Int("t", 0) * 1_000_000
	}
	ch := uint16(cmd.Int("ch", 0))
	words := rawWords(cmd)
	switch cmd.Name {
	case "new":
		cfg := Config{
			FrameMaxBytes: uint32(cmd.Int("framemax", 0)), ChannelMax: uint16(cmd.Int("channelmax", 0)),
			MessageBytesMax: uint64(cmd.Int("msgmax", 0)), PublishesInFlightMax: int(cmd.Int("inflight", 0)),
			QueuedRequestsMax: int(cmd.Int("queued", 0)), PrefetchMax: uint16(cmd.Int("prefetchmax", 0)),
			ConsumersPerChannelMax: int(cmd.Int("consumersmax", 0)), GetUnackedPerChannelMax: int(cmd.Int("getmax", 0)),
			InputBytesMax: int(cmd.Int("inputmax", 0)),
		}
		if cmd.Has("heartbeat") {
			n := cmd.Int("heartbeat", 0)
			cfg.HeartbeatS, cfg.HeartbeatOff = uint16(n), n == 0
		}
		for _, u := range strings.Split(cmd.Str("users", "guest:guest:loopback"), ",") {
			p := strings.Split(u, ":")
			cfg.Users = append(cfg.Users, User{Name: p[0], Password: p[1], LoopbackOnly: len(p) > 2 && p[2] == "loopback"})
		}
		h.answerAll()
		c, err := New(cfg, Peer{Loopback: cmd.Has("loopback")})
		if err != nil {
			h.fatalf("new: %v", err)
		}
		h.c, h.nowNs = c, 0
		h.rc = replycheck.New(transcriptBoundNs)
		return h.step(InAccept{NowNs: 0})
	case "header":
		b := wire.ProtocolHeader[:]
		if len(words) > 0 {
			b = []byte(strings.Join(words, " "))
		}
		return h.bytes(b)
	case "handshake":
		get := cmd.Str
		var got []string
		got = append(got, h.bytes(wire.ProtocolHeader[:])...)
		mech, resp := get("mech", "PLAIN"), "\x00"+get("user", "guest")+"\x00"+get("pass", "guest")
		if mech == "AMQPLAIN" {
			b, _ := wire.AppendTable(nil, wire.Table{{Name: "LOGIN", Value: get("user", "guest")}, {Name: "PASSWORD", Value: get("pass", "guest")}})
			resp = string(b[4:]) // AMQPLAIN sends the table without its length
		}
		got = append(got, h.bytes(methodFrame(0, &wire.ConnectionStartOk{
			ClientProperties: wire.Table{{Name: "capabilities", Value: wire.Table{{Name: "consumer_cancel_notify", Value: true}}}},
			Mechanism:        mech, Response: resp, Locale: "en_US"}))...)
		if h.c.Closed() {
			return got
		}
		got = append(got, h.bytes(methodFrame(0, &wire.ConnectionTuneOk{
			ChannelMax: uint16(cmd.Int("channelmax", 2047)), FrameMax: uint32(cmd.Int("framemax", 131072)),
			Heartbeat: uint16(cmd.Int("heartbeat", 60))}))...)
		if h.c.Closed() {
			return got
		}
		got = append(got, h.bytes(methodFrame(0, &wire.ConnectionOpen{VirtualHost: get("vhost", "/")}))...)
		return got
	case "send":
		m := h.buildMethod(cmd.Args)
		return h.bytes(methodFrame(ch, m))
	case "rawmethod":
		p := binary.BigEndian.AppendUint16(nil, uint16(cmd.Int("class", 0)))
		p = binary.BigEndian.AppendUint16(p, uint16(cmd.Int("method", 0)))
		p = append(p, h.hex(cmd.Str("hex", ""))...)
		return h.bytes(frame(wire.FrameMethod, ch, p, -1))
	case "header-frame":
		hd := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(cmd.Int("size", 0))}
		if mode := cmd.Int("mode", 0); mode != 0 {
			hd.Properties.Flags |= wire.FlagDeliveryMode
			hd.Properties.DeliveryMode = uint8(mode)
		}
		if cmd.Has("user") {
			hd.Properties.Flags |= wire.FlagUserID
			hd.Properties.UserID = cmd.Str("user", "")
		}
		p, err := wire.AppendContentHeader(nil, &hd)
		if err != nil {
			h.fatalf("%v", err)
		}
		return h.bytes(frame(wire.FrameHeader, ch, p, -1))
	case "body":
		return h.bytes(frame(wire.FrameBody, ch, []byte(text(words)), -1))
	case "frame":
		return h.bytes(frame(uint8(cmd.Int("type", 0)), ch, h.hex(cmd.Str("hex", "")), int(cmd.Int("size", -1))))
	case "publish":
		body := []byte(cmd.Str("body", ""))
		b := methodFrame(ch, &wire.BasicPublish{Exchange: cmd.Str("exchange", ""), RoutingKey: cmd.Str("rk", ""), Mandatory: cmd.Has("mandatory")})
		hd := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(body))}
		p, _ := wire.AppendContentHeader(nil, &hd)
		b = append(b, frame(wire.FrameHeader, ch, p, -1)...)
		if len(body) > 0 {
			b = append(b, frame(wire.FrameBody, ch, body, -1)...)
		}
		return h.bytes(b)
	case "heartbeats":
		var b []byte
		for range cmd.Int("n", 1) {
			b = append(b, frame(wire.FrameHeartbeat, 0, nil, -1)...)
		}
		return h.bytes(b)
	case "raw":
		return h.bytes(h.hex(strings.Join(words, "")))
	case "time":
		return h.step(InTime{NowNs: h.nowNs})
	case "published":
		in := InPublished{NowNs: h.nowNs}
		for _, w := range words {
			if strings.HasPrefix(w, "t=") {
				continue
			}
			p := strings.SplitN(strings.TrimPrefix(w, "id="), ":", 4)
			id, _ := strconv.ParseUint(p[0], 10, 64)
			r := PublishResult{ID: PublishID(id), Outcome: outcomeByName(p[1])}
			if len(p) > 2 {
				code, _ := strconv.Atoi(p[2])
				r.Code = uint16(code)
			}
			if len(p) > 3 {
				r.Text = p[3]
			}
			if r.Outcome == Unroutable {
				r.Returned = &Content{Body: []byte("returned")}
			}
			in.Results = append(in.Results, r)
		}
		return h.step(in)
	case "result":
		in := InResult{NowNs: h.nowNs, Op: OpID(cmd.Int("op", 0)), Code: uint16(cmd.Int("code", 0)), Text: cmd.Str("text", ""),
			MessageCount: uint32(cmd.Int("messages", 0)), ConsumerCount: uint32(cmd.Int("consumers", 0)), Queue: cmd.Str("queue", "")}
		if cmd.Has("handle") {
			in.Message = &Message{Handle: Handle(cmd.Int("handle", 0)), Redelivered: cmd.Has("redelivered"),
				RoutingKey: cmd.Str("rk", ""), Content: Content{Body: []byte(cmd.Str("body", ""))}}
		}
		return h.step(in)
	case "deliver":
		return h.step(InDelivery{NowNs: h.nowNs, Sub: SubID(cmd.Int("sub", 0)), Queue: cmd.Str("queue", ""),
			Message: Message{Handle: Handle(cmd.Int("handle", 0)), Redelivered: cmd.Has("redelivered"),
				RoutingKey: cmd.Str("rk", ""), Content: Content{Body: []byte(cmd.Str("body", ""))}}})
	case "cancelled":
		return h.step(InCancelled{NowNs: h.nowNs, Sub: SubID(cmd.Int("sub", 0))})
	case "broker-lost":
		return h.step(InBrokerLost{NowNs: h.nowNs, Reason: strings.Join(words, " ")})
	}
	h.fatalf("unknown command %q", cmd.Name)
	return nil
}

// rawWords is the words after the command's name as written, for the
// commands that take text.
func rawWords(c *transcript.Cmd) []string {
	var out []string
	for _, a := range c.Args {
		out = append(out, a.Raw)
	}
	return out
}

// text is the words but ch= and t=, joined: a body's text.
func text(words []string) string {
	var keep []string
	for _, w := range words {
		if !strings.HasPrefix(w, "ch=") && !strings.HasPrefix(w, "t=") {
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, " ")
}

func outcomeByName(s string) Outcome {
	for o := Confirmed; o <= Unknown; o++ {
		if o.String() == s {
			return o
		}
	}
	panic("unknown outcome " + s)
}

func (h *harness) hex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		h.fatalf("hex %q: %v", s, err)
	}
	return b
}

// frame encodes a frame by hand; size >= 0 overrides the length field.
func frame(typ uint8, ch uint16, payload []byte, size int) []byte {
	b := []byte{typ, byte(ch >> 8), byte(ch)}
	n := uint32(len(payload))
	if size >= 0 {
		n = uint32(size)
	}
	b = binary.BigEndian.AppendUint32(b, n)
	b = append(b, payload...)
	return append(b, wire.FrameEnd)
}

func methodFrame(ch uint16, m wire.Method) []byte {
	p, err := wire.AppendMethod(nil, m)
	if err != nil {
		panic(err)
	}
	return frame(wire.FrameMethod, ch, p, -1)
}

// clientMethods are the methods a transcript may send by name.
var clientMethods = map[string]func() wire.Method{
	"connection.start-ok":      func() wire.Method { return &wire.ConnectionStartOk{} },
	"connection.tune-ok":       func() wire.Method { return &wire.ConnectionTuneOk{} },
	"connection.open":          func() wire.Method { return &wire.ConnectionOpen{} },
	"connection.close":         func() wire.Method { return &wire.ConnectionClose{} },
	"connection.update-secret": func() wire.Method { return &wire.ConnectionUpdateSecret{} },
	"connection.close-ok":      func() wire.Method { return &wire.ConnectionCloseOk{} },
	"channel.open":             func() wire.Method { return &wire.ChannelOpen{} },
	"channel.close":            func() wire.Method { return &wire.ChannelClose{} },
	"channel.close-ok":         func() wire.Method { return &wire.ChannelCloseOk{} },
	"channel.flow":             func() wire.Method { return &wire.ChannelFlow{} },
	"exchange.declare":         func() wire.Method { return &wire.ExchangeDeclare{} },
	"exchange.delete":          func() wire.Method { return &wire.ExchangeDelete{} },
	"exchange.bind":            func() wire.Method { return &wire.ExchangeBind{} },
	"tx.select":                func() wire.Method { return &wire.TxSelect{} },
	"tx.commit":                func() wire.Method { return &wire.TxCommit{} },
	"tx.rollback":              func() wire.Method { return &wire.TxRollback{} },
	"exchange.unbind":          func() wire.Method { return &wire.ExchangeUnbind{} },
	"queue.declare":            func() wire.Method { return &wire.QueueDeclare{} },
	"queue.bind":               func() wire.Method { return &wire.QueueBind{} },
	"queue.unbind":             func() wire.Method { return &wire.QueueUnbind{} },
	"queue.purge":              func() wire.Method { return &wire.QueuePurge{} },
	"queue.delete":             func() wire.Method { return &wire.QueueDelete{} },
	"basic.qos":                func() wire.Method { return &wire.BasicQos{} },
	"basic.consume":            func() wire.Method { return &wire.BasicConsume{} },
	"basic.cancel":             func() wire.Method { return &wire.BasicCancel{} },
	"basic.publish":            func() wire.Method { return &wire.BasicPublish{} },
	"basic.get":                func() wire.Method { return &wire.BasicGet{} },
	"basic.ack":                func() wire.Method { return &wire.BasicAck{} },
	"basic.reject":             func() wire.Method { return &wire.BasicReject{} },
	"basic.nack":               func() wire.Method { return &wire.BasicNack{} },
	"basic.recover":            func() wire.Method { return &wire.BasicRecover{} },
	"basic.deliver":            func() wire.Method { return &wire.BasicDeliver{} },
	"confirm.select":           func() wire.Method { return &wire.ConfirmSelect{} },
}

// buildMethod makes a method from "class.method Field=value ..." by
// reflection over the codec's structs.
func (h *harness) buildMethod(args []transcript.Arg) wire.Method {
	var name string
	var fields []transcript.Arg
	for _, a := range args {
		switch {
		case !a.Bare && (a.Key == "ch" || a.Key == "t"):
		case name == "":
			name = a.Key
		default:
			fields = append(fields, a)
		}
	}
	mk, ok := clientMethods[name]
	if !ok {
		h.fatalf("unknown method %q", name)
	}
	m := mk()
	v := reflect.ValueOf(m).Elem()
	for _, f := range fields {
		k, val := f.Key, f.Val
		fv := v.FieldByName(k)
		if !fv.IsValid() {
			h.fatalf("%s has no field %s", name, k)
		}
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(strings.NewReplacer("\\0", "\x00", "\\t", "\t").Replace(val))
		case reflect.Bool:
			fv.SetBool(val == "true")
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n, err := strconv.ParseUint(val, 0, 64)
			if err != nil {
				h.fatalf("%s=%s: %v", k, val, err)
			}
			fv.SetUint(n)
		case reflect.Slice: // wire.Table
			fv.Set(reflect.ValueOf(h.table(val)))
		default:
			h.fatalf("field %s of kind %s", k, fv.Kind())
		}
	}
	return m
}

// table parses name:type:value;... (types S, I, l, t).
func (h *harness) table(s string) wire.Table {
	var t wire.Table
	for _, item := range strings.Split(s, ";") {
		if item == "" {
			continue
		}
		p := strings.SplitN(item, ":", 3)
		if len(p) != 3 {
			h.fatalf("table item %q", item)
		}
		var v wire.Value
		switch p[1] {
		case "S":
			v = p[2]
		case "I":
			n, _ := strconv.ParseInt(p[2], 10, 32)
			v = int32(n)
		case "l":
			n, _ := strconv.ParseInt(p[2], 10, 64)
			v = n
		case "t":
			v = p[2] == "true"
		default:
			h.fatalf("table type %q", p[1])
		}
		t = append(t, wire.Field{Name: p[0], Value: v})
	}
	return t
}
