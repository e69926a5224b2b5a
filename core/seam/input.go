package seam

import (
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/meta"
)

// InputKind says what an input is.
type InputKind uint8

const (
	// InStart: the process started; Logs holds what storage recovered,
	// Meta what the metadata store loaded (nil on a node without the
	// metadata group). It is the first input of every process.
	InStart InputKind = 1
	// InMessage: a peer message arrived from From.
	InMessage InputKind = 2
	// InClient: a client request arrived on connection Client.
	InClient InputKind = 3
	// InClientGone: connection Client closed; its deliveries return.
	InClientGone InputKind = 4
	// InStorage: a storage effect completed.
	InStorage InputKind = 5
	// InTick: time passed (a deadline was reached).
	InTick InputKind = 6
	// InPeerLost: the connection to peer From closed and a reconnect
	// failed: its process Process is gone. Only an explicit loss gives
	// one (a peer's process exited); a silent failure (a power loss, a
	// partition, a pause) gives none.
	InPeerLost InputKind = 7
)

// LogState is what the driver found when it opened one log of a group.
type LogState struct {
	Group      GroupID
	Log        LogID
	Start, End uint64
	Epochs     []EpochStart
	Damage     string // non-empty: a torn or corrupt tail starts at End
	// DamageDurable: the damaged records had been synced (a later sync's
	// frames lie beyond them): acknowledged records are certainly lost,
	// not an unsynced tail a crash tore.
	DamageDurable bool
	// Unrepaired: the log lost records to damage (now, or at an earlier
	// start) and the loss was not yet repaired from other replicas.
	Unrepaired bool
	// Seal is the log's seal receipt (what OpSeal stored), if any;
	// SealDamage says why a receipt present does not check.
	Seal       []byte
	SealDamage string
	// Binding is the log's storage binding (what OpBind stored), nil
	// without one; BindingDamage says why one present does not check;
	// BoundBefore: the log was bound on this storage before (a marker
	// beside its directory says so), so a log without its binding lost
	// its directory or live generation, and one never bound is new.
	Binding       []byte
	BindingDamage string
	BoundBefore   bool
	// Generation is the generation the log is: 0 for the first, else
	// the epoch of the installation that published it (OpPublish); of a
	// stage, the generation it is staged as.
	Generation uint64
}

// RequestKind says what a client asks.
type RequestKind uint8

const (
	// ReqPublish appends Body to Queue; answered by confirm, fail or unknown.
	ReqPublish RequestKind = 1
	// ReqSubscribe starts a consumer on Queue with Prefetch credit.
	ReqSubscribe RequestKind = 2
	// ReqAck settles the delivery at Offset of Queue.
	ReqAck RequestKind = 3
	// ReqMeta asks the metadata group to commit the command in Body (an
	// operator's request: a setting today); answered confirmed once this
	// node applied it, failed when it cannot (not the leader: Reason
	// names the leader if known), unknown when leadership was lost first.
	ReqMeta RequestKind = 4
	// ReqTopology asks where the queue named Body lives, by the metadata
	// this node applied: confirmed with the queue's id (Queue) and its
	// owner's node id (Offset), or failed (no such queue, not placed,
	// fenced). Any node holding the metadata group answers.
	ReqTopology RequestKind = 5
	// ReqRequeue returns the delivery at Offset of Queue, unsettled, to
	// the queue (AMQP's basic.nack and basic.reject with requeue): its
	// consumer's prefetch slot is free again, and it is delivered again,
	// redelivered, to any consumer, ahead of what was never delivered. An
	// accepted one has no reply and writes nothing to the log (a delivery
	// is this process's, and a failover returns every unsettled one).
	ReqRequeue RequestKind = 6
	// ReqCount asks Queue's owner what queue.declare-ok reports: how many
	// messages are ready (confirmed, neither delivered nor settled; those
	// returned included) and how many consumers it has. Confirmed with
	// Offset the ready count, Count the consumers and Tag the incarnation
	// of the queue it serves; failed where this node does not own the
	// queue.
	ReqCount RequestKind = 7
	// ReqRoute asks which queues a message published to an exchange
	// reaches, by the bindings this node applied: Body is the query
	// (metadata.AppendRouteQuery: exchange, routing key, headers, and the
	// metadata index the answer must reflect). Confirmed with Body the
	// queue names (metadata.AppendRouted) and Count their number; failed
	// with RefusalNotFound (no such exchange), RefusalInternal (an
	// internal one) or RefusalBehind (this node has not applied that
	// index, or its start's metadata is still catching up: ask again).
	// Any node holding the metadata group answers.
	ReqRoute RequestKind = 8
	// ReqPurge settles the messages ready on Queue's owner (AMQP's
	// queue.purge): an ack record for each, at most PurgeRecordsMax per
	// request, as if a consumer had taken and acked them; deliveries
	// outstanding stay. Confirmed with Offset the count (the asker asks
	// again until it is below PurgeRecordsMax); failed where this node
	// does not serve the queue, or its state is not rebuilt yet ("epoch
	// not ready").
	ReqPurge RequestKind = 9
)

