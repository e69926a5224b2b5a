package conn

// Transcript tests: each file under testdata/ drives one Conn, each command
// followed by the effects its inputs produced, in their stable text forms:
//
//	# comments and blank lines are kept as they are
//	<command>
//	----
//	<one line per effect>
//
// `go test ./amqp/conn -run TestTranscripts -update` writes what the machine
// does now into every expected block; review the diff before committing.
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
//	header-frame ch=N size=N [mode=2]               a content header frame
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
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/replycheck"
	"github.com/sluicemq/sluice/amqp/wire"
)

// transcriptBoundNs bounds nothing the transcripts check: they leave
// operations open on purpose, and answerAll checks the end instead.
const transcriptBoundNs = 1 << 62

var update = flag.Bool("update", false, "rewrite the expected blocks of amqp/conn/testdata")

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runTranscript(t, f) })
	}
}

func runTranscript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []string
	h := &harness{t: t}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			out = append(out, line)
			continue
		}
		cmd := line
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command without ----", path, i+1)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		i--
		h.where = fmt.Sprintf("%s:%d", path, i)
		got := h.run(cmd)
		if !*update && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", h.where, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		out = append(out, cmd, "----")
		out = append(out, got...)
	}
	h.where = path + ": end"
	h.answerAll()
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// harness drives one Conn for a transcript.
type harness struct {
	t     *testing.T
	where string
	c     *Conn
	nowNs int64
	rc    *replycheck.Checker // the two byte streams of c
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s: "+format, append([]any{h.where}, args...)...)
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

// args splits "k=v" words (values may not hold spaces except for the last
// word of some commands) and bare flags.
type args struct {
	kv    map[string]string
	flags map[string]bool
	rest  []string // words in order, for methods' fields
}

func parseArgs(words []string) args {
	a := args{kv: map[string]string{}, flags: map[string]bool{}}
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok {
			a.kv[k] = v
		} else {
			a.flags[w] = true
		}
		a.rest = append(a.rest, w)
	}
	return a
}

func (h *harness) num(a args, k string, def int64) int64 {
	s, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		h.fatalf("%s=%s: %v", k, s, err)
	}
	return n
}

