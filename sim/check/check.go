package check

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// Failure is one violated property.
type Failure struct {
	Checker string
	AtNs    int64
	Detail  string
	// Line is the number of the last trace line written when the failure
	// was seen (counting from 1, as an unfiltered `--trace` prints them):
	// the event that broke the property is that line or the next one. 0
	// when the checker was told no line numbers.
	Line uint64
}

// String prints the failure with its instant as the trace prints instants
// (so that --trace-from accepts it as printed) and its trace line.
func (f Failure) String() string {
	at := string(appendInstant(nil, f.AtNs))
	if f.Line == 0 {
		return fmt.Sprintf("%s at %s: %s", f.Checker, at, f.Detail)
	}
	return fmt.Sprintf("%s at %s (trace line %d): %s", f.Checker, at, f.Line, f.Detail)
}

// appendInstant is driver.AppendInstant ("t=2.288518965s"), kept here so
// that the checkers do not depend on the driver they judge.
func appendInstant(dst []byte, ns int64) []byte {
	return fmt.Appendf(dst, "t=%d.%09ds", ns/1e9, ns%1e9)
}

// failuresMax bounds the failures kept: the first ones explain a run.
const failuresMax = 16

// QueueSpec is what the checker must know of a queue's assignment.
type QueueSpec struct {
	Queue    core.QueueID
	Replicas []core.NodeID
	Owner    core.NodeID
	W        int
	// ISR: the queue confirms at its high watermark, so every member of
	// its committed in-sync set (by the model's fold) must hold a
	// confirmed record durably, not only W replicas.
	ISR bool
	// Placed: the controller placed the queue (its assignment names the
	// owner's exact process); else its owner is configured.
	Placed bool
	Dir    string // the log's directory on each replica's disk
	// Disks returns a replica's disk when the queue's logs live on other
	// disks than the checker's (placed queues); nil: the checker's.
	Disks func(core.NodeID) Disk
	// Publishes: about how many publishes the queue will take, a hint
	// that presizes its tables (0: none; they grow as needed)
	Publishes int
}

// replicaTruth is what the checker knows of one replica of one queue.
type replicaTruth struct {
	node core.NodeID
	idx  int      // its bit in seenCopy masks
	disk *DiskLog // what its disk durably holds (the ground truth)
	// issued: the records the replica's processes were told to write, by
	// offset, as the simulator executed the storage effects (appends and
	// truncations); after a restart, what the recovered log claimed.
	// (In the queue's identity table, ids.)
	issued []identRef
	ids    *identTable
	// acked: the end of the last sync acknowledged to the core, lowered by
	// truncations and by losses the log reported at recovery.
	acked uint64
	// verified: the disk was checked to hold issued[:verified].
	verified uint64
	// report: the replica's latest durable report to its owner (an
	// append-reply ok end=N), which says its log holds [0, N) durably:
	// evidence when a confirm turns out to lack durable copies.
	report durableReport
	// injected: damage was injected into this copy (corruption, a lost
	// write, an unreadable range, a torn sector) and the copy has not since
	// held a whole log again; damageEnd is how far the copy reached then.
	injected  bool
	damageEnd uint64
	// flips: the bytes of its segment files a fault flipped (FlippedAt),
	// at most flipsMax; while one lies past a segment's last frame, the
	// copy counts as damaged for the fault budget (Damaged)
	flips []flipAt
	// former: no longer a member of the queue's assignment (activate.go);
	// installedNs: when it installed a recovered history (0: never)
	former      bool
	installedNs int64
	// judgedStart: retention-settled judged the records below it (the
	// disk's start as of the last retention or reseed judged; other
	// readings of the disk may have moved the start since)
	judgedStart uint64
}

// deliveredKey is the key of the body delivered at one offset, if any.
type deliveredKey struct {
	key uint64
	has bool
}

// delivered returns the key delivered at o, if any.
func (q *queueTruth) delivered(o uint64) (uint64, bool) {
	if o < uint64(len(q.deliveredAt)) && q.deliveredAt[o].has {
		return q.deliveredAt[o].key, true
	}
	return 0, false
}

type pubState uint8

const (
	pubPending pubState = iota
	pubConfirmed
	pubFailed
	pubUnknown
)

type pubInfo struct {
	state pubState
	len   uint32
}

// receipt is what became of the latest delivery of one offset that a live
// consumer received.
type receipt struct {
	conn  core.ClientID
	count uint32 // receipts in all
	has   bool   // received at all
	acked bool   // the receiving consumer sent its ack
	// settled: some consumer that received it sent its ack (a later
	// receipt on a connection that dies does not undo that)
	settled bool
	lost    bool // the receiving consumer was lost before it sent its ack
}

type queueTruth struct {
	spec QueueSpec
	// ids: the identities of the records its replicas were told to write
	// and hold, interned (ident.go)
	ids identTable
	// fenced: a placed queue whose assignment was fenced (or which was
	// deleted): its replicas need not converge, nor its records reach a
	// consumer, until recovery; what it confirmed must still
	// be durable somewhere
	fenced    bool
	reps      []*replicaTruth // in spec.Replicas order
	owner     *replicaTruth
	confirmed map[uint64]uint64 // offset -> publish key
	// confirmedEpoch: offset -> the epoch of the record confirmed there
	// (the confirming owner's, as it issued it)
	confirmedEpoch map[uint64]uint64
	// deliveredAt: by offset, the key of the body delivered there, so a
	// later confirm at that offset must agree; an offset with one was
	// emitted to a consumer at least once.
	deliveredAt []deliveredKey
	firstMax    uint64
	firstAny    bool
	received    []receipt // by offset
	// ackRecs: by acked offset, the owner's ack records for it (offset and
	// identity), to judge a redelivery; ackMore the records beyond the
	// first of an offset (ackSlot)
	ackRecs []ackSlot
	ackMore [][]ackRec
	// seen: per offset, the durable copies made (see seenCopy); seenMore
	// the copies beyond the first of an offset (seenAt)
	seen     []seenAt
	seenMore [][]seenCopy
	// watermark: the highest high watermark its owner announced;
	// confirmedEnd: one past the highest offset a broker confirmed
	watermark    uint64
	confirmedEnd uint64
	// ownerProcess: the process of the owner that confirmed the placed
	// queue's writes (0: none yet)
	ownerProcess uint64
	// activatedNs: when a recovery last activated it; formerOwners: the
	// owners of its earlier assignments (activate.go)
	activatedNs     int64
	activatedEpochs []uint64
	formerOwners    []formerOwner
}

