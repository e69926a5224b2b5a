package wire

import (
	"fmt"
	"math"
)

// Limits of one field table, counted over the table and everything nested
// in it. A table never exceeds its frame, so these only bound the work and
// the allocations one frame can cause.
const (
	// TableBytesMax bounds a table's encoded length (its 4-byte length
	// prefix not included).
	TableBytesMax = 256 << 10
	// TableDepthMax bounds nesting: a top-level table is depth 1, a table or
	// array inside it depth 2, and so on. RabbitMQ's deepest real use,
	// headers -> x-death array -> table -> routing-keys array, is depth 4.
	TableDepthMax = 16
	// TableValuesMax bounds the number of values (fields and array
	// elements, at every depth) one top-level table may hold. The smallest
	// value is 3 bytes on the wire (a void field with a 1-byte name) and
	// costs far more in memory; this keeps that ratio bounded.
	TableValuesMax = 16 << 10
)

// Value is one field value. Its Go type says its field-type letter, in
// RabbitMQ's table (see doc.go):
//
//	bool 't'  int8 'b'  uint8 'B'  int16 's'  uint16 'u'  int32 'I'
//	uint32 'i'  int64 'l'  float32 'f'  float64 'd'  Decimal 'D'
//	string 'S' (longstr)  Array 'A'  Timestamp 'T'  Table 'F'
//	nil 'V' (void)  []byte 'x' (byte array)
//
// Encoding a value of any other type (int, uint64, map, ...) is refused
// with ErrEncode: the caller picks the width, the codec never guesses.
type Value = any

// Decimal is a field of type 'D': Value scaled down by 10^Scale.
type Decimal struct {
	Scale uint8
	Value int32
}

// Timestamp is a field of type 'T' (and the timestamp property): seconds
// since the Unix epoch, as the spec's 64-bit timestamp.
type Timestamp uint64

// Array is a field of type 'A': values in order, each with its own type.
type Array []Value

// Field is one named value of a table.
type Field struct {
	Name  string
	Value Value
}

// Table is a field table in wire order. Decoding keeps the order the peer
// sent and refuses duplicate names, so a name maps to exactly one value
// and re-encoding reproduces the peer's order.
type Table []Field

