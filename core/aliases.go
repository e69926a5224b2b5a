package core

import "github.com/sluicemq/sluice/core/seam"

// The seam's types, under the names drivers and the simulator use. They are
// defined in core/seam so that each kind of group (core/queue today) can
// use them without importing the node that routes to it.
type (
	NodeID      = seam.NodeID
	GroupID     = seam.GroupID
	LogID       = seam.LogID
	QueueID     = seam.QueueID
	ClientID    = seam.ClientID
	Policy      = seam.Policy
	QueueConfig = seam.QueueConfig
	Limits      = seam.Limits
	EpochStart  = seam.EpochStart
	Input       = seam.Input
	InputKind   = seam.InputKind
	LogState    = seam.LogState
	Request     = seam.Request
	RequestKind = seam.RequestKind
	StorageOp   = seam.StorageOp
	StorageDone = seam.StorageDone
	Effect      = seam.Effect
	EffectKind  = seam.EffectKind
	Outcome     = seam.Outcome
)

// The constants of the seam's types.
const (
	LeaderDurable   = seam.LeaderDurable
	MajorityDurable = seam.MajorityDurable
	AllDurable      = seam.AllDurable
	ISR             = seam.ISR
	ReplicasMax     = seam.ReplicasMax
	LogStage        = seam.LogStage

	InStart      = seam.InStart
	InMessage    = seam.InMessage
	InClient     = seam.InClient
	InClientGone = seam.InClientGone
	InStorage    = seam.InStorage
	InTick       = seam.InTick
	InPeerLost   = seam.InPeerLost

	ReqPublish   = seam.ReqPublish
	ReqSubscribe = seam.ReqSubscribe
	ReqAck       = seam.ReqAck
	ReqRequeue   = seam.ReqRequeue
	ReqCount     = seam.ReqCount
	ReqMeta      = seam.ReqMeta
	ReqTopology  = seam.ReqTopology

	OpAppend   = seam.OpAppend
	OpSync     = seam.OpSync
	OpRead     = seam.OpRead
	OpTruncate = seam.OpTruncate
	OpDiscard  = seam.OpDiscard
	OpRepaired = seam.OpRepaired
	OpVerify   = seam.OpVerify
	OpPersist  = seam.OpPersist
	OpOpen     = seam.OpOpen
	OpSeal     = seam.OpSeal
	OpPublish  = seam.OpPublish
	OpRetain   = seam.OpRetain
	OpReseed   = seam.OpReseed
	OpBind     = seam.OpBind

	EfSend      = seam.EfSend
	EfStorage   = seam.EfStorage
	EfReply     = seam.EfReply
	EfDeliver   = seam.EfDeliver
	EfDeadline  = seam.EfDeadline
	EfApplied   = seam.EfApplied
	EfNote      = seam.EfNote
	EfWatermark = seam.EfWatermark
	EfRecovery  = seam.EfRecovery
	EfCancel    = seam.EfCancel

	Confirmed = seam.Confirmed
	Failed    = seam.Failed
	Unknown   = seam.Unknown
)

// QueueGroup returns the group id of queue q's replicas.
func QueueGroup(q QueueID) GroupID { return seam.QueueGroup(q) }

// ParsePolicy reads a policy name.
func ParsePolicy(s string) (Policy, error) { return seam.ParsePolicy(s) }

// DefaultLimits are the limits used where a field is zero.
var DefaultLimits = seam.DefaultLimits
