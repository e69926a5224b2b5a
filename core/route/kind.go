package route

import "strconv"

// Kind is an exchange kind. The values are stored in commands and
// images: never renumber them.
type Kind uint8

// The exchange kinds.
const (
	// Direct routes to the bindings whose key equals the routing key.
	Direct Kind = 1
	// Fanout routes to every binding.
	Fanout Kind = 2
	// Topic routes to the bindings whose key, a pattern, matches the
	// routing key (TopicMatch).
	Topic Kind = 3
	// Headers routes to the bindings whose arguments match the message's
	// headers (HeadersMatch).
	Headers Kind = 4
	// kindEnd is one past the last kind.
	kindEnd Kind = 5
)

// kindNames are the kinds' AMQP names, as exchange.declare carries them.
var kindNames = [...]string{Direct: "direct", Fanout: "fanout", Topic: "topic", Headers: "headers"}

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k > 0 && k < kindEnd }

// String is the kind's AMQP name, or "kind" and its number if it is none.
func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// ParseKind returns the kind AMQP names s. The names are case-sensitive,
// as RabbitMQ's are.
func ParseKind(s string) (Kind, bool) {
	for k := Direct; k < kindEnd; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Match reports whether a message published with routingKey and headers
// (sorted by key, Sorted) matches a binding with bindingKey and
// bindingArgs (sorted too) on an exchange of kind kind. An invalid kind
// matches nothing.
func Match(kind Kind, bindingKey string, bindingArgs []Field, routingKey string, headers []Field) bool {
	switch kind {
	case Direct:
		return bindingKey == routingKey
	case Fanout:
		return true
	case Topic:
		return TopicMatch(bindingKey, routingKey)
	case Headers:
		return HeadersMatch(bindingArgs, headers)
	}
	return false
}