// addSeen records that replica i durably held id at o.
func (q *queueTruth) addSeen(o uint64, id Ident, i int) {
	if !id.Intact() {
		return
	}
	q.addSeenRef(o, q.ids.ref(o, id), i)
}

// addSeenRef is addSeen of the identity ref names in q's table (0: none).
func (q *queueTruth) addSeenRef(o uint64, ref identRef, i int) {
	if ref == 0 {
		return
	}
	for uint64(len(q.seen)) <= o {
		q.seen = append(q.seen, seenAt{})
	}
	s := &q.seen[o]
	switch {
	case s.first.ref == ref || s.first.ref == 0:
		s.first.ref = ref
		s.first.mask |= 1 << i
		return
	}
	more := q.seenMoreOf(s)
	for k := range more {
		if more[k].ref == ref {
			more[k].mask |= 1 << i
			return
		}
	}
	if s.more == 0 {
		q.seenMore = append(q.seenMore, nil)
		s.more = int32(len(q.seenMore))
	}
	q.seenMore[s.more-1] = append(more, seenCopy{ref: ref, mask: 1 << i})
}

// seenMoreOf returns the copies at s beyond its first (rare: a record
// overwritten by another at its offset).
func (q *queueTruth) seenMoreOf(s *seenAt) []seenCopy {
	if s.more == 0 {
		return nil
	}
	return q.seenMore[s.more-1]
}

// dropSeen forgets replica i's copies from o on (a truncation).
func (q *queueTruth) dropSeen(from uint64, i int) {
	for o := from; o < uint64(len(q.seen)); o++ {
		s := &q.seen[o]
		s.first.mask &^= 1 << i
		more := q.seenMoreOf(s)
		for k := range more {
			more[k].mask &^= 1 << i
		}
	}
}

// seenMask returns the replicas seen to hold id at o.
func (q *queueTruth) seenMask(o uint64, id Ident) uint32 {
	if o >= uint64(len(q.seen)) || !id.Intact() {
		return 0
	}
	s := &q.seen[o]
	ref := q.ids.find(o, id)
	if ref == 0 {
		return 0
	}
	if s.first.ref == ref {
		return s.first.mask
	}
	more := q.seenMoreOf(s)
	for k := range more {
		if more[k].ref == ref {
			return more[k].mask
		}
	}
	return 0
}

// seenCopy says which replicas (bit i: reps[i]) were read to hold record id
// durably at one offset, at a sync acknowledgement or a recovery, and did
// not truncate it since. A copy lost later to injected damage keeps its bit:
// it was made durable, and the fault budget answers for its loss.
type seenCopy struct {
	ref  identRef // in the queue's ids
	mask uint32
}

// seenAt holds the copies seen at one offset: nearly always one record, so
// the first lives inline, and the others (more: their list in the queue's
// seenMore, plus one; 0: none) apart, so that the table of every offset
// costs 12 bytes an offset, not 20.
type seenAt struct {
	first seenCopy
	more  int32
}

// ackSlot holds the ack records of one offset: nearly always one, inline;
// the others (more: their list in the queue's ackMore, plus one) apart.
type ackSlot struct {
	first ackRec
	n     int32
	more  int32
}

// ackRecsMax bounds the ack records kept for one offset.
const ackRecsMax = 64

// addAck records the owner's ack record a of offset acked.
func (q *queueTruth) addAck(acked uint64, a ackRec) {
	q.ackRecs = growTo(q.ackRecs, acked)
	s := &q.ackRecs[acked]
	switch {
	case s.n == 0:
		s.first = a
	case s.n < ackRecsMax:
		if s.more == 0 {
			q.ackMore = append(q.ackMore, nil)
			s.more = int32(len(q.ackMore))
		}
		q.ackMore[s.more-1] = append(q.ackMore[s.more-1], a)
	default:
		return
	}
	s.n++
}

// eachAck calls f with each ack record of offset o.
func (q *queueTruth) eachAck(o uint64, f func(a ackRec)) {
	if o >= uint64(len(q.ackRecs)) {
		return
	}
	s := &q.ackRecs[o]
	if s.n > 0 {
		f(s.first)
	}
	if s.more > 0 {
		for _, a := range q.ackMore[s.more-1] {
			f(a)
		}
	}
}

// growTo returns v grown (with zero values) to hold index o.
func growTo[T any](v []T, o uint64) []T {
	for uint64(len(v)) <= o {
		v = append(v, *new(T))
	}
	return v
}

// durableReport is a follower's claim that its log holds [0, end) durably,
// made at atNs on trace line line.
type durableReport struct {
	end  uint64
	atNs int64
	line uint64
	made bool
}

type ackRec struct {
	offset uint64
	ref    identRef // the ack record's identity (at offset, in the queue's ids)
	// w: the W of the assignment whose owner wrote the ack: the copies it
	// needed to be confirmed (a later assignment's W may be smaller)
	w int32
}

// Checker accumulates a run's history and reports violations. It judges
// durability from the fake disks' durable bytes (Disk), and deliveries from
// what live consumers received.
type Checker struct {
	queues        map[core.QueueID]*queueTruth
	order         []*queueTruth // by queue id
	disks         func(core.NodeID) Disk
	pubs          pubTable // by publish key: its outcome, and whether it was delivered
	failures      []Failure
	total         int
	lines         func() uint64                         // the trace's latest line number; nil: none
	away          func(core.QueueID, core.NodeID) bool  // SetAway's; nil: none away
	heard         func(core.QueueID, core.NodeID) int64 // SetHeard's; nil: retention-held not judged
	heardWindowNs int64
	meta          *metaTruth   // the metadata group's history; nil until used
	seals         []*sealTruth // the seals brokers made (seal.go)
	sources       []*sourceTruth
	lastQueue     *queueTruth // the queue queue() found last
	crossCheck    bool        // CrossCheckRereads
}

