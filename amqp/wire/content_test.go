package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func mustHeader(t *testing.T, h ContentHeader) []byte {
	t.Helper()
	b, err := AppendContentHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestContentHeaderRoundTrip(t *testing.T) {
	full := sampleHeader()
	for _, h := range []ContentHeader{full, {ClassID: ClassBasic}, {ClassID: ClassBasic, BodySize: 3, Properties: Properties{Flags: FlagHeaders | FlagAppID, AppID: "x"}}} {
		b := mustHeader(t, h)
		got, err := DecodeContentHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("in  %#v\nout %#v", h, got)
		}
	}
	// Each property alone, so a shifted flag or a swapped order shows.
	for i := 2; i < 16; i++ {
		h := full
		h.Properties = onlyFlag(full.Properties, uint16(1)<<i)
		got, err := DecodeContentHeader(mustHeader(t, h))
		if err != nil || !reflect.DeepEqual(got, h) {
			t.Fatalf("flag bit %d: %#v %v", i, got, err)
		}
	}
}

// onlyFlag keeps the property of flag f and zeroes the rest.
func onlyFlag(p Properties, f uint16) Properties {
	q := Properties{Flags: f}
	src, dst := reflect.ValueOf(p), reflect.ValueOf(&q).Elem()
	// Fields after Flags are in flag order, most significant bit first.
	for i := 1; i < src.NumField(); i++ {
		if uint16(1)<<(16-i) == f {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return q
}

// Laid out by hand: class 60, weight 0, body-size 5, flags content-type
// and delivery-mode (0x8000 | 0x1000), "text/plain", 2.
func TestContentHeaderGolden(t *testing.T) {
	want := []byte{
		0x00, 0x3c, 0x00, 0x00,
		0, 0, 0, 0, 0, 0, 0, 5,
		0x90, 0x00,
		0x0a, 't', 'e', 'x', 't', '/', 'p', 'l', 'a', 'i', 'n',
		0x02,
	}
	h := ContentHeader{ClassID: ClassBasic, BodySize: 5, Properties: Properties{
		Flags: FlagContentType | FlagDeliveryMode, ContentType: "text/plain", DeliveryMode: 2}}
	if got := mustHeader(t, h); !bytes.Equal(got, want) {
		t.Fatalf("% x\nwant % x", got, want)
	}
	// A zero continuation word (flag bit 0, then 00 00) is understood.
	cont := append(append([]byte{}, want[:12]...), 0x90, 0x01, 0x00, 0x00)
	cont = append(cont, want[14:]...)
	got, err := DecodeContentHeader(cont)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("continuation: %#v %v", got, err)
	}
}

func TestContentHeaderRefusals(t *testing.T) {
	base := mustHeader(t, sampleHeader())
	for n := range len(base) {
		if _, err := DecodeContentHeader(base[:n]); !isCode(err, SyntaxError) {
			t.Fatalf("cut to %d of %d: %v", n, len(base), err)
		}
	}
	if _, err := DecodeContentHeader(append(base, 0)); !isCode(err, SyntaxError) {
		t.Fatalf("trailing: %v", err)
	}
	mod := func(i int, v byte) []byte {
		b := append([]byte{}, base...)
		b[i] = v
		return b
	}
	if _, err := DecodeContentHeader(mod(1, 50)); !isCode(err, NotImplemented) {
		t.Fatalf("class 50: %v", err)
	}
	if _, err := DecodeContentHeader(mod(3, 1)); !isCode(err, SyntaxError) {
		t.Fatalf("weight 1: %v", err)
	}
	if _, err := DecodeContentHeader(mod(13, 0xFE)); !isCode(err, SyntaxError) {
		t.Fatalf("undefined flag bit 1: %v", err)
	}
	// A continuation word that sets a flag names a 16th property.
	b := []byte{0x00, 0x3c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0x80, 0x00}
	if _, err := DecodeContentHeader(b); !isCode(err, SyntaxError) {
		t.Fatalf("flag in continuation: %v", err)
	}
}

func isCode(err error, code uint16) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

func TestContentHeaderEncodeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    ContentHeader
	}{
		{"value without flag", ContentHeader{ClassID: ClassBasic, Properties: Properties{ContentType: "x"}}},
		{"headers without flag", ContentHeader{ClassID: ClassBasic, Properties: Properties{Headers: Table{}}}},
		{"undefined flag", ContentHeader{ClassID: ClassBasic, Properties: Properties{Flags: 2}}},
		{"continuation flag", ContentHeader{ClassID: ClassBasic, Properties: Properties{Flags: 1}}},
		{"class", ContentHeader{ClassID: ClassQueue}},
		{"long shortstr", ContentHeader{ClassID: ClassBasic, Properties: Properties{Flags: FlagType, Type: string(make([]byte, 256))}}},
	} {
		if _, err := AppendContentHeader(nil, &tc.h); !errors.Is(err, ErrEncode) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