func (h *harness) run(cmd string) []string {
	words := strings.Fields(cmd)
	a := parseArgs(words[1:])
	if _, ok := a.kv["t"]; ok {
		h.nowNs = h.num(a, "t", 0) * 1_000_000
	}
	ch := uint16(h.num(a, "ch", 0))
	switch words[0] {
	case "new":
		cfg := Config{
			FrameMaxBytes: uint32(h.num(a, "framemax", 0)), ChannelMax: uint16(h.num(a, "channelmax", 0)),
			MessageBytesMax: uint64(h.num(a, "msgmax", 0)), PublishesInFlightMax: int(h.num(a, "inflight", 0)),
			QueuedRequestsMax: int(h.num(a, "queued", 0)), PrefetchMax: uint16(h.num(a, "prefetchmax", 0)),
			ConsumersPerChannelMax: int(h.num(a, "consumersmax", 0)), GetUnackedPerChannelMax: int(h.num(a, "getmax", 0)),
			InputBytesMax: int(h.num(a, "inputmax", 0)),
		}
		if s, ok := a.kv["heartbeat"]; ok {
			n, _ := strconv.Atoi(s)
			cfg.HeartbeatS, cfg.HeartbeatOff = uint16(n), n == 0
		}
		users := "guest:guest:loopback"
		if s, ok := a.kv["users"]; ok {
			users = s
		}
		for _, u := range strings.Split(users, ",") {
			p := strings.Split(u, ":")
			cfg.Users = append(cfg.Users, User{Name: p[0], Password: p[1], LoopbackOnly: len(p) > 2 && p[2] == "loopback"})
		}
		h.answerAll()
		c, err := New(cfg, Peer{Loopback: a.flags["loopback"]})
		if err != nil {
			h.fatalf("new: %v", err)
		}
		h.c, h.nowNs = c, 0
		h.rc = replycheck.New(transcriptBoundNs)
		return h.step(InAccept{NowNs: 0})
	case "header":
		b := wire.ProtocolHeader[:]
		if len(words) > 1 {
			b = []byte(strings.Join(words[1:], " "))
		}
		return h.bytes(b)
	case "handshake":
		get := func(k, def string) string {
			if v, ok := a.kv[k]; ok {
				return v
			}
			return def
		}
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
			ChannelMax: uint16(h.num(a, "channelmax", 2047)), FrameMax: uint32(h.num(a, "framemax", 131072)),
			Heartbeat: uint16(h.num(a, "heartbeat", 60))}))...)
		if h.c.Closed() {
			return got
		}
		got = append(got, h.bytes(methodFrame(0, &wire.ConnectionOpen{VirtualHost: get("vhost", "/")}))...)
		return got
	case "send":
		m := h.buildMethod(words[1:])
		return h.bytes(methodFrame(ch, m))
	case "rawmethod":
		p := binary.BigEndian.AppendUint16(nil, uint16(h.num(a, "class", 0)))
		p = binary.BigEndian.AppendUint16(p, uint16(h.num(a, "method", 0)))
		p = append(p, h.hex(a.kv["hex"])...)
		return h.bytes(frame(wire.FrameMethod, ch, p, -1))
	case "header-frame":
		hd := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(h.num(a, "size", 0))}
		if mode := h.num(a, "mode", 0); mode != 0 {
			hd.Properties.Flags |= wire.FlagDeliveryMode
			hd.Properties.DeliveryMode = uint8(mode)
		}
		p, err := wire.AppendContentHeader(nil, &hd)
		if err != nil {
			h.fatalf("%v", err)
		}
		return h.bytes(frame(wire.FrameHeader, ch, p, -1))
	case "body":
		return h.bytes(frame(wire.FrameBody, ch, []byte(lastWord(words, 2)), -1))
	case "frame":
		return h.bytes(frame(uint8(h.num(a, "type", 0)), ch, h.hex(a.kv["hex"]), int(h.num(a, "size", -1))))
	case "publish":
		body := []byte(a.kv["body"])
		b := methodFrame(ch, &wire.BasicPublish{Exchange: a.kv["exchange"], RoutingKey: a.kv["rk"], Mandatory: a.flags["mandatory"]})
		hd := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(body))}
		p, _ := wire.AppendContentHeader(nil, &hd)
		b = append(b, frame(wire.FrameHeader, ch, p, -1)...)
		if len(body) > 0 {
			b = append(b, frame(wire.FrameBody, ch, body, -1)...)
		}
		return h.bytes(b)
	case "heartbeats":
		var b []byte
		for range h.num(a, "n", 1) {
			b = append(b, frame(wire.FrameHeartbeat, 0, nil, -1)...)
		}
		return h.bytes(b)
	case "raw":
		return h.bytes(h.hex(strings.Join(words[1:], "")))
	case "time":
		return h.step(InTime{NowNs: h.nowNs})
	case "published":
		in := InPublished{NowNs: h.nowNs}
		for _, w := range words[1:] {
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
		in := InResult{NowNs: h.nowNs, Op: OpID(h.num(a, "op", 0)), Code: uint16(h.num(a, "code", 0)), Text: a.kv["text"],
			MessageCount: uint32(h.num(a, "messages", 0)), ConsumerCount: uint32(h.num(a, "consumers", 0))}
		if _, ok := a.kv["handle"]; ok {
			in.Message = &Message{Handle: Handle(h.num(a, "handle", 0)), Redelivered: a.flags["redelivered"],
				RoutingKey: a.kv["rk"], Content: Content{Body: []byte(a.kv["body"])}}
		}
		return h.step(in)
	case "deliver":
		return h.step(InDelivery{NowNs: h.nowNs, Sub: SubID(h.num(a, "sub", 0)), Queue: a.kv["queue"],
			Message: Message{Handle: Handle(h.num(a, "handle", 0)), Redelivered: a.flags["redelivered"],
				RoutingKey: a.kv["rk"], Content: Content{Body: []byte(a.kv["body"])}}})
	case "cancelled":
		return h.step(InCancelled{NowNs: h.nowNs, Sub: SubID(h.num(a, "sub", 0))})
	case "broker-lost":
		return h.step(InBrokerLost{NowNs: h.nowNs, Reason: strings.Join(words[1:], " ")})
	}
	h.fatalf("unknown command %q", words[0])
	return nil
}

