package metadata

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core/route"
	"github.com/sluicemq/sluice/core/seam"
)

// Exchange is one exchange of the catalogue. The default exchange ("")
// is no entry: it routes a message to the queue its routing key names.
// The predeclared exchanges (amq.direct, amq.fanout, amq.headers,
// amq.match, amq.topic, as RabbitMQ has them) are no entries either:
// every catalogue holds them, they cannot be deleted, and bindings may
// name them.
type Exchange struct {
	Name       string
	Kind       route.Kind
	Durable    bool
	AutoDelete bool // deleted once its last binding as a source goes
	Internal   bool // no publish names it: only exchange bindings reach it
	// Alternate: the exchange a message goes to when no binding of this
	// one matches it ("" none; RabbitMQ's alternate-exchange argument).
	Alternate string
	// Incarnation is the declaring entry's index (0: predeclared).
	Incarnation uint64
}

// Binding routes messages from exchange Source that match its Key and
// Args to queue Queue or to exchange Exchange (one of the two is set).
type Binding struct {
	Source   string
	Queue    string
	Exchange string
	Key      string
	// Args is the binding's arguments as route.AppendFields encodes them
	// (a headers exchange matches on them); fields is their decoding.
	Args   string
	fields []route.Field
}

// Limits of the exchange catalogue. A binding costs at most
// BindingBytesMax in the image; BindingsBytesMax bounds their sum, so
// that the largest catalogue keeps its image within ImageBytesMax.
const (
	ExchangesMax        = 4096
	BindingsMax         = QueuesMax
	BindingArgsBytesMax = 512
	BindingsBytesMax    = 16 << 20
)

// predeclared are the exchanges every catalogue holds (RabbitMQ's amq.*
// set; amq.rabbitmq.trace is not: nothing publishes to it here).
var predeclared = [...]Exchange{
	{Name: "amq.direct", Kind: route.Direct, Durable: true},
	{Name: "amq.fanout", Kind: route.Fanout, Durable: true},
	{Name: "amq.headers", Kind: route.Headers, Durable: true},
	{Name: "amq.match", Kind: route.Headers, Durable: true},
	{Name: "amq.topic", Kind: route.Topic, Durable: true},
}

// reservedPrefix starts the names no client declares (RabbitMQ's rule).
const reservedPrefix = "amq."

// Exchanges returns the declared exchanges by name (not the predeclared
// ones; the caller must not change them).
func (s *State) Exchanges() []Exchange { return s.exchanges }

// Bindings returns the bindings in their order (by source, queue,
// exchange, key and arguments; the caller must not change them).
func (s *State) Bindings() []Binding { return s.bindings }

// Exchange returns exchange name, declared or predeclared.
func (s *State) Exchange(name string) (Exchange, bool) {
	if i, ok := s.exchangeIndex(name); ok {
		return s.exchanges[i], true
	}
	for _, x := range predeclared {
		if x.Name == name {
			return x, true
		}
	}
	return Exchange{}, false
}

func (s *State) exchangeIndex(name string) (int, bool) {
	return slices.BinarySearchFunc(s.exchanges, name, func(x Exchange, name string) int { return strings.Compare(x.Name, name) })
}

// compareBindings orders bindings by source, then destination, key and
// arguments: one source's bindings are adjacent, for routing.
func compareBindings(a, b *Binding) int {
	if c := strings.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	if c := strings.Compare(a.Queue, b.Queue); c != 0 {
		return c
	}
	if c := strings.Compare(a.Exchange, b.Exchange); c != 0 {
		return c
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Args, b.Args)
}

// sourceStart is the index of source's first binding.
func (s *State) sourceStart(source string) int {
	i, _ := slices.BinarySearchFunc(s.bindings, source, func(b Binding, source string) int { return strings.Compare(b.Source, source) })
	return i
}

// hasBindingsFrom reports whether exchange name is the source of any binding.
func (s *State) hasBindingsFrom(name string) bool {
	i := s.sourceStart(name)
	return i < len(s.bindings) && s.bindings[i].Source == name
}

// bindingBytes is what binding b costs in the image.
func bindingBytes(b *Binding) int {
	return 4*2 + len(b.Source) + len(b.Queue) + len(b.Exchange) + len(b.Key) + len(b.Args) + 2
}

func equivalent(a, b *Exchange) bool {
	return a.Kind == b.Kind && a.Durable == b.Durable && a.AutoDelete == b.AutoDelete && a.Internal == b.Internal && a.Alternate == b.Alternate
}