// PurgeRecordsMax bounds the ack records one ReqPurge appends.
const PurgeRecordsMax = 4096

// Request is a client request.
type Request struct {
	Kind     RequestKind
	ID       uint64 // the client's request id, echoed in the reply
	Queue    QueueID
	Body     []byte // publish; meta: the command
	Offset   uint64 // ack, requeue
	Prefetch int    // subscribe
	// Once: a subscribe that takes one delivery and no more (a basic.get's)
	Once bool
	// Priority: a subscribe's priority (AMQP's x-priority): a delivery goes
	// to a consumer of the highest priority with credit
	Priority int
	// Exclusive: a subscribe that must be the queue's only consumer
	// (AMQP's basic.consume exclusive); refused while it has others, and
	// every other subscribe refused while it lasts
	Exclusive bool
}

// StorageOp names a storage effect and its completion.
type StorageOp uint8

const (
	OpAppend   StorageOp = 1
	OpSync     StorageOp = 2
	OpRead     StorageOp = 3
	OpTruncate StorageOp = 4
	OpDiscard  StorageOp = 5 // discard a damaged tail found at start
	OpRepaired StorageOp = 6 // durably clear the log's unrepaired mark
	OpVerify   StorageOp = 7 // validate records without reading them out (a scrub)
	// OpPersist makes a metadata batch durable on the node's metadata
	// store (core/doc.go, point 10); its completion echoes Tag.
	OpPersist StorageOp = 8
	// OpOpen opens (creating it if new) and recovers the log of a group
	// the node starts holding while it runs (a queue the controller placed
	// on it); its completion carries what the log recovered (State).
	// OpOpen of log LogStage opens (creating it if new) the group's stage
	// for generation Offset, a log apart from the live one (io/seglog's
	// generations), closing any stage of the group open before (none of
	// its operations may be outstanding).
	OpOpen StorageOp = 9
	// OpSeal durably stores Body as the log's seal receipt
	// (docs/design/recovery.md, "Seals"), replacing any earlier one; the records do not change.
	OpSeal StorageOp = 10
	// OpPublish, on a group's stage (log LogStage), makes the stage the
	// group's log: one checksummed pointer file beside the generations,
	// written to a temporary file, synced, renamed and its directory
	// synced, names the stage's generation; once it completes, log 0 of
	// the group is the stage's log and the stage is closed. The
	// generation it replaced stays on the disk, untouched.
	OpPublish StorageOp = 11
	// OpRetain deletes the log's head below Offset (at most its end), a
	// whole segment at a time, its new start made durable first
	// (io/seglog's retention); the log may keep a few records below
	// Offset: its completion's Offset is the log's start now, the base of
	// the segment that holds Offset (what a restart finds).
	OpRetain StorageOp = 12
	// OpReseed empties the log and restarts it at Offset, durably, with
	// Epochs as the epoch history below Offset: a copy the owner's log
	// has left behind (its end below the owner's start) starts again
	// from the owner's start, and a stage starts at its source's.
	OpReseed StorageOp = 13
	// OpBind durably stores Body as the log's storage binding (io/seglog's
	// BIND: what the log is a copy of, on which storage instance),
	// replacing any earlier one; the records do not change. A log opened
	// without one (State.Binding nil) lost its directory or generation:
	// what it acknowledged is gone.
	OpBind StorageOp = 14
)

