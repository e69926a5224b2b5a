// Package bugs is the registry of planted bugs: known ways to break the
// protocol or the storage engine, each switched on by one bit, so that tests
// can prove that the simulator's faults and checkers catch a broken broker
// (the mutation suite: `sluice sim --bugs list`, `just mutants`).
//
// A Set is carried only by test and simulator configurations (core.Config,
// seglog.Options, the simulator's profile). Nothing in a production
// configuration sets one: the daemon never reads one from its options, and
// the zero Set plants nothing. Every hook in the code is a plain `if
// set.Has(...)` next to the correct line, so a reader sees what the bug
// changes.
package bugs

import (
	"fmt"
	"strings"
)

// Set is a set of planted bugs.
type Set uint64

// The planted bugs. Each names the area it breaks; see Registry for the
// text that explains it.
const (
	// AckBeforeSync: a follower reports records durable as soon as it has
	// appended them, before its sync completes.
	AckBeforeSync Set = 1 << iota
	// ConfirmShort: the owner confirms with one durable copy fewer than W.
	ConfirmShort
	// ConfirmWithoutOwner: the owner confirms on its followers' reports
	// alone, without waiting for its own sync.
	ConfirmWithoutOwner
	// RejectAsOK: a follower whose log does not match an append (a gap or
	// a different epoch before it) answers that it matches up to its end.
	RejectAsOK
	// FailNotUnknown: when its log fails, the owner answers the publishes in
	// flight as failed, though they may be durable on followers already.
	FailNotUnknown
	// SkipTruncate: a follower keeps a divergent suffix instead of
	// truncating it, and reports it as matching.
	SkipTruncate
	// NoRedeliver: a lost consumer's unacked deliveries are dropped instead
	// of returned to the queue.
	NoRedeliver
	// DeliverUncommitted: the owner applies and delivers records as soon as
	// it appended them, before they are confirmed.
	DeliverUncommitted
	// StarveFollowers: the owner of a W = 1 queue never replicates to its
	// followers.
	StarveFollowers
	// SyncSkip: the segment log skips every other fdatasync and reports the
	// sync done.
	SyncSkip
	// NoDirSyncOnRoll: the segment log does not sync the directory after it
	// starts a new segment.
	NoDirSyncOnRoll
	// NoCRCCheck: the segment log's recovery scan accepts frames whose
	// checksum does not match.
	NoCRCCheck
	// NoHeartbeat: an owner sends nothing to followers it has heard all it
	// needs from, so one that restarted and lost records while the queue is
	// idle is never repaired (seed 262 of the new swarm).
	NoHeartbeat
	// CtrlSendBeforePersist: the metadata group sends a raft Ready's
	// messages (votes, append acknowledgements) with its persist effect,
	// before the batch is durable: a power loss then forgets a vote or an
	// acknowledged entry that a peer counted.
	CtrlSendBeforePersist
	// CtrlConfirmUncommitted: the metadata group's leader answers a
	// proposal committed once its own batch holding the entry is durable,
	// before a majority holds it.
	CtrlConfirmUncommitted
	// ISRConfirmAtW: an isr queue's owner confirms once min_insync
	// replicas hold a publish, like a fixed W, not once its whole in-sync
	// set does.
	ISRConfirmAtW
	// WatermarkMovesBack: the high watermark follows the lowest durable end
	// of the in-sync set down when a counted follower falls back.
	WatermarkMovesBack
	// ISRIgnoresAskedBack: the high watermark counts only the committed
	// in-sync set, not the followers the owner asked back, so a follower
	// the controller adds may miss records confirmed before the owner
	// applied the change.
	ISRIgnoresAskedBack
	// ServePredecessorsQueues: a restarted broker serves the placed queues
	// its previous process was assigned (the assignment names the old
	// process), so two processes of one broker admit writes under one
	// assignment.
	ServePredecessorsQueues
	// CtrlImageSkipsCommitted: a process that starts from a metadata image
	// takes the commit index for applied, so the committed entries between
	// the image and the commit index are never applied to its metadata.
	CtrlImageSkipsCommitted
	// SealUnfrozen: a replica asked to seal fences itself but does not
	// freeze its log: a follower keeps taking the old owner's appends
	// after its seal reported its log.
	SealUnfrozen
	// RecoveryFirstWitness: the recovery worker takes the first complete
	// witness as its source, not the one whose log reaches furthest, and
	// reads no other witness to compare it with (the sealed reads would
	// refuse such a source: a witness holds its last epoch past its end).
	RecoveryFirstWitness
	// ActivateShortOfR: the recovery worker's collection completes one
	// witness short of R = E - W + 1.
	ActivateShortOfR
	// PublishUnsynced: an installation reads its stage back and publishes
	// it without syncing it first, so the new generation may lack records
	// it verified from the page cache.
	PublishUnsynced
	// EpochReused: a recovered assignment's new owner opens no epoch of
	// its own: it carries on in the last epoch its log holds, the
	// previous owner's.
	EpochReused
	// HoldIgnoresW: the follower-loss hold ignores its W - 1 condition:
	// a queue left with too few followers to confirm keeps its assignment.
	HoldIgnoresW
	// NoHold: placement never holds a queue that lost only followers: it
	// fences it at once, whatever the hold setting.
	NoHold
	// RetainUnsettled: an owner's retention takes confirmed for settled:
	// it deletes its log's head up to the confirmed end, unacked
	// publishes and all.
	RetainUnsettled
	// RetainPastFollowers: an owner's retention ignores its followers'
	// durable ends: it deletes what a follower that reports still lacks.
	RetainPastFollowers
	// LearnerCountsTowardW: an owner counts its learner's durable reports
	// toward W before the learner is admitted.
	LearnerCountsTowardW
	// LearnerRepairsAtOnce: a learner clears its log's unrepaired mark as
	// it starts, as a member follower does, before it caught up.
	LearnerRepairsAtOnce
	// NoNewCopy: placement never names a new copy's learner, so a queue a
	// recovery left short of its replicas stays so.
	NoNewCopy
	// UnboundWitness: a log opened without its storage binding (its
	// directory lost or emptied) is taken as whole: its seal counts as a
	// complete witness.
	UnboundWitness
	// InstallUnplanned: a recovery worker has the proposed members install
	// its verified source without a committed plan, and they install it.
	InstallUnplanned
	// NoHandoff: placement never hands a fenced queue's recovery to
	// another proposed member when its candidate is gone or draining.
	NoHandoff
	// ActivateWaitsAll: a recovery worker asks to activate only once every
	// proposed member is live, so a proposed member that died mid-recovery
	// and never returns keeps its queue fenced for ever.
	ActivateWaitsAll
	// HoldWhileDraining: the follower-loss hold ignores its draining
	// condition: a queue whose lost follower's broker drains keeps its
	// assignment, waiting for a copy that is leaving.
	HoldWhileDraining
	// SourceLongest: the recovery worker takes the complete witness whose
	// log reaches furthest as its source, whatever epoch its log ends in,
	// not the one of the highest last epoch first.
	SourceLongest
	// ISRWatermarkAtZero: an owner restored on a log whose head a
	// retention deleted starts its high watermark at 0, below its
	// confirmed end (the log's start).
	ISRWatermarkAtZero
	// FreshWithoutQuiet: a new copy's learner publishes its fresh
	// generation without first syncing behind the old log's effects in
	// flight, which then complete on the new log.
	FreshWithoutQuiet
	// BranchContradiction: the verifier blocks as contradictory history a
	// witness's record of an epoch above the source's at that offset,
	// though the source's history went on to a later epoch (a branch that
	// epoch's recovery passed over: never confirmed).
	BranchContradiction
	// InstallerAsksReplacedSource: an installation whose source answers a
	// seal with storage-replaced (it runs on a new disk) asks it again for
	// ever instead of ending, nor ends at its deadline, so the worker never
	// chooses another source.
	InstallerAsksReplacedSource
	// VerifierReadsReplacedDisk: a recovery worker whose verification
	// reads a log whose disk was replaced since it sealed (its reads say
	// not-sealed-here, its seal storage-replaced) asks it for pages for
	// ever instead of starting over without that copy.
	VerifierReadsReplacedDisk
	// OwnSourceEpochsWhole: a worker that takes its own log as the source
	// by its seal installs it with the log's whole epoch history, entries
	// below the retained start among them: the members refuse to decode
	// such a request, and the installation never begins.
	OwnSourceEpochsWhole
	end
)

