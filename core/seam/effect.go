package seam

import (
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/meta"
)

// EffectKind says what the driver must do.
type EffectKind uint8

const (
	// EfSend: send Data, a message of Group, to peer To. May be lost,
	// duplicated or reordered.
	EfSend EffectKind = 1
	// EfStorage: perform Op on log Log of Group (see StorageOp), then
	// return an InStorage completion. Append: write Records. Sync: make everything
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
	// EfApplied: the metadata group applied its committed entry Offset
	// (term Tag); Body is the command's encoding, Reason the command and
	// its result as text. Nothing to do: the world may watch it (the
	// simulator's checkers do).
	EfApplied EffectKind = 6
	// EfNote: a trace note from Group (raft's log lines, the failure
	// detector's campaigns, refusals); Reason is its text. Nothing to do
	// but trace it.
	EfNote EffectKind = 7
	// EfWatermark: the owner of queue Queue (group Group) moved its high
	// watermark (the lowest durable end over its in-sync set:
	// docs/design/in-sync.md, "The high watermark") to
	// Offset. Nothing to do: the world may watch it (the simulator's
	// checkers, the daemon's metrics). Only queues with an in-sync set
	// (placed by the controller) have one; it never moves back.
	EfWatermark EffectKind = 8
	// EfRecovery: a stage of a queue's sealed recovery was reached
	// (docs/design/recovery.md, "Activation"): Queue, Stage, Offset the pending transition's epoch, Reason
	// the detail; for StageSeal, Body is the seal, for StageSelect the
	// source's seal (core/recovery's encoding). Nothing to do: the world may watch it (the simulator's
	// checkers and coverage, the daemon's metrics and recovery timings).
	EfRecovery EffectKind = 9
	// EfCancel: the subscription of consumer Client to Queue ended on the
	// broker's side (Reason: why; its replica group was fenced, replaced
	// or retired): no delivery of it follows, and its unacked deliveries
	// returned to the queue. Pass it to the client's connection like a
	// reply (AMQP's server-sent basic.cancel): the client may subscribe
	// again where the queue lives now.
	EfCancel EffectKind = 10
)

// RecoveryStage names a stage of a sealed recovery (docs/design/recovery.md).
type RecoveryStage uint8

const (
	// StageDetect: a node's recovery worker took up a queue's pending
	// transition (its candidate).
	StageDetect RecoveryStage = 1
	// StageSeal: a replica of the previous assignment sealed its log.
	StageSeal RecoveryStage = 2
	// StageSelect: the worker held enough witnesses and chose the source.
	StageSelect RecoveryStage = 3
	// StageInstall: a proposed member installed the source's history
	// (Body: its receipt).
	StageInstall RecoveryStage = 4
	// StageActivate: the worker saw its activation committed (Body: the
	// Activate command).
	StageActivate RecoveryStage = 5
	// StagePropose: the metadata leader applied the pending transition
	// that fenced the queue (the controller proposed it on a member's
	// loss).
	StagePropose RecoveryStage = 6
	// StageReattach: the new owner confirmed its first publish after the
	// activation (clients that followed topology are served again).
	StageReattach RecoveryStage = 7
	// StageSetAside: the worker set its attempt aside, blocked
	// (contradictory evidence, an inspection budget spent, lost copies) or
	// past its deadline (Aside: the typed cause; Reason: the detail); the
	// queue stays fenced and the attempt starts afresh after a backoff.
	StageSetAside RecoveryStage = 8
	// StageHandedOff: the worker ended its attempt because the metadata
	// handed the transition's recovery to another proposed member (this
	// one is gone from the candidacy: it drains, or was taken for gone);
	// Reason names the new candidate. The attempt's history ends here;
	// the new candidate's detect begins the next.
	StageHandedOff RecoveryStage = 9
	// StageMax is the highest stage.
	StageMax = StageHandedOff
)

func (s RecoveryStage) String() string {
	switch s {
	case StageDetect:
		return "detect"
	case StageSeal:
		return "seal"
	case StageSelect:
		return "select"
	case StageInstall:
		return "install"
	case StageActivate:
		return "activate"
	case StagePropose:
		return "propose"
	case StageReattach:
		return "reattach"
	case StageSetAside:
		return "set-aside"
	case StageHandedOff:
		return "handed-off"
	}
	return "stage?"
}