func (o StorageOp) String() string {
	switch o {
	case OpAppend:
		return "append"
	case OpSync:
		return "sync"
	case OpRead:
		return "read"
	case OpTruncate:
		return "truncate"
	case OpDiscard:
		return "discard"
	case OpRepaired:
		return "repaired"
	case OpVerify:
		return "verify"
	case OpPersist:
		return "persist"
	case OpOpen:
		return "open"
	case OpSeal:
		return "seal"
	case OpPublish:
		return "publish"
	case OpRetain:
		return "retain"
	case OpReseed:
		return "reseed"
	case OpBind:
		return "bind"
	}
	return "op?"
}

// StorageDone is the completion of a storage effect.
type StorageDone struct {
	Op      StorageOp
	Group   GroupID
	Log     LogID
	Offset  uint64          // sync: the end it made durable; read: from; verify: the end verified; retain: the log's start
	Tag     uint64          // read, persist: the effect's tag
	Records []record.Record // read
	State   *LogState       // open: what the log recovered
	Err     string          // non-empty: the operation failed; the log is failed
}

// Input is one input to Step. Every input carries the current instant.
type Input struct {
	Kind   InputKind
	NowNs  int64
	From   NodeID      // InMessage
	Group  GroupID     // InMessage: the group the message is for
	Data   []byte      // InMessage: the group's message, as its codec writes it
	Client ClientID    // InClient, InClientGone
	Req    Request     // InClient
	Done   StorageDone // InStorage
	Logs   []LogState  // InStart
	Meta   *meta.State // InStart: the metadata store's state; nil without one
	Draw   uint64      // InTick: a random value (the simulator's PRNG, the daemon's crypto source)
	// Process: InPeerLost's process instance of From.
	Process uint64
}

// MsgText renders a group's peer message as text; the node knows how each
// kind of group writes its messages.
type MsgText interface {
	AppendMsgText(dst []byte, g GroupID, data []byte) []byte
}

// CmdText renders a metadata command (a ReqMeta request's body); a MsgText
// that implements it renders them in inputs.
type CmdText interface {
	AppendCmdText(dst []byte, cmd []byte) []byte
}

