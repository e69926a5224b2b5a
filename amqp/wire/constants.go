package wire

// Frame types (spec constants frame-method, frame-header, frame-body,
// frame-heartbeat).
const (
	FrameMethod    uint8 = 1
	FrameHeader    uint8 = 2
	FrameBody      uint8 = 3
	FrameHeartbeat uint8 = 8
)

// FrameEnd is the octet that closes every frame (spec constant frame-end,
// 206).
const FrameEnd uint8 = 0xCE

// Frame sizes. A frame's size on the wire is its 7-byte header, its payload
// and the frame-end octet; the negotiated frame_max counts all three (the
// spec's connection.tune frame-max: "The largest frame size ... including
// frame header and end-byte").
const (
	// FrameHeaderBytes is type (1), channel (2) and payload size (4).
	FrameHeaderBytes = 7
	// FrameOverheadBytes is the header plus the frame-end octet.
	FrameOverheadBytes = FrameHeaderBytes + 1
	// FrameBytesMin is the spec's frame-min-size: every peer accepts frames
	// this large before tuning, and a negotiated frame_max is never smaller.
	FrameBytesMin = 4096
	// FrameBytesDefault is the frame_max the server proposes in
	// connection.tune (RabbitMQ proposes the same 128 KiB).
	FrameBytesDefault = 128 << 10
	// FrameBytesMax is the hard cap: the reader and writer refuse a larger
	// frame_max, whatever the peers negotiated. Bodies larger than a frame
	// travel in several body frames, so the cap only bounds one read.
	FrameBytesMax = 1 << 20
)

// Reply codes (spec constants; soft errors close a channel, hard errors the
// connection).
const (
	ReplySuccess       uint16 = 200
	ContentTooLarge    uint16 = 311 // soft
	NoRoute            uint16 = 312 // soft
	NoConsumers        uint16 = 313 // soft
	ConnectionForced   uint16 = 320 // hard
	InvalidPath        uint16 = 402 // hard
	AccessRefused      uint16 = 403 // soft
	NotFound           uint16 = 404 // soft
	ResourceLocked     uint16 = 405 // soft
	PreconditionFailed uint16 = 406 // soft
	FrameError         uint16 = 501 // hard
	SyntaxError        uint16 = 502 // hard
	CommandInvalid     uint16 = 503 // hard
	ChannelError       uint16 = 504 // hard
	UnexpectedFrame    uint16 = 505 // hard
	ResourceError      uint16 = 506 // hard
	NotAllowed         uint16 = 530 // hard
	NotImplemented     uint16 = 540 // hard
	InternalError      uint16 = 541 // hard
)

// ReplyName returns the spec's name of a reply code in the upper-case form
// RabbitMQ puts at the head of a reply-text ("NOT_FOUND"), or "" for a code
// the spec does not define.
func ReplyName(code uint16) string {
	switch code {
	case ReplySuccess:
		return "REPLY_SUCCESS"
	case ContentTooLarge:
		return "CONTENT_TOO_LARGE"
	case NoRoute:
		return "NO_ROUTE"
	case NoConsumers:
		return "NO_CONSUMERS"
	case ConnectionForced:
		return "CONNECTION_FORCED"
	case InvalidPath:
		return "INVALID_PATH"
	case AccessRefused:
		return "ACCESS_REFUSED"
	case NotFound:
		return "NOT_FOUND"
	case ResourceLocked:
		return "RESOURCE_LOCKED"
	case PreconditionFailed:
		return "PRECONDITION_FAILED"
	case FrameError:
		return "FRAME_ERROR"
	case SyntaxError:
		return "SYNTAX_ERROR"
	case CommandInvalid:
		return "COMMAND_INVALID"
	case ChannelError:
		return "CHANNEL_ERROR"
	case UnexpectedFrame:
		return "UNEXPECTED_FRAME"
	case ResourceError:
		return "RESOURCE_ERROR"
	case NotAllowed:
		return "NOT_ALLOWED"
	case NotImplemented:
		return "NOT_IMPLEMENTED"
	case InternalError:
		return "INTERNAL_ERROR"
	}
	return ""
}

