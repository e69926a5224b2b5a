package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/io/seglog"
)

func quietLogger() *slog.Logger {
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// startServer starts a broker on an ephemeral loopback port over dir.
func startServer(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := Start(Config{DataDir: dir, AMQPAddr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func stopServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func dial(t *testing.T, s *Server, user, pass string) (*amqp.Connection, error) {
	t.Helper()
	return amqp.Dial(fmt.Sprintf("amqp://%s:%s@%s/", user, pass, s.Addr().String()))
}

func mustDial(t *testing.T, s *Server) *amqp.Connection {
	t.Helper()
	c, err := dial(t, s, "guest", "guest")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

// publishConfirmed publishes n messages "m0".."m(n-1)" on a confirm
// channel and waits for every confirm; each must be an ack.
func publishConfirmed(t *testing.T, ch *amqp.Channel, queue string, from, n int) {
	t.Helper()
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm.select: %v", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := from; i < from+n; i++ {
		err := ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
			ContentType: "text/plain", DeliveryMode: amqp.Persistent, MessageId: fmt.Sprintf("id%d", i),
			Headers: amqp.Table{"k": int32(i)}, Body: []byte(fmt.Sprintf("m%d", i))})
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	for i := 0; i < n; i++ {
		select {
		case c := <-confirms:
			if !c.Ack {
				t.Fatalf("publish with tag %d nacked", c.DeliveryTag)
			}
		case <-ctx.Done():
			t.Fatalf("confirm %d of %d: timed out", i+1, n)
		}
	}
}

// TestServeRoundTrip: declare, publish N with confirms (all acked),
// consume with prefetch and ack all, in order and with the properties as
// published; then a second consumer gets nothing (all acked).
func TestServeRoundTrip(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("orders", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatalf("declare: %v", err)
	}
	const n = 200
	publishConfirmed(t, ch, "orders", 0, n)

	cc, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Qos(16, 0, false); err != nil {
		t.Fatal(err)
	}
	msgs, err := cc.Consume("orders", "c1", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	for i := 0; i < n; i++ {
		select {
		case d := <-msgs:
			if string(d.Body) != fmt.Sprintf("m%d", i) {
				t.Fatalf("delivery %d: body %q", i, d.Body)
			}
			if d.Redelivered || d.ContentType != "text/plain" || d.MessageId != fmt.Sprintf("id%d", i) ||
				d.DeliveryMode != amqp.Persistent || d.Headers["k"] != int32(i) || d.RoutingKey != "orders" {
				t.Fatalf("delivery %d: %+v", i, d)
			}
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("delivery %d: timed out", i)
		}
	}
	if err := cc.Cancel("c1", false); err != nil {
		t.Fatal(err)
	}
	// Everything was acked: a new consumer gets nothing.
	msgs2, err := cc.Consume("orders", "c2", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-msgs2:
		t.Fatalf("an acked message came again: %q", d.Body)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestServeQueueDelete: amqp091-go's QueueDelete, as against RabbitMQ: a
// conditional delete of a queue with messages is refused (406) and leaves
// it; a delete reports its ready messages, a passive declare after it is
// 404, and deleting it again is no error (0 messages); a requeued delivery
// comes back at once, and a passive declare counts what is ready.
func TestServeQueueDelete(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("tmp", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publishConfirmed(t, ch, "tmp", 0, 3)
	if q, err := ch.QueueDeclarePassive("tmp", true, false, false, false, nil); err != nil || q.Messages != 3 {
		t.Fatalf("a passive declare: %+v %v, want 3 messages", q, err)
	}
	c2, _ := c.Channel()
	c2.Qos(1, 0, false)
	msgs, err := c2.Consume("tmp", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := <-msgs
	if err := d.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	select {
	case d = <-msgs:
		if string(d.Body) != "m0" || !d.Redelivered {
			t.Fatalf("after a requeue: %q redelivered %t, want m0 again", d.Body, d.Redelivered)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a requeued delivery did not come back within 5 s")
	}
	d.Ack(false)
	c2.Close()
	if _, err := ch.QueueDelete("tmp", false, true, false); err == nil || !strings.Contains(err.Error(), "406") {
		t.Fatalf("if-empty of a queue with 2 messages: %v, want 406", err)
	}
	ch, _ = c.Channel()
	if n, err := ch.QueueDelete("tmp", false, false, false); err != nil || n != 2 {
		t.Fatalf("a delete: %d messages, %v; want 2", n, err)
	}
	if _, err := ch.QueueDeclarePassive("tmp", true, false, false, false, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a passive declare of the deleted queue: %v, want 404", err)
	}
	ch, _ = c.Channel()
	if n, err := ch.QueueDelete("tmp", false, false, false); err != nil || n != 0 {
		t.Fatalf("deleting it again: %d, %v; want 0 and no error", n, err)
	}
}

// TestServeUnackedReturn: deliveries a consumer did not ack come back,
// redelivered, to the next consumer once the first's channel closes; the
// acked ones do not.
func TestServeUnackedReturn(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("jobs", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publishConfirmed(t, ch, "jobs", 0, 10)
	c1, _ := c.Channel()
	c1.Qos(4, 0, false)
	msgs, err := c1.Consume("jobs", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Take four (the prefetch window) and ack none: no fifth comes.
	var held []amqp.Delivery
	for i := 0; i < 4; i++ {
		select {
		case d := <-msgs:
			if string(d.Body) != fmt.Sprintf("m%d", i) || d.Redelivered {
				t.Fatalf("delivery %d: %q redelivered %t", i, d.Body, d.Redelivered)
			}
			held = append(held, d)
		case <-time.After(5 * time.Second):
			t.Fatalf("delivery %d: timed out", i)
		}
	}
	select {
	case d := <-msgs:
		t.Fatalf("a delivery beyond the prefetch window of 4: %q", d.Body)
	case <-time.After(100 * time.Millisecond):
	}
	// Ack the first two, then close the channel with m2 and m3 unacked
	// (and whatever the two freed slots brought: m4, m5).
	held[0].Ack(false)
	held[1].Ack(false)
	time.Sleep(50 * time.Millisecond)
	c1.Close()
	c2, _ := c.Channel()
	msgs2, err := c2.Consume("jobs", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 8 {
		select {
		case d := <-msgs2:
			switch string(d.Body) {
			case "m2", "m3":
				if !d.Redelivered {
					t.Fatalf("%q delivered before, not flagged redelivered", d.Body)
				}
			case "m6", "m7", "m8", "m9":
				if d.Redelivered {
					t.Fatalf("%q never delivered before, flagged redelivered", d.Body)
				}
			}
			if got[string(d.Body)] {
				t.Fatalf("%q twice", d.Body)
			}
			got[string(d.Body)] = true
			d.Ack(false)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d of 8: %v", len(got), got)
		}
	}
	if got["m0"] || got["m1"] {
		t.Fatalf("acked messages came again: %v", got)
	}
}

// TestServeWrongCredentials: a wrong password is refused with 403.
func TestServeWrongCredentials(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	_, err := dial(t, s, "guest", "wrong")
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.AccessRefused {
		t.Fatalf("wrong password: %v, want 403 ACCESS_REFUSED", err)
	}
	_, err = dial(t, s, "nobody", "guest")
	if !errors.As(err, &ae) || ae.Code != amqp.AccessRefused {
		t.Fatalf("unknown user: %v, want 403 ACCESS_REFUSED", err)
	}
}

// TestServeUnroutable: a publish to the default exchange naming no
// declared queue is acked (RabbitMQ's rule) and, when mandatory, returned
// with 312 NO_ROUTE; a passive declare of it is 404.
func TestServeUnroutable(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	ch.Confirm(false)
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	if err := ch.Publish("", "nowhere", true, false, amqp.Publishing{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-returns:
		if r.ReplyCode != amqp.NoRoute || string(r.Body) != "x" {
			t.Fatalf("return %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.return")
	}
	if cf := <-confirms; !cf.Ack {
		t.Fatalf("unroutable publish not acked: %+v", cf)
	}
	_, err := ch.QueueDeclarePassive("nowhere", true, false, false, false, nil)
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.NotFound {
		t.Fatalf("passive declare of a missing queue: %v, want 404", err)
	}
}

// TestServeRestart publishes with confirms, acks some, drains, and looks
// at what the next process of the same data directory does. Every
// confirmed publish and every ack is durable in the queue's log (read
// here with the segment log's own reader). The restarted broker is a new
// process instance, so the controller fences the queue's assignment (its
// member runs another process) and, until recovery activates
// the next epoch, the queue is not served: declare, publish and consume
// are refused, never answered from a guess. A queue the new process
// declares is placed on it and serves (here with an auto-ack consumer).
func TestServeRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	c := mustDial(t, s)
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("kept", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	const n = 20
	publishConfirmed(t, ch, "kept", 0, n)
	cc, _ := c.Channel()
	cc.Qos(5, 0, false)
	msgs, err := cc.Consume("kept", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		d := <-msgs
		if i < 3 {
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Acks have no reply (AMQP's basic.ack has none): give the broker a
	// moment to append and sync them before the drain.
	time.Sleep(100 * time.Millisecond)
	c.Close()
	stopServer(t, s)

	publishes, acks := readQueueLog(t, dir)
	if publishes != n || acks != 3 {
		t.Fatalf("the queue's log holds %d publishes and %d acks, want %d and 3", publishes, acks, n)
	}

	s2 := startServer(t, dir)
	defer stopServer(t, s2)
	c2 := mustDial(t, s2)
	defer c2.Close()
	// The restarted process is a new process instance and the assignment
	// named the previous one: the controller fences the queue, and its
	// recovery (seal, install, activate; the one broker is every part of
	// it) brings it back under the next epoch. Until then a declaration is
	// refused 405; then the queue serves what it kept: every publish not
	// acked (the two delivered and not acked among them), none acked.
	deadline := time.Now().Add(10 * time.Second)
	var ch2 *amqp.Channel
	for refused := 0; ; refused++ {
		ch2, _ = c2.Channel()
		_, err = ch2.QueueDeclare("kept", true, false, false, false, nil)
		if err == nil {
			t.Logf("after the restart: the queue back after %d refusals", refused)
			break
		}
		var ae *amqp.Error
		if !errors.As(err, &ae) || ae.Code != amqp.ResourceLocked || time.Now().After(deadline) {
			t.Fatalf("declare after a restart: %v, want 405 until the recovery, then the queue", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	kept, err := ch2.Consume("kept", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < n-3 {
		select {
		case d := <-kept:
			got = append(got, string(d.Body))
		case <-time.After(5 * time.Second):
			t.Fatalf("after the recovery, %d of %d kept messages delivered: %v", len(got), n-3, got)
		}
	}
	select {
	case d := <-kept:
		t.Fatalf("after the recovery, a message more than kept: %q (had %v)", d.Body, got)
	case <-time.After(300 * time.Millisecond):
	}
	for i := 3; i < n; i++ {
		if !slices.Contains(got, fmt.Sprintf("m%d", i)) {
			t.Fatalf("after the recovery, m%d (not acked) was not delivered: %v", i, got)
		}
	}

	// A queue declared by the new process is placed on it and works.
	ch3, _ := c2.Channel()
	if _, err := ch3.QueueDeclare("fresh", true, false, false, false, nil); err != nil {
		t.Fatalf("declare a new queue after the restart: %v", err)
	}
	publishConfirmed(t, ch3, "fresh", 0, 5)
	msgs, err = ch3.Consume("fresh", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		select {
		case d := <-msgs:
			if string(d.Body) != fmt.Sprintf("m%d", i) {
				t.Fatalf("fresh: got %q", d.Body)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("fresh: delivery %d timed out", i)
		}
	}
}

// readQueueLog counts the publish and ack records of the one queue log
// under dir, with io/seglog's reader on fsio.
func readQueueLog(t *testing.T, dir string) (publishes, acks int) {
	t.Helper()
	ents, err := queueLogDirs(filepath.Join(dir, "queues"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("queue logs: %v %v", ents, err)
	}
	fs, err := fsio.New(filepath.Join(dir, "queues"))
	if err != nil {
		t.Fatal(err)
	}
	l, rec, err := seglog.Open(fs, ents[0].Name(), seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rec.Damage != nil {
		t.Fatalf("damage: %+v", rec.Damage)
	}
	for o := rec.Start; o < rec.End; {
		rs, err := l.Read(o, 256, 1<<20)
		if err != nil || len(rs) == 0 {
			t.Fatalf("read at %d: %v", o, err)
		}
		for _, r := range rs {
			switch r.Kind {
			case record.KindPublish:
				publishes++
			case record.KindAck:
				acks++
			}
		}
		o += uint64(len(rs))
	}
	return publishes, acks
}

// TestServeOneProcessPerDataDir: a second broker on a data directory in
// use refuses to start (the metadata store's lock), and does not bump the
// process counter.
func TestServeOneProcessPerDataDir(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	defer stopServer(t, s)
	before, _ := os.ReadFile(filepath.Join(dir, "process"))
	if _, err := Start(Config{DataDir: dir, AMQPAddr: "127.0.0.1:0", Logger: quietLogger()}); err == nil {
		t.Fatal("a second broker started on a data directory in use")
	}
	after, _ := os.ReadFile(filepath.Join(dir, "process"))
	if string(before) != "1\n" || string(after) != string(before) {
		t.Fatalf("process counter %q, then %q", before, after)
	}
}

// TestServeDrainTellsClients: a drain closes client connections with 320
// CONNECTION_FORCED, after their publishes were confirmed.
func TestServeDrainTellsClients(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := mustDial(t, s)
	defer c.Close()
	closed := c.NotifyClose(make(chan *amqp.Error, 1))
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("d", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publishConfirmed(t, ch, "d", 0, 50)
	stopServer(t, s)
	select {
	case err := <-closed:
		if err == nil || err.Code != amqp.ConnectionForced {
			t.Fatalf("closed with %v, want 320", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client was not told")
	}
}

// TestServeStuckClient: a consumer whose client stops reading its socket
// neither stalls the broker (another client's confirmed publishes go on)
// nor holds memory without bound (it is disconnected once a write waits
// past the write timeout, or its queued writes reach their limit).
func TestServeStuckClient(t *testing.T) {
	s, err := Start(Config{DataDir: t.TempDir(), AMQPAddr: "127.0.0.1:0", Logger: quietLogger(), WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer stopServer(t, s)
	pc := mustDial(t, s)
	defer pc.Close()
	ch, _ := pc.Channel()
	if _, err := ch.QueueDeclare("big", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("other", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ch.Confirm(false)
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 30000))
	body := make([]byte, 1024)
	const n = 20000
	for i := 0; i < n; i++ {
		if err := ch.Publish("", "big", false, false, amqp.Publishing{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if cf := <-confirms; !cf.Ack {
			t.Fatalf("confirm %d: %+v (connection closed: %v)", i, cf, pc.IsClosed())
		}
	}
	// The stuck client: a raw socket that logs in, starts a no-ack
	// consumer and never reads a byte.
	raw, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var hs bytes.Buffer
	hs.Write(wire.ProtocolHeader[:])
	fw, _ := wire.NewFrameWriter(&hs, wire.FrameBytesMin)
	for _, m := range []struct {
		ch uint16
		m  wire.Method
	}{
		{0, &wire.ConnectionStartOk{Mechanism: "PLAIN", Response: "\x00guest\x00guest", Locale: "en_US"}},
		{0, &wire.ConnectionTuneOk{ChannelMax: 16, FrameMax: wire.FrameBytesDefault}},
		{0, &wire.ConnectionOpen{VirtualHost: "/"}},
		{1, &wire.ChannelOpen{}},
		{1, &wire.BasicConsume{Queue: "big", NoAck: true}},
	} {
		if err := fw.WriteMethod(m.ch, m.m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Write(hs.Bytes()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 100; i++ {
		if err := ch.Publish("", "other", false, false, amqp.Publishing{Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		select {
		case cf := <-confirms:
			if !cf.Ack {
				t.Fatal("nack")
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("publish %d not confirmed in 5 s beside a stuck client", i)
		}
	}
	t.Logf("100 sequential confirmed publishes beside the stuck client: %v", time.Since(start))
	// Disconnected: once the broker closed it, reading drains what the
	// socket holds and ends.
	raw.SetReadDeadline(time.Now().Add(15 * time.Second))
	got, err := io.Copy(io.Discard, raw)
	if err != nil {
		t.Fatalf("the stuck client was not disconnected (%d bytes read): %v", got, err)
	}
	t.Logf("the stuck client had %d bytes to read when it was disconnected", got)
}

// TestServeHTTP: /healthz answers, /readyz once the metadata group has its
// leader, and /metrics counts the confirmed publishes and their latency.
func TestServeHTTP(t *testing.T) {
	s, err := Start(Config{DataDir: t.TempDir(), AMQPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer stopServer(t, s)
	get := func(path string) (int, string) {
		t.Helper()
		r, err := http.Get("http://" + s.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := get("/readyz")
		if code == 200 {
			if !strings.Contains(body, "leader n1") {
				t.Fatalf("/readyz: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never ready: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("m", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publishConfirmed(t, ch, "m", 0, 25)
	code, body := get("/metrics")
	for _, want := range []string{
		`sluice_publishes_total{outcome="confirmed"} 25`,
		`sluice_publishes_total{outcome="failed"} 0`,
		`sluice_confirm_latency_seconds_count 25`,
		`sluice_amqp_connections 1`,
		`sluice_raft_is_leader 1`,
		`sluice_raft_leader_node 1`,
		`sluice_process_instance 1`,
		`sluice_queues{state="all"} 1`,
		`sluice_queues{state="under_replicated"} 0`,
		`sluice_queues{state="under_min_insync"} 0`,
		`sluice_queues{state="unavailable"} 0`,
		`sluice_queues_held 0`,
		`sluice_holds_total{event="entered"} 0`,
		`sluice_learners 0`,
		`sluice_learners_admitted_total 0`,
	} {
		if code != 200 || !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics (%d) lacks %q:\n%s", code, want, body)
		}
	}
}

// TestServeConnectionsEndClean: connections that end every way (client
// close, refused login, a socket dropped mid-handshake) leave no reader
// or writer goroutine behind.
func TestServeConnectionsEndClean(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s) // warm up: the client library's own goroutines
	c.Close()
	time.Sleep(100 * time.Millisecond)
	base := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		c := mustDial(t, s)
		ch, _ := c.Channel()
		ch.QueueDeclare("g", true, false, false, false, nil)
		c.Close()
		if _, err := dial(t, s, "guest", "bad"); err == nil {
			t.Fatal("bad password accepted")
		}
		raw, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		raw.Write([]byte("AMQP\x00\x00\x09\x01"))
		raw.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeLargeMessages: a body that fits a log record with any
// properties goes through whole; a larger one is refused with 311
// CONTENT_TOO_LARGE on its channel, never nacked or cut.
func TestServeLargeMessages(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("large", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ch.Confirm(false)
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	big := bytes.Repeat([]byte("0123456789abcdef"), 700<<10/16)
	if err := ch.Publish("", "large", false, false, amqp.Publishing{Body: big}); err != nil {
		t.Fatal(err)
	}
	if cf := <-confirms; !cf.Ack {
		t.Fatal("a 700 KiB publish was nacked")
	}
	msgs, err := ch.Consume("large", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-msgs:
		if !bytes.Equal(d.Body, big) {
			t.Fatalf("got %d bytes back, want the %d published", len(d.Body), len(big))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	ch2, _ := c.Channel()
	closed := ch2.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch2.Publish("", "large", false, false, amqp.Publishing{Body: make([]byte, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err == nil || err.Code != amqp.ContentTooLarge {
			t.Fatalf("a 1 MiB publish: channel closed with %v, want 311", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a 1 MiB publish was not refused")
	}
}

// TestServeISRQueue: a queue declared with x-sluice-policy isr (its min
// in-sync 1 on this single broker) confirms at its high watermark through
// an unchanged client; a min in-sync above its replicas is refused with
// 406 before anything is committed.
func TestServeISRQueue(t *testing.T) {
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)
	c := mustDial(t, s)
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	args := amqp.Table{"x-sluice-policy": "isr", "x-sluice-min-insync": int32(1)}
	if _, err := ch.QueueDeclare("clicks", true, false, false, false, args); err != nil {
		t.Fatalf("declare: %v", err)
	}
	publishConfirmed(t, ch, "clicks", 0, 50)

	bad := amqp.Table{"x-sluice-policy": "isr", "x-sluice-min-insync": int32(2)}
	_, err = ch.QueueDeclare("clicks2", true, false, false, false, bad)
	var e *amqp.Error
	if !errors.As(err, &e) || e.Code != 406 {
		t.Fatalf("declare with min in-sync 2 of 1 replica: %v, want 406", err)
	}
}

// queueLogDirs lists the queue logs' directories in qdir (beside each, its
// storage binding's marker, qN.bound, is a file).
func queueLogDirs(qdir string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(qdir)
	return slices.DeleteFunc(ents, func(e os.DirEntry) bool { return !e.IsDir() }), err
}