// CrossCheckRereads makes every disk log read again twice, incrementally
// and in full, and panic when the two readings differ (DiskLog.CrossCheck):
// for tests of whole simulated runs.
func (c *Checker) CrossCheckRereads() {
	c.crossCheck = true
	for _, q := range c.order {
		for _, r := range q.reps {
			r.disk.CrossCheck()
		}
	}
}

// newReplica returns the truth of q's replica on node, not yet in reps.
func (q *queueTruth) newReplica(c *Checker, node core.NodeID) *replicaTruth {
	return &replicaTruth{node: node, idx: len(q.reps), disk: c.newDiskLog(q, q.spec.Dir), ids: &q.ids}
}

func (c *Checker) newDiskLog(q *queueTruth, dir string) *DiskLog {
	l := newDiskLog(&q.ids, dir)
	if c.crossCheck {
		l.CrossCheck()
	}
	return l
}

// queue returns queue q's truth, or nil. Nearly every call names the queue
// of the call before, so the last one found is tried first (queues are
// never removed).
func (c *Checker) queue(q core.QueueID) *queueTruth {
	if qt := c.lastQueue; qt != nil && qt.spec.Queue == q {
		return qt
	}
	qt := c.queues[q]
	if qt != nil {
		c.lastQueue = qt
	}
	return qt
}

// SetAway tells the checker which members of a placed queue no longer run
// the process their assignment names (the world's own knowledge of its
// processes): under the follower-loss hold their copies are left behind,
// and convergence is judged without them.
func (c *Checker) SetAway(away func(q core.QueueID, node core.NodeID) bool) { c.away = away }

// SetLines tells the checker how to learn the number of the trace's latest
// line, so that failures name the lines to look at.
func (c *Checker) SetLines(lines func() uint64) { c.lines = lines }

// presize sizes q's tables for about publishes publishes.
func (q *queueTruth) presize(publishes int) {
	publishes = min(max(publishes, 0), 1<<20) // a hint, never a huge allocation
	// A log holds about two records per publish: the publish and the ack
	// of its delivery.
	offsets := 2*publishes + 64
	q.ids.first = make([]Ident, 0, offsets)
	q.confirmed = make(map[uint64]uint64, publishes)
	q.confirmedEpoch = make(map[uint64]uint64, publishes)
	q.deliveredAt = make([]deliveredKey, 0, offsets)
	q.received = make([]receipt, 0, offsets)
	q.ackRecs = make([]ackSlot, 0, offsets)
	q.seen = make([]seenAt, 0, offsets)
	for _, r := range q.reps {
		r.issued = make([]identRef, 0, offsets)
		r.disk.recs = make([]identRef, 0, offsets)
	}
}

// New returns a checker for the given queues. disks returns a broker's disk.
func New(specs []QueueSpec, disks func(core.NodeID) Disk) *Checker {
	c := &Checker{queues: map[core.QueueID]*queueTruth{}, disks: disks}
	for _, s := range specs {
		c.AddQueue(s)
	}
	return c
}

// AddQueue registers a queue: at the start, or when the controller placed
// it while the run goes (before any of its replicas opens its log). A
// queue registered already is left as it is.
func (c *Checker) AddQueue(s QueueSpec) {
	if _, ok := c.queues[s.Queue]; ok {
		return
	}
	q := &queueTruth{spec: s, confirmed: map[uint64]uint64{}, confirmedEpoch: map[uint64]uint64{}}
	for _, n := range s.Replicas {
		r := q.newReplica(c, n)
		q.reps = append(q.reps, r)
		if n == s.Owner {
			q.owner = r
		}
	}
	c.queues[s.Queue] = q
	at, _ := slices.BinarySearchFunc(c.order, s.Queue, func(a *queueTruth, q core.QueueID) int { return int(a.spec.Queue) - int(q) })
	c.order = slices.Insert(c.order, at, q)
	if s.Publishes > 0 {
		q.presize(s.Publishes)
	}
}

// Fence says that placed queue q was fenced or deleted.
func (c *Checker) Fence(q core.QueueID) {
	if qt := c.queue(q); qt != nil {
		qt.fenced = true
	}
}

// Fenced reports whether queue q was fenced.
func (c *Checker) Fenced(q core.QueueID) bool { qt := c.queue(q); return qt != nil && qt.fenced }

// Fail records a failure the world judged from its own ground truth (a
// checker of the world's, as hold-kept).
func (c *Checker) Fail(checker string, atNs int64, format string, args ...any) {
	c.fail(checker, atNs, format, args...)
}

func (c *Checker) fail(checker string, atNs int64, format string, args ...any) {
	c.total++
	if len(c.failures) < failuresMax {
		var line uint64
		if c.lines != nil {
			line = c.lines()
		}
		c.failures = append(c.failures, Failure{Checker: checker, AtNs: atNs, Detail: fmt.Sprintf(format, args...), Line: line})
	}
}

// Failures returns the violations found so far (the first few).
func (c *Checker) Failures() []Failure { return c.failures }

// FailureCount returns how many violations were found in all.
func (c *Checker) FailureCount() int { return c.total }

func (q *queueTruth) replica(n core.NodeID) *replicaTruth {
	for _, r := range q.reps {
		if r.node == n {
			return r
		}
	}
	return nil
}

func (c *Checker) rep(n core.NodeID, q core.QueueID) *replicaTruth {
	qt := c.queue(q)
	if qt == nil {
		panic(fmt.Sprintf("check: unknown queue %d", q))
	}
	r := qt.replica(n)
	if r == nil {
		panic(fmt.Sprintf("check: n%d holds no replica of queue %d", n, q))
	}
	return r
}

// --- the storage side: what each replica was told to write, and its disk ---

