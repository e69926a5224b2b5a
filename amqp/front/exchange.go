package front

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/route"
	"github.com/sluicemq/sluice/core/seam"
)

// Exchanges and bindings. exchange.declare, exchange.delete, queue.bind
// and queue.unbind each commit one metadata command through the metadata
// group (at its leader, retried while there is none or the outcome is
// unknown: every one of them is idempotent), then ask this broker's core
// a route question that waits until it has applied the command's entry,
// so that what the client does next, here, routes by it. A passive
// exchange.declare is that question alone. Publishes to an exchange other
// than the default ask the core which queues the message reaches
// (seam.ReqRoute, from the applied bindings, at least as new as the last
// command this connection saw committed), then go to each queue as a
// publish of its own; the client's confirm waits for all of them.

// catalogKind says what a catalogue operation does.
type catalogKind uint8

const (
	catDeclare catalogKind = iota + 1
	catCheck               // a passive exchange.declare
	catDelete
	catBind
	catUnbind
)

// catalogOp is an exchange.declare, exchange.delete, queue.bind or
// queue.unbind in progress: its command (cmd) until it commits, then its
// check (a route question on exchange, with the committed index).
type catalogOp struct {
	op       conn.OpID
	kind     catalogKind
	exchange string
	cmd      []byte
	leader   seam.NodeID // where the command goes (Forward: the leader last named; 0: this broker)
	index    uint64      // the committed entry; the check waits for it
	checking bool
	atNs     int64 // next attempt (in catalogTimed)
	untilNs  int64 // give up after
}

// routed is a publish in the connection's route order (connState.routeQ):
// an exchange publish waiting for its route answer, or any publish behind
// one, so that one connection's publishes reach each queue in order.
type routed struct {
	x        conn.EfPublish
	asked    bool // a route question is on its way (exchange publishes)
	answered bool
	names    []string // the queues it reaches (answered)
	refusal  seam.Refusal
	text     string
	resendNs int64 // asked again then (0: not waiting to)
	firstNs  int64
}

// fan is a publish routed to several queues: its client's answer waits for
// every queue's (connState.fans).
type fan struct {
	left                          int
	confirmed, unroutable, failed int
	text                          string
	unknown                       bool
	mandatory                     bool
	content                       conn.Content
}

// catalogStart begins an exchange.declare, exchange.delete or bind.
func (f *Front) catalogStart(c *connState, op conn.OpID, kind catalogKind, exchange string, cmd *metadata.Command) {
	o := &catalogOp{op: op, kind: kind, exchange: exchange, untilNs: f.nowNs + f.cfg.DeclareTimeoutNs}
	if cmd != nil {
		if err := cmd.Validate(); err != nil {
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: op, Code: wire.PreconditionFailed, Text: err.Error()})
			return
		}
		o.cmd = cmd.Encode(nil)
	} else {
		o.checking = true
	}
	f.catalogAsk(c, o)
}

// catalogAsk sends o's next request: its command, or its check.
func (f *Front) catalogAsk(c *connState, o *catalogOp) {
	if !o.checking {
		f.request(c, c.client, seam.Request{Kind: seam.ReqMeta, Body: o.cmd}, &pending{kind: pCatalog, cat: o}, o.leader)
		return
	}
	q := metadata.RouteQuery{Exchange: o.exchange, MinApplied: o.index}
	f.request(c, c.client, seam.Request{Kind: seam.ReqRoute, Body: metadata.AppendRouteQuery(nil, &q)}, &pending{kind: pCatalog, cat: o}, 0)
}

// catalogLater asks again after RetryNs, or gives up (why) past o's time.
func (f *Front) catalogLater(c *connState, o *catalogOp, why string) {
	if f.nowNs+f.cfg.RetryNs > o.untilNs {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op, Code: wire.ResourceLocked,
			Text: fmt.Sprintf("exchange '%s': not done in time: %s", o.exchange, why)})
		return
	}
	o.atNs = f.nowNs + f.cfg.RetryNs
	c.catalogTimed = append(c.catalogTimed, o)
}