// AppendText appends the input's stable one-line text form; msgs renders
// peer messages.
func (in *Input) AppendText(dst []byte, msgs MsgText) []byte {
	switch in.Kind {
	case InStart:
		dst = append(dst, "start"...)
		for _, l := range in.Logs {
			dst = AppendKV(dst, "q", uint64(l.Group))
			dst = AppendKV(dst, "start", l.Start)
			dst = AppendKV(dst, "end", l.End)
			dst = AppendEpochs(dst, l.Epochs)
			if l.Damage != "" {
				dst = AppendKVStr(dst, "damage", l.Damage)
			}
			if l.Unrepaired {
				dst = append(dst, " unrepaired"...)
			}
			if len(l.Seal) > 0 {
				dst = AppendKV(dst, "seal-bytes", uint64(len(l.Seal)))
			}
			if l.SealDamage != "" {
				dst = AppendKVStr(dst, "seal-damage", l.SealDamage)
			}
		}
		if in.Meta != nil {
			dst = AppendMetaState(dst, in.Meta)
		}
		return dst
	case InMessage:
		dst = AppendKV(append(dst, "recv"...), "from", uint64(in.From))
		dst = append(dst, ' ')
		return msgs.AppendMsgText(dst, in.Group, in.Data)
	case InClient:
		dst = AppendKV(append(dst, "client"...), "c", uint64(in.Client))
		r := &in.Req
		switch r.Kind {
		case ReqPublish:
			dst = append(dst, " publish"...)
			dst = AppendKV(dst, "q", uint64(r.Queue))
			dst = AppendKV(dst, "id", r.ID)
			dst = AppendKV(dst, "len", uint64(len(r.Body)))
		case ReqSubscribe:
			dst = append(dst, " subscribe"...)
			dst = AppendKV(dst, "q", uint64(r.Queue))
			dst = AppendKV(dst, "id", r.ID)
			dst = AppendKVInt(dst, "prefetch", int64(r.Prefetch))
			if r.Exclusive {
				dst = append(dst, " exclusive"...)
			}
			if r.Once {
				dst = append(dst, " once"...)
			}
			if r.Priority != 0 {
				dst = AppendKVInt(dst, "priority", int64(r.Priority))
			}
		case ReqAck:
			dst = append(dst, " ack"...)
			dst = AppendKV(dst, "q", uint64(r.Queue))
			dst = AppendKV(dst, "id", r.ID)
			dst = AppendKV(dst, "o", r.Offset)
		case ReqRequeue:
			dst = append(dst, " requeue"...)
			dst = AppendKV(dst, "q", uint64(r.Queue))
			dst = AppendKV(dst, "id", r.ID)
			dst = AppendKV(dst, "o", r.Offset)
		case ReqCount:
			dst = append(dst, " count"...)
			dst = AppendKV(dst, "q", uint64(r.Queue))
			dst = AppendKV(dst, "id", r.ID)
		case ReqPurge:
			dst = append(dst, " purge"...)
			dst = AppendKV(dst, "q", uint64(r.Queue))
			dst = AppendKV(dst, "id", r.ID)
		case ReqRoute:
			dst = append(dst, " route"...)
			dst = AppendKV(dst, "id", r.ID)
			dst = AppendKV(dst, "bytes", uint64(len(r.Body)))
		case ReqTopology:
			dst = append(dst, " topology"...)
			dst = AppendKV(dst, "id", r.ID)
			dst = AppendKVStr(dst, "queue", string(r.Body))
		case ReqMeta:
			dst = append(dst, " meta"...)
			dst = AppendKV(dst, "id", r.ID)
			if ct, ok := msgs.(CmdText); ok {
				dst = ct.AppendCmdText(append(dst, ' '), r.Body)
			} else {
				dst = AppendKV(dst, "bytes", uint64(len(r.Body)))
			}
		default:
			dst = AppendKV(append(dst, " req?"...), "kind", uint64(r.Kind))
		}
		return dst
	case InClientGone:
		return AppendKV(append(dst, "client-gone"...), "c", uint64(in.Client))
	case InStorage:
		d := &in.Done
		dst = append(dst, "done "...)
		dst = append(dst, d.Op.String()...)
		dst = AppendKV(dst, "q", uint64(d.Group))
		if d.Log != 0 {
			dst = AppendKV(dst, "log", uint64(d.Log))
		}
		dst = AppendKV(dst, "o", d.Offset)
		switch d.Op {
		case OpRead:
			dst = AppendKV(dst, "tag", d.Tag)
			dst = AppendRecords(dst, d.Records)
		case OpPersist:
			dst = AppendKV(dst, "seq", d.Tag)
		case OpOpen:
			if st := d.State; st != nil {
				dst = AppendKV(dst, "start", st.Start)
				dst = AppendKV(dst, "end", st.End)
				dst = AppendEpochs(dst, st.Epochs)
				if st.Damage != "" {
					dst = AppendKVStr(dst, "damage", st.Damage)
				}
				if st.Generation != 0 {
					dst = AppendKV(dst, "gen", st.Generation)
				}
			}
		}
		if d.Err != "" {
			dst = AppendKVStr(dst, "err", d.Err)
		}
		return dst
	case InPeerLost:
		dst = AppendKV(append(dst, "peer-lost"...), "from", uint64(in.From))
		return AppendKV(dst, "process", in.Process)
	case InTick:
		dst = append(dst, "tick"...)
		if in.Draw != 0 {
			dst = AppendKV(dst, "draw", in.Draw)
		}
		return dst
	}
	return AppendKV(append(dst, "input?"...), "kind", uint64(in.Kind))
}

// String renders the input without a message decoder (messages print as
// their size).
func (in *Input) String() string { return string(in.AppendText(nil, rawMsgs{})) }

// rawMsgs renders a message it cannot decode as its group and size.
type rawMsgs struct{}

func (rawMsgs) AppendMsgText(dst []byte, g GroupID, data []byte) []byte {
	dst = AppendKV(append(dst, "msg"...), "g", uint64(g))
	return AppendKV(dst, "bytes", uint64(len(data)))
}
