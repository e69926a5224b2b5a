package ctrl

import (
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A hand decoder for the peer messages of the group (raftpb.Message), for
// allocations: raft v3.7's generated types keep every optional scalar
// behind a pointer, and proto.Unmarshal allocates each one (a heartbeat is
// five or six allocations, an append four more per entry). This decoder
// allocates the message and its scalars in one box, a message's entries in
// two slices (boxes, pointers) however many, and one copy of the entries'
// data and the context.
//
// It takes only what raft sends to peers (the scalars, the entries and the
// context of a read's heartbeat, each with the wire type its field
// declares, and the enums' known values); anything else (a snapshot,
// responses, an unknown field, a wire type that does not match, malformed
// bytes) goes to proto.Unmarshal, so the result and the error text are
// proto's own. FuzzDecodeMessage holds the two to agreement.

// msgFields are the scalars of one message, as scanned.
type msgFields struct {
	has                   uint16 // bit 1<<n: field n was seen
	typ                   pb.MessageType
	to, from, term        uint64
	logTerm, index        uint64
	commit, vote, rejHint uint64
	reject                bool
	context               []byte // aliases the input
	ents                  int    // entries (field 7)
	dataBytes             int    // the bytes of the entries' data and the context, summed
}

// The field numbers of raftpb.Message (raft.proto).
const (
	fType       = 1
	fTo         = 2
	fFrom       = 3
	fTerm       = 4
	fLogTerm    = 5
	fIndex      = 6
	fEntries    = 7
	fCommit     = 8
	fReject     = 10
	fRejectHint = 11
	fContext    = 12
	fVote       = 13
)

// The field numbers of raftpb.Entry.
const (
	fEntType  = 1
	fEntTerm  = 2
	fEntIndex = 3
	fEntData  = 4
)

// msgBox is a decoded message with the values its pointer fields point at:
// one allocation. Raft may keep the message (or pointers into it) past the
// step, so a box is never reused.
type msgBox struct {
	m pb.Message
	f msgFields
}

// entBox is one decoded entry with its values. Raft keeps entries in its
// log; a message's boxes are one slice, never reused.
type entBox struct {
	e     pb.Entry
	typ   pb.EntryType
	term  uint64
	index uint64
}

// entFields are one entry's fields, as scanned; data aliases the input.
type entFields struct {
	has         uint8
	typ         pb.EntryType
	term, index uint64
	data        []byte
}

// emptyBytes backs the data of an entry whose data field is present and
// empty: proto2 bytes keep presence (non-nil, zero length).
var emptyBytes [0]byte

// decodeMessage decodes b as proto.Unmarshal decodes it into a new
// raftpb.Message, with the same result (proto.Equal) and the same error.
func decodeMessage(b []byte) (*pb.Message, error) {
	var f msgFields
	if f.scan(b) {
		return f.build(b), nil
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// MsgTypeTerm returns the type and term of a marshalled raftpb.Message (as
// GetType and GetTerm would after proto.Unmarshal); ok is false when the
// bytes do not decode. It allocates nothing for the messages raft sends.
func MsgTypeTerm(msg []byte) (typ pb.MessageType, term uint64, ok bool) {
	var f msgFields
	if f.scan(msg) {
		return f.typ, f.term, true
	}
	var m pb.Message
	if proto.Unmarshal(msg, &m) != nil {
		return 0, 0, false
	}
	return m.GetType(), m.GetTerm(), true
}

// varint reads one varint field's value; ok is false for a wire type that
// is not a varint or a malformed value.
func varint(b []byte, typ protowire.Type) (v uint64, n int, ok bool) {
	if typ != protowire.VarintType {
		return 0, 0, false
	}
	v, n = protowire.ConsumeVarint(b)
	return v, n, n >= 0
}

// bytesField consumes a length-delimited field's value: ok false if the
// wire type is not bytes or the length runs past b.
func bytesField(b []byte, typ protowire.Type) (v []byte, n int, ok bool) {
	if typ != protowire.BytesType {
		return nil, 0, false
	}
	v, n = protowire.ConsumeBytes(b)
	return v, n, n >= 0
}

// eachField walks b's fields: one whose number isBytes names goes to
// onBytes with its value, any other to onVarint; a malformed tag or
// value, a wire type that does not match, or a callback's false ends the
// walk with false (the field is proto's to decode).
func eachField(b []byte, isBytes func(protowire.Number) bool,
	onBytes func(protowire.Number, []byte) bool, onVarint func(protowire.Number, uint64) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var ok bool
		if isBytes(num) {
			var v []byte
			v, n, ok = bytesField(b, typ)
			ok = ok && onBytes(num, v)
		} else {
			var v uint64
			v, n, ok = varint(b, typ)
			ok = ok && onVarint(num, v)
		}
		if !ok {
			return false
		}
		b = b[n:]
	}
	return true
}

// scan reads b's fields into f, checking every entry; it returns false
// for anything the hand decoder leaves to proto.
func (f *msgFields) scan(b []byte) bool {
	*f = msgFields{}
	return eachField(b, func(num protowire.Number) bool { return num == fEntries || num == fContext },
		func(num protowire.Number, v []byte) bool {
			if num == fEntries {
				var e entFields
				if !e.scan(v) {
					return false
				}
				f.ents++
				f.dataBytes += len(e.data)
			} else {
				f.dataBytes += len(v) - len(f.context) // the last one wins
				f.context = v
			}
			f.has |= 1 << num
			return true
		},
		func(num protowire.Number, v uint64) bool {
			switch num {
			case fType:
				if !knownEnum(pb.MessageType_name, v) {
					return false // an unknown value: proto's to keep or refuse
				}
				f.typ = pb.MessageType(v)
			case fTo:
				f.to = v
			case fFrom:
				f.from = v
			case fTerm:
				f.term = v
			case fLogTerm:
				f.logTerm = v
			case fIndex:
				f.index = v
			case fCommit:
				f.commit = v
			case fReject:
				f.reject = v != 0
			case fRejectHint:
				f.rejHint = v
			case fVote:
				f.vote = v
			default:
				return false
			}
			f.has |= 1 << num
			return true
		})
}

// knownEnum reports whether v is one of an enum's values (its generated
// name table, dense from 0).
func knownEnum(names map[int32]string, v uint64) bool {
	return v < uint64(len(names)) && names[int32(v)] != ""
}

// scan reads one entry's fields into e; false as msgFields.scan.
func (e *entFields) scan(b []byte) bool {
	*e = entFields{}
	return eachField(b, func(num protowire.Number) bool { return num == fEntData },
		func(num protowire.Number, v []byte) bool {
			e.data = v
			e.has |= 1 << num
			return true
		},
		func(num protowire.Number, v uint64) bool {
			switch num {
			case fEntType:
				if !knownEnum(pb.EntryType_name, v) {
					return false
				}
				e.typ = pb.EntryType(v)
			case fEntTerm:
				e.term = v
			case fEntIndex:
				e.index = v
			default:
				return false
			}
			e.has |= 1 << num
			return true
		})
}

// build makes the message f scanned from b (f.scan(b) returned true).
func (f *msgFields) build(b []byte) *pb.Message {
	box := &msgBox{f: *f}
	m, v := &box.m, &box.f
	set := func(num int, p *uint64) *uint64 {
		if v.has&(1<<num) != 0 {
			return p
		}
		return nil
	}
	if v.has&(1<<fType) != 0 {
		m.Type = &v.typ
	}
	m.To, m.From, m.Term = set(fTo, &v.to), set(fFrom, &v.from), set(fTerm, &v.term)
	m.LogTerm, m.Index, m.Commit = set(fLogTerm, &v.logTerm), set(fIndex, &v.index), set(fCommit, &v.commit)
	m.RejectHint, m.Vote = set(fRejectHint, &v.rejHint), set(fVote, &v.vote)
	if v.has&(1<<fReject) != 0 {
		m.Reject = &v.reject
	}
	var data []byte
	if v.dataBytes > 0 {
		data = make([]byte, 0, v.dataBytes)
	}
	// Copied, as proto copies: the input is the caller's. Each copy's
	// capacity ends with it, so an append to one never reaches the next.
	keep := func(b []byte) []byte {
		if len(b) == 0 {
			return emptyBytes[:] // present: non-nil
		}
		start := len(data)
		data = append(data, b...)
		return data[start:len(data):len(data)]
	}
	if v.has&(1<<fContext) != 0 {
		m.Context = keep(v.context)
	}
	v.context = nil // the box holds no reference to the input
	if v.ents == 0 {
		return m
	}
	boxes := make([]entBox, v.ents)
	m.Entries = make([]*pb.Entry, v.ents)
	i := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if num != fEntries {
			b = b[protowire.ConsumeFieldValue(num, typ, b):]
			continue
		}
		raw, n := protowire.ConsumeBytes(b)
		b = b[n:]
		var ef entFields
		ef.scan(raw)
		eb := &boxes[i]
		eb.typ, eb.term, eb.index = ef.typ, ef.term, ef.index
		e := &eb.e
		if ef.has&(1<<fEntType) != 0 {
			e.Type = &eb.typ
		}
		if ef.has&(1<<fEntTerm) != 0 {
			e.Term = &eb.term
		}
		if ef.has&(1<<fEntIndex) != 0 {
			e.Index = &eb.index
		}
		if ef.has&(1<<fEntData) != 0 {
			e.Data = keep(ef.data)
		}
		m.Entries[i] = e
		i++
	}
	return m
}
