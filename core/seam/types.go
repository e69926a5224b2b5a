package seam

import (
	"fmt"
	"strconv"

	"github.com/sluicemq/sluice/core/record"
)

// NodeID is a broker's stable identity.
type NodeID uint32

// QueueID names a queue.
type QueueID uint32

// GroupID names one state machine of a node: the replica group of a queue
// (its id is the queue's id) or, later, the controller (ids from
// GroupReservedMin on). Inputs, effects, peer messages and storage operations
// name the group they belong to; the node routes by it.
type GroupID uint64

// GroupReservedMin is the first group id that is not a queue's.
const GroupReservedMin GroupID = 1 << 32

// GroupCtrl is the controller's metadata group (core/ctrl, on raft);
// GroupCtrlPeer carries the controller's other peer messages (heartbeats);
// GroupRecovery carries sealed recovery's messages (core/recovery's
// codecs: seal requests and answers).
const (
	GroupCtrl     GroupID = GroupReservedMin
	GroupCtrlPeer GroupID = GroupReservedMin + 1
	GroupRecovery GroupID = GroupReservedMin + 2
)

// QueueGroup returns the group id of queue q's replicas.
func QueueGroup(q QueueID) GroupID { return GroupID(q) }

// LogID names one log of a group: a queue replica's live log is log 0;
// LogStage is the stage an installation copies into
// (docs/design/recovery.md, "Installation in a stage") before it
// publishes it as the new generation of log 0.
type LogID uint32

// LogStage is the log id of a group's stage.
const LogStage LogID = 1

// ClientID names one client connection; a reconnect gets a new one.
type ClientID uint64

// Policy is a queue's durability policy; it fixes W from the replica count.
type Policy uint8

const (
	// LeaderDurable confirms once the owner holds a publish durably (W=1).
	LeaderDurable Policy = 1
	// MajorityDurable confirms once a majority holds it (W=floor(N/2)+1).
	MajorityDurable Policy = 2
	// AllDurable confirms once every replica holds it (W=N).
	AllDurable Policy = 3
	// ISR confirms at the high watermark: once every member of the queue's
	// committed in-sync set holds a publish durably (Kafka's acks=all;
	// docs/design/in-sync.md), and admits publishes only while that set has at least
	// min_insync members. Only a queue the controller placed has an
	// in-sync set; W, the fewest durable copies a confirm guarantees, is
	// min_insync.
	ISR Policy = 4
)

func (p Policy) String() string {
	switch p {
	case LeaderDurable:
		return "leader_durable"
	case MajorityDurable:
		return "majority_durable"
	case AllDurable:
		return "all_durable"
	case ISR:
		return "isr"
	}
	return "policy" + strconv.Itoa(int(p))
}

// MarshalText writes the policy's name.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a policy's name.
func (p *Policy) UnmarshalText(b []byte) error {
	q, err := ParsePolicy(string(b))
	*p = q
	return err
}

// ParsePolicy reads a policy name as String prints it.
func ParsePolicy(s string) (Policy, error) {
	for p := LeaderDurable; p <= ISR; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown durability policy %q (want leader_durable, majority_durable, all_durable or isr)", s)
}

// Valid reports whether p is a known policy.
func (p Policy) Valid() bool { return p >= LeaderDurable && p <= ISR }

// WriteQuorum returns W for n replicas under p: the fewest durable copies
// a confirm guarantees. For ISR that is minInSync (a confirm needs the
// whole in-sync set, which is never smaller while publishes are admitted);
// the other policies ignore it.
func (p Policy) WriteQuorum(n, minInSync int) int {
	switch p {
	case LeaderDurable:
		return 1
	case MajorityDurable:
		return n/2 + 1
	case AllDurable:
		return n
	case ISR:
		return minInSync
	}
	panic("core: unknown policy")
}

// ReplicasMax bounds a queue's replica count.
const ReplicasMax = 5