// Appended records that node's log of q executed an append of recs.
func (c *Checker) Appended(node core.NodeID, q core.QueueID, recs []record.Record) {
	r := c.rep(node, q)
	for i := range recs {
		if recs[i].Offset != uint64(len(r.issued)) {
			panic(fmt.Sprintf("check: n%d q%d appended offset %d at issued end %d", node, q, recs[i].Offset, len(r.issued)))
		}
		r.issued = append(r.issued, r.ids.ref(recs[i].Offset, IdentOf(&recs[i])))
	}
	if r.injected {
		// Records written after the damage lie past it in the log, which
		// reads no further than a damaged frame: the copy is whole again
		// only once it holds them too (seed 14235: a copy counted as
		// repaired while the records written after its lost write were
		// gone, and a second copy was damaged).
		r.damageEnd = max(r.damageEnd, uint64(len(r.issued)))
	}
}

// Truncated records that node's log of q executed a truncation to end: its
// copies from end on no longer count, and the truth is read again.
func (c *Checker) Truncated(node core.NodeID, q core.QueueID, end uint64) {
	c.queue(q).dropSeen(end, c.rep(node, q).idx)
	c.Discarded(node, q, end)
}

// Discarded records that node's log of q discarded a damaged tail, leaving
// end: the records beyond were lost to damage, and their copies keep
// counting as made durable (see seenCopy).
func (c *Checker) Discarded(node core.NodeID, q core.QueueID, end uint64) {
	r := c.rep(node, q)
	if end < uint64(len(r.issued)) {
		r.issued = r.issued[:end]
	}
	r.acked = min(r.acked, end)
	r.verified = min(r.verified, end)
	r.disk.Cut(end)
	r.disk.Reparse(c.diskOf(q, node))
}

// diskOf returns node's disk that holds q's log.
func (c *Checker) diskOf(q core.QueueID, node core.NodeID) Disk {
	if qt := c.queue(q); qt != nil && qt.spec.Disks != nil {
		return qt.spec.Disks(node)
	}
	return c.disks(node)
}

// DiskChanged reads node's logs again in full: a crash or an injected fault
// may have changed bytes that were read before. What was verified durable
// stays verified: a copy lost to injected damage still counts as made
// durable (the fault budget's business), and a crash loses nothing durable.
func (c *Checker) DiskChanged(node core.NodeID) {
	for _, qt := range c.order {
		if r := qt.replica(node); r != nil {
			r.disk.Reparse(c.diskOf(qt.spec.Queue, node))
		}
	}
}

// SyncAcked checks, as a sync completion is handed to node's core, that its
// disk durably holds every record issued to q's log below offset (the end
// the sync covers), then counts them as acknowledged.
func (c *Checker) SyncAcked(atNs int64, node core.NodeID, q core.QueueID, offset uint64) {
	r := c.rep(node, q)
	r.disk.Resume(c.diskOf(q, node))
	// A member whose broker runs another process than the one the
	// assignment names (a learner) makes copies that count only
	// once it is admitted (Admitted reads them then).
	away := c.away != nil && c.away(q, node)
	if offset > uint64(len(r.issued)) {
		c.fail("sync-durable", atNs, "n%d q=%d: a sync acknowledged up to o=%d, but only %d records were written", node, q, offset, len(r.issued))
		offset = uint64(len(r.issued))
	}
	qt := c.queue(q)
	// (Below the disk's durable start a retention deleted the records,
	// and retention-settled judged it: a follower may delete what it
	// appended before its sync, all below its owner's start.)
	for o := max(min(r.verified, offset), min(r.disk.Start(), offset)); o < offset; o++ {
		if got, want := r.disk.At(o), r.issuedAt(o); got != want {
			_, _, mask := qt.holders(o, want)
			c.fail("sync-durable", atNs, "n%d q=%d: a sync acknowledged up to o=%d, but the disk durably holds %s at o=%d, not the record written (%s)%s; n%d's completion is the next trace line; replicas seen to hold the record durably:%s",
				node, q, offset, got, o, want, noteOf(r.disk), node, qt.names(mask))
			offset = o
			break
		}
		if !away {
			qt.addSeen(o, r.issuedAt(o), r.idx)
		}
	}
	r.verified = max(r.verified, offset)
	r.acked = max(r.acked, offset)
	c.noteRepair(c.queue(q), r)
}

func noteOf(l *DiskLog) string {
	if l.Note() == "" {
		return ""
	}
	return " (" + l.Note() + ")"
}

// Injected records that damage was injected into node's copy of q.
func (c *Checker) Injected(node core.NodeID, q core.QueueID) {
	r := c.rep(node, q)
	if !r.injected {
		r.injected = true
		r.damageEnd = max(r.disk.Len(), uint64(len(r.issued)))
	}
}

// flipsMax bounds the flipped bytes remembered per copy (a copy flipped
// more often within a run is rare; past it a flip is not remembered).
const flipsMax = 16

// FlippedAt says that a fault flipped bits of the byte at off of node's
// segment file path of q (the world also calls Injected). A flip past the
// segment's last frame is no record's damage, yet the replica's own scan
// cannot tell it from a frame that was torn or lost, and reports the log
// damaged: for the fault budget the copy counts as damaged until the byte
// is zero again or a frame covers it (Damaged).
func (c *Checker) FlippedAt(node core.NodeID, q core.QueueID, path string, off int64) {
	r := c.rep(node, q)
	if len(r.flips) < flipsMax {
		r.flips = append(r.flips, flipAt{path, off})
	}
}

// flipAt is one flipped byte of a segment file.
type flipAt struct {
	path string
	off  int64
}

// noteRepair clears a replica's injected mark once its disk again holds an
// unbroken log at least as long as the one that was damaged, a seal
// receipt that checks (a receipt damaged on the disk makes the replica a
// damaged witness: it can no longer prove what it answered, until an
// installation writes a new one, as much as a damaged record does), no
// unreadable range left in its segment files (past its last frame too:
// its scan cannot prove its end through one), and
// its storage binding (a copy whose directory was lost is a lost one until
// an admission or an installation binds it again), and no mark of a
// discarded damaged tail (a learner keeps it until its admission).
func (c *Checker) noteRepair(qt *queueTruth, r *replicaTruth) {
	if !r.injected || r.disk.Damaged() || r.disk.Prefix() < r.damageEnd || r.disk.Prefix() != r.disk.Len() {
		return
	}
	if d := c.diskOf(qt.spec.Queue, r.node); r.disk.SealIntact(d) && r.disk.BindIntact(d) && !r.disk.Unrepaired(d) && r.disk.MediaReadable(d) {
		r.injected = false
	}
}

