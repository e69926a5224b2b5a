package front

import (
	"testing"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/route"
)

// A publish routed to several queues is answered once every queue
// answered: confirmed only if none failed, nacked if any definitely
// failed, unknown if any is unknown and none failed, and unroutable
// (returned when mandatory) only if every queue went meanwhile.
func TestFoldFan(t *testing.T) {
	cases := []struct {
		name     string
		outcomes []conn.Outcome
		want     conn.Outcome
		returned bool
	}{
		{"all confirmed", []conn.Outcome{conn.Confirmed, conn.Confirmed, conn.Confirmed}, conn.Confirmed, false},
		{"one failed", []conn.Outcome{conn.Confirmed, conn.Failed, conn.Confirmed}, conn.Failed, false},
		{"failed beats unknown", []conn.Outcome{conn.Unknown, conn.Failed}, conn.Failed, false},
		{"one unknown", []conn.Outcome{conn.Confirmed, conn.Unknown}, conn.Unknown, false},
		{"one queue gone", []conn.Outcome{conn.Unroutable, conn.Confirmed}, conn.Confirmed, false},
		{"every queue gone", []conn.Outcome{conn.Unroutable, conn.Unroutable}, conn.Unroutable, true},
	}
	for _, c := range cases {
		fn := &fan{left: len(c.outcomes), mandatory: true, content: conn.Content{Body: []byte("b")}}
		for i, o := range c.outcomes {
			res, done := foldFan(fn, &conn.PublishResult{ID: 7, Outcome: o, Text: "why"})
			if done != (i == len(c.outcomes)-1) {
				t.Fatalf("%s: answered after %d of %d outcomes", c.name, i+1, len(c.outcomes))
			}
			if !done {
				continue
			}
			if res.ID != 7 || res.Outcome != c.want || (res.Returned != nil) != c.returned {
				t.Fatalf("%s: %+v, want %s returned=%t", c.name, res, c.want, c.returned)
			}
		}
	}
}

// headerFields maps every AMQP field type to a class and one canonical
// value, sorted by key; a message's over-long value still answers a
// presence test, a binding's is refused.
func TestHeaderFields(t *testing.T) {
	tab := wire.Table{{Name: "s", Value: "x"}, {Name: "b", Value: true}, {Name: "i", Value: int8(1)}, {Name: "l", Value: int64(1)},
		{Name: "d", Value: float64(1)}, {Name: "m", Value: wire.Decimal{Scale: 1, Value: 10}}, {Name: "v", Value: nil},
		{Name: "t", Value: wire.Table{{Name: "k", Value: "v"}}}}
	fs, err := headerFields(tab, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := route.FieldsText(fs), route.FieldsText([]route.Field{
		{Key: "b", Class: route.ClassBool, Value: "t"}, {Key: "d", Class: route.ClassNumber, Value: "1"},
		{Key: "i", Class: route.ClassNumber, Value: "1"}, {Key: "l", Class: route.ClassNumber, Value: "1"},
		{Key: "m", Class: route.ClassNumber, Value: "1"}, {Key: "s", Class: route.ClassString, Value: "x"},
		{Key: "t", Class: route.ClassOther, Value: fs[6].Value}, {Key: "v", Class: route.ClassVoid}}); got != want {
		t.Fatalf("fields %s, want %s", got, want)
	}
	if fs[6].Value == "" {
		t.Fatal("a table header has no canonical value")
	}
	long := wire.Table{{Name: "big", Value: string(make([]byte, 300))}}
	if _, err := headerFields(long, false); err == nil {
		t.Fatal("a binding argument of 300 bytes was accepted")
	}
	fs, err = headerFields(long, true)
	if err != nil || len(fs) != 1 || fs[0].Class != route.ClassOther || fs[0].Value != "" {
		t.Fatalf("a message's long header: %v %v", fs, err)
	}
	bind := []route.Field{{Key: "big", Class: route.ClassVoid}, {Key: "x-match", Class: route.ClassString, Value: "all"}}
	if !route.HeadersMatch(bind, fs) {
		t.Fatal("a presence binding does not match a message's long header")
	}
}
