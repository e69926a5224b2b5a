package core

import "github.com/sluicemq/sluice/core/record"

// MsgKind says what a peer message is.
type MsgKind uint8

const (
	// MsgAppend: owner to follower. Records continue the owner's log at
	// Prev; the record before Prev has epoch PrevEpoch. Commit is the owner's
	// confirmed end. An append with no records is a probe or heartbeat.
	MsgAppend MsgKind = 1
	// MsgAppendReply: follower to owner. Ok: the follower's log matches the
	// owner's below End and holds it durably. Not Ok: the follower could not
	// match Prev; End and Epochs describe its log so the owner can find where
	// the two diverge.
	MsgAppendReply MsgKind = 2
	// MsgLogQuery: owner to follower, from an owner whose log lost records
	// to damage: report your log (end and epoch history).
	MsgLogQuery MsgKind = 3
	// MsgLogReport: follower to owner: End and Epochs describe its log.
	MsgLogReport MsgKind = 4
	// MsgFetch: owner to follower: send me your records from Prev on.
	MsgFetch MsgKind = 5
	// MsgFetchReply: follower to owner: Records from Prev on (the record
	// before Prev has epoch PrevEpoch); End is the follower's log end.
	MsgFetchReply MsgKind = 6
)

// Message is one peer-to-peer message. Every message names its queue and
// the sender's epoch, which fences messages of older epochs.
type Message struct {
	Kind  MsgKind
	Queue QueueID
	Epoch uint64
	// Process is the sender's process sequence number: it grows with every
	// start of a broker, so a receiver can tell a restarted peer (whose
	// earlier reports may no longer hold) from a stale message of an old one.
	Process uint64

	Prev      uint64          // append
	PrevEpoch uint64          // append
	Commit    uint64          // append
	Records   []record.Record // append

	Ok     bool         // reply
	End    uint64       // reply
	Epochs []EpochStart // reply, when not Ok
}

// appendHead writes what every message starts with: kind, queue, epoch
// and sender process.
func (m *Message) appendHead(dst []byte, kind string) []byte {
	dst = append(dst, kind...)
	dst = appendKV(dst, "q", uint64(m.Queue))
	dst = appendKV(dst, "e", m.Epoch)
	return appendKV(dst, "p", m.Process)
}

// AppendText appends the message's stable one-line text form.
func (m *Message) AppendText(dst []byte) []byte {
	switch m.Kind {
	case MsgAppend:
		dst = m.appendHead(dst, "append")
		dst = appendKV(dst, "prev", m.Prev)
		dst = appendKV(dst, "preve", m.PrevEpoch)
		dst = appendKV(dst, "commit", m.Commit)
		// The records start at prev: say only how many and how big.
		dst = appendKV(dst, "recs", uint64(len(m.Records)))
		var bytes int
		for i := range m.Records {
			bytes += len(m.Records[i].Body)
		}
		return appendKV(dst, "bytes", uint64(bytes))
	case MsgAppendReply:
		dst = m.appendHead(dst, "append-reply")
		if m.Ok {
			dst = append(dst, " ok"...)
		} else {
			dst = append(dst, " reject"...)
		}
		dst = appendKV(dst, "end", m.End)
		if !m.Ok {
			dst = appendEpochs(dst, m.Epochs)
		}
		return dst
	case MsgLogQuery:
		return m.appendHead(dst, "log-query")
	case MsgLogReport:
		dst = m.appendHead(dst, "log-report")
		dst = appendKV(dst, "end", m.End)
		return appendEpochs(dst, m.Epochs)
	case MsgFetch:
		dst = m.appendHead(dst, "fetch")
		return appendKV(dst, "from", m.Prev)
	case MsgFetchReply:
		dst = m.appendHead(dst, "fetch-reply")
		dst = appendKV(dst, "prev", m.Prev)
		dst = appendKV(dst, "preve", m.PrevEpoch)
		dst = appendKV(dst, "end", m.End)
		return appendKV(dst, "recs", uint64(len(m.Records)))
	}
	return appendKV(append(dst, "msg?"...), "kind", uint64(m.Kind))
}

func (m *Message) String() string { return string(m.AppendText(nil)) }