// DiskReplaced says that node's data disk was replaced by a new, empty
// one (a new storage instance): what the old disk acknowledged went with
// it (Injected counts each copy's loss in the fault budget), and a log the
// node opens now is a new one, which lost nothing it acknowledged
// (loss-unreported and lost-synced judge the new disk's syncs only).
func (c *Checker) DiskReplaced(node core.NodeID) {
	for _, qt := range c.order {
		for _, r := range qt.reps {
			if r.node == node {
				r.acked = 0
			}
		}
	}
}

// Damaged returns the replicas of q whose copy is damaged and not yet
// repaired, or holds a flipped byte past a segment's last frame (which
// its own scan reports as damage), in spec order.
func (c *Checker) Damaged(q core.QueueID) []core.NodeID {
	var out []core.NodeID
	for _, r := range c.queue(q).reps {
		if len(r.flips) > 0 {
			r.flips = r.disk.FlipsPastFrames(c.diskOf(q, r.node), r.flips)
		}
		if r.injected || len(r.flips) > 0 {
			out = append(out, r.node)
		}
	}
	return out
}

// Recovered checks what node's log of q reported at a start (Open's scan)
// against the disk: every record it claims must be intact on the disk with
// the epoch it claims, and a log that recovers below its last acknowledged
// sync must have lost records to injected damage and say so.
// sameTable checks that r's disk log interns in r's table, so that the
// disk's refs are r's (what ids.ref of their identities would give).
func (r *replicaTruth) sameTable() {
	if r.disk.ids != r.ids {
		panic(fmt.Sprintf("check: n%d's disk log interns in a table of its own", r.node))
	}
}

func (c *Checker) Recovered(atNs int64, node core.NodeID, q core.QueueID, st core.LogState) {
	r := c.rep(node, q)
	if gen, ok := c.followGeneration(c.queue(q), r); !ok || gen != st.Generation {
		c.fail("recovery-truth", atNs, "n%d q=%d: the log recovered generation %d, but its disk's durable pointer names %d (checks: %v)",
			node, q, st.Generation, gen, ok)
	}
	// Open may have made durable what the old process left in the page
	// cache (a truncation, say): what the checker remembers of the files
	// past the recovered end is read afresh.
	r.disk.Cut(st.End)
	r.disk.Reparse(c.diskOf(q, node))
	var epochs epochCursor
	for o := st.Start; o < st.End; o++ {
		id := r.disk.At(o)
		if e := epochs.at(st.Epochs, o); !id.Intact() || id.Epoch != e {
			c.fail("recovery-truth", atNs, "n%d q=%d: the log recovered o=%d (epoch %d), but its disk durably holds %s there%s",
				node, q, o, e, id, noteOf(r.disk))
			break
		}
	}
	if st.End < r.acked {
		switch {
		case !r.injected:
			c.fail("lost-synced", atNs, "n%d q=%d: the log recovered [%d,%d) with no damage injected, below its last acknowledged sync end %d",
				node, q, st.Start, st.End, r.acked)
		case st.Damage == "" && !st.Unrepaired && (len(st.Binding) > 0 || !st.BoundBefore) && st.BindingDamage == "":
			// (A log bound before that holds no storage binding says it
			// lost what it acknowledged: its directory was lost or
			// emptied.)
			c.fail("loss-unreported", atNs, "n%d q=%d: the log recovered a clean, bound [%d,%d) below its last acknowledged sync end %d: the lost records went unreported",
				node, q, st.Start, st.End, r.acked)
		}
	}
	r.issued = r.issued[:0]
	qt := c.queue(q)
	r.sameTable()
	r.issued = r.disk.appendRefs(r.issued, st.End)
	if c.away == nil || !c.away(q, node) {
		for o := r.verified; o < st.End; o++ {
			qt.addSeenRef(o, r.issued[o], r.idx) // records Open made durable
		}
	}
	r.acked, r.verified = st.End, st.End
	c.noteRepair(c.queue(q), r)
}

// epochCursor finds the epochs of increasing offsets in an epoch history
// in one pass over it, with epochAt's answers. (The history is the code
// under test's: one out of offset order is read by epochAt itself.)
type epochCursor struct {
	i               int
	checked, sorted bool
}

func (c *epochCursor) at(h []core.EpochStart, o uint64) uint64 {
	if !c.checked {
		c.checked = true
		c.sorted = slices.IsSortedFunc(h, func(a, b core.EpochStart) int { return cmp.Compare(a.Offset, b.Offset) })
	}
	if !c.sorted {
		return epochAt(h, o)
	}
	for c.i < len(h) && h[c.i].Offset <= o {
		c.i++
	}
	if c.i == 0 {
		return 0
	}
	return h[c.i-1].Epoch
}

func epochAt(h []core.EpochStart, o uint64) uint64 {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Offset <= o {
			return h[i].Epoch
		}
	}
	return 0
}

// holders lists the replicas that hold id at o durably, and says whether
// the owner is one. A replica holds it when the checker read it from its
// disk at a sync acknowledgement (or at its recovery) and no truncation
// removed it since; a copy lost later to injected damage still counts,
// since the fault budget, not the protocol, answers for it.
func (q *queueTruth) holders(o uint64, id Ident) (n int, ownerHas bool, mask uint32) {
	mask = q.seenMask(o, id)
	for _, r := range q.reps {
		if mask&(1<<r.idx) != 0 {
			n++
			ownerHas = ownerHas || r == q.owner
		}
	}
	return n, ownerHas, mask
}