// AsideReason says why a recovery attempt was set aside (StageSetAside):
// the typed cause, which the daemon's history and metrics count and which
// decisions read; the effect's Reason is the detail for humans. Its names
// are stable (metrics labels, describe's JSON).
type AsideReason uint8

const (
	// AsideInspectPages, AsideInspectRecords, AsideInspectBytes: the
	// sealed reads spent the inspection budget's setting
	// recovery.inspect_pages_max, _records_max or _bytes_max.
	AsideInspectPages   AsideReason = 1
	AsideInspectRecords AsideReason = 2
	AsideInspectBytes   AsideReason = 3
	// AsideContradictorySeals: a replica sealed twice with different
	// evidence.
	AsideContradictorySeals AsideReason = 4
	// AsideContradictoryHistory: the sealed reads crossed: a witness holds
	// records past the source's end or above its epoch, or other records
	// where both hold one epoch, or the source's epochs go back.
	AsideContradictoryHistory AsideReason = 5
	// AsideSealMismatch: a sealed log no longer matches its seal (its
	// identity, its end, a record it cannot hash).
	AsideSealMismatch AsideReason = 6
	// AsideEpochsMax: the source's log holds more epochs than a recovery
	// carries.
	AsideEpochsMax AsideReason = 7
	// AsideLostCopies: every previous replica sealed, too few are complete
	// witnesses, and W or more lost what they acknowledged.
	AsideLostCopies AsideReason = 8
	// AsideSealsMissing: past the attempt's deadline with fewer than R
	// witnesses, no replica having refused (brokers down or unreachable).
	AsideSealsMissing AsideReason = 9
	// AsideSealRefused: past the attempt's deadline with fewer than R
	// witnesses, a replica having refused to seal or to serve a sealed
	// read.
	AsideSealRefused AsideReason = 10
	// AsideReadsMissing: past the attempt's deadline while the sealed reads
	// were not all answered.
	AsideReadsMissing AsideReason = 11
	// AsideInstallRefused: past the attempt's deadline with too few
	// installations, a proposed member having refused one.
	AsideInstallRefused AsideReason = 12
	// AsideInstallsMissing: past the attempt's deadline with too few
	// installations, none refused.
	AsideInstallsMissing AsideReason = 13
	// AsideActivationWaiting: past the attempt's deadline with enough
	// installed, the activation not committed (too few members live, the
	// old owner's lease, no metadata leader).
	AsideActivationWaiting AsideReason = 14
	// AsideStageBudget: a proposed member refused the installation, its
	// stage over a staging budget (recovery.stage_records_max or
	// recovery.stage_bytes_max).
	AsideStageBudget AsideReason = 15
	// AsideMax is the highest reason.
	AsideMax = AsideStageBudget
)

var asideNames = [...]string{AsideInspectPages: "inspect-pages", AsideInspectRecords: "inspect-records", AsideInspectBytes: "inspect-bytes",
	AsideContradictorySeals: "contradictory-seals", AsideContradictoryHistory: "contradictory-history", AsideSealMismatch: "seal-mismatch",
	AsideEpochsMax: "epochs-max", AsideLostCopies: "lost-copies", AsideSealsMissing: "seals-missing", AsideSealRefused: "seal-refused",
	AsideReadsMissing: "reads-missing", AsideInstallRefused: "install-refused", AsideInstallsMissing: "installs-missing",
	AsideActivationWaiting: "activation-waiting", AsideStageBudget: "stage-budget"}

func (r AsideReason) String() string {
	if r > 0 && int(r) < len(asideNames) {
		return asideNames[r]
	}
	return "reason?"
}

// ParseAsideReason returns the reason named s (String's inverse).
func ParseAsideReason(s string) (AsideReason, bool) {
	for r := AsideReason(1); r <= AsideMax; r++ {
		if asideNames[r] == s {
			return r, true
		}
	}
	return 0, false
}

// ReasonCatchingUp is a topology refusal's reason while the node has not
// yet applied the metadata it held committed at its start (a restart
// re-applies its log): a queue it does not find may exist, so the asker
// asks again rather than take it for missing.
const ReasonCatchingUp = "metadata catching up after the start"

// Outcome is how a request ended.
type Outcome uint8

