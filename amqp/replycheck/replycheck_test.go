package replycheck

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/wire"
)

const boundNs = 1_000_000_000

func frame(typ uint8, ch uint16, payload []byte) []byte {
	b := []byte{typ}
	b = binary.BigEndian.AppendUint16(b, ch)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return append(b, wire.FrameEnd)
}

func method(t *testing.T, ch uint16, m wire.Method) []byte {
	t.Helper()
	p, err := wire.AppendMethod(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return frame(wire.FrameMethod, ch, p)
}

// opened returns a checker past a handshake and channel 1's open.
func opened(t *testing.T) *Checker {
	t.Helper()
	c := New(boundNs)
	steps := []struct {
		client []byte
		server wire.Method
	}{
		{wire.ProtocolHeader[:], &wire.ConnectionStart{VersionMajor: 0, VersionMinor: 9, Mechanisms: "PLAIN", Locales: "en_US"}},
		{method(t, 0, &wire.ConnectionStartOk{Mechanism: "PLAIN", Response: "\x00guest\x00guest", Locale: "en_US"}), &wire.ConnectionTune{FrameMax: 131072}},
		{append(method(t, 0, &wire.ConnectionTuneOk{FrameMax: 131072}), method(t, 0, &wire.ConnectionOpen{VirtualHost: "/"})...), &wire.ConnectionOpenOk{}},
	}
	for _, s := range steps {
		must(t, c.ClientBytes(1, s.client))
		must(t, c.ServerBytes(1, method(t, 0, s.server)))
	}
	must(t, c.ClientBytes(1, method(t, 1, &wire.ChannelOpen{})))
	must(t, c.ServerBytes(1, method(t, 1, &wire.ChannelOpenOk{})))
	if left := c.Outstanding(); len(left) != 0 {
		t.Fatalf("after the handshake: %v", left)
	}
	if c.Answered() != 4 {
		t.Fatalf("answered %d, want the header, start-ok, open and channel.open", c.Answered())
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err error, text string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), text) {
		t.Fatalf("error %v, want one with %q", err, text)
	}
}

// A declaration the server never answers: within the bound it waits, past
// it Check fails, naming it.
func TestLostReply(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, method(t, 1, &wire.QueueDeclare{Queue: "q", Durable: true})))
	must(t, c.Check(10+boundNs))
	wantErr(t, c.Check(11+boundNs), "queue.declare on channel 1, received at 10 ns, has had no reply")
	if left := c.Outstanding(); len(left) != 1 || !strings.Contains(left[0], "queue.declare") {
		t.Fatalf("outstanding %v", left)
	}
}

// A refusal is an answer: channel.close answers what waited on the
// channel, and the client's frames there count for nothing until its
// close-ok; then the channel opens again.
func TestChannelCloseAnswers(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, append(method(t, 1, &wire.QueueDeclare{Queue: "q", Arguments: wire.Table{{Name: "x-max-length", Value: int32(10)}}}),
		method(t, 1, &wire.BasicQos{PrefetchCount: 1})...)))
	must(t, c.ServerBytes(11, method(t, 1, &wire.ChannelClose{ReplyCode: 406, ReplyText: "PRECONDITION_FAILED"})))
	must(t, c.ClientBytes(12, method(t, 1, &wire.BasicQos{PrefetchCount: 2})))
	must(t, c.ClientBytes(13, append(method(t, 1, &wire.ChannelCloseOk{}), method(t, 1, &wire.ChannelOpen{})...)))
	if left := c.Outstanding(); len(left) != 1 || !strings.Contains(left[0], "channel.open") {
		t.Fatalf("outstanding %v, want only the reopen", left)
	}
	must(t, c.ServerBytes(14, method(t, 1, &wire.ChannelOpenOk{})))
	must(t, c.Check(100*boundNs))
}

// Replies go in the order of the requests on their channel.
func TestReplyOutOfOrder(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, append(method(t, 1, &wire.BasicQos{PrefetchCount: 1}),
		method(t, 1, &wire.QueueDeclare{Queue: "q"})...)))
	wantErr(t, c.ServerBytes(11, method(t, 1, &wire.QueueDeclareOk{Queue: "q"})), "the oldest request waiting there is basic.qos")
	wantErr(t, c.Check(11), "basic.qos")
}

// A reply to nothing is an error, and no-wait methods expect nothing.
func TestUnsolicitedReply(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, method(t, 1, &wire.QueueDeclare{Queue: "q", NoWait: true})))
	if left := c.Outstanding(); len(left) != 0 {
		t.Fatalf("a no-wait declare waits: %v", left)
	}
	wantErr(t, c.ServerBytes(11, method(t, 1, &wire.QueueDeclareOk{Queue: "q"})), "answers nothing the client asked")
}

