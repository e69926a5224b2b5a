package route

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Class is the type class of a field's value: the values of two fields
// can be equal only if their classes are. The values are stored in
// encoded field lists: never renumber them. Zero is no class, so that a
// Field whose class was forgotten is refused rather than read as void.
type Class uint8

// The classes.
const (
	// ClassVoid is a field without a value (AMQP's 'V'). As a binding
	// argument it matches a header of its key with any value.
	ClassVoid Class = 1
	// ClassNumber is every integer type, float, double and decimal; Value
	// is the canonical number (IntValue, DecimalValue, FloatValue).
	ClassNumber Class = 2
	// ClassString is a string; Value is its bytes.
	ClassString Class = 3
	// ClassBool is a boolean; Value is "t" or "f".
	ClassBool Class = 4
	// ClassOther is any other type; Value is a canonical encoding of the
	// type and value that the caller chooses: equal values must encode
	// equally.
	ClassOther Class = 5
	// classEnd is one past the last class.
	classEnd Class = 6
)

var classNames = [...]string{ClassVoid: "void", ClassNumber: "number", ClassString: "string", ClassBool: "bool", ClassOther: "other"}

// Valid reports whether c is one of the classes.
func (c Class) Valid() bool { return c > 0 && c < classEnd }

func (c Class) String() string {
	if c.Valid() {
		return classNames[c]
	}
	return "class" + strconv.Itoa(int(c))
}

// Field is one entry of a field table (AMQP's field-table), as a binding
// argument or a message header.
type Field struct {
	Key   string
	Class Class
	Value string
}

// Limits of a field list, as the codec and CheckFields hold them.
// FieldBytesMax is AMQP's shortstr, which every key already is; a value
// may be a longstr, but a binding is stored in a command of a few KiB.
const (
	FieldsMax     = 64
	FieldBytesMax = 255
	// FieldsBytesMax bounds an encoded field list: the count, then per
	// field a key and a value of FieldBytesMax (two-byte lengths) and the
	// class byte.
	FieldsBytesMax = 1 + FieldsMax*(2+FieldBytesMax+1+2+FieldBytesMax)
)

// The x-match argument of a headers binding, and its values.
const (
	XMatch         = "x-match"
	XMatchAll      = "all"
	XMatchAny      = "any"
	XMatchAllWithX = "all-with-x"
	XMatchAnyWithX = "any-with-x"
)

// HeadersMatch reports whether a message with headers matches a headers
// binding with arguments binding, as RabbitMQ's headers exchange does
// (doc.go). Both lists must be sorted with distinct keys (Sorted); then
// it is one merge of the two, in O(len(binding) + len(headers)).
func HeadersMatch(binding, headers []Field) bool {
	all, withX := xMatch(binding)
	allMatch, anyMatch := true, false
	h := 0
	for i := range binding {
		b := &binding[i]
		if b.Key == XMatch || (!withX && strings.HasPrefix(b.Key, "x-")) {
			continue
		}
		for h < len(headers) && headers[h].Key < b.Key {
			h++
		}
		if h < len(headers) && headers[h].Key == b.Key && valueMatch(b, &headers[h]) {
			anyMatch = true
		} else {
			allMatch = false
		}
		// The verdict is known as soon as one argument decides it.
		if all && !allMatch {
			return false
		}
		if !all && anyMatch {
			return true
		}
	}
	if all {
		return allMatch
	}
	return anyMatch
}

// xMatch reads the binding's x-match mode: all (the default, and what
// RabbitMQ reads any value other than the four as) or any, with or
// without the x- arguments.
func xMatch(binding []Field) (all, withX bool) {
	i, ok := slices.BinarySearchFunc(binding, XMatch, func(f Field, k string) int { return strings.Compare(f.Key, k) })
	if !ok || binding[i].Class != ClassString {
		return true, false
	}
	switch binding[i].Value {
	case XMatchAny:
		return false, false
	case XMatchAllWithX:
		return true, true
	case XMatchAnyWithX:
		return false, true
	}
	return true, false
}