// Bug describes one planted bug.
type Bug struct {
	Bit  Set
	Name string // stable, used on the command line and in scenarios
	Area string // what it breaks
	Doc  string
}

// Registry lists every planted bug, in bit order.
var Registry = []Bug{
	{AckBeforeSync, "ack-before-sync", "follower reports", "a follower reports records durable before its sync completes"},
	{ConfirmShort, "confirm-short", "confirms", "the owner confirms with one durable copy fewer than W"},
	{ConfirmWithoutOwner, "confirm-without-owner", "confirms", "the owner confirms on followers' reports without its own sync"},
	{RejectAsOK, "reject-as-ok", "follower reports", "a follower that does not match an append reports that it matches"},
	{FailNotUnknown, "fail-not-unknown", "publish outcomes", "publishes in flight on a failed log are answered failed, not unknown"},
	{SkipTruncate, "skip-truncate", "truncation", "a follower keeps a divergent suffix and reports it as matching"},
	{NoRedeliver, "no-redeliver", "acks and redelivery", "a lost consumer's unacked deliveries are dropped, not returned"},
	{DeliverUncommitted, "deliver-uncommitted", "confirms", "the owner delivers records before they are confirmed"},
	{StarveFollowers, "starve-followers", "replication", "the owner of a W=1 queue never replicates to followers"},
	{SyncSkip, "sync-skip", "storage syncs", "the segment log skips every other fdatasync"},
	{NoDirSyncOnRoll, "no-dir-sync-on-roll", "storage syncs", "the segment log does not sync the directory after a segment roll"},
	{NoCRCCheck, "no-crc-check", "storage checksums", "the recovery scan accepts frames with a wrong checksum"},
	{NoHeartbeat, "no-heartbeat", "replication", "an owner never probes followers it thinks caught up"},
	{CtrlSendBeforePersist, "ctrl-send-before-persist", "metadata group", "the metadata group sends a Ready's votes and acks before its batch is durable"},
	{CtrlConfirmUncommitted, "ctrl-confirm-uncommitted", "metadata group", "the metadata leader confirms a proposal once its own copy is durable, before a majority's"},
	{ISRConfirmAtW, "isr-confirm-at-w", "confirms", "an isr queue confirms once min_insync replicas hold a publish, not its whole in-sync set"},
	{WatermarkMovesBack, "watermark-moves-back", "in-sync tracking", "the high watermark follows a counted follower that fell back"},
	{ISRIgnoresAskedBack, "isr-ignores-asked-back", "in-sync tracking", "the high watermark ignores followers asked back until their return commits"},
	{ServePredecessorsQueues, "serve-predecessors-queues", "epochs and fencing", "a restarted broker serves the placed queues its previous process was assigned"},
	{CtrlImageSkipsCommitted, "ctrl-image-skips-committed", "metadata group", "a process starting from a metadata image skips the committed entries above it"},
	{SealUnfrozen, "seal-unfrozen", "sealed recovery", "a sealed follower keeps taking the old owner's appends"},
	{RecoveryFirstWitness, "recovery-first-witness", "sealed recovery", "the recovery worker takes the first witness as its source, unverified"},
	{ActivateShortOfR, "activate-short-of-r", "sealed recovery", "the recovery worker activates with R - 1 witnesses"},
	{PublishUnsynced, "publish-unsynced", "sealed recovery", "an installation publishes its stage without syncing it first"},
	{EpochReused, "epoch-reused", "epochs and fencing", "a recovered assignment's new owner carries on in the previous owner's epoch"},
	{HoldIgnoresW, "hold-ignores-w", "follower-loss hold", "the follower-loss hold keeps a queue left with fewer than W - 1 followers"},
	{NoHold, "no-hold", "follower-loss hold", "placement fences a queue that lost only followers at once, ignoring the hold"},
	{RetainUnsettled, "retain-unsettled", "retention", "an owner's retention deletes confirmed records that are not yet settled"},
	{RetainPastFollowers, "retain-past-followers", "retention", "an owner's retention deletes records a follower that reports still lacks"},
	{LearnerCountsTowardW, "learner-counted-toward-w", "learners", "an owner counts a learner's durable reports toward W before its admission"},
	{LearnerRepairsAtOnce, "learner-repairs-at-once", "learners", "a learner clears its log's unrepaired mark as it starts, before it caught up"},
	{NoNewCopy, "no-new-copy", "learners", "placement never adds a new copy to a queue a recovery left short of its replicas"},
	{UnboundWitness, "unbound-witness", "storage binding", "a log opened without its storage binding (its directory lost) is taken as whole, a complete witness"},
	{InstallUnplanned, "install-unplanned", "recovery", "a recovery worker has its source installed and activated without a committed recovery plan"},
	{NoHandoff, "no-handoff", "recovery", "a fenced queue whose recovery candidate is gone or draining is never handed to another proposed member"},
	{ActivateWaitsAll, "activate-waits-all", "sealed recovery", "a recovery activates only once every proposed member is live, waiting for one gone for good"},
	{HoldWhileDraining, "hold-while-draining", "follower-loss hold", "the follower-loss hold keeps a queue whose lost follower is on a draining broker"},
	{SourceLongest, "source-longest", "sealed recovery", "the recovery worker takes the longest witness as its source, whatever epoch it ends in"},
	{ISRWatermarkAtZero, "isr-watermark-at-zero", "in-sync tracking", "an owner restored on a retained log starts its high watermark at 0, below its confirmed end"},
	{FreshWithoutQuiet, "fresh-without-quiet", "learners", "a new copy's fresh generation is published with the old log's storage effects still in flight"},
	{BranchContradiction, "branch-contradiction", "sealed recovery", "the verifier blocks on a witness's branch of an epoch the source's later epoch passed over"},
	{InstallerAsksReplacedSource, "installer-asks-replaced-source", "sealed recovery", "an installation keeps asking a source that runs on a new disk for its seal, never ending (nor at its deadline)"},
	{VerifierReadsReplacedDisk, "verifier-reads-replaced-disk", "sealed recovery", "a recovery's verification keeps reading a log whose disk was replaced since it sealed, never choosing again"},
	{OwnSourceEpochsWhole, "own-source-epochs-whole", "sealed recovery", "a worker taking its own retained log as the source sends install requests with epochs below the sealed start, which members refuse"},
}

