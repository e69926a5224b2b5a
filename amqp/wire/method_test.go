package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestMethodCount(t *testing.T) {
	// 14 connection (with RabbitMQ's update-secret), 6 channel, 8
	// exchange (with its bind and unbind), 10 queue, 17 basic, 6 tx, 2
	// confirm.
	if got := len(allMethods()); got != 63 {
		t.Fatalf("%d methods registered, want 63", got)
	}
}

func TestMethodRoundTrip(t *testing.T) {
	for _, m := range allMethods() {
		c, id := m.ID()
		for k := range 32 {
			in := fill(fresh(m), k)
			b := mustAppendMethod(in)
			out, err := DecodeMethod(b)
			if err != nil {
				t.Fatalf("%s variant %d: %v", MethodName(c, id), k, err)
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("%s variant %d:\n in  %#v\n out %#v", MethodName(c, id), k, in, out)
			}
			if oc, oid := out.ID(); oc != c || oid != id {
				t.Fatalf("%s decoded as %s", MethodName(c, id), MethodName(oc, oid))
			}
		}
	}
}

// Every strict prefix of an encoded method is refused with 502 and the
// method's ids (or, shorter than the ids, 502 alone); one byte more is
// refused as trailing.
func TestMethodTruncationAndTrailing(t *testing.T) {
	for _, m := range allMethods() {
		c, id := m.ID()
		b := mustAppendMethod(fill(fresh(m), 0))
		for n := 0; n < len(b); n++ {
			_, err := DecodeMethod(b[:n])
			var e *Error
			if !errors.As(err, &e) || e.Code != SyntaxError {
				t.Fatalf("%s cut to %d of %d bytes: got %v, want 502", MethodName(c, id), n, len(b), err)
			}
			if n >= 4 && (e.ClassID != c || e.MethodID != id) {
				t.Fatalf("%s cut to %d: error names %d.%d", MethodName(c, id), n, e.ClassID, e.MethodID)
			}
		}
		_, err := DecodeMethod(append(b, 0))
		var e *Error
		if !errors.As(err, &e) || e.Code != SyntaxError {
			t.Fatalf("%s with a trailing byte: got %v, want 502", MethodName(c, id), err)
		}
	}
}

func TestUnknownMethod(t *testing.T) {
	for _, tc := range []struct {
		class, method uint16
		code          uint16
	}{
		{ClassConnection, 99, CommandInvalid},
		{7, 10, CommandInvalid},
		{ClassBasic, MethodBasicRecoverAsync, NotImplemented},
		{ClassAccess, 10, NotImplemented},
	} {
		b := []byte{byte(tc.class >> 8), byte(tc.class), byte(tc.method >> 8), byte(tc.method)}
		_, err := DecodeMethod(b)
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.ClassID != tc.class || e.MethodID != tc.method {
			t.Errorf("%s: got %v, want code %d", MethodName(tc.class, tc.method), err, tc.code)
		}
	}
}

// connection.tune-ok, laid out by hand from the spec: class 10 (00 0a),
// method 31 (00 1f), channel-max short, frame-max long, heartbeat short,
// all big-endian; in a method frame on channel 0.
func TestTuneOkGolden(t *testing.T) {
	payload := []byte{
		0x00, 0x0a, 0x00, 0x1f, // connection.tune-ok
		0x07, 0xff, // channel-max 2047
		0x00, 0x02, 0x00, 0x00, // frame-max 131072
		0x00, 0x3c, // heartbeat 60
	}
	m := &ConnectionTuneOk{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60}
	if got := mustAppendMethod(m); !bytes.Equal(got, payload) {
		t.Fatalf("encoded % x\nwant    % x", got, payload)
	}
	got, err := DecodeMethod(payload)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("decoded %#v, %v", got, err)
	}
	frame := append([]byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c}, payload...)
	frame = append(frame, 0xce)
	var buf bytes.Buffer
	fw, _ := NewFrameWriter(&buf, FrameBytesMin)
	if err := fw.WriteMethod(0, m); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), frame) {
		t.Fatalf("frame % x\nwant  % x", buf.Bytes(), frame)
	}
}

