package wire

import "fmt"

// Property flags of the basic class, in the first flag word: the first
// property is the most significant bit, bit 1 is undefined and bit 0 says
// another flag word follows (the spec's content header property flags).
const (
	FlagContentType     uint16 = 1 << 15
	FlagContentEncoding uint16 = 1 << 14
	FlagHeaders         uint16 = 1 << 13
	FlagDeliveryMode    uint16 = 1 << 12
	FlagPriority        uint16 = 1 << 11
	FlagCorrelationID   uint16 = 1 << 10
	FlagReplyTo         uint16 = 1 << 9
	FlagExpiration      uint16 = 1 << 8
	FlagMessageID       uint16 = 1 << 7
	FlagTimestamp       uint16 = 1 << 6
	FlagType            uint16 = 1 << 5
	FlagUserID          uint16 = 1 << 4
	FlagAppID           uint16 = 1 << 3
	FlagReserved        uint16 = 1 << 2 // 0-8's cluster-id; carried, never interpreted

	flagsDefined     = 0xFFFC
	flagContinuation = 1
)

// Properties are the 14 basic-class properties. Flags says which are
// present: a property whose flag is clear is absent on the wire and zero
// here, so "absent" and "present but empty" stay distinct and a message's
// properties can be forwarded as the publisher sent them.
type Properties struct {
	Flags           uint16
	ContentType     string
	ContentEncoding string
	Headers         Table
	DeliveryMode    uint8 // 1 transient, 2 persistent; not checked here
	Priority        uint8
	CorrelationID   string
	ReplyTo         string
	Expiration      string
	MessageID       string
	Timestamp       Timestamp
	Type            string
	UserID          string
	AppID           string
	Reserved        string
}

// ContentHeader is a content header frame's payload.
type ContentHeader struct {
	ClassID    uint16 // always ClassBasic here
	BodySize   uint64 // total bytes of the body frames that follow
	Properties Properties
}

// DecodeContentHeader decodes a content header frame's payload: class id,
// weight, body size, property flags and the properties present, filling
// the payload exactly. It refuses with 502 SYNTAX_ERROR a non-zero weight
// (the spec: "must be zero"), a flag the basic class does not define, a
// continuation word that sets any flag (basic has 14 properties; an
// all-zero continuation word is accepted), truncation and trailing bytes;
// with 540 NOT_IMPLEMENTED a class other than basic, the only class with
// content in 0-9-1. Matching the header's class to the method it follows
// is the caller's (505 UNEXPECTED_FRAME).
func DecodeContentHeader(payload []byte) (ContentHeader, error) {
	d := decoder{b: payload}
	var h ContentHeader
	h.ClassID = d.u16("content header class-id")
	weight := d.u16("content header weight")
	h.BodySize = d.u64("content header body-size")
	flags := d.u16("content header property-flags")
	if d.err != nil {
		return ContentHeader{}, d.err
	}
	if h.ClassID != ClassBasic {
		return ContentHeader{}, errorf(NotImplemented, "content header of class %d; only basic (60) carries content", h.ClassID)
	}
	if weight != 0 {
		return ContentHeader{}, errorf(SyntaxError, "content header weight %d, must be 0", weight)
	}
	if undefined := flags &^ (flagsDefined | flagContinuation); undefined != 0 {
		return ContentHeader{}, errorf(SyntaxError, "content header property-flags %#04x set undefined bit %#04x", flags, undefined)
	}
	// Continuation words can only be zero for basic; read them so that a
	// peer that sends one is understood, and bound them by the payload.
	for more := flags&flagContinuation != 0; more; {
		w := d.u16("content header continuation flags")
		if d.err != nil {
			return ContentHeader{}, d.err
		}
		if w&^flagContinuation != 0 {
			return ContentHeader{}, errorf(SyntaxError, "content header continuation flags %#04x name properties basic does not have", w)
		}
		more = w&flagContinuation != 0
	}
	p := &h.Properties
	p.Flags = flags &^ flagContinuation
	has := func(f uint16) bool { return p.Flags&f != 0 }
	if has(FlagContentType) {
		p.ContentType = d.shortstr("content-type")
	}
	if has(FlagContentEncoding) {
		p.ContentEncoding = d.shortstr("content-encoding")
	}
	if has(FlagHeaders) {
		p.Headers = d.table("headers")
	}
	if has(FlagDeliveryMode) {
		p.DeliveryMode = d.u8("delivery-mode")
	}
	if has(FlagPriority) {
		p.Priority = d.u8("priority")
	}
	if has(FlagCorrelationID) {
		p.CorrelationID = d.shortstr("correlation-id")
	}
	if has(FlagReplyTo) {
		p.ReplyTo = d.shortstr("reply-to")
	}
	if has(FlagExpiration) {
		p.Expiration = d.shortstr("expiration")
	}
	if has(FlagMessageID) {
		p.MessageID = d.shortstr("message-id")
	}
	if has(FlagTimestamp) {
		p.Timestamp = Timestamp(d.u64("timestamp"))
	}
	if has(FlagType) {
		p.Type = d.shortstr("type")
	}
	if has(FlagUserID) {
		p.UserID = d.shortstr("user-id")
	}
	if has(FlagAppID) {
		p.AppID = d.shortstr("app-id")
	}
	if has(FlagReserved) {
		p.Reserved = d.shortstr("reserved (cluster-id)")
	}
	d.end("content header")
	if d.err != nil {
		d.err.Text = "content header: " + d.err.Text
		return ContentHeader{}, d.err
	}
	return h, nil
}