// valueMatch reports whether binding argument b matches header h of the
// same key.
func valueMatch(b, h *Field) bool {
	switch {
	case b.Class == ClassVoid:
		return true // presence is enough
	case b.Class != h.Class || !b.Class.Valid():
		return false
	case b.Class == ClassNumber && b.Value == "nan":
		return false // NaN equals nothing, not even NaN
	}
	return b.Value == h.Value
}

// CheckHeadersArgs refuses the arguments of a headers binding that
// RabbitMQ refuses to bind: an x-match that is not a string or not one of
// all, any, all-with-x and any-with-x. (HeadersMatch reads such a binding
// as all, as RabbitMQ does one bound before it checked.)
func CheckHeadersArgs(args []Field) error {
	for _, f := range args {
		if f.Key != XMatch {
			continue
		}
		if f.Class != ClassString {
			return fmt.Errorf("x-match of class %s, want a string", f.Class)
		}
		switch f.Value {
		case XMatchAll, XMatchAny, XMatchAllWithX, XMatchAnyWithX:
			return nil
		}
		return fmt.Errorf("x-match %q, want all, any, all-with-x or any-with-x", f.Value)
	}
	return nil
}

// Sorted reports whether fs is in the canonical order: keys strictly
// ascending (bytewise), so none twice.
func Sorted(fs []Field) error {
	for i := 1; i < len(fs); i++ {
		switch strings.Compare(fs[i-1].Key, fs[i].Key) {
		case 0:
			return fmt.Errorf("key %q twice", fs[i].Key)
		case 1:
			return fmt.Errorf("key %q after %q: keys not ascending", fs[i].Key, fs[i-1].Key)
		}
	}
	return nil
}

// SortFields puts fs in the canonical order in place and returns it:
// sorted by key, stably, and only the first field of each key kept. That
// is how RabbitMQ reads a message's headers: it sorts them stably by key,
// and its merge with the binding's arguments uses the first of equal keys
// and passes over the rest.
func SortFields(fs []Field) []Field {
	slices.SortStableFunc(fs, func(a, b Field) int { return strings.Compare(a.Key, b.Key) })
	return slices.CompactFunc(fs, func(a, b Field) bool { return a.Key == b.Key })
}

// CheckFields reports what DecodeFields would refuse in the encoding of
// fs: more than FieldsMax fields, keys not in the canonical order
// (Sorted), a key or value over FieldBytesMax, an invalid class, or a
// value its class cannot hold (void not "", a bool not "t" or "f", a
// number not canonical).
func CheckFields(fs []Field) error {
	if len(fs) > FieldsMax {
		return fmt.Errorf("%d fields, over %d", len(fs), FieldsMax)
	}
	if err := Sorted(fs); err != nil {
		return err
	}
	for i := range fs {
		if err := checkField(&fs[i]); err != nil {
			return err
		}
	}
	return nil
}

func checkField(f *Field) error {
	if len(f.Key) > FieldBytesMax {
		return fmt.Errorf("key of %d bytes, over %d", len(f.Key), FieldBytesMax)
	}
	if len(f.Value) > FieldBytesMax {
		return fmt.Errorf("field %q: value of %d bytes, over %d", f.Key, len(f.Value), FieldBytesMax)
	}
	switch f.Class {
	case ClassVoid:
		if f.Value != "" {
			return fmt.Errorf("field %q: void with a value", f.Key)
		}
	case ClassNumber:
		if !validNumber(f.Value) {
			return fmt.Errorf("field %q: number %q is not canonical", f.Key, f.Value)
		}
	case ClassBool:
		if f.Value != "t" && f.Value != "f" {
			return fmt.Errorf("field %q: bool %q, want t or f", f.Key, f.Value)
		}
	case ClassString, ClassOther:
	default:
		return fmt.Errorf("field %q: unknown class %d", f.Key, f.Class)
	}
	return nil
}

// ErrDecode is wrapped by every DecodeFields error.
var ErrDecode = errors.New("route: field list does not decode")

