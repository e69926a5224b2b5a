package core

import "github.com/sluicemq/sluice/core/record"

// EffectKind says what the driver must do.
type EffectKind uint8

const (
	// EfSend: send Msg to peer To. May be lost, duplicated or reordered.
	EfSend EffectKind = 1
	// EfStorage: perform Op on Queue's log (see StorageOp), then return an
	// InStorage completion. Append: write Records. Sync: make everything
	// written so far durable; Offset is the log end it covers. Read: read up
	// to Count records from Offset, echoing Tag. Truncate: remove records
	// from Offset on. Discard: remove the damaged tail found at start.
	EfStorage EffectKind = 2
	// EfReply: answer request ReqID of client Client with Outcome.
	EfReply EffectKind = 3
	// EfDeliver: hand the record at Offset of Queue (Body) to consumer Client.
	EfDeliver EffectKind = 4
	// EfDeadline: deliver an InTick at or after AtNs. Only the latest
	// deadline effect counts.
	EfDeadline EffectKind = 5
)

// Outcome is how a request ended.
type Outcome uint8

const (
	// Confirmed: the publish is durable on W replicas at Offset (or the
	// subscribe/ack was accepted).
	Confirmed Outcome = 1
	// Failed: definitely not done; a failed publish never reaches a consumer.
	Failed Outcome = 2
	// Unknown: the publish may or may not have been done.
	Unknown Outcome = 3
)

func (o Outcome) String() string {
	switch o {
	case Confirmed:
		return "confirmed"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return "outcome?"
}

// Effect is one thing the driver must do. Effects are values; the slice
// Step returns is valid until the next Step.
type Effect struct {
	Kind EffectKind

	To  NodeID  // send
	Msg Message // send

	Op      StorageOp       // storage
	Queue   QueueID         // storage, reply, deliver
	Records []record.Record // storage append
	Offset  uint64          // storage, reply (confirmed publish), deliver
	Count   int             // storage read
	Tag     uint64          // storage read

	Client      ClientID // reply, deliver
	ReqID       uint64   // reply
	Outcome     Outcome  // reply
	Reason      string   // reply (failed, unknown)
	Body        []byte   // deliver
	Redelivered bool     // deliver

	AtNs int64 // deadline
}

// AppendText appends the effect's stable one-line text form.
func (e *Effect) AppendText(dst []byte) []byte {
	switch e.Kind {
	case EfSend:
		dst = appendKV(append(dst, "send"...), "to", uint64(e.To))
		dst = append(dst, ' ')
		return e.Msg.AppendText(dst)
	case EfStorage:
		dst = append(dst, "storage "...)
		dst = append(dst, e.Op.String()...)
		dst = appendKV(dst, "q", uint64(e.Queue))
		switch e.Op {
		case OpAppend:
			dst = appendRecords(dst, e.Records)
		case OpRead:
			dst = appendKV(dst, "o", e.Offset)
			dst = appendKVInt(dst, "count", int64(e.Count))
			dst = appendKV(dst, "tag", e.Tag)
		default:
			dst = appendKV(dst, "o", e.Offset)
		}
		return dst
	case EfReply:
		dst = appendKV(append(dst, "reply"...), "c", uint64(e.Client))
		dst = appendKV(dst, "id", e.ReqID)
		dst = append(dst, ' ')
		dst = append(dst, e.Outcome.String()...)
		if e.Outcome == Confirmed {
			dst = appendKV(dst, "q", uint64(e.Queue))
			dst = appendKV(dst, "o", e.Offset)
		} else {
			dst = appendKVStr(dst, "reason", e.Reason)
		}
		return dst
	case EfDeliver:
		dst = appendKV(append(dst, "deliver"...), "c", uint64(e.Client))
		dst = appendKV(dst, "q", uint64(e.Queue))
		dst = appendKV(dst, "o", e.Offset)
		dst = appendKV(dst, "len", uint64(len(e.Body)))
		if e.Redelivered {
			dst = append(dst, " redelivered"...)
		}
		return dst
	case EfDeadline:
		return appendKVInt(append(dst, "deadline"...), "at", e.AtNs)
	}
	return appendKV(append(dst, "effect?"...), "kind", uint64(e.Kind))
}

func (e *Effect) String() string { return string(e.AppendText(nil)) }