// Has reports whether every bug of b is in s.
func (s Set) Has(b Set) bool { return b != 0 && s&b == b }

// String lists the names of the bugs in s, joined by commas; "none" for the
// empty set.
func (s Set) String() string {
	if s == 0 {
		return "none"
	}
	var names []string
	rest := s
	for _, b := range Registry {
		if s&b.Bit != 0 {
			names = append(names, b.Name)
			rest &^= b.Bit
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("bugs(%#x)", uint64(rest)))
	}
	return strings.Join(names, ",")
}

// Parse reads a comma-separated list of bug names ("" and "none": no bug).
func Parse(s string) (Set, error) {
	if s == "" || s == "none" {
		return 0, nil
	}
	var out Set
	for _, name := range strings.Split(s, ",") {
		b, ok := Lookup(strings.TrimSpace(name))
		if !ok {
			return 0, fmt.Errorf("unknown planted bug %q (sluice sim --bugs list names them)", name)
		}
		out |= b.Bit
	}
	return out, nil
}

// Lookup finds a bug by name.
func Lookup(name string) (Bug, bool) {
	for _, b := range Registry {
		if b.Name == name {
			return b, true
		}
	}
	return Bug{}, false
}

// MarshalText writes the names.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads names as Parse does.
func (s *Set) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	*s = v
	return err
}