func (s *State) declareExchange(index uint64, c *Command) (string, error) {
	want := Exchange{Name: c.Exchange, Kind: c.ExchangeKind, Durable: c.Durable, AutoDelete: c.AutoDelete, Internal: c.Internal, Alternate: c.Alternate}
	if x, ok := s.Exchange(c.Exchange); ok {
		if !equivalent(&x, &want) {
			return "", refuseAs(seam.RefusalConflict, "exchange %q exists as %s", x.Name, exchangeText(&x))
		}
		return fmt.Sprintf("exists exchange %q incarnation=%d", x.Name, x.Incarnation), nil
	}
	if strings.HasPrefix(c.Exchange, reservedPrefix) {
		return "", refuseAs(seam.RefusalReserved, "exchange name %q: the %s prefix is reserved", c.Exchange, reservedPrefix)
	}
	if len(s.exchanges) >= ExchangesMax {
		return "", refuseAs(seam.RefusalLimit, "%d exchanges already, the limit", ExchangesMax)
	}
	i, _ := s.exchangeIndex(c.Exchange)
	want.Incarnation = index
	s.exchanges = slices.Insert(s.exchanges, i, want)
	return fmt.Sprintf("declared exchange %q incarnation=%d", want.Name, index), nil
}

func (s *State) deleteExchange(c *Command) (string, error) {
	i, ok := s.exchangeIndex(c.Exchange)
	if !ok {
		if _, ok := s.Exchange(c.Exchange); ok {
			return "", refuseAs(seam.RefusalReserved, "exchange %q is predeclared: it cannot be deleted", c.Exchange)
		}
		return "", refuseAs(seam.RefusalNotFound, "no exchange %q", c.Exchange)
	}
	if c.IfUnused && s.hasBindingsFrom(c.Exchange) {
		return "", refuseAs(seam.RefusalInUse, "exchange %q is in use: it is the source of bindings", c.Exchange)
	}
	s.exchanges = slices.Delete(s.exchanges, i, i+1)
	n := s.unbindWhere(func(b *Binding) bool { return b.Source == c.Exchange || b.Exchange == c.Exchange })
	return fmt.Sprintf("deleted exchange %q bindings=%d", c.Exchange, n), nil
}

// bindingOf is the binding a Bind or Unbind command names.
func bindingOf(c *Command) Binding {
	return Binding{Source: c.Exchange, Queue: c.Queue, Exchange: c.Dest, Key: c.RoutingKey, Args: c.Args}
}

// bindEnds checks that binding b's source and destination exist.
func (s *State) bindEnds(b *Binding) error {
	if _, ok := s.Exchange(b.Source); !ok {
		return refuseAs(seam.RefusalNotFound, "no exchange %q", b.Source)
	}
	if b.Queue != "" {
		if _, ok := s.queueIndex(b.Queue); !ok {
			return refuseAs(seam.RefusalNotFound, "no queue %q", b.Queue)
		}
	} else if _, ok := s.Exchange(b.Exchange); !ok {
		return refuseAs(seam.RefusalNotFound, "no exchange %q", b.Exchange)
	}
	return nil
}

func (s *State) bind(c *Command) (string, error) {
	b := bindingOf(c)
	if err := s.bindEnds(&b); err != nil {
		return "", err
	}
	i, ok := slices.BinarySearchFunc(s.bindings, &b, func(x Binding, b *Binding) int { return compareBindings(&x, b) })
	if ok {
		return fmt.Sprintf("exists binding %s", b.String()), nil
	}
	if len(s.bindings) >= BindingsMax || s.bindingsBytes+bindingBytes(&b) > BindingsBytesMax {
		return "", refuseAs(seam.RefusalLimit, "%d bindings of %d bytes already, the limit", len(s.bindings), s.bindingsBytes)
	}
	fs, err := decodeArgs(b.Args)
	if err != nil {
		panic("metadata: a validated binding's arguments do not decode: " + err.Error())
	}
	if x, _ := s.Exchange(b.Source); x.Kind == route.Headers {
		if err := route.CheckHeadersArgs(fs); err != nil {
			return "", refuseAs(seam.RefusalConflict, "binding to headers exchange %q: %v", b.Source, err)
		}
	}
	b.fields = fs
	s.bindings = slices.Insert(s.bindings, i, b)
	s.bindingsBytes += bindingBytes(&b)
	return fmt.Sprintf("bound %s", b.String()), nil
}

func (s *State) unbind(c *Command) (string, error) {
	b := bindingOf(c)
	if err := s.bindEnds(&b); err != nil {
		return "", err
	}
	n := s.unbindWhere(func(x *Binding) bool { return compareBindings(x, &b) == 0 })
	if n == 0 {
		// RabbitMQ's unbind of a binding that does not exist succeeds.
		return fmt.Sprintf("no binding %s", b.String()), nil
	}
	return fmt.Sprintf("unbound %s", b.String()), nil
}

