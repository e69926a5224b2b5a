package metadata

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/core/route"
	"github.com/sluicemq/sluice/core/seam"
)

// catalogue applies commands in order, failing the test on an error.
type catalogue struct {
	t     *testing.T
	s     State
	index uint64
}

func (c *catalogue) do(cmd Command) string {
	c.t.Helper()
	c.index++
	out, err := c.s.Apply(c.index, &cmd)
	if err != nil {
		c.t.Fatalf("%s: %v", cmd.String(), err)
	}
	return out
}

// refused applies cmd and wants it refused with code.
func (c *catalogue) refused(cmd Command, code seam.Refusal) {
	c.t.Helper()
	c.index++
	before := imageApart(c.s)
	_, err := c.s.Apply(c.index, &cmd)
	var rf *Refused
	if !errors.As(err, &rf) || rf.Code != code {
		c.t.Fatalf("%s: %v, want refused %s", cmd.String(), err, code)
	}
	// A refusal changes nothing but the applied index.
	if !bytes.Equal(before, imageApart(c.s)) {
		c.t.Fatalf("%s: a refused command changed the state", cmd.String())
	}
}

// imageApart is s's image but for its applied index.
func imageApart(s State) []byte {
	s.applied = 0
	return s.AppendImage(nil)
}

func (c *catalogue) route(ex, key string, hs ...route.Field) []string {
	c.t.Helper()
	got, rf := c.s.Route(nil, ex, key, hs)
	if rf != seam.RefusalNone {
		c.t.Fatalf("route %q %q: refused %s", ex, key, rf)
	}
	return got
}

func (c *catalogue) wantRoute(ex, key string, want []string, hs ...route.Field) {
	c.t.Helper()
	if got := c.route(ex, key, hs...); !slices.Equal(got, want) {
		c.t.Fatalf("route %q %q %s: %q, want %q", ex, key, route.FieldsText(hs), got, want)
	}
}

func queueCmd(name string) Command {
	return Command{Kind: DeclareQueue, Queue: name, Replicas: 1, Policy: seam.LeaderDurable, MinInsync: 1}
}

func exchangeCmd(name string, kind route.Kind) Command {
	return Command{Kind: DeclareExchange, Exchange: name, ExchangeKind: kind, Durable: true}
}

func bindCmd(ex, queue, key string, args ...route.Field) Command {
	return Command{Kind: Bind, Exchange: ex, Queue: queue, RoutingKey: key, Args: BindingArgs(route.SortFields(args))}
}

func str(k, v string) route.Field { return route.Field{Key: k, Class: route.ClassString, Value: v} }

// Declarations keep the first; other attributes, reserved names and
// predeclared exchanges answer as RabbitMQ does, each refusal typed.
func TestExchangeDeclarations(t *testing.T) {
	c := &catalogue{t: t}
	c.do(exchangeCmd("logs", route.Fanout))
	if x, ok := c.s.Exchange("logs"); !ok || x.Incarnation != 1 || x.Kind != route.Fanout {
		t.Fatalf("logs: %+v %t", x, ok)
	}
	c.do(exchangeCmd("logs", route.Fanout)) // the same again: kept
	if x, _ := c.s.Exchange("logs"); x.Incarnation != 1 {
		t.Fatalf("a redeclaration changed the incarnation to %d", x.Incarnation)
	}
	c.refused(exchangeCmd("logs", route.Topic), seam.RefusalConflict)
	nd := exchangeCmd("logs", route.Fanout)
	nd.Durable = false
	c.refused(nd, seam.RefusalConflict)
	c.refused(exchangeCmd("amq.mine", route.Direct), seam.RefusalReserved)
	c.do(exchangeCmd("amq.topic", route.Topic)) // predeclared, as it is
	c.refused(exchangeCmd("amq.topic", route.Direct), seam.RefusalConflict)
	c.refused(Command{Kind: DeleteExchange, Exchange: "amq.direct"}, seam.RefusalReserved)
	c.refused(Command{Kind: DeleteExchange, Exchange: "nope"}, seam.RefusalNotFound)
	if len(c.s.Exchanges()) != 1 {
		t.Fatalf("%d exchanges, want 1 (predeclared ones are no entries)", len(c.s.Exchanges()))
	}
}