// names lists the replicas of mask, for a failure's text.
func (q *queueTruth) names(mask uint32) string {
	var b strings.Builder
	for _, r := range q.reps {
		if mask&(1<<r.idx) != 0 {
			fmt.Fprintf(&b, " n%d", r.node)
		}
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

// earlyReports names the followers whose latest durable report covered o
// although their disks were not seen to hold id there: the replicas that
// reported early, with the trace line of the report.
func (q *queueTruth) earlyReports(o uint64, id Ident) string {
	var b strings.Builder
	mask := q.seenMask(o, id)
	for _, r := range q.reps {
		if r == q.owner || !r.report.made || r.report.end <= o || mask&(1<<r.idx) != 0 {
			continue
		}
		fmt.Fprintf(&b, "; n%d reported end=%d durable at %s", r.node, r.report.end, appendInstant(nil, r.report.atNs))
		if r.report.line > 0 {
			fmt.Fprintf(&b, " (trace line %d)", r.report.line)
		}
		b.WriteString(" without a durable copy")
	}
	return b.String()
}

// Reported records that node, a follower of q, reported to its owner that
// its log holds [0, end) durably (an append-reply ok end=end): evidence for
// a confirm without its durable copies. The checkers judge from the disks,
// never from this report.
func (c *Checker) Reported(atNs int64, node core.NodeID, q core.QueueID, end uint64) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	if r := qt.replica(node); r != nil {
		var line uint64
		if c.lines != nil {
			line = c.lines()
		}
		r.report = durableReport{end: end, atNs: atNs, line: line, made: true}
	}
}

// ownerIssued returns the identity of the record the owner wrote at o.
func (q *queueTruth) ownerIssued(o uint64) Ident {
	if o < uint64(len(q.owner.issued)) {
		return q.owner.issuedAt(o)
	}
	return Ident{}
}

// issuedAt returns the identity of the record r was told to write at o
// (within issued).
func (r *replicaTruth) issuedAt(o uint64) Ident { return r.ids.id(o, r.issued[o]) }

// --- the client side ---

// AckAppended records that node appended, at offset o, the ack record (id)
// of the delivery at acked. Only the owner's appends count: they define the
// record.
func (c *Checker) AckAppended(q core.QueueID, node core.NodeID, o uint64, id Ident, acked uint64) {
	qt := c.queue(q)
	if node != qt.spec.Owner {
		return
	}
	qt.addAck(acked, ackRec{offset: o, ref: qt.ids.ref(o, id), w: int32(qt.spec.W)})
}

// PublishStarted records a publish attempt whose body has n bytes.
func (c *Checker) PublishStarted(key uint64, n int) {
	e := c.pubs.get(key)
	e.pubInfo, e.started = pubInfo{state: pubPending, len: uint32(n)}, true
	c.pubs.put(key, e)
}

// ConfirmEmitted checks, at the instant a broker confirms the publish at
// offset o of q, that W replicas, the owner among them, hold its record
// durably (by their disks).
func (c *Checker) ConfirmEmitted(atNs int64, q core.QueueID, o uint64) {
	qt := c.queue(q)
	qt.confirmedEnd = max(qt.confirmedEnd, o+1)
	id := qt.ownerIssued(o)
	if id.Intact() {
		qt.confirmedEpoch[o] = id.Epoch
	}
	n, ownerHas, mask := qt.holders(o, id)
	if !id.Intact() || !ownerHas || n < qt.spec.W {
		c.fail("confirm-durable", atNs, "q=%d o=%d (%s) confirmed with %d durable copies (owner n%d has it: %v), W=%d; held by%s%s",
			q, o, id, n, qt.spec.Owner, ownerHas, qt.spec.W, qt.names(mask), qt.earlyReports(o, id))
	}
	if qt.spec.ISR {
		c.inSyncHolds(atNs, "isr-confirm", qt, o, "confirmed")
	}
}

// ConfirmedBy checks, at a confirm of a write to q by node's process
// process, that at most one owner admits writes to the queue per
// assignment: the node is the owner the assignment names (the committed
// placement, or the configuration of a static queue), and for a placed
// queue every confirm comes from one process (its assignment names that
// exact process; until a recovery activates the next, a placed queue has
// one assignment epoch).
func (c *Checker) ConfirmedBy(atNs int64, q core.QueueID, node core.NodeID, process uint64) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	if node != qt.spec.Owner && qt.formerOwnerConfirm(node, process) {
		return // a publish of an earlier assignment, in flight when it was fenced
	}
	if node != qt.spec.Owner {
		c.fail("one-owner", atNs, "q=%d: n%d confirmed a write; the owner is n%d", q, node, qt.spec.Owner)
		return
	}
	if !qt.spec.Placed {
		return
	}
	if qt.ownerProcess == 0 {
		qt.ownerProcess = process
	} else if qt.ownerProcess != process {
		c.fail("one-owner", atNs, "q=%d: process %d of n%d confirmed a write after its process %d did, under one assignment", q, process, node, qt.ownerProcess)
	}
}

// Watermark checks, at the instant the owner of q announces its high
// watermark end, that it never moved back and that every member of the
// committed in-sync set (by the model's fold) holds the record below it
// durably (by their disks). node's process process announced it: an owner
// of an earlier assignment may still announce late (paused or cut off
// while its queue was recovered elsewhere, its lease running out); its
// watermark is its own, of a history the new owner's does not continue,
// and is not judged against the current one.
func (c *Checker) Watermark(atNs int64, q core.QueueID, node core.NodeID, process, end uint64) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	if node != qt.spec.Owner && qt.formerOwnerConfirm(node, process) {
		return
	}
	floor := qt.watermark
	if qt.spec.ISR {
		// An isr queue's watermark is its confirm point only while its
		// in-sync set meets min_insync; below it, the watermark may rise
		// over records nothing confirmed (one copy held them), which a
		// recovery may then lose to damage within the budget: going back
		// over those is no loss (seed 11000000488). Below what was
		// confirmed, it is.
		floor = min(floor, qt.confirmedEnd)
	}
	if end < floor {
		c.fail("watermark-back", atNs, "q=%d: the high watermark moved back from %d to %d (confirmed up to %d)", q, qt.watermark, end, qt.confirmedEnd)
	}
	qt.watermark = max(qt.watermark, end)
	if end > 0 {
		c.inSyncHolds(atNs, "watermark-durable", qt, end-1, "below the high watermark")
	}
}