// QueueConfig is a queue's assignment as its replica group runs it: a
// static one (configuration), or one the controller placed or activated.
type QueueConfig struct {
	Queue    QueueID
	Replicas []NodeID // distinct, 1..ReplicasMax, owner among them
	Owner    NodeID
	Policy   Policy
	// MinInSync is an ISR queue's min_insync (1..len(Replicas)); the other
	// policies leave it 0.
	MinInSync int
	// EpochBase: the owner opens its epoch above it. An assignment the
	// controller committed at epoch P has P<<32 (EpochBase), so that an
	// owner of a later assignment writes in epochs no replica of an
	// earlier one ever held, whatever the recovery's witnesses saw (log
	// matching by (offset, epoch) stays sound across recoveries). Static
	// queues have 0.
	EpochBase uint64
	// Leased: the owner confirms, delivers and admits publishes only while
	// its node's lease (a fresh committed view of the metadata, renewed
	// by fresh reads: core/lease.go) holds, so that an owner fenced while
	// it was paused or cut off does not serve beside the recovered
	// assignment's. Placed queues are leased; static ones are not.
	Leased bool
	// Processes, of a placed queue: each replica's process instance as
	// the assignment names it, in Replicas' order. The owner counts only
	// that instance's reports: another process of the replica's broker
	// is no member (it rejoins through a recovery, or later as a learner
	// whose reports never count toward W). Nil for a static queue, whose
	// restarted follower counts again once it reports.
	Processes []uint64
	// Learner: this replica runs as its queue's learner
	// (docs/design/recovery.md, "Learners and admission"): a
	// follower whose log's loss to damage (its unrepaired mark) stays
	// marked until it is admitted, so that a seal of it meanwhile says
	// its copy may lack what the member it succeeds acknowledged.
	Learner bool
}

// EpochBase returns the epoch base of an assignment at epoch p.
func EpochBase(p uint64) uint64 { return p << 32 }

// Validate reports a malformed assignment.
func (q QueueConfig) Validate() error {
	n := len(q.Replicas)
	if n < 1 || n > ReplicasMax {
		return fmt.Errorf("queue %d: %d replicas, want 1..%d", q.Queue, n, ReplicasMax)
	}
	if q.Processes != nil && len(q.Processes) != n {
		return fmt.Errorf("queue %d: %d process instances for %d replicas", q.Queue, len(q.Processes), n)
	}
	owner := false
	for i, r := range q.Replicas {
		for _, s := range q.Replicas[:i] {
			if r == s {
				return fmt.Errorf("queue %d: replica n%d listed twice", q.Queue, r)
			}
		}
		owner = owner || r == q.Owner
	}
	if !owner {
		return fmt.Errorf("queue %d: owner n%d is not a replica", q.Queue, q.Owner)
	}
	if !q.Policy.Valid() {
		return fmt.Errorf("queue %d: unknown policy %d", q.Queue, q.Policy)
	}
	if q.Policy == ISR && (q.MinInSync < 1 || q.MinInSync > n) {
		return fmt.Errorf("queue %d: min in-sync %d, want 1 to the replica count %d", q.Queue, q.MinInSync, n)
	}
	return nil
}

// Limits bound every queue and buffer the core keeps. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	PendingPublishesMax int   // publishes appended but not yet confirmed, per queue
	ReadyMax            int   // committed, undelivered publishes tracked per queue
	ConsumersMax        int   // consumers per queue
	PrefetchMax         int   // unacked deliveries per consumer
	WindowBatchesMax    int   // append messages in flight to a follower beyond its durable report
	BatchRecordsMax     int   // records in one append message
	BatchBytesMax       int   // body bytes in one append message (at least one record)
	CacheBytesMax       int64 // bodies kept in memory per queue for followers and consumers
	ReadRecordsMax      int   // records asked for in one storage read
	EpochsMax           int   // epoch history entries per log
	ResendMs            int64 // resend to a follower that made no progress for this long
	// ScrubIntervalMs: every replica reads its durable log, ReadRecordsMax
	// records at a time, one read per interval, round and round, so that
	// damage that no other read meets (bit rot, a lost write, an unreadable
	// sector) is found and repaired while the other copies still exist.
	ScrubIntervalMs int64
	// HeartbeatMs: an owner probes a follower it has heard all it needs
	// from this often, so that a follower that restarted and lost records
	// while the queue is idle is found and repaired.
	HeartbeatMs int64
	// RetainRecordsMin: an owner deletes its log's head (and its followers
	// follow) once at least this many records below it are settled and
	// held by every follower that reported in the last RetainSilentMs: a
	// retention costs a few syncs, so it waits for a batch worth it.
	RetainRecordsMin int
	// RetainSilentMs: a follower that has not reported for this long
	// stops protecting the owner's log (docs/design/retention.md): the
	// owner deletes what it lacks, and it reseeds when it returns.
	RetainSilentMs int64
}