func lastWord(words []string, from int) string {
	var keep []string
	for _, w := range words[1:] {
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
	"connection.start-ok": func() wire.Method { return &wire.ConnectionStartOk{} },
	"connection.tune-ok":  func() wire.Method { return &wire.ConnectionTuneOk{} },
	"connection.open":     func() wire.Method { return &wire.ConnectionOpen{} },
	"connection.close":    func() wire.Method { return &wire.ConnectionClose{} },
	"connection.close-ok": func() wire.Method { return &wire.ConnectionCloseOk{} },
	"channel.open":        func() wire.Method { return &wire.ChannelOpen{} },
	"channel.close":       func() wire.Method { return &wire.ChannelClose{} },
	"channel.close-ok":    func() wire.Method { return &wire.ChannelCloseOk{} },
	"channel.flow":        func() wire.Method { return &wire.ChannelFlow{} },
	"exchange.declare":    func() wire.Method { return &wire.ExchangeDeclare{} },
	"exchange.delete":     func() wire.Method { return &wire.ExchangeDelete{} },
	"queue.declare":       func() wire.Method { return &wire.QueueDeclare{} },
	"queue.bind":          func() wire.Method { return &wire.QueueBind{} },
	"queue.unbind":        func() wire.Method { return &wire.QueueUnbind{} },
	"queue.purge":         func() wire.Method { return &wire.QueuePurge{} },
	"queue.delete":        func() wire.Method { return &wire.QueueDelete{} },
	"basic.qos":           func() wire.Method { return &wire.BasicQos{} },
	"basic.consume":       func() wire.Method { return &wire.BasicConsume{} },
	"basic.cancel":        func() wire.Method { return &wire.BasicCancel{} },
	"basic.publish":       func() wire.Method { return &wire.BasicPublish{} },
	"basic.get":           func() wire.Method { return &wire.BasicGet{} },
	"basic.ack":           func() wire.Method { return &wire.BasicAck{} },
	"basic.reject":        func() wire.Method { return &wire.BasicReject{} },
	"basic.nack":          func() wire.Method { return &wire.BasicNack{} },
	"basic.recover":       func() wire.Method { return &wire.BasicRecover{} },
	"basic.deliver":       func() wire.Method { return &wire.BasicDeliver{} },
	"confirm.select":      func() wire.Method { return &wire.ConfirmSelect{} },
}

// buildMethod makes a method from "class.method Field=value ..." by
// reflection over the codec's structs.
func (h *harness) buildMethod(words []string) wire.Method {
	var name string
	var fields []string
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "ch=") || strings.HasPrefix(w, "t="):
		case name == "":
			name = w
		default:
			fields = append(fields, w)
		}
	}
	mk, ok := clientMethods[name]
	if !ok {
		h.fatalf("unknown method %q", name)
	}
	m := mk()
	v := reflect.ValueOf(m).Elem()
	for _, f := range fields {
		k, val, _ := strings.Cut(f, "=")
		fv := v.FieldByName(k)
		if !fv.IsValid() {
			h.fatalf("%s has no field %s", name, k)
		}
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(strings.ReplaceAll(val, "\\0", "\x00"))
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