// inSyncHolds fails checker when a member of q's committed in-sync set
// does not hold the owner's record at o durably.
func (c *Checker) inSyncHolds(atNs int64, checker string, qt *queueTruth, o uint64, what string) {
	set, ok := c.inSyncOf(qt.spec.Queue)
	if !ok {
		return
	}
	id := qt.ownerIssued(o)
	mask := qt.seenMask(o, id)
	for _, n := range set.ID[:set.N] {
		if r := qt.replica(n); r != nil && mask&(1<<r.idx) == 0 {
			if o < r.disk.Start() && qt.settledRecord(o, id) {
				// Below the member's durable start, settled: a reseed
				// (or a retention) was entitled to drop it, and
				// retention-settled judged the owner's deletion.
				continue
			}
			if !qt.spec.ISR && r.installedNs != 0 && r.report.made && r.installedNs > r.report.atNs {
				// A majority or all-durable queue's watermark, from a
				// fenced owner that counted this member's report, made
				// before the member installed a recovered history: the
				// installation legitimately dropped a suffix no confirm
				// had (this queue's confirms do not follow its in-sync
				// set), and the watermark starts again at the
				// activation (seed 19069). An isr queue's watermark is
				// its confirm point: never excused.
				continue
			}
			c.fail(checker, atNs, "q=%d o=%d (%s) %s, but n%d of the committed in-sync set %v holds no durable copy (its durable start: %d); held by%s%s",
				qt.spec.Queue, o, id, what, n, slices.Clone(set.ID[:set.N]), r.disk.Start(), qt.names(mask), qt.earlyReports(o, id))
			return
		}
	}
}

// DeliverEmitted checks, at the instant a broker hands the record at offset
// o of q to a consumer, that the record is confirmed, that its publish was
// not reported failed, and that first deliveries come in log order.
func (c *Checker) DeliverEmitted(atNs int64, q core.QueueID, o uint64, key uint64, redelivered bool) {
	qt := c.queue(q)
	id := qt.ownerIssued(o)
	n, ownerHas, mask := qt.holders(o, id)
	if !id.Intact() || !ownerHas || n < qt.spec.W {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d delivered with %d durable copies, W=%d; held by%s%s", q, o, n, qt.spec.W, qt.names(mask), qt.earlyReports(o, id))
	}
	if id.Intact() && (id.Kind != record.KindPublish || id.Val != key) {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: delivered body %#x, the owner wrote %s there", q, o, key, id)
	}
	p := c.pubs.get(key)
	known := p.started
	if p.state == pubFailed {
		c.fail("failed-delivered", atNs, "q=%d o=%d: publish %#x was reported failed", q, o, key)
	}
	if !known {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: body %#x was never published", q, o, key)
	}
	if k, ok := qt.confirmed[o]; ok && k != key {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: delivered body %#x, confirmed body %#x", q, o, key, k)
	}
	k, emitted := qt.delivered(o)
	if emitted && k != key {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: delivered body %#x, earlier delivered %#x", q, o, key, k)
	}
	qt.deliveredAt = growTo(qt.deliveredAt, o)
	qt.deliveredAt[o] = deliveredKey{key: key, has: true}
	if !p.delivered {
		p.delivered = true
		c.pubs.put(key, p)
	}
	if emitted {
		// A duplicate must be a redelivery of an unacked record: no ack of
		// it may be confirmed (durable on W replicas) already.
		qt.eachAck(o, func(a ackRec) {
			if n, ownerHas, mask := qt.holders(a.offset, qt.ids.id(a.offset, a.ref)); ownerHas && n >= int(a.w) {
				c.fail("redeliver-acked", atNs, "q=%d o=%d delivered again after its ack (record %d, held by%s) was confirmed", q, o, a.offset, qt.names(mask))
			}
		})
		return
	}
	if qt.firstAny && o <= qt.firstMax {
		c.fail("deliver-order", atNs, "q=%d: first delivery of o=%d after first delivery of o=%d", q, o, qt.firstMax)
	}
	qt.firstAny = true
	qt.firstMax = max(qt.firstMax, o)
}

// DeliveryReceived records that a live consumer on connection conn received
// the record at offset o of q, with body b. A delivery counts for
// at-least-once only here, where a consumer really has it.
func (c *Checker) DeliveryReceived(atNs int64, q core.QueueID, o uint64, conn core.ClientID, b []byte) {
	qt := c.queue(q)
	key := keyOf(b)
	if p := c.pubs.get(key); p.started && (p.len != uint32(len(b)) || !bytes.Equal(b[min(8, len(b)):], zeros[:len(b)-min(8, len(b))])) {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: c%d received a body of %d bytes that is not the one published with key %#x (%d bytes)",
			q, o, conn, len(b), key, p.len)
	}
	qt.received = growTo(qt.received, o)
	r := &qt.received[o]
	// A later receipt (a redelivery, or a stale copy from a dead
	// connection that arrives after another consumer acked it) is the
	// latest; an earlier acknowledged receipt still settles the record.
	r.has, r.conn, r.acked, r.lost = true, conn, false, false
	r.count++
}

// zeros is the tail of every simulated body after its 8-byte key.
var zeros = make([]byte, record.BodyBytesMax)

func keyOf(b []byte) uint64 {
	if len(b) < 8 {
		return 1<<64 - 1
	}
	return binary.LittleEndian.Uint64(b)
}

// AckSent records that the consumer on conn sent its ack of offset o.
func (c *Checker) AckSent(q core.QueueID, o uint64, conn core.ClientID) {
	if r := c.queue(q).receipt(o); r != nil && r.conn == conn {
		r.acked, r.settled = true, true
	}
}

// receipt returns what became of offset o's deliveries, or nil if no live
// consumer received it.
func (q *queueTruth) receipt(o uint64) *receipt {
	if o >= uint64(len(q.received)) || !q.received[o].has {
		return nil
	}
	return &q.received[o]
}

// ConsumerLost records that the consumer on conn lost its connection while
// holding the deliveries at offsets, unacked: each must be redelivered.
func (c *Checker) ConsumerLost(q core.QueueID, conn core.ClientID, offsets []uint64) {
	qt := c.queue(q)
	for _, o := range offsets {
		if r := qt.receipt(o); r != nil && r.conn == conn && !r.acked {
			r.lost = true
		}
	}
}