// unbindWhere removes every binding drop matches, then every auto-delete
// exchange left without bindings as a source (and, in turn, the bindings
// to it); it returns how many bindings went.
func (s *State) unbindWhere(drop func(*Binding) bool) int {
	removed := 0
	var sources []string
	for {
		keep := s.bindings[:0]
		for i := range s.bindings {
			b := &s.bindings[i]
			if !drop(b) {
				keep = append(keep, *b)
				continue
			}
			removed++
			s.bindingsBytes -= bindingBytes(b)
			if !slices.Contains(sources, b.Source) {
				sources = append(sources, b.Source)
			}
		}
		clear(s.bindings[len(keep):])
		s.bindings = keep
		var gone []string
		for _, src := range sources {
			if i, ok := s.exchangeIndex(src); ok && s.exchanges[i].AutoDelete && !s.hasBindingsFrom(src) {
				s.exchanges = slices.Delete(s.exchanges, i, i+1)
				gone = append(gone, src)
			}
		}
		sources = sources[:0]
		if len(gone) == 0 {
			return removed
		}
		drop = func(b *Binding) bool { return slices.Contains(gone, b.Source) || slices.Contains(gone, b.Exchange) }
	}
}

// Route appends to dst, sorted and each once, the queues a message
// published to exchange ex with routing key key and headers (sorted by
// key, route.Sorted) reaches by the bindings applied, as RabbitMQ routes:
// the default exchange ("") to the queue named key; any other through
// every binding that matches, following exchange bindings, each exchange
// once, and an exchange that no binding of matches hands the message to
// its alternate exchange. A missing exchange is RefusalNotFound, an
// internal one RefusalInternal.
func (s *State) Route(dst []string, ex, key string, headers []route.Field) ([]string, seam.Refusal) {
	if ex == "" {
		if _, ok := s.queueIndex(key); ok {
			dst = append(dst, key)
		}
		return dst, seam.RefusalNone
	}
	x, ok := s.Exchange(ex)
	if !ok {
		return dst, seam.RefusalNotFound
	}
	if x.Internal {
		return dst, seam.RefusalInternal
	}
	first := len(dst)
	visit := []string{ex}
	for next := 0; next < len(visit); next++ {
		x, ok := s.Exchange(visit[next])
		if !ok {
			continue // an alternate exchange that does not exist (RabbitMQ: ignored)
		}
		matched := false
		for i := s.sourceStart(x.Name); i < len(s.bindings) && s.bindings[i].Source == x.Name; i++ {
			b := &s.bindings[i]
			if !route.Match(x.Kind, b.Key, b.fields, key, headers) {
				continue
			}
			matched = true
			switch {
			case b.Queue != "":
				dst = append(dst, b.Queue)
			case !slices.Contains(visit, b.Exchange):
				visit = append(visit, b.Exchange)
			}
		}
		if !matched && x.Alternate != "" && !slices.Contains(visit, x.Alternate) {
			visit = append(visit, x.Alternate)
		}
	}
	routed := dst[first:]
	slices.Sort(routed)
	return append(dst[:first], slices.Compact(routed)...), seam.RefusalNone
}

// BindingArgs is the encoding of a binding's arguments (Command.Args,
// Binding.Args): "" for none, else route.AppendFields's.
func BindingArgs(fs []route.Field) string {
	if len(fs) == 0 {
		return ""
	}
	return string(route.AppendFields(nil, fs))
}

// decodeArgs reads BindingArgs's encoding, refusing any other (an empty
// list spelt out is not "").
func decodeArgs(args string) ([]route.Field, error) {
	if args == "" {
		return nil, nil
	}
	fs, err := route.DecodeFields([]byte(args))
	if err == nil && len(fs) == 0 {
		err = errors.New("an empty argument list is written as no bytes")
	}
	return fs, err
}

func exchangeText(x *Exchange) string {
	return fmt.Sprintf("%s durable=%t auto-delete=%t internal=%t alternate=%q", x.Kind, x.Durable, x.AutoDelete, x.Internal, x.Alternate)
}

// String is the binding's stable one-line text form.
func (b Binding) String() string {
	fs, err := decodeArgs(b.Args)
	args := "?"
	if err == nil {
		args = route.FieldsText(fs)
	}
	if b.Queue != "" {
		return fmt.Sprintf("%q -> queue %q key=%q args=%s", b.Source, b.Queue, b.Key, args)
	}
	return fmt.Sprintf("%q -> exchange %q key=%q args=%s", b.Source, b.Exchange, b.Key, args)
}