// DefaultLimits are the limits used where a field is zero.
var DefaultLimits = Limits{
	PendingPublishesMax: 8192,
	ReadyMax:            1 << 20,
	ConsumersMax:        64,
	PrefetchMax:         1024,
	WindowBatchesMax:    8,
	BatchRecordsMax:     256,
	BatchBytesMax:       1 << 20,
	CacheBytesMax:       32 << 20,
	ReadRecordsMax:      256,
	EpochsMax:           1 << 16,
	ResendMs:            100,
	ScrubIntervalMs:     100,
	HeartbeatMs:         500,
	RetainRecordsMin:    1024,
	RetainSilentMs:      60_000,
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	return Limits{
		PendingPublishesMax: orDefault(l.PendingPublishesMax, d.PendingPublishesMax),
		ReadyMax:            orDefault(l.ReadyMax, d.ReadyMax),
		ConsumersMax:        orDefault(l.ConsumersMax, d.ConsumersMax),
		PrefetchMax:         orDefault(l.PrefetchMax, d.PrefetchMax),
		WindowBatchesMax:    orDefault(l.WindowBatchesMax, d.WindowBatchesMax),
		BatchRecordsMax:     orDefault(l.BatchRecordsMax, d.BatchRecordsMax),
		BatchBytesMax:       orDefault(l.BatchBytesMax, d.BatchBytesMax),
		CacheBytesMax:       orDefault(l.CacheBytesMax, d.CacheBytesMax),
		ReadRecordsMax:      orDefault(l.ReadRecordsMax, d.ReadRecordsMax),
		EpochsMax:           orDefault(l.EpochsMax, d.EpochsMax),
		ResendMs:            orDefault(l.ResendMs, d.ResendMs),
		ScrubIntervalMs:     orDefault(l.ScrubIntervalMs, d.ScrubIntervalMs),
		HeartbeatMs:         orDefault(l.HeartbeatMs, d.HeartbeatMs),
		RetainRecordsMin:    orDefault(l.RetainRecordsMin, d.RetainRecordsMin),
		RetainSilentMs:      orDefault(l.RetainSilentMs, d.RetainSilentMs),
	}
}

func orDefault[T int | int64](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// EpochStart says that records from Offset on carry Epoch (record's).
type EpochStart = record.EpochStart

// EpochAt returns the epoch of the record at offset o in a log with the
// given history, or 0 when o precedes the history.
func EpochAt(h []EpochStart, o uint64) uint64 {
	// Histories are short and the newest entry is the usual answer.
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Offset <= o {
			return h[i].Epoch
		}
	}
	return 0
}

// Divergence returns the first offset at which two logs (histories and
// ends) may differ: records below it have equal epochs in both, so they are
// the same records, since one owner writes each offset once per epoch.
func Divergence(a []EpochStart, aEnd uint64, b []EpochStart, bEnd uint64) uint64 {
	return DivergenceFrom(a, aEnd, b, bEnd, 0)
}

// DivergenceFrom is Divergence over the offsets from lo on: two logs that
// start at lo or below (what lies below is deleted, settled) part at the
// first offset from lo on where their epochs may differ, or at the shorter
// end (lo at most).
func DivergenceFrom(a []EpochStart, aEnd uint64, b []EpochStart, bEnd uint64, lo uint64) uint64 {
	end := min(aEnd, bEnd)
	if lo >= end {
		return end
	}
	// Walk both step functions over the offsets where either changes.
	i, j := 0, 0
	o := lo
	for o < end {
		if EpochAt(a, o) != EpochAt(b, o) {
			return o
		}
		// next change point after o in either history
		next := end
		for i < len(a) && a[i].Offset <= o {
			i++
		}
		for j < len(b) && b[j].Offset <= o {
			j++
		}
		if i < len(a) && a[i].Offset < next {
			next = a[i].Offset
		}
		if j < len(b) && b[j].Offset < next {
			next = b[j].Offset
		}
		o = next
	}
	return end
}

// LastEpoch returns the epoch of the last entry of h, 0 for none.
func LastEpoch(h []EpochStart) uint64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].Epoch
}