// AppendFields appends the encoding of fs to dst: the count as a
// uvarint, then per field the key (uvarint length, bytes), the class
// byte and the value (uvarint length, bytes). fs should pass CheckFields:
// DecodeFields refuses the encoding of a list that does not.
func AppendFields(dst []byte, fs []Field) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(fs)))
	for i := range fs {
		f := &fs[i]
		dst = binary.AppendUvarint(dst, uint64(len(f.Key)))
		dst = append(dst, f.Key...)
		dst = append(dst, byte(f.Class))
		dst = binary.AppendUvarint(dst, uint64(len(f.Value)))
		dst = append(dst, f.Value...)
	}
	return dst
}

// DecodeFields reads a field list AppendFields wrote: exactly (minimal
// varints, no trailing bytes), within the limits and valid (CheckFields).
// So a list decodes only from its one encoding. An empty list is the
// byte 0; no bytes at all are refused.
func DecodeFields(b []byte) ([]Field, error) {
	if len(b) > FieldsBytesMax {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrDecode, len(b), FieldsBytesMax)
	}
	r := reader{b: b}
	n := r.length(FieldsMax)
	var fs []Field
	if n > 0 {
		fs = make([]Field, n)
	}
	for i := range fs {
		if r.err != nil {
			break
		}
		fs[i].Key = r.str()
		fs[i].Class = Class(r.byte())
		fs[i].Value = r.str()
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, r.err)
	}
	if err := CheckFields(fs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return fs, nil
}

// reader reads an encoded field list, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New(what)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// length reads a uvarint of at most max, in its minimal encoding: a
// padded one (a last byte of 0 after the first) would be a second
// encoding of the same list. So would a run of 0x80 bytes long enough
// that the shift of the byte ending it drops its payload: each of the
// first nine bytes shifts in whole (by at most 56 bits), a tenth would
// not, and no value up to max needs one, so a tenth is refused.
func (r *reader) length(max int) int {
	var v uint64
	for i := 0; ; i++ {
		if i == 9 {
			r.fail("overlong varint")
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i > 0 && c == 0 {
			r.fail("padded varint")
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if v > uint64(max) {
			r.fail(fmt.Sprintf("length over %d", max))
			return 0
		}
		if c < 0x80 {
			return int(v)
		}
	}
}

// str reads a length-prefixed string of at most FieldBytesMax bytes.
func (r *reader) str() string {
	n := r.length(FieldBytesMax)
	if r.err != nil {
		return ""
	}
	if n > len(r.b) {
		r.fail("truncated")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// FieldsText is fs's stable one-line text form: {key=value ...}, a key
// bare when it is printable ASCII without space, '=', '"', '{' or '}' and
// quoted otherwise, each value by its class: void, n:<number>,
// s:<quoted string>, b:t or b:f, o:<hexadecimal bytes>.
func FieldsText(fs []Field) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range fs {
		f := &fs[i]
		if i > 0 {
			b.WriteByte(' ')
		}
		if bareKey(f.Key) {
			b.WriteString(f.Key)
		} else {
			b.WriteString(strconv.Quote(f.Key))
		}
		b.WriteByte('=')
		switch f.Class {
		case ClassVoid:
			b.WriteString("void")
			if f.Value != "" {
				b.WriteString(":" + strconv.Quote(f.Value)) // invalid, but shown
			}
		case ClassNumber:
			b.WriteString("n:" + textValue(f.Value, validNumber(f.Value)))
		case ClassString:
			b.WriteString("s:" + strconv.Quote(f.Value))
		case ClassBool:
			b.WriteString("b:" + textValue(f.Value, f.Value == "t" || f.Value == "f"))
		case ClassOther:
			fmt.Fprintf(&b, "o:%x", f.Value)
		default:
			fmt.Fprintf(&b, "class%d:%q", f.Class, f.Value)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// textValue is a number's or bool's value as FieldsText shows it: bare if
// canonical, else quoted, so that no value can pass for another field.
func textValue(v string, canonical bool) string {
	if canonical {
		return v
	}
	return strconv.Quote(v)
}

func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e || c == '=' || c == '"' || c == '{' || c == '}' {
			return false
		}
	}
	return true
}