// PublishEnded records how a publish ended, as the client learned it.
func (c *Checker) PublishEnded(atNs int64, key uint64, o core.Outcome, q core.QueueID, offset uint64) {
	p := c.pubs.get(key)
	switch o {
	case core.Confirmed:
		p.state = pubConfirmed
		qt := c.queue(q)
		if k, ok := qt.confirmed[offset]; ok && k != key {
			c.fail("confirm-durable", atNs, "q=%d o=%d confirmed for two publishes %#x and %#x", q, offset, k, key)
		}
		if k, ok := qt.delivered(offset); ok && k != key {
			c.fail("deliver-confirmed", atNs, "q=%d o=%d: confirmed %#x but delivered %#x there", q, offset, key, k)
		}
		qt.confirmed[offset] = key
	case core.Failed:
		if p.state == pubConfirmed {
			c.fail("confirm-durable", atNs, "publish %#x both confirmed and failed", key)
		}
		p.state = pubFailed
		if p.delivered {
			c.fail("failed-delivered", atNs, "publish %#x reported failed after it was delivered", key)
		}
	case core.Unknown:
		if p.state == pubPending {
			p.state = pubUnknown
		}
	}
	c.pubs.put(key, p)
}

// Undelivered returns how many confirmed publishes of q no live consumer
// has received, or still need a redelivery.
func (c *Checker) Undelivered(q core.QueueID) int {
	n, _ := c.UndeliveredFirst(q)
	return n
}

// UndeliveredFirst is Undelivered with the lowest such offset described
// (for a failure's evidence).
func (c *Checker) UndeliveredFirst(q core.QueueID) (int, string) {
	qt := c.queue(q)
	n, first := 0, uint64(math.MaxUint64)
	for o := range qt.confirmed { //detguard:order-independent counts and a minimum
		if r := qt.receipt(o); r == nil || (r.lost && !r.settled) {
			n++
			first = min(first, o)
		}
	}
	if n == 0 {
		return 0, ""
	}
	what := "never received"
	if r := qt.receipt(first); r != nil && r.lost {
		what = fmt.Sprintf("received %d times, its consumer c=%d lost before its ack", r.count, r.conn)
	}
	return n, fmt.Sprintf("the first at o=%d, %s", first, what)
}

// Converged reports whether every replica of q durably holds exactly the
// owner's log (by their disks), and if not, where the first difference is.
func (c *Checker) Converged(q core.QueueID) (bool, string) {
	qt := c.queue(q)
	own := qt.owner.disk
	end := own.Prefix()
	if own.Len() != end {
		return false, fmt.Sprintf("owner n%d's disk has no intact copy of o=%d below its end %d", qt.spec.Owner, end, own.Len())
	}
	for _, r := range qt.reps {
		if r == qt.owner || r.former || (c.away != nil && c.away(q, r.node)) {
			continue
		}
		// (Below either log's start its records are gone, settled:
		// retention-settled judged the deletion.)
		for o := max(own.Start(), r.disk.Start()); o < end; o++ {
			if got := r.disk.At(o); got != own.At(o) {
				return false, fmt.Sprintf("n%d holds %s at o=%d, owner n%d holds %s", r.node, got, o, qt.spec.Owner, own.At(o))
			}
		}
		if r.disk.Len() > end {
			return false, fmt.Sprintf("n%d holds records up to %d beyond the owner n%d's end %d", r.node, r.disk.Len(), qt.spec.Owner, end)
		}
	}
	return true, ""
}

// Final runs the end-of-run checks, on the disks as they are. drained says
// whether a queue's consumers had the time to receive every confirmed
// record (the drain finished and the queue has consumers).
func (c *Checker) Final(atNs int64, drained func(core.QueueID) bool) {
	for _, qt := range c.order {
		q := qt.spec.Queue
		for _, r := range qt.reps {
			r.disk.Reparse(c.diskOf(q, r.node))
		}
		for _, o := range sortedOffsets(qt.confirmed) {
			key := qt.confirmed[o]
			var held uint32
			for _, r := range qt.reps {
				if id := r.disk.At(o); id.Kind == record.KindPublish && id.Val == key {
					held |= 1 << r.idx
				}
			}
			if held == 0 && qt.retainedSettled(o) {
				continue // settled, and deleted by a retention (retain.go)
			}
			if held == 0 {
				c.fail("confirmed-lost", atNs, "q=%d o=%d: no replica holds an intact durable copy of confirmed publish %#x", q, o, key)
				continue
			}
			if qt.fenced {
				continue // judged again when recovery activates it
			}
			if id := qt.owner.disk.At(o); (id.Kind != record.KindPublish || id.Val != key) && !(o < qt.owner.disk.Start() && qt.retainedSettled(o)) {
				c.fail("converged", atNs, "q=%d o=%d: the owner n%d lacks confirmed publish %#x, which%s hold", q, o, qt.spec.Owner, key, qt.names(held))
			}
			if !drained(q) {
				continue
			}
			switch r := qt.receipt(o); {
			case r == nil:
				c.fail("at-least-once", atNs, "q=%d o=%d: no live consumer ever received confirmed publish %#x", q, o, key)
			case r.lost && !r.settled:
				c.fail("at-least-once", atNs, "q=%d o=%d: consumer c%d was lost before acking publish %#x, which was never redelivered", q, o, r.conn, key)
			}
		}
		if ok, why := c.Converged(q); !ok && !qt.fenced {
			c.fail("converged", atNs, "q=%d: replicas differ at the end: %s", q, why)
		}
	}
	c.sealsFinal(atNs)
	c.sourcesFinal(atNs)
}

func sortedOffsets(m map[uint64]uint64) []uint64 {
	out := make([]uint64, 0, len(m))
	for o := range m { //detguard:order-independent collected then sorted
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// Linearizability records that q's history of publishes (appends returning
// offsets) and deliveries (reads) fits no sequential log.
func (c *Checker) Linearizability(atNs int64, q core.QueueID, detail string) {
	c.fail("linearizable", atNs, "q=%d: %s", q, detail)
}

// Liveness records that the cluster did not finish its work within the
// drain phase's bound.
func (c *Checker) Liveness(atNs int64, detail string) {
	c.fail("liveness", atNs, "%s", detail)
}
