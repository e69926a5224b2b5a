package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Error is bytes from the peer that the codec refuses, with the reply code
// the connection (or, for a soft code, the channel) must close with. The
// front door sends connection.close{Code, ReplyText(), ClassID, MethodID}.
type Error struct {
	Code uint16 // a reply code: FrameError, SyntaxError, CommandInvalid, NotImplemented
	Text string // what was wrong, for the reply-text and the log
	// ClassID and MethodID name the method being decoded when the fault is in
	// its arguments (connection.close carries them); zero otherwise.
	ClassID  uint16
	MethodID uint16
}

func (e *Error) Error() string {
	return fmt.Sprintf("amqp/wire: %d %s", e.Code, e.ReplyText())
}

// ReplyText is the reply-text for connection.close or channel.close: the
// code's name and the reason, in RabbitMQ's "NAME - reason" form, clipped
// to a shortstr (255 bytes) on a UTF-8 boundary.
func (e *Error) ReplyText() string {
	s := ReplyName(e.Code) + " - " + e.Text
	if len(s) <= ShortStrBytesMax {
		return s
	}
	n := ShortStrBytesMax
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func errorf(code uint16, format string, args ...any) *Error {
	return &Error{Code: code, Text: fmt.Sprintf(format, args...)}
}

// ErrEncode is wrapped by every error an encoder returns: a value this side
// built that the protocol cannot carry (a shortstr over 255 bytes, a table
// over its limits, a value of a type with no field-type letter, a frame
// over frame_max). It is a fault of the caller, not of the peer, so it
// carries no reply code.
var ErrEncode = errors.New("amqp/wire: cannot encode")

func encodeErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrEncode, fmt.Sprintf(format, args...))
}

// assert panics on a broken invariant of this package (a programmer error,
// never bad input: that gets an *Error).
func assert(ok bool, msg string) {
	if !ok {
		panic("amqp/wire: assertion failed: " + msg)
	}
}