// Routing by kind: direct by key, fanout to all, topic by pattern, headers
// by arguments; the default exchange by queue name.
func TestRouteByKind(t *testing.T) {
	c := &catalogue{t: t}
	for _, q := range []string{"a", "b", "c"} {
		c.do(queueCmd(q))
	}
	c.do(exchangeCmd("d", route.Direct))
	c.do(exchangeCmd("f", route.Fanout))
	c.do(exchangeCmd("t", route.Topic))
	c.do(exchangeCmd("h", route.Headers))
	c.do(bindCmd("d", "a", "red"))
	c.do(bindCmd("d", "b", "red"))
	c.do(bindCmd("d", "c", "blue"))
	c.do(bindCmd("d", "c", "blue")) // the same binding again: kept once
	c.do(bindCmd("f", "a", "ignored"))
	c.do(bindCmd("f", "c", ""))
	c.do(bindCmd("t", "a", "*.orange.*"))
	c.do(bindCmd("t", "b", "*.*.rabbit"))
	c.do(bindCmd("t", "b", "lazy.#"))
	c.do(bindCmd("h", "a", "", str("x-match", "all"), str("format", "pdf"), str("type", "report")))
	c.do(bindCmd("h", "b", "", str("x-match", "any"), str("format", "pdf"), str("type", "log")))

	c.wantRoute("", "a", []string{"a"})
	c.wantRoute("", "zz", nil)
	c.wantRoute("d", "red", []string{"a", "b"})
	c.wantRoute("d", "blue", []string{"c"})
	c.wantRoute("d", "green", nil)
	c.wantRoute("f", "anything", []string{"a", "c"})
	c.wantRoute("t", "quick.orange.rabbit", []string{"a", "b"})
	c.wantRoute("t", "lazy.orange.elephant", []string{"a", "b"})
	c.wantRoute("t", "quick.orange.fox", []string{"a"})
	c.wantRoute("t", "lazy.brown.fox", []string{"b"})
	c.wantRoute("t", "quick.brown.fox", nil)
	c.wantRoute("h", "", []string{"a", "b"}, str("format", "pdf"), str("type", "report"))
	c.wantRoute("h", "", []string{"b"}, str("format", "pdf"))
	c.wantRoute("h", "", nil, str("format", "zip"))
	c.wantRoute("amq.direct", "a", nil)
	c.refused(bindCmd("h", "c", "", str("x-match", "some")), seam.RefusalConflict)

	if _, rf := c.s.Route(nil, "nope", "", nil); rf != seam.RefusalNotFound {
		t.Fatalf("a missing exchange routes: %s", rf)
	}
	c.refused(bindCmd("nope", "a", ""), seam.RefusalNotFound)
	c.refused(bindCmd("d", "nope", ""), seam.RefusalNotFound)
}

// Exchange bindings are followed (each exchange once, so a cycle ends),
// an exchange no binding of matches hands the message to its alternate,
// and an internal exchange takes no publish of its own.
func TestRouteThroughExchanges(t *testing.T) {
	c := &catalogue{t: t}
	c.do(queueCmd("q1"))
	c.do(queueCmd("unrouted"))
	c.do(Command{Kind: DeclareExchange, Exchange: "inner", ExchangeKind: route.Fanout, Internal: true})
	c.do(Command{Kind: DeclareExchange, Exchange: "lost", ExchangeKind: route.Fanout})
	c.do(Command{Kind: DeclareExchange, Exchange: "outer", ExchangeKind: route.Direct, Alternate: "lost"})
	c.do(Command{Kind: Bind, Exchange: "outer", Dest: "inner", RoutingKey: "k"})
	c.do(Command{Kind: Bind, Exchange: "inner", Dest: "outer", RoutingKey: "k"}) // a cycle
	c.do(bindCmd("inner", "q1", ""))
	c.do(bindCmd("lost", "unrouted", ""))
	c.wantRoute("outer", "k", []string{"q1"})
	c.wantRoute("outer", "other", []string{"unrouted"})
	if _, rf := c.s.Route(nil, "inner", "k", nil); rf != seam.RefusalInternal {
		t.Fatalf("a publish to an internal exchange: %s, want internal", rf)
	}
	// An alternate that does not exist routes nowhere (RabbitMQ ignores it).
	c.do(Command{Kind: DeclareExchange, Exchange: "dangling", ExchangeKind: route.Direct, Alternate: "none"})
	c.wantRoute("dangling", "k", nil)
}

