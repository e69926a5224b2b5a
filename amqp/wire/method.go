package wire

import "fmt"

// Method is one decoded method frame payload: a pointer to one of the
// structs in methods.go. The set is closed (the unexported methods keep
// other types out), so a type switch over it is exhaustive.
type Method interface {
	// ID returns the method's class and method ids.
	ID() (classID, methodID uint16)
	encode(e *encoder)
	decode(d *decoder)
}

// MethodName returns "class.method" for ids the spec (with RabbitMQ's
// extensions) defines, whether or not this codec decodes them, and
// "class-id.method-id" in numbers otherwise.
func MethodName(classID, methodID uint16) string {
	if s := specMethodName(classID, methodID); s != "" {
		return s
	}
	return fmt.Sprintf("%d.%d", classID, methodID)
}

// HasContent reports whether a method is followed by a content header and
// body frames (basic.publish, return, deliver, get-ok).
func HasContent(m Method) bool {
	c, id := m.ID()
	return hasContent(c, id)
}

// DecodeMethod decodes a method frame's payload: class id, method id and
// the arguments, which must fill the payload exactly. It refuses, with the
// reply code the connection must close with:
//
//   - ids no spec defines: 503 COMMAND_INVALID (the peer asked for an
//     operation that does not exist);
//   - ids of methods the spec defines but this codec does not decode
//     (basic.recover-async, access.request): 540
//     NOT_IMPLEMENTED, the spec's code for
//     "functionality that is not implemented in the server";
//   - a payload too short for the ids, truncated arguments, trailing bytes,
//     undefined bits set, bad tables: 502 SYNTAX_ERROR.
//
// Strings and tables are copied out of payload, so the result stays valid
// after the frame buffer is reused.
func DecodeMethod(payload []byte) (Method, error) {
	d := decoder{b: payload}
	classID := d.u16("method class-id")
	methodID := d.u16("method method-id")
	if d.err != nil {
		return nil, d.err
	}
	m := newMethod(classID, methodID)
	if m == nil {
		code, why := CommandInvalid, "unknown method"
		if specMethodName(classID, methodID) != "" {
			code, why = NotImplemented, "method not implemented"
		}
		return nil, &Error{Code: code, Text: fmt.Sprintf("%s %s (class %d, method %d)",
			why, MethodName(classID, methodID), classID, methodID),
			ClassID: classID, MethodID: methodID}
	}
	m.decode(&d)
	d.end(MethodName(classID, methodID))
	if d.err != nil {
		d.err.ClassID, d.err.MethodID = classID, methodID
		return nil, d.err
	}
	return m, nil
}

// AppendMethod appends m's payload (ids and arguments) to dst. It fails
// with ErrEncode when an argument cannot be carried (a shortstr over 255
// bytes, a table over its limits); dst is then returned unchanged.
func AppendMethod(dst []byte, m Method) ([]byte, error) {
	e := encoder{buf: dst}
	c, id := m.ID()
	e.u16(c)
	e.u16(id)
	m.encode(&e)
	if e.err != nil {
		return dst, fmt.Errorf("%s: %w", MethodName(c, id), e.err)
	}
	return e.buf, nil
}
