package wire

import "encoding/binary"

// ShortStrBytesMax is the longest shortstr: its length is one octet.
const ShortStrBytesMax = 255

// decoder reads the fields of one frame payload. Its error is sticky: after
// the first fault every read returns a zero value and the caller checks err
// once at the end, which keeps the method decoders a plain list of fields.
// Every length read from the wire is checked against the bytes that remain
// before anything is allocated, so a payload can never make the decoder
// allocate more than the payload's own size (plus per-value overhead,
// bounded by TableValuesMax).
type decoder struct {
	b   []byte
	off int
	err *Error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = errorf(SyntaxError, format, args...)
	}
}

// need reports whether n more bytes are there, failing the decoder if not.
func (d *decoder) need(n uint64, what string) bool {
	if d.err != nil {
		return false
	}
	if rest := uint64(len(d.b) - d.off); n > rest {
		d.fail("%s truncated: needs %d bytes at offset %d, %d remain", what, n, d.off, rest)
		return false
	}
	return true
}

func (d *decoder) u8(what string) uint8 {
	if !d.need(1, what) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u16(what string) uint16 {
	if !d.need(2, what) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32(what string) uint32 {
	if !d.need(4, what) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64(what string) uint64 {
	if !d.need(8, what) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// take returns the next n bytes, aliasing the payload.
func (d *decoder) take(n uint64, what string) []byte {
	if !d.need(n, what) {
		return nil
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *decoder) shortstr(what string) string {
	n := d.u8(what)
	return string(d.take(uint64(n), what))
}

func (d *decoder) longstr(what string) string {
	n := d.u32(what)
	return string(d.take(uint64(n), what))
}

// bits reads one octet of packed bit fields, of which the low n are
// defined; a set bit above them is refused rather than dropped, so that
// nothing a client sent is silently lost. allowed marks reserved bits that
// are defined by the spec but ignored (connection.open's insist).
func (d *decoder) bits(n int, ignored uint8, what string) uint8 {
	assert(n >= 1 && n <= 8, "bit count out of range")
	v := d.u8(what)
	if undefined := v &^ (uint8(1<<n-1) | ignored); undefined != 0 && d.err == nil {
		d.fail("%s has undefined bits set: %#02x", what, v)
	}
	return v &^ ignored
}

// end fails the decoder if bytes remain: trailing bytes are refused, not
// ignored, since they mean the peer and we disagree on the layout.
func (d *decoder) end(what string) {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%s has %d trailing bytes", what, len(d.b)-d.off)
	}
}

// encoder appends fields to buf. Its error is sticky, as the decoder's.
type encoder struct {
	buf []byte
	err error
}

func (e *encoder) failf(format string, args ...any) {
	if e.err == nil {
		e.err = encodeErrorf(format, args...)
	}
}

func (e *encoder) u8(v uint8)   { e.buf = append(e.buf, v) }
func (e *encoder) u16(v uint16) { e.buf = binary.BigEndian.AppendUint16(e.buf, v) }
func (e *encoder) u32(v uint32) { e.buf = binary.BigEndian.AppendUint32(e.buf, v) }
func (e *encoder) u64(v uint64) { e.buf = binary.BigEndian.AppendUint64(e.buf, v) }

func (e *encoder) shortstr(s, what string) {
	if len(s) > ShortStrBytesMax {
		e.failf("%s is %d bytes, a shortstr holds at most %d", what, len(s), ShortStrBytesMax)
		return
	}
	e.u8(uint8(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) longstr(s, what string) {
	if uint64(len(s)) > uint64(^uint32(0)) {
		e.failf("%s is %d bytes, over a longstr's 32-bit length", what, len(s))
		return
	}
	e.u32(uint32(len(s)))
	e.buf = append(e.buf, s...)
}

// bits packs consecutive bit fields into one octet, the first field in the
// least significant bit (the spec: bits are accumulated into whole octets,
// up to 8 per octet).
func (e *encoder) bits(fields ...bool) {
	assert(len(fields) >= 1 && len(fields) <= 8, "bit count out of range")
	var v uint8
	for i, f := range fields {
		if f {
			v |= 1 << i
		}
	}
	e.u8(v)
}

func bit(v uint8, i int) bool { return v&(1<<i) != 0 }