// Get returns the value named name.
func (t Table) Get(name string) (Value, bool) {
	for _, f := range t {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// String returns a longstr ('S') value; ok is false if absent or of
// another type.
func (t Table) String(name string) (s string, ok bool) {
	v, _ := t.Get(name)
	s, ok = v.(string)
	return s, ok
}

// Bool returns a boolean ('t') value.
func (t Table) Bool(name string) (b bool, ok bool) {
	v, _ := t.Get(name)
	b, ok = v.(bool)
	return b, ok
}

// Int returns an integer value of any width that fits an int64 (every
// integer field type does): clients pick different widths for the same
// argument (x-max-length arrives as 'I' from one and 'l' from another).
func (t Table) Int(name string) (n int64, ok bool) {
	v, _ := t.Get(name)
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Table returns a nested table ('F') value.
func (t Table) Table(name string) (sub Table, ok bool) {
	v, _ := t.Get(name)
	sub, ok = v.(Table)
	return sub, ok
}

// tableBudget counts values over one top-level table.
type tableBudget struct{ values int }

// table decodes a table at depth (1 for a top-level one).
func (d *decoder) table(what string) Table {
	return d.tableAt(1, &tableBudget{}, what)
}

func (d *decoder) tableAt(depth int, budget *tableBudget, what string) Table {
	n := d.u32(what + " length")
	if d.err != nil {
		return nil
	}
	if depth > TableDepthMax {
		d.fail("%s nested %d deep, limit %d", what, depth, TableDepthMax)
		return nil
	}
	if n > TableBytesMax {
		d.fail("%s is %d bytes, limit %d", what, n, TableBytesMax)
		return nil
	}
	body := d.take(uint64(n), what)
	if d.err != nil {
		return nil
	}
	sub := decoder{b: body}
	var t Table
	var names nameSet
	for sub.err == nil && sub.off < len(sub.b) {
		name := sub.shortstr(what + " field name")
		v := sub.value(depth, budget, what+" field "+quote(name))
		if sub.err != nil {
			break
		}
		// Refuse rather than keep first or last: a duplicate means the
		// peer's notion of the table differs from ours, and no client we
		// serve produces one (they encode from maps).
		if names.add(t, name) {
			sub.fail("%s has field %s twice", what, quote(name))
			break
		}
		t = append(t, Field{Name: name, Value: v})
	}
	if sub.err != nil {
		sub.err.Text = fmt.Sprintf("%s (at byte %d of the table)", sub.err.Text, sub.off)
		d.err = sub.err
		return nil
	}
	return t
}

func (d *decoder) array(depth int, budget *tableBudget, what string) Array {
	n := d.u32(what + " length")
	if d.err != nil {
		return nil
	}
	if depth > TableDepthMax {
		d.fail("%s nested %d deep, limit %d", what, depth, TableDepthMax)
		return nil
	}
	body := d.take(uint64(n), what)
	if d.err != nil {
		return nil
	}
	sub := decoder{b: body}
	var a Array
	for sub.err == nil && sub.off < len(sub.b) {
		v := sub.value(depth, budget, fmt.Sprintf("%s element %d", what, len(a)))
		if sub.err == nil {
			a = append(a, v)
		}
	}
	if sub.err != nil {
		d.err = sub.err
		return nil
	}
	return a
}

// value decodes one type letter and its value, inside a table or array at
// depth.
func (d *decoder) value(depth int, budget *tableBudget, what string) Value {
	kind := d.u8(what + " type")
	if d.err != nil {
		return nil
	}
	budget.values++
	if budget.values > TableValuesMax {
		d.fail("table holds over %d values", TableValuesMax)
		return nil
	}
	switch kind {
	case 't':
		switch b := d.u8(what); b {
		case 0:
			return false
		case 1:
			return true
		default:
			if d.err == nil {
				d.fail("%s: boolean octet %d, want 0 or 1", what, b)
			}
			return nil
		}
	case 'b':
		return int8(d.u8(what))
	case 'B':
		return d.u8(what)
	case 's':
		return int16(d.u16(what))
	case 'u':
		return d.u16(what)
	case 'I':
		return int32(d.u32(what))
	case 'i':
		return d.u32(what)
	case 'l':
		return int64(d.u64(what))
	case 'f':
		return math.Float32frombits(d.u32(what))
	case 'd':
		return math.Float64frombits(d.u64(what))
	case 'D':
		scale := d.u8(what)
		return Decimal{Scale: scale, Value: int32(d.u32(what))}
	case 'S':
		return d.longstr(what)
	case 'x':
		n := d.u32(what)
		raw := d.take(uint64(n), what)
		if d.err != nil {
			return nil
		}
		return append(make([]byte, 0, len(raw)), raw...)
	case 'T':
		return Timestamp(d.u64(what))
	case 'V':
		return nil
	case 'A':
		return d.array(depth+1, budget, what)
	case 'F':
		return d.tableAt(depth+1, budget, what)
	}
	d.fail("%s has unknown field type %s", what, quoteByte(kind))
	return nil
}

// table appends t with its length prefix.
func (e *encoder) table(t Table, what string) {
	e.tableAt(t, 1, &tableBudget{}, what)
}

func (e *encoder) tableAt(t Table, depth int, budget *tableBudget, what string) {
	if e.err != nil {
		return
	}
	if depth > TableDepthMax {
		e.failf("%s nested %d deep, limit %d", what, depth, TableDepthMax)
		return
	}
	at := len(e.buf)
	e.u32(0) // patched below
	var names nameSet
	for i, f := range t {
		if names.add(t[:i], f.Name) {
			e.failf("%s has field %s twice", what, quote(f.Name))
			return
		}
		e.shortstr(f.Name, what+" field name")
		e.value(f.Value, depth, budget, what+" field "+quote(f.Name))
		if e.err != nil {
			return
		}
	}
	n := len(e.buf) - at - 4
	if n > TableBytesMax {
		e.failf("%s is %d bytes, limit %d", what, n, TableBytesMax)
		return
	}
	putU32(e.buf[at:], uint32(n))
}

func (e *encoder) value(v Value, depth int, budget *tableBudget, what string) {
	budget.values++
	if budget.values > TableValuesMax {
		e.failf("table holds over %d values", TableValuesMax)
		return
	}
	switch x := v.(type) {
	case bool:
		e.u8('t')
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case int8:
		e.u8('b')
		e.u8(uint8(x))
	case uint8:
		e.u8('B')
		e.u8(x)
	case int16:
		e.u8('s')
		e.u16(uint16(x))
	case uint16:
		e.u8('u')
		e.u16(x)
	case int32:
		e.u8('I')
		e.u32(uint32(x))
	case uint32:
		e.u8('i')
		e.u32(x)
	case int64:
		e.u8('l')
		e.u64(uint64(x))
	case float32:
		e.u8('f')
		e.u32(math.Float32bits(x))
	case float64:
		e.u8('d')
		e.u64(math.Float64bits(x))
	case Decimal:
		e.u8('D')
		e.u8(x.Scale)
		e.u32(uint32(x.Value))
	case string:
		e.u8('S')
		e.longstr(x, what)
	case []byte:
		e.u8('x')
		e.longstr(string(x), what)
	case Timestamp:
		e.u8('T')
		e.u64(uint64(x))
	case nil:
		e.u8('V')
	case Array:
		e.u8('A')
		e.arrayAt(x, depth+1, budget, what)
	case Table:
		e.u8('F')
		e.tableAt(x, depth+1, budget, what)
	default:
		e.failf("%s: Go type %T has no field-type letter", what, v)
	}
}

func (e *encoder) arrayAt(a Array, depth int, budget *tableBudget, what string) {
	if depth > TableDepthMax {
		e.failf("%s nested %d deep, limit %d", what, depth, TableDepthMax)
		return
	}
	at := len(e.buf)
	e.u32(0) // patched below
	for i, v := range a {
		e.value(v, depth, budget, fmt.Sprintf("%s element %d", what, i))
		if e.err != nil {
			return
		}
	}
	n := len(e.buf) - at - 4
	if n > TableBytesMax {
		e.failf("%s is %d bytes, limit %d", what, n, TableBytesMax)
		return
	}
	putU32(e.buf[at:], uint32(n))
}

// DecodeTable decodes one field table with its 4-byte length prefix, which
// must span all of b.
func DecodeTable(b []byte) (Table, error) {
	d := decoder{b: b}
	t := d.table("table")
	d.end("table")
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

// AppendTable appends t, with its 4-byte length prefix, to dst.
func AppendTable(dst []byte, t Table) ([]byte, error) {
	e := encoder{buf: dst}
	e.table(t, "table")
	if e.err != nil {
		return dst, e.err
	}
	return e.buf, nil
}

// nameSet finds duplicate field names in linear time: small tables (all
// real ones) are scanned, large ones indexed, so a frame of 16,000 fields
// cannot cost a quadratic number of comparisons.
type nameSet struct{ index map[string]struct{} }

const nameSetScanMax = 32

// add reports whether name is already among prior (the fields before it)
// and records it.
func (s *nameSet) add(prior Table, name string) (dup bool) {
	if len(prior) < nameSetScanMax {
		_, dup = prior.Get(name)
		return dup
	}
	if s.index == nil {
		s.index = make(map[string]struct{}, 2*len(prior))
		for _, f := range prior {
			s.index[f.Name] = struct{}{}
		}
	}
	if _, dup = s.index[name]; dup {
		return true
	}
	s.index[name] = struct{}{}
	return false
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// quote shows a name from the wire in an error safely (it may hold any
// bytes) and briefly.
func quote(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...", s[:40])
	}
	return fmt.Sprintf("%q", s)
}

func quoteByte(b byte) string {
	if b >= 0x21 && b < 0x7f {
		return fmt.Sprintf("'%c' (%#02x)", b, b)
	}
	return fmt.Sprintf("%#02x", b)
}