// queue.declare: ticket short, queue shortstr, then passive, durable,
// exclusive, auto-delete, no-wait packed into one octet from the least
// significant bit, then the arguments table.
func TestQueueDeclareBitPacking(t *testing.T) {
	head := []byte{0x00, 0x32, 0x00, 0x0a, 0x00, 0x00, 0x01, 'q'}
	tail := []byte{0x00, 0x00, 0x00, 0x00} // empty arguments
	for i, set := range []func(*QueueDeclare){
		func(m *QueueDeclare) { m.Passive = true },
		func(m *QueueDeclare) { m.Durable = true },
		func(m *QueueDeclare) { m.Exclusive = true },
		func(m *QueueDeclare) { m.AutoDelete = true },
		func(m *QueueDeclare) { m.NoWait = true },
	} {
		m := &QueueDeclare{Queue: "q"}
		set(m)
		want := append(append(append([]byte{}, head...), byte(1)<<i), tail...)
		if got := mustAppendMethod(m); !bytes.Equal(got, want) {
			t.Errorf("bit %d: % x, want % x", i, got, want)
		}
		got, err := DecodeMethod(want)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("bit %d decoded %#v, %v", i, got, err)
		}
	}
	all := append(append(append([]byte{}, head...), 0x1f), tail...)
	got, err := DecodeMethod(all)
	want := &QueueDeclare{Queue: "q", Passive: true, Durable: true, Exclusive: true, AutoDelete: true, NoWait: true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("all bits: %#v, %v", got, err)
	}
	// A bit beyond no-wait is no field of queue.declare: refused, not dropped.
	undefined := append(append(append([]byte{}, head...), 0x20), tail...)
	var e *Error
	if _, err := DecodeMethod(undefined); !errors.As(err, &e) || e.Code != SyntaxError {
		t.Fatalf("undefined bit: %v, want 502", err)
	}
}

// basic.deliver puts a lone bit (redelivered) between a longlong and a
// shortstr; basic.nack packs two.
func TestDeliverAndNackGolden(t *testing.T) {
	m := &BasicDeliver{ConsumerTag: "c", DeliveryTag: 0x0102030405060708, Redelivered: true, Exchange: "", RoutingKey: "rk"}
	want := []byte{0x00, 0x3c, 0x00, 0x3c, 0x01, 'c', 1, 2, 3, 4, 5, 6, 7, 8, 0x01, 0x00, 0x02, 'r', 'k'}
	if got := mustAppendMethod(m); !bytes.Equal(got, want) {
		t.Fatalf("deliver % x, want % x", got, want)
	}
	n := &BasicNack{DeliveryTag: 9, Multiple: false, Requeue: true}
	want = []byte{0x00, 0x3c, 0x00, 0x78, 0, 0, 0, 0, 0, 0, 0, 9, 0x02}
	if got := mustAppendMethod(n); !bytes.Equal(got, want) {
		t.Fatalf("nack % x, want % x", got, want)
	}
}

// Reserved arguments are ignored: connection.open's capabilities and
// insist bit as an old client sends them.
func TestConnectionOpenReserved(t *testing.T) {
	b := []byte{0x00, 0x0a, 0x00, 0x28, 0x01, '/', 0x03, 'x', 'y', 'z', 0x01}
	got, err := DecodeMethod(b)
	if err != nil || !reflect.DeepEqual(got, &ConnectionOpen{VirtualHost: "/"}) {
		t.Fatalf("got %#v, %v", got, err)
	}
	var e *Error
	if _, err := DecodeMethod([]byte{0x00, 0x0a, 0x00, 0x28, 0x01, '/', 0x00, 0x02}); !errors.As(err, &e) || e.Code != SyntaxError {
		t.Fatalf("undefined bit: %v", err)
	}
}

func TestMethodEncodeRefusesLongShortstr(t *testing.T) {
	long := string(bytes.Repeat([]byte{'q'}, 256))
	b, err := AppendMethod([]byte{1, 2}, &QueueDeclare{Queue: long})
	if !errors.Is(err, ErrEncode) || !bytes.Equal(b, []byte{1, 2}) {
		t.Fatalf("got %v, % x", err, b)
	}
	if _, err := AppendMethod(nil, &QueueDeclare{Queue: long[:255]}); err != nil {
		t.Fatalf("255 bytes: %v", err)
	}
}

func TestHasContent(t *testing.T) {
	var n int
	for _, m := range allMethods() {
		if HasContent(m) {
			n++
		}
	}
	if n != 4 || !HasContent(&BasicPublish{}) || !HasContent(&BasicGetOk{}) || HasContent(&BasicGet{}) {
		t.Fatalf("%d content methods", n)
	}
}
