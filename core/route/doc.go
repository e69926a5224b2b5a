// Package route is the AMQP 0-9-1 routing match, as RabbitMQ routes: does
// a message published with a routing key and headers match a binding of
// a direct, fanout, topic or headers exchange. The metadata catalogue
// (core/metadata) resolves a publish with it on every replica, so it is
// pure and deterministic: no clock, randomness, goroutines or I/O, no Go
// map, no floating-point arithmetic (numbers are compared as canonical
// decimal strings, which every platform computes alike).
//
// # Contract
//
//   - Match(kind, bindingKey, bindingArgs, routingKey, headers) is the
//     verdict of one binding: direct when the keys are equal, fanout
//     always, topic by TopicMatch(bindingKey, routingKey), headers by
//     HeadersMatch(bindingArgs, headers), the routing key ignored. An
//     invalid kind matches nothing.
//   - TopicMatch splits pattern and key into words at every '.': "*"
//     matches exactly one word, "#" zero or more, any other word itself.
//     Empty words are words ("a..b" has three), but "" has none, as
//     RabbitMQ splits a topic: "#" matches every key, "" included, and
//     "*" does not match "". It
//     runs in O(pattern words × key words) steps, each a comparison of
//     one word, with no recursion and no allocation: a literal pattern
//     never blows up, however many "#" it holds. There is no length
//     limit; AMQP keys are at most 255 bytes (shortstr), but the match is
//     exact for any length.
//   - HeadersMatch is RabbitMQ's headers exchange
//     (rabbit_exchange_type_headers): the binding's x-match argument
//     chooses all (the default, also for an unknown value), any,
//     all-with-x or any-with-x. A binding argument whose key begins "x-"
//     is not matched unless the mode ends in -with-x; x-match itself never
//     is. A void argument matches a header of that key with any value; any
//     other matches a header of that key, of the same Class, with the same
//     Value; a number whose Value is "nan" matches nothing. all needs every
//     matched argument to match (so a binding with none matches every
//     message), any needs one (so with none it matches no message). Both
//     lists must be sorted by key with distinct keys (Sorted); SortFields
//     puts a message's headers in that order the way RabbitMQ reads
//     duplicates. CheckHeadersArgs refuses an x-match RabbitMQ refuses
//     when binding.
//   - Values are codec-free (Field): the caller maps each AMQP field type
//     to a Class. Every integer type, float, double and decimal is
//     ClassNumber, with Value the number's canonical string (IntValue,
//     DecimalValue, FloatValue): one string per numeric value, whatever
//     the type that carried it, so 1, 1.0 and decimal 1.0 match, and
//     double 0.1 (exactly 0.1000000000000000055511151231257827021181583404541015625)
//     does not match decimal 0.1. A string is its bytes, a boolean "t" or
//     "f", void "", and anything else (timestamps, byte arrays, arrays,
//     tables) ClassOther with a canonical encoding the caller chooses:
//     equal values must encode equally, or they will not match.
//   - The canonical number is the exact value, never a rounding of it:
//     "0" for every zero; otherwise the plain decimal (-?digits, a '.' and
//     a fraction without trailing zeros only when there is a fraction) if
//     it is at most FieldBytesMax bytes; else DeK (D an integer without
//     trailing zeros, the value D×10^K) if that is; else, which only a
//     float64 far from 1 reaches, strconv's exact hexadecimal form
//     ("0x1.8p-1000"). Infinities are "inf" and "-inf". So every number
//     the helpers give fits FieldBytesMax, and a binding can hold any
//     number a message can carry.
//   - The field codec (AppendFields, DecodeFields) is canonical, because
//     the catalogue stores binding arguments inside commands and compares
//     them as bytes: one field list has one encoding, and DecodeFields
//     refuses every other byte string (unsorted or duplicate keys, an
//     unknown class, a value its class cannot hold, a non-canonical
//     number, padded varints, trailing bytes, limits exceeded). An empty
//     list is the single byte 0 (the count), not the empty string.
//     CheckFields gives DecodeFields' verdict on a list before it is
//     encoded; AppendFields encodes whatever it is given.
//   - Limits: FieldsMax fields, FieldBytesMax bytes per key and per
//     value, FieldsBytesMax bytes per encoded list. HeadersMatch and
//     TopicMatch themselves have none.
//   - FieldsText is a field list's stable one-line text form, for traces.
package route