// catalogAnswer takes the core's answer to o's request.
func (f *Front) catalogAnswer(c *connState, o *catalogOp, e *seam.Effect) {
	if o.checking {
		switch {
		case e.Outcome == seam.Confirmed, e.Refusal == seam.RefusalInternal:
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op})
		case e.Refusal == seam.RefusalBehind:
			f.catalogLater(c, o, e.Reason)
		case e.Refusal == seam.RefusalNotFound && o.kind == catCheck:
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op, Code: wire.NotFound, Text: fmt.Sprintf("no exchange '%s' in vhost '/'", o.exchange)})
		case e.Refusal == seam.RefusalNotFound:
			// Applied, and gone since (a delete's own, or another
			// client's): what the command did holds.
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op})
		default:
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op, Code: wire.InternalError, Text: fmt.Sprintf("exchange '%s': %s", o.exchange, e.Reason)})
		}
		return
	}
	switch {
	case e.Outcome == seam.Confirmed:
		o.checking, o.index = true, e.Offset
		c.seenIndex = max(c.seenIndex, e.Offset)
		f.catalogAsk(c, o)
	case e.Outcome == seam.Failed && e.Offset != 0:
		c.seenIndex = max(c.seenIndex, e.Offset)
		f.catalogRefused(c, o, e)
	case f.cfg.Forward && e.Outcome == seam.Failed && f.leaderMovedTo(&o.leader, e.Reason):
		f.catalogAsk(c, o)
	case e.Outcome == seam.Unknown, strings.HasPrefix(e.Reason, "not the leader"):
		o.leader = 0
		f.catalogLater(c, o, e.Reason)
	default:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op, Code: wire.InternalError, Text: fmt.Sprintf("exchange '%s': %s", o.exchange, e.Reason)})
	}
}

// catalogRefused answers o, whose command committed and the metadata
// refused (changing nothing), by the refusal's type, in RabbitMQ's codes.
func (f *Front) catalogRefused(c *connState, o *catalogOp, e *seam.Effect) {
	code, text := wire.InternalError, e.Reason
	switch e.Refusal {
	case seam.RefusalNotFound:
		if o.kind == catDelete {
			// exchange.delete is idempotent (RabbitMQ's): one that does
			// not exist is as deleted.
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op})
			return
		}
		code = wire.NotFound
	case seam.RefusalConflict:
		code = wire.PreconditionFailed
		if o.kind == catDeclare {
			text = fmt.Sprintf("inequivalent arg for exchange '%s' in vhost '/': %s", o.exchange, e.Reason)
		}
	case seam.RefusalInUse:
		code, text = wire.PreconditionFailed, fmt.Sprintf("exchange '%s' in vhost '/' in use", o.exchange)
	case seam.RefusalReserved:
		code = wire.AccessRefused
	case seam.RefusalLimit:
		code = wire.ResourceLocked
	}
	f.input(c, conn.InResult{NowNs: f.nowNs, Op: o.op, Code: code, Text: text})
}

// leaderMovedTo says whether a refusal names a leader other than *leader,
// the broker the command went to, and if so sends it there next.
func (f *Front) leaderMovedTo(leader *seam.NodeID, reason string) bool {
	named := leaderNamed(reason)
	if named == 0 {
		return false
	}
	if named == f.cfg.Node {
		named = 0
	}
	if named == *leader {
		return false
	}
	*leader = named
	return true
}

// exchangeDeclare begins an exchange.declare.
func (f *Front) exchangeDeclare(c *connState, x conn.EfDeclareExchange) {
	if x.Passive {
		f.catalogStart(c, x.Op, catCheck, x.Exchange, nil)
		return
	}
	kind, ok := route.ParseKind(x.Type)
	if !ok {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: x.Op, Code: wire.CommandInvalid, Text: fmt.Sprintf("unknown exchange type '%s'", x.Type)})
		return
	}
	f.catalogStart(c, x.Op, catDeclare, x.Exchange, &metadata.Command{Kind: metadata.DeclareExchange, Exchange: x.Exchange,
		ExchangeKind: kind, Durable: x.Durable, AutoDelete: x.AutoDelete, Internal: x.Internal, Alternate: x.Alternate})
}

// exchangeDelete begins an exchange.delete.
func (f *Front) exchangeDelete(c *connState, x conn.EfDeleteExchange) {
	f.catalogStart(c, x.Op, catDelete, x.Exchange, &metadata.Command{Kind: metadata.DeleteExchange, Exchange: x.Exchange, IfUnused: x.IfUnused})
}

// bind begins a queue.bind or queue.unbind.
func (f *Front) bind(c *connState, x conn.EfBind) {
	fs, err := headerFields(x.Arguments, false)
	if err != nil {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: x.Op, Code: wire.PreconditionFailed, Text: fmt.Sprintf("binding arguments: %v", err)})
		return
	}
	cmd := metadata.Command{Kind: metadata.Bind, Exchange: x.Exchange, Queue: x.Queue, Dest: x.Destination, RoutingKey: x.RoutingKey, Args: metadata.BindingArgs(fs)}
	kind := catBind
	if x.Unbind {
		cmd.Kind, kind = metadata.Unbind, catUnbind
	}
	f.catalogStart(c, x.Op, kind, x.Exchange, &cmd)
}

