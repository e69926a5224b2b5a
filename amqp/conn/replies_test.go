package conn

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/replycheck"
	"github.com/sluicemq/sluice/amqp/wire"
)

// TestRefusalAnsweredAtOnce is the server's side of a client that waited
// for good on a queue.declare with x-max-length (amqp091-go 1.16 with
// its connection recovery on): the bytes that client sent, in the chunks
// the daemon read them, and the machine's answers. The refusal leaves in
// the very step that reads the declaration, and the channel.open the
// client sends with its close-ok is answered too: nothing waits on the
// broker. (The client's hang was its own: its recovery reopened the
// channel between sending the declaration and taking the channels its
// answer comes on; see docs/amqp.md.)
func TestRefusalAnsweredAtOnce(t *testing.T) {
	c, rc, step := checkedMachine(t)
	declare := methodFrame(1, &wire.QueueDeclare{Queue: "test_recovery_exhaustion_q", Durable: true,
		Arguments: wire.Table{{Name: "x-max-length", Value: int32(10)}}})
	got := step(InBytes{NowNs: 2, Bytes: declare}, false)
	if !strings.Contains(got, "channel.close{ReplyCode:406") || !strings.Contains(got, `"x-max-length" is not supported`) {
		t.Fatalf("the declaration's step wrote %q", got)
	}
	reopen := append(methodFrame(1, &wire.ChannelCloseOk{}), methodFrame(1, &wire.ChannelOpen{})...)
	if got := step(InBytes{NowNs: 3, Bytes: reopen}, false); !strings.Contains(got, "channel.open-ok") {
		t.Fatalf("the reopen wrote %q", got)
	}
	if left := rc.Outstanding(); len(left) != 0 || c.Closed() {
		t.Fatalf("outstanding %v, closed %t", left, c.Closed())
	}
}

// TestLostRefusalCaught plants the fault the checker exists for: the
// driver loses the write that carries a refusal. The checker names the
// declaration that was never answered once the bound has passed.
func TestLostRefusalCaught(t *testing.T) {
	_, rc, step := checkedMachine(t)
	declare := methodFrame(1, &wire.QueueDeclare{Queue: "q", Durable: true, Arguments: wire.Table{{Name: "x-max-length", Value: int32(10)}}})
	step(InBytes{NowNs: 2, Bytes: declare}, true)
	if err := rc.Check(3 + 5e9); err == nil || !strings.Contains(err.Error(), "queue.declare on channel 1") {
		t.Fatalf("a lost refusal: check %v", err)
	}
}

// checkedMachine returns a logged-in machine with channel 1 open, its
// reply checker (bound 5 s), and a step that feeds both and returns the
// step's writes as text; lose drops the step's writes before the checker
// (and the client) sees them.
func checkedMachine(t *testing.T) (*Conn, *replycheck.Checker, func(in Input, lose bool) string) {
	t.Helper()
	c, err := New(Config{Users: []User{{Name: "guest", Password: "guest"}}}, Peer{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	rc := replycheck.New(5e9)
	step := func(in Input, lose bool) string {
		if b, ok := in.(InBytes); ok {
			if err := rc.ClientBytes(b.NowNs, b.Bytes); err != nil {
				t.Fatal(err)
			}
		}
		var text []string
		for _, e := range c.Step(in) {
			if w, ok := e.(EfWrite); ok && !lose {
				text = append(text, framesText(w.Bytes))
				if err := rc.ServerBytes(in.nowNs(), w.Bytes); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := c.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(text, " ")
	}
	step(InAccept{NowNs: 1}, false)
	for _, b := range [][]byte{wire.ProtocolHeader[:],
		methodFrame(0, &wire.ConnectionStartOk{Mechanism: "PLAIN", Response: "\x00guest\x00guest", Locale: "en_US"}),
		methodFrame(0, &wire.ConnectionTuneOk{ChannelMax: 16, FrameMax: 131072, Heartbeat: 10}),
		methodFrame(0, &wire.ConnectionOpen{VirtualHost: "/"}),
		methodFrame(1, &wire.ChannelOpen{})} {
		step(InBytes{NowNs: 1, Bytes: b}, false)
	}
	if left := rc.Outstanding(); len(left) != 0 {
		t.Fatalf("after login: %v", left)
	}
	return c, rc, step
}