// Bytes that are no frame must close the connection within the bound.
func TestBadFrameNeedsClose(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, []byte{9, 0, 1, 0, 0, 0, 48}))
	wantErr(t, c.Check(11+boundNs), "stopped parsing at 10 ns (frame type 9)")
	must(t, c.ServerBytes(12+boundNs, method(t, 0, &wire.ConnectionClose{ReplyCode: 501})))
	must(t, c.Check(100*boundNs))

	c = opened(t)
	must(t, c.ClientBytes(10, []byte{9, 0, 1, 0, 0, 0, 48}))
	c.SocketClosed(20)
	must(t, c.Check(100*boundNs))
}

// A method that does not decode, on a channel the server closed before
// reading it (the server's close was caused by a frame before it in the
// same chunk), is discarded as the spec wants: the close forgives it,
// and the requests after it still count.
func TestUndecodableForgivenByClose(t *testing.T) {
	c := opened(t)
	bad := frame(wire.FrameMethod, 1, []byte{0x30, 0x30, 0x30, 0x30})
	must(t, c.ClientBytes(10, append(append(method(t, 1, &wire.QueueDeclare{Queue: "q"}), bad...),
		method(t, 2, &wire.ChannelOpen{})...)))
	must(t, c.ServerBytes(11, method(t, 1, &wire.ChannelClose{ReplyCode: 406})))
	if left := c.Outstanding(); len(left) != 1 || !strings.Contains(left[0], "channel 2: channel.open") {
		t.Fatalf("outstanding %v", left)
	}
	// The same method on a channel that stays open needs the connection
	// closed.
	c = opened(t)
	must(t, c.ClientBytes(10, bad))
	wantErr(t, c.Check(11+boundNs), "unknown method")
}

// The client's own channel.close is answered by close-ok, which also
// answers what waited before it; a close-ok without a close is an error.
func TestClientChannelClose(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, append(method(t, 1, &wire.QueueDeclare{Queue: "q"}), method(t, 1, &wire.ChannelClose{ReplyCode: 200})...)))
	must(t, c.ServerBytes(11, method(t, 1, &wire.ChannelCloseOk{})))
	if left := c.Outstanding(); len(left) != 0 {
		t.Fatalf("outstanding %v", left)
	}
	wantErr(t, c.ServerBytes(12, method(t, 1, &wire.ChannelCloseOk{})), "which the client did not close")
}

// Both sides close a channel at once: the server's close answers the
// requests, and its close-ok still answers the client's close.
func TestCrossingCloses(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, append(method(t, 1, &wire.QueueDeclare{Queue: "q"}), method(t, 1, &wire.ChannelClose{ReplyCode: 200})...)))
	must(t, c.ServerBytes(11, method(t, 1, &wire.ChannelClose{ReplyCode: 406})))
	if left := c.Outstanding(); len(left) != 1 || !strings.Contains(left[0], "channel.close") {
		t.Fatalf("outstanding %v", left)
	}
	must(t, c.ServerBytes(12, method(t, 1, &wire.ChannelCloseOk{})))
	must(t, c.ClientBytes(13, method(t, 1, &wire.ChannelCloseOk{})))
	must(t, c.Check(100*boundNs))
}

// The server's connection.close answers everything, and nothing after it
// is expected.
func TestConnectionCloseAnswersAll(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, append(method(t, 1, &wire.BasicGet{Queue: "q"}), method(t, 2, &wire.ChannelOpen{})...)))
	must(t, c.ServerBytes(11, method(t, 0, &wire.ConnectionClose{ReplyCode: 320})))
	must(t, c.ClientBytes(12, method(t, 3, &wire.ChannelOpen{})))
	must(t, c.Check(100*boundNs))
	if c.Answered() != 6 {
		t.Fatalf("answered %d, want 6", c.Answered())
	}
}

// The server's stream must parse.
func TestBadServerBytes(t *testing.T) {
	c := opened(t)
	wantErr(t, c.ServerBytes(10, []byte{1, 0, 1, 0, 0, 0, 0, 0x00}), "bad frame")
	c = New(boundNs)
	wantErr(t, c.ServerBytes(10, []byte("AMQX0000")), "neither a frame nor its protocol header")
}

// basic.get takes get-ok or get-empty.
func TestGetReplies(t *testing.T) {
	c := opened(t)
	must(t, c.ClientBytes(10, append(method(t, 1, &wire.BasicGet{Queue: "q"}), method(t, 1, &wire.BasicGet{Queue: "q"})...)))
	must(t, c.ServerBytes(11, method(t, 1, &wire.BasicGetEmpty{})))
	must(t, c.ServerBytes(12, method(t, 1, &wire.BasicGetOk{DeliveryTag: 1, RoutingKey: "q"})))
	must(t, c.Check(100*boundNs))
}