// AppendContentHeader appends h's payload to dst. It writes exactly the
// properties whose flag is set, and fails with ErrEncode on a property
// that holds a value while its flag is clear (that value would be lost),
// on an undefined flag, on a class other than basic, and on a value the
// wire cannot carry.
func AppendContentHeader(dst []byte, h *ContentHeader) ([]byte, error) {
	p := &h.Properties
	if h.ClassID != ClassBasic {
		return dst, encodeErrorf("content header of class %d; only basic (60) carries content", h.ClassID)
	}
	if undefined := p.Flags &^ flagsDefined; undefined != 0 {
		return dst, encodeErrorf("property flags %#04x set undefined bit %#04x", p.Flags, undefined)
	}
	if lost := p.setWithoutFlag(); lost != "" {
		return dst, encodeErrorf("property %s has a value but its flag is clear", lost)
	}
	e := encoder{buf: dst}
	e.u16(h.ClassID)
	e.u16(0) // weight
	e.u64(h.BodySize)
	e.u16(p.Flags)
	has := func(f uint16) bool { return p.Flags&f != 0 }
	if has(FlagContentType) {
		e.shortstr(p.ContentType, "content-type")
	}
	if has(FlagContentEncoding) {
		e.shortstr(p.ContentEncoding, "content-encoding")
	}
	if has(FlagHeaders) {
		e.table(p.Headers, "headers")
	}
	if has(FlagDeliveryMode) {
		e.u8(p.DeliveryMode)
	}
	if has(FlagPriority) {
		e.u8(p.Priority)
	}
	if has(FlagCorrelationID) {
		e.shortstr(p.CorrelationID, "correlation-id")
	}
	if has(FlagReplyTo) {
		e.shortstr(p.ReplyTo, "reply-to")
	}
	if has(FlagExpiration) {
		e.shortstr(p.Expiration, "expiration")
	}
	if has(FlagMessageID) {
		e.shortstr(p.MessageID, "message-id")
	}
	if has(FlagTimestamp) {
		e.u64(uint64(p.Timestamp))
	}
	if has(FlagType) {
		e.shortstr(p.Type, "type")
	}
	if has(FlagUserID) {
		e.shortstr(p.UserID, "user-id")
	}
	if has(FlagAppID) {
		e.shortstr(p.AppID, "app-id")
	}
	if has(FlagReserved) {
		e.shortstr(p.Reserved, "reserved (cluster-id)")
	}
	if e.err != nil {
		return dst, fmt.Errorf("content header: %w", e.err)
	}
	return e.buf, nil
}

// setWithoutFlag names the first property holding a non-zero value while
// its flag is clear, or returns "".
func (p *Properties) setWithoutFlag() string {
	absent := func(f uint16) bool { return p.Flags&f == 0 }
	switch {
	case absent(FlagContentType) && p.ContentType != "":
		return "content-type"
	case absent(FlagContentEncoding) && p.ContentEncoding != "":
		return "content-encoding"
	case absent(FlagHeaders) && p.Headers != nil:
		return "headers"
	case absent(FlagDeliveryMode) && p.DeliveryMode != 0:
		return "delivery-mode"
	case absent(FlagPriority) && p.Priority != 0:
		return "priority"
	case absent(FlagCorrelationID) && p.CorrelationID != "":
		return "correlation-id"
	case absent(FlagReplyTo) && p.ReplyTo != "":
		return "reply-to"
	case absent(FlagExpiration) && p.Expiration != "":
		return "expiration"
	case absent(FlagMessageID) && p.MessageID != "":
		return "message-id"
	case absent(FlagTimestamp) && p.Timestamp != 0:
		return "timestamp"
	case absent(FlagType) && p.Type != "":
		return "type"
	case absent(FlagUserID) && p.UserID != "":
		return "user-id"
	case absent(FlagAppID) && p.AppID != "":
		return "app-id"
	case absent(FlagReserved) && p.Reserved != "":
		return "reserved (cluster-id)"
	}
	return ""
}