// Deleting ends every binding from or to what was deleted; an auto-delete
// exchange goes with its last binding as a source, in turn; if-unused
// refuses an exchange that is a source; unbinding what is not bound is
// accepted.
func TestDeletionsEndBindings(t *testing.T) {
	c := &catalogue{t: t}
	c.do(queueCmd("q1"))
	c.do(queueCmd("q2"))
	q1, _ := c.s.Queue("q1")
	c.do(exchangeCmd("x", route.Fanout))
	c.do(Command{Kind: DeclareExchange, Exchange: "auto", ExchangeKind: route.Fanout, AutoDelete: true})
	c.do(Command{Kind: DeclareExchange, Exchange: "auto2", ExchangeKind: route.Fanout, AutoDelete: true})
	c.do(bindCmd("x", "q1", ""))
	c.do(bindCmd("x", "q2", ""))
	c.do(Command{Kind: Bind, Exchange: "auto2", Dest: "auto"})
	c.do(bindCmd("auto", "q1", ""))
	c.refused(Command{Kind: DeleteExchange, Exchange: "x", IfUnused: true}, seam.RefusalInUse)
	c.do(Command{Kind: Unbind, Exchange: "x", Queue: "q2", RoutingKey: "not-bound"})
	c.wantRoute("x", "", []string{"q1", "q2"})

	c.do(Command{Kind: DeleteQueue, Queue: "q1", Incarnation: q1.Incarnation})
	c.wantRoute("x", "", []string{"q2"})
	// auto lost its only binding (to q1): gone; auto2, whose only binding
	// was to auto, in turn.
	for _, name := range []string{"auto", "auto2"} {
		if _, ok := c.s.Exchange(name); ok {
			t.Fatalf("auto-delete exchange %q outlived its last binding", name)
		}
	}
	c.do(Command{Kind: DeleteExchange, Exchange: "x"})
	if n := len(c.s.Bindings()); n != 0 || c.s.bindingsBytes != 0 {
		t.Fatalf("%d bindings (%d bytes) left after every end was deleted", n, c.s.bindingsBytes)
	}
}

// The image holds exchanges and bindings (version 9) and decodes to the
// same State; a catalogue without them keeps version 8's bytes, and a
// version 9 image with both sections empty is refused (a second image of
// one State).
func TestImageWithExchanges(t *testing.T) {
	plain := imageState(t)
	if img := plain.AppendImage(nil); img[0] != imageVersionQueues {
		t.Fatalf("an image without exchanges is version %d, want %d", img[0], imageVersionQueues)
	}
	s := imageState(t)
	c := &catalogue{t: t, s: s, index: s.applied}
	c.do(exchangeCmd("logs", route.Topic))
	c.do(Command{Kind: DeclareExchange, Exchange: "spare", ExchangeKind: route.Headers, AutoDelete: true, Alternate: "logs"})
	c.do(bindCmd("logs", "orders", "eu.#"))
	c.do(bindCmd("amq.match", "clicks", "", str("x-match", "any"), str("k", "v")))
	c.do(Command{Kind: Bind, Exchange: "logs", Dest: "spare", RoutingKey: "*"})
	img := c.s.AppendImage(nil)
	if img[0] != imageVersion {
		t.Fatalf("an image with exchanges is version %d, want %d", img[0], imageVersion)
	}
	back, err := DecodeImage(img)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c.s) {
		t.Fatalf("image decodes to\n%+v\nwant\n%+v", back, c.s)
	}
	for cut := range len(img) {
		if _, err := DecodeImage(img[:cut]); err == nil {
			t.Fatalf("an image cut at %d of %d bytes decoded", cut, len(img))
		}
	}
	empty := plain.AppendImage(nil)
	empty[0] = imageVersion
	empty = append(empty, 0, 0)
	if _, err := DecodeImage(empty); err == nil {
		t.Fatal("a version 9 image with no exchanges and no bindings decoded")
	}
	// A binding whose queue the image does not hold is refused.
	bad := c.s
	bad.bindings = slices.Clone(bad.bindings)
	bad.bindings[0].Queue = "zz-missing"
	if _, err := DecodeImage(bad.AppendImage(nil)); err == nil {
		t.Fatal("an image binding to a missing queue decoded")
	}
}

func TestRouteQueryCodec(t *testing.T) {
	q := RouteQuery{Exchange: "logs", Key: "a.b", MinApplied: 77, Headers: []route.Field{str("a", "1"), {Key: "b", Class: route.ClassVoid}}}
	b := AppendRouteQuery(nil, &q)
	back, err := DecodeRouteQuery(b)
	if err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("decoded %+v, %v; want %+v", back, err, q)
	}
	for n := range len(b) {
		if _, err := DecodeRouteQuery(b[:n]); err == nil {
			t.Fatalf("a %d-byte prefix of %d decoded", n, len(b))
		}
	}
	names := []string{"a", "bb", "ccc"}
	got, err := DecodeRouted(nil, AppendRouted(nil, names))
	if err != nil || !slices.Equal(got, names) {
		t.Fatalf("routed %q, %v", got, err)
	}
	if _, err := DecodeRouted(nil, append(AppendRouted(nil, names), 0)); err == nil {
		t.Fatal("a route answer with a trailing byte decoded")
	}
}

func FuzzDecodeRouteQuery(f *testing.F) {
	f.Add(AppendRouteQuery(nil, &RouteQuery{Exchange: "x", Key: "k", Headers: []route.Field{str("a", "b")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := DecodeRouteQuery(b)
		if err != nil {
			return
		}
		if again := AppendRouteQuery(nil, &q); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to a query that encodes as %x", b, again)
		}
	})
}