// headerFields turns an AMQP table (a message's headers, a binding's
// arguments) into the catalogue's sorted fields (core/route): each value
// as its type class and canonical form. A binding's value over
// route.FieldBytesMax is refused; a message's is kept as an empty value of
// class other, which equals no binding's value (every one of that class
// is a non-empty encoding, and no longer value could equal one) but
// still answers a binding that asks for the header's presence.
func headerFields(t wire.Table, message bool) ([]route.Field, error) {
	if len(t) == 0 {
		return nil, nil
	}
	if len(t) > route.FieldsMax {
		return nil, fmt.Errorf("%d fields, over %d", len(t), route.FieldsMax)
	}
	fs := make([]route.Field, 0, len(t))
	for _, fl := range t {
		v, err := fieldOf(fl)
		if err != nil && message && len(fl.Name) <= route.FieldBytesMax {
			v, err = route.Field{Key: fl.Name, Class: route.ClassOther}, nil
		}
		if err != nil {
			return nil, err
		}
		fs = append(fs, v)
	}
	slices.SortFunc(fs, func(a, b route.Field) int { return strings.Compare(a.Key, b.Key) })
	if err := route.Sorted(fs); err != nil {
		return nil, err
	}
	return fs, nil
}

func fieldOf(fl wire.Field) (route.Field, error) {
	if len(fl.Name) > route.FieldBytesMax {
		return route.Field{}, fmt.Errorf("field name of %d bytes, over %d", len(fl.Name), route.FieldBytesMax)
	}
	f := route.Field{Key: fl.Name}
	switch v := fl.Value.(type) {
	case nil:
		f.Class = route.ClassVoid
	case bool:
		f.Class, f.Value = route.ClassBool, "f"
		if v {
			f.Value = "t"
		}
	case string:
		f.Class, f.Value = route.ClassString, v
	case int8:
		f.Class, f.Value = route.ClassNumber, route.IntValue(int64(v))
	case uint8:
		f.Class, f.Value = route.ClassNumber, route.IntValue(int64(v))
	case int16:
		f.Class, f.Value = route.ClassNumber, route.IntValue(int64(v))
	case uint16:
		f.Class, f.Value = route.ClassNumber, route.IntValue(int64(v))
	case int32:
		f.Class, f.Value = route.ClassNumber, route.IntValue(int64(v))
	case uint32:
		f.Class, f.Value = route.ClassNumber, route.IntValue(int64(v))
	case int64:
		f.Class, f.Value = route.ClassNumber, route.IntValue(v)
	case float32:
		f.Class, f.Value = route.ClassNumber, route.FloatValue(uint64(math.Float32bits(v)), 32)
	case float64:
		f.Class, f.Value = route.ClassNumber, route.FloatValue(math.Float64bits(v), 64)
	case wire.Decimal:
		f.Class, f.Value = route.ClassNumber, route.DecimalValue(v.Scale, int64(v.Value))
	default:
		b, err := wire.AppendTable(nil, wire.Table{{Name: "v", Value: v}})
		if err != nil {
			return route.Field{}, err
		}
		f.Class, f.Value = route.ClassOther, string(b)
	}
	if len(f.Value) > route.FieldBytesMax {
		return route.Field{}, fmt.Errorf("field %q: value of %d bytes, over %d", fl.Name, len(f.Value), route.FieldBytesMax)
	}
	return f, nil
}

// enqueuePublish puts publish x in the connection's route order: an
// exchange publish asks the core its route; any publish behind one that
// waits for its answer waits too.
func (f *Front) enqueuePublish(c *connState, x conn.EfPublish) {
	if x.Exchange == "" && len(c.routeQ) == 0 {
		f.resolve(c, x.RoutingKey, x)
		return
	}
	r := &routed{x: x, firstNs: f.nowNs}
	if x.Exchange == "" {
		r.answered = true
	} else {
		f.askPublishRoute(c, r)
	}
	c.routeQ = append(c.routeQ, r)
	f.drainRouted(c)
}

// askPublishRoute sends r's route question.
func (f *Front) askPublishRoute(c *connState, r *routed) {
	hs, err := headerFields(r.x.Properties.Headers, true)
	if err != nil {
		// Headers the catalogue cannot compare route by nothing but
		// what the binding ignores: refuse the publish rather than guess.
		r.answered, r.refusal, r.text = true, seam.RefusalLimit, fmt.Sprintf("headers: %v", err)
		return
	}
	q := metadata.RouteQuery{Exchange: r.x.Exchange, Key: r.x.RoutingKey, Headers: hs, MinApplied: c.seenIndex}
	r.asked, r.resendNs = true, 0
	f.request(c, c.client, seam.Request{Kind: seam.ReqRoute, Body: metadata.AppendRouteQuery(nil, &q)}, &pending{kind: pPublishRoute, routed: r}, 0)
}

