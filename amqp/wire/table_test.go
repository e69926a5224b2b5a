package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
)

func mustTable(t *testing.T, tb Table) []byte {
	t.Helper()
	b, err := AppendTable(nil, tb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTableRoundTrip(t *testing.T) {
	in := sampleTable()
	b := mustTable(t, in)
	out, err := DecodeTable(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("in  %#v\nout %#v", in, out)
	}
	// Encoding is canonical: the decoded table re-encodes to the same bytes.
	if again := mustTable(t, out); !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
	// NaN payloads survive bit for bit.
	nan := Table{{"f", math.Float32frombits(0x7fc00001)}, {"d", math.Float64frombits(0x7ff8000000000002)}}
	b = mustTable(t, nan)
	out, _ = DecodeTable(b)
	if math.Float32bits(out[0].Value.(float32)) != 0x7fc00001 || math.Float64bits(out[1].Value.(float64)) != 0x7ff8000000000002 {
		t.Fatal("NaN bits changed")
	}
}

// Bytes laid out by hand from RabbitMQ's field types.
func TestTableGolden(t *testing.T) {
	tb := Table{
		{"a", int32(1)},
		{"b", true},
		{"s", "hi"},
		{"v", nil},
		{"A", Array{uint8(7)}},
	}
	want := []byte{
		0x00, 0x00, 0x00, 0x23, // 35 bytes follow
		0x01, 'a', 'I', 0x00, 0x00, 0x00, 0x01,
		0x01, 'b', 't', 0x01,
		0x01, 's', 'S', 0x00, 0x00, 0x00, 0x02, 'h', 'i',
		0x01, 'v', 'V',
		0x01, 'A', 'A', 0x00, 0x00, 0x00, 0x02, 'B', 0x07,
	}
	want[3] = byte(len(want) - 4)
	if got := mustTable(t, tb); !bytes.Equal(got, want) {
		t.Fatalf("% x\nwant % x", got, want)
	}
}

func TestTableLookups(t *testing.T) {
	tb := sampleTable()
	if s, ok := tb.String("longstr"); !ok || s != "héllo\x00world" {
		t.Fatal("String")
	}
	if _, ok := tb.String("int8"); ok {
		t.Fatal("String of an int")
	}
	if b, ok := tb.Bool("bool-true"); !ok || !b {
		t.Fatal("Bool")
	}
	for _, tc := range []struct {
		name string
		want int64
	}{{"int8", -128}, {"uint8", 255}, {"int16", -32768}, {"uint16", 65535}, {"int32", math.MinInt32}, {"uint32", math.MaxUint32}, {"int64", math.MinInt64}} {
		if n, ok := tb.Int(tc.name); !ok || n != tc.want {
			t.Fatalf("Int(%s) = %d %v", tc.name, n, ok)
		}
	}
	if _, ok := tb.Int("float64"); ok {
		t.Fatal("Int of a float")
	}
	if sub, ok := tb.Table("table"); !ok || len(sub) != 1 {
		t.Fatal("Table")
	}
	if v, ok := tb.Get("void"); !ok || v != nil {
		t.Fatal("void")
	}
	if _, ok := tb.Get("absent"); ok {
		t.Fatal("absent")
	}
}

func wantSyntax(t *testing.T, b []byte, what string) {
	t.Helper()
	_, err := DecodeTable(b)
	var e *Error
	if !errors.As(err, &e) || e.Code != SyntaxError {
		t.Fatalf("%s: got %v, want 502", what, err)
	}
}

func TestTableRefusals(t *testing.T) {
	// Every truncation of a rich table.
	b := mustTable(t, sampleTable())
	for n := range len(b) {
		wantSyntax(t, b[:n], "truncated")
	}
	// Trailing bytes inside the declared length: a field name with no type.
	wantSyntax(t, []byte{0, 0, 0, 5, 1, 'a', 'V', 1, 'b'}, "partial field inside the length")
	// Trailing bytes after the table.
	wantSyntax(t, append(mustTable(t, Table{{"a", nil}}), 0), "trailing")
	// A value running past the table's declared length into the next bytes.
	wantSyntax(t, []byte{0, 0, 0, 4, 1, 'a', 'I', 0, 0, 0, 0, 1}, "value past the length")
	wantSyntax(t, []byte{0, 0, 0, 3, 1, 'a', 'Z'}, "unknown type letter")
	wantSyntax(t, []byte{0, 0, 0, 3, 1, 'a', 'L'}, "spec-only letter L")
	wantSyntax(t, []byte{0, 0, 0, 4, 1, 'a', 't', 2}, "boolean 2")
	wantSyntax(t, []byte{0, 0, 0, 6, 1, 'a', 'V', 1, 'a', 'V'}, "duplicate key")
	// A length claiming more than remains must not be trusted.
	wantSyntax(t, []byte{0, 0, 0, 9, 1, 'a', 'S', 0xff, 0xff, 0xff, 0xff, 0, 0}, "longstr length past the end")
	wantSyntax(t, []byte{0x7f, 0xff, 0xff, 0xff}, "table length over the limit")
}

func TestTableDuplicateRefusedLarge(t *testing.T) {
	var tb Table
	for i := range 100 {
		tb = append(tb, Field{Name: string(rune('A'+i%26)) + string(rune('a'+i/26)), Value: nil})
	}
	b := mustTable(t, tb)
	if _, err := DecodeTable(b); err != nil {
		t.Fatalf("100 distinct names: %v", err)
	}
	tb = append(tb, Field{Name: tb[70].Name})
	if _, err := AppendTable(nil, tb); !errors.Is(err, ErrEncode) {
		t.Fatalf("encoder took a duplicate: %v", err)
	}
	// Build the duplicate by hand, appending one more field to the bytes.
	b = append(b, 2, tb[70].Name[0], tb[70].Name[1], 'V')
	putU32(b, uint32(len(b)-4))
	wantSyntax(t, b, "duplicate among 101 fields")
}

// deepTable returns a table nested depth deep: the top-level table is
// depth 1 and each level below adds a table or an array.
func deepTable(depth int) Table {
	var v Value = int8(1)
	for d := depth; d > 1; d-- {
		if d%2 == 0 {
			v = Table{{"t", v}}
		} else {
			v = Array{v}
		}
	}
	return Table{{"top", v}}
}

func TestTableDepthLimit(t *testing.T) {
	ok := deepTable(TableDepthMax)
	b := mustTable(t, ok)
	if _, err := DecodeTable(b); err != nil {
		t.Fatalf("depth %d: %v", TableDepthMax, err)
	}
	deep := deepTable(TableDepthMax + 1)
	if _, err := AppendTable(nil, deep); !errors.Is(err, ErrEncode) {
		t.Fatalf("encoder took depth %d: %v", TableDepthMax+1, err)
	}
	// Hand-build the bytes of one level more than allowed: wrap b's table
	// as the value of field "w" of a new top-level table.
	over := append([]byte{0, 0, 0, 0, 1, 'w', 'F'}, b...)
	putU32(over, uint32(len(over)-4))
	wantSyntax(t, over, "one level over the depth limit")
}

func TestTableValuesLimit(t *testing.T) {
	arr := make(Array, TableValuesMax)
	if _, err := AppendTable(nil, Table{{"a", arr}}); !errors.Is(err, ErrEncode) {
		t.Fatalf("encoder took %d values: %v", TableValuesMax+1, err)
	}
	b := mustTable(t, Table{{"a", arr[:TableValuesMax-1]}})
	if _, err := DecodeTable(b); err != nil {
		t.Fatalf("%d values: %v", TableValuesMax, err)
	}
	// One more void element, by hand.
	b = append(b, 'V')
	putU32(b, uint32(len(b)-4))
	putU32(b[7:], uint32(len(b)-11))
	wantSyntax(t, b, "one value over the limit")
}

func TestTableBytesLimit(t *testing.T) {
	big := Table{{"s", string(make([]byte, TableBytesMax))}}
	if _, err := AppendTable(nil, big); !errors.Is(err, ErrEncode) {
		t.Fatalf("encoder took an oversized table: %v", err)
	}
	fits := Table{{"s", string(make([]byte, TableBytesMax-7))}}
	if b := mustTable(t, fits); len(b) != TableBytesMax+4 {
		t.Fatalf("len %d", len(b))
	}
	if _, err := AppendTable(nil, Table{{"n", 3}}); !errors.Is(err, ErrEncode) {
		t.Fatalf("encoder took a Go int: %v", err)
	}
}