// IsHardError reports whether a reply code closes the whole connection (the
// spec's hard-error class) rather than one channel.
func IsHardError(code uint16) bool {
	switch code {
	case ConnectionForced, InvalidPath, FrameError, SyntaxError, CommandInvalid,
		ChannelError, UnexpectedFrame, ResourceError, NotAllowed, NotImplemented,
		InternalError:
		return true
	}
	return false
}

// Class ids.
const (
	ClassConnection uint16 = 10
	ClassChannel    uint16 = 20
	ClassAccess     uint16 = 30 // 0-8 only; 0-9-1 keeps the id reserved
	ClassExchange   uint16 = 40
	ClassQueue      uint16 = 50
	ClassBasic      uint16 = 60
	ClassConfirm    uint16 = 85 // RabbitMQ extension
	ClassTx         uint16 = 90
)

// Method ids, named Class + Method as in the spec.
const (
	MethodConnectionStart          uint16 = 10
	MethodConnectionStartOk        uint16 = 11
	MethodConnectionSecure         uint16 = 20
	MethodConnectionSecureOk       uint16 = 21
	MethodConnectionTune           uint16 = 30
	MethodConnectionTuneOk         uint16 = 31
	MethodConnectionOpen           uint16 = 40
	MethodConnectionOpenOk         uint16 = 41
	MethodConnectionClose          uint16 = 50
	MethodConnectionCloseOk        uint16 = 51
	MethodConnectionBlocked        uint16 = 60 // RabbitMQ extension
	MethodConnectionUnblocked      uint16 = 61 // RabbitMQ extension
	MethodConnectionUpdateSecret   uint16 = 70 // RabbitMQ extension
	MethodConnectionUpdateSecretOk uint16 = 71

	MethodChannelOpen    uint16 = 10
	MethodChannelOpenOk  uint16 = 11
	MethodChannelFlow    uint16 = 20
	MethodChannelFlowOk  uint16 = 21
	MethodChannelClose   uint16 = 40
	MethodChannelCloseOk uint16 = 41

	MethodExchangeDeclare   uint16 = 10
	MethodExchangeDeclareOk uint16 = 11
	MethodExchangeDelete    uint16 = 20
	MethodExchangeDeleteOk  uint16 = 21
	MethodExchangeBind      uint16 = 30 // RabbitMQ extension (exchange-to-exchange bindings)
	MethodExchangeBindOk    uint16 = 31 // RabbitMQ extension
	MethodExchangeUnbind    uint16 = 40 // RabbitMQ extension
	MethodExchangeUnbindOk  uint16 = 51 // RabbitMQ extension

	MethodQueueDeclare   uint16 = 10
	MethodQueueDeclareOk uint16 = 11
	MethodQueueBind      uint16 = 20
	MethodQueueBindOk    uint16 = 21
	MethodQueuePurge     uint16 = 30
	MethodQueuePurgeOk   uint16 = 31
	MethodQueueDelete    uint16 = 40
	MethodQueueDeleteOk  uint16 = 41
	MethodQueueUnbind    uint16 = 50
	MethodQueueUnbindOk  uint16 = 51

	MethodBasicQos          uint16 = 10
	MethodBasicQosOk        uint16 = 11
	MethodBasicConsume      uint16 = 20
	MethodBasicConsumeOk    uint16 = 21
	MethodBasicCancel       uint16 = 30
	MethodBasicCancelOk     uint16 = 31
	MethodBasicPublish      uint16 = 40
	MethodBasicReturn       uint16 = 50
	MethodBasicDeliver      uint16 = 60
	MethodBasicGet          uint16 = 70
	MethodBasicGetOk        uint16 = 71
	MethodBasicGetEmpty     uint16 = 72
	MethodBasicAck          uint16 = 80
	MethodBasicReject       uint16 = 90
	MethodBasicRecoverAsync uint16 = 100 // deprecated, not decoded
	MethodBasicRecover      uint16 = 110
	MethodBasicRecoverOk    uint16 = 111
	MethodBasicNack         uint16 = 120 // RabbitMQ extension

	MethodConfirmSelect   uint16 = 10
	MethodConfirmSelectOk uint16 = 11

	MethodTxSelect     uint16 = 10
	MethodTxSelectOk   uint16 = 11
	MethodTxCommit     uint16 = 20
	MethodTxCommitOk   uint16 = 21
	MethodTxRollback   uint16 = 30
	MethodTxRollbackOk uint16 = 31
)