// publishRouteAnswer takes the core's route answer for r.
func (f *Front) publishRouteAnswer(c *connState, r *routed, e *seam.Effect) {
	r.asked = false
	switch {
	case e.Outcome == seam.Confirmed:
		names, err := metadata.DecodeRouted(nil, e.Body)
		if err != nil {
			r.answered, r.refusal, r.text = true, seam.RefusalNone, err.Error()
			break
		}
		r.answered, r.names = true, names
	case e.Refusal == seam.RefusalBehind && f.nowNs+f.cfg.RetryNs-r.firstNs <= f.cfg.RouteWaitNs:
		r.resendNs = f.nowNs + f.cfg.RetryNs
		return
	default:
		r.answered, r.refusal, r.text = true, e.Refusal, "route: "+e.Reason
	}
	f.drainRouted(c)
}

// resendRoutesDue asks again the route questions whose time came.
func (f *Front) resendRoutesDue(c *connState) {
	for _, r := range c.routeQ {
		if !r.answered && !r.asked && r.resendNs > 0 && r.resendNs <= f.nowNs {
			f.askPublishRoute(c, r)
		}
	}
	f.drainRouted(c)
}

// drainRouted sends, in order, the publishes at the head of the route
// order whose routes are known.
func (f *Front) drainRouted(c *connState) {
	n := 0
	for n < len(c.routeQ) && c.routeQ[n].answered {
		f.sendRouted(c, c.routeQ[n])
		n++
	}
	if n > 0 {
		clear(c.routeQ[:n])
		c.routeQ = slices.Delete(c.routeQ, 0, n)
	}
}

// sendRouted sends publish r, whose route is known, to its queues.
func (f *Front) sendRouted(c *connState, r *routed) {
	x := r.x
	switch {
	case x.Exchange == "":
		f.resolve(c, x.RoutingKey, x)
		return
	case r.refusal == seam.RefusalNotFound:
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{{ID: x.ID, Outcome: conn.Refused,
			Code: wire.NotFound, Text: fmt.Sprintf("no exchange '%s' in vhost '/'", x.Exchange)}}})
		return
	case r.refusal == seam.RefusalInternal:
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{{ID: x.ID, Outcome: conn.Refused,
			Code: wire.AccessRefused, Text: fmt.Sprintf("cannot publish to internal exchange '%s' in vhost '/'", x.Exchange)}}})
		return
	case r.text != "" && r.names == nil:
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{{ID: x.ID, Outcome: conn.Failed, Text: r.text}}})
		return
	case len(r.names) == 0:
		res := conn.PublishResult{ID: x.ID, Outcome: conn.Unroutable}
		if x.Mandatory {
			content := x.Content
			res.Returned = &content
		}
		f.input(c, conn.InPublished{NowNs: f.nowNs, Results: []conn.PublishResult{res}})
		return
	}
	if len(r.names) > 1 {
		c.fans[x.ID] = &fan{left: len(r.names), mandatory: x.Mandatory, content: x.Content}
	}
	for _, name := range r.names {
		f.resolve(c, name, x)
	}
}

// foldFan folds one queue's outcome of a fanned-out publish into its fan;
// it returns the client's answer once every queue answered (ok).
func foldFan(fn *fan, r *conn.PublishResult) (res conn.PublishResult, ok bool) {
	fn.left--
	switch r.Outcome {
	case conn.Confirmed:
		fn.confirmed++
	case conn.Unroutable:
		// The queue went between the route and the publish.
		fn.unroutable++
	case conn.Unknown:
		fn.unknown = true
		fn.text = r.Text
	default:
		fn.failed++
		fn.text = r.Text
	}
	if fn.left > 0 {
		return conn.PublishResult{}, false
	}
	res = conn.PublishResult{ID: r.ID}
	switch {
	case fn.failed > 0:
		res.Outcome, res.Text = conn.Failed, fn.text
	case fn.unknown:
		res.Outcome, res.Text = conn.Unknown, fn.text
	case fn.confirmed > 0:
		res.Outcome = conn.Confirmed
	default:
		res.Outcome = conn.Unroutable
		if fn.mandatory {
			content := fn.content
			res.Returned = &content
		}
	}
	return res, true
}

// foldFans replaces the results of fanned-out publishes by their clients'
// answers, each once every queue answered.
func (c *connState) foldFans(results []conn.PublishResult) []conn.PublishResult {
	if len(c.fans) == 0 {
		return results
	}
	out := make([]conn.PublishResult, 0, len(results))
	for i := range results {
		fn := c.fans[results[i].ID]
		if fn == nil {
			out = append(out, results[i])
			continue
		}
		if res, ok := foldFan(fn, &results[i]); ok {
			delete(c.fans, results[i].ID)
			out = append(out, res)
		}
	}
	return out
}