const (
	// Confirmed: the publish is durable on W replicas at Offset (or the
	// subscribe was accepted; an accepted ack has no reply, as AMQP's
	// basic.ack has none).
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

// Refusal is a failed reply's typed cause, where the asker decides by it
// (RefusalNone: the reason's words are all there is).
type Refusal uint8

const (
	RefusalNone Refusal = 0
	// RefusalExclusive: a subscription refused because the queue has an
	// exclusive consumer, or an exclusive one asked of a queue that has
	// consumers (AMQP's 403 ACCESS_REFUSED).
	RefusalExclusive Refusal = 1
	// RefusalNotFound: a metadata command or a route names an exchange
	// or queue the catalogue does not hold (AMQP's 404 NOT_FOUND).
	RefusalNotFound Refusal = 2
	// RefusalConflict: a declaration of an existing name with other
	// attributes (AMQP's 406 PRECONDITION_FAILED, inequivalent arg).
	RefusalConflict Refusal = 3
	// RefusalInUse: a conditional deletion of an exchange that is the
	// source of bindings (406 PRECONDITION_FAILED, in use).
	RefusalInUse Refusal = 4
	// RefusalReserved: a declaration of a new name in the reserved amq.
	// namespace, or a change to a predeclared exchange (403 ACCESS_REFUSED).
	RefusalReserved Refusal = 5
	// RefusalLimit: the catalogue is at one of its limits.
	RefusalLimit Refusal = 6
	// RefusalInternal: a publish to an internal exchange (403
	// ACCESS_REFUSED: only exchange-to-exchange bindings reach it).
	RefusalInternal Refusal = 7
	// RefusalBehind: this node has not applied the metadata the request
	// needs yet (a route asked for a catalogue index it has not reached,
	// or its start's metadata is still catching up): ask again.
	RefusalBehind Refusal = 8
	// RefusalLocked: a queue exclusive to another connection (AMQP's 405
	// RESOURCE_LOCKED).
	RefusalLocked Refusal = 9
	RefusalMax            = RefusalLocked
)

var refusalNames = [...]string{RefusalNone: "none", RefusalExclusive: "exclusive", RefusalNotFound: "not-found",
	RefusalConflict: "conflict", RefusalInUse: "in-use", RefusalReserved: "reserved", RefusalLimit: "limit",
	RefusalInternal: "internal", RefusalBehind: "behind", RefusalLocked: "locked"}

func (r Refusal) String() string {
	if r <= RefusalMax {
		return refusalNames[r]
	}
	return "refusal?"
}

// Effect is one thing the driver must do. Effects are values; the slice
// Step returns is valid until the next Step.
type Effect struct {
	Kind EffectKind

	To    NodeID  // send
	Group GroupID // send, storage
	Data  []byte  // send: the message, as the group's codec writes it; valid until the next Step

	Op      StorageOp       // storage
	Log     LogID           // storage
	Batch   *meta.Batch     // storage persist: the metadata batch
	Queue   QueueID         // reply, deliver, cancel
	Records []record.Record // storage append
	Epochs  []EpochStart    // storage reseed: the history below Offset
	Offset  uint64          // storage, reply (confirmed publish), deliver
	Count   int             // storage read; reply (confirmed count: the consumers)
	Tag     uint64          // storage read, persist (its sequence number); applied (the term); reply (a count's: the queue's incarnation)

	Client      ClientID   // reply, deliver, cancel
	ReqID       uint64     // reply
	Outcome     Outcome    // reply
	Refusal     Refusal    // reply (failed): its typed cause, if any
	Reason      string     // reply (failed, unknown; a confirmed meta request's result); applied (the command and result); note; cancel
	Body        []byte     // deliver; applied (the command); reply (a confirmed route: the queue names)
	Redelivered bool       // deliver
	Life        *QueueLife // reply (topology): the queue's lifetime; nil for a durable one

	AtNs  int64         // deadline
	Stage RecoveryStage // recovery
	Aside AsideReason   // recovery, StageSetAside: the typed cause
}

// AppendText appends the effect's stable one-line text form; msgs renders
// peer messages.
func (e *Effect) AppendText(dst []byte, msgs MsgText) []byte {
	switch e.Kind {
	case EfSend:
		dst = AppendKV(append(dst, "send"...), "to", uint64(e.To))
		dst = append(dst, ' ')
		return msgs.AppendMsgText(dst, e.Group, e.Data)
	case EfStorage:
		dst = append(dst, "storage "...)
		dst = append(dst, e.Op.String()...)
		dst = AppendKV(dst, "q", uint64(e.Group))
		if e.Log != 0 {
			dst = AppendKV(dst, "log", uint64(e.Log))
		}
		switch e.Op {
		case OpAppend:
			dst = AppendRecords(dst, e.Records)
		case OpRead:
			dst = AppendKV(dst, "o", e.Offset)
			dst = AppendKVInt(dst, "count", int64(e.Count))
			dst = AppendKV(dst, "tag", e.Tag)
		case OpVerify:
			dst = AppendKV(dst, "o", e.Offset)
			dst = AppendKVInt(dst, "count", int64(e.Count))
		case OpPersist:
			dst = AppendKV(dst, "seq", e.Tag)
			dst = AppendBatch(dst, e.Batch)
		case OpSeal, OpBind:
			dst = AppendKV(dst, "bytes", uint64(len(e.Body)))
		case OpReseed:
			dst = AppendKV(dst, "o", e.Offset)
			dst = AppendEpochs(dst, e.Epochs)
		default:
			dst = AppendKV(dst, "o", e.Offset)
		}
		return dst
	case EfReply:
		dst = AppendKV(append(dst, "reply"...), "c", uint64(e.Client))
		dst = AppendKV(dst, "id", e.ReqID)
		dst = append(dst, ' ')
		dst = append(dst, e.Outcome.String()...)
		if e.Outcome == Confirmed {
			dst = AppendKV(dst, "q", uint64(e.Queue))
			dst = AppendKV(dst, "o", e.Offset)
			if e.Count != 0 {
				dst = AppendKVInt(dst, "count", int64(e.Count))
			}
			if e.Tag != 0 {
				dst = AppendKV(dst, "incarnation", e.Tag)
			}
			if e.Reason != "" {
				dst = AppendKVStr(dst, "result", e.Reason) // a metadata request's
			}
			if len(e.Body) != 0 {
				dst = AppendKV(dst, "bytes", uint64(len(e.Body))) // a route's
			}
			if e.Life != nil {
				dst = append(append(dst, " life="...), e.Life.String()[1:]...) // a topology's
			}
		} else {
			if e.Refusal != RefusalNone {
				dst = append(append(dst, " refusal="...), e.Refusal.String()...)
			}
			dst = AppendKVStr(dst, "reason", e.Reason)
		}
		return dst
	case EfDeliver:
		dst = AppendKV(append(dst, "deliver"...), "c", uint64(e.Client))
		dst = AppendKV(dst, "q", uint64(e.Queue))
		dst = AppendKV(dst, "o", e.Offset)
		dst = AppendKV(dst, "len", uint64(len(e.Body)))
		if e.Redelivered {
			dst = append(dst, " redelivered"...)
		}
		return dst
	case EfCancel:
		dst = AppendKV(append(dst, "cancel"...), "c", uint64(e.Client))
		dst = AppendKV(dst, "q", uint64(e.Queue))
		return AppendKVStr(dst, "reason", e.Reason)
	case EfDeadline:
		return AppendKVInt(append(dst, "deadline"...), "at", e.AtNs)
	case EfApplied:
		dst = AppendKV(append(dst, "applied"...), "g", uint64(e.Group))
		dst = AppendKV(dst, "i", e.Offset)
		dst = AppendKV(dst, "t", e.Tag)
		return append(append(dst, ' '), e.Reason...)
	case EfNote:
		dst = AppendKV(append(dst, "note"...), "g", uint64(e.Group))
		return append(append(dst, ' '), e.Reason...)
	case EfWatermark:
		dst = AppendKV(append(dst, "watermark"...), "q", uint64(e.Queue))
		return AppendKV(dst, "end", e.Offset)
	case EfRecovery:
		dst = AppendKV(append(dst, "recovery"...), "q", uint64(e.Queue))
		dst = append(append(dst, " stage="...), e.Stage.String()...)
		dst = AppendKV(dst, "epoch", e.Offset)
		if e.Stage == StageSetAside {
			dst = append(append(dst, " aside="...), e.Aside.String()...)
		}
		return append(append(dst, ' '), e.Reason...)
	}
	return AppendKV(append(dst, "effect?"...), "kind", uint64(e.Kind))
}

// String renders the effect without a message decoder.
func (e *Effect) String() string { return string(e.AppendText(nil, rawMsgs{})) }
