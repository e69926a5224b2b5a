package world

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/seglog"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// diskAccess is each broker's disk's fault hook, consulted before every
// file-system operation: the one-shot sync and read failures, and the
// segment rolls the coverage table counts.
func (w *World) diskAccess(b *broker, a memfs.Access) error {
	switch a.Op {
	case memfs.OpSync:
		if b.failSync && !w.crashMayTear(b) {
			// The failed sync would drop the file's dirty pages as a
			// power loss does, tearing them: not while a queue of b's
			// has no copy to spare (crashMayTear). It waits for a sync
			// that may.
			return nil
		}
		if b.failSync {
			w.mayHaveTorn(b)
			b.failSync = false
			w.notef("struck sync-fail n%d %s", b.id, a.Name)
			w.stats.Struck[FaultSyncFail]++
			w.mark(MarkSyncFailDrop)
			return fmt.Errorf("injected sync failure on %s: %w", a.Name, vfs.ErrIO)
		}
	case memfs.OpRead:
		if b.failRead && b.up {
			if q, ok := w.evidenceOf(a.Name); ok {
				// A seal receipt or storage binding that does not read
				// makes the copy a damaged or lost witness for good: damage,
				// within the fault budget only (else a later read meets it).
				if !w.damageAllowed(b, q) {
					return nil
				}
				w.injected(b, q)
			}
			b.failRead = false
			w.notef("struck read-error n%d %s", b.id, a.Name)
			w.stats.Struck[FaultReadError]++
			return fmt.Errorf("injected read error on %s: %w", a.Name, vfs.ErrIO)
		}
	case memfs.OpCreate:
		if strings.HasSuffix(a.Name, ".seg") && !strings.HasSuffix(a.Name, "/00000000000000000000.seg") {
			w.mark(MarkSegmentRoll)
		}
	}
	return nil
}

// evidenceOf returns the placed queue whose seal receipt or storage
// binding file name is, if it is one.
func (w *World) evidenceOf(name string) (*placedQueue, bool) {
	base := name[strings.LastIndexByte(name, '/')+1:]
	if base != "SEAL" && base != "BIND" {
		return nil, false
	}
	dir, _, _ := strings.Cut(name, "/")
	id, err := strconv.ParseUint(strings.TrimPrefix(dir, "q"), 10, 32)
	if err != nil {
		return nil, false
	}
	q, ok := w.placedByID[core.QueueID(id)]
	return q, ok
}

// inject applies a scheduled fault. A fault that cannot apply (its broker is
// down, the budget is spent) is skipped; Stats counts the armed and struck
// ones.
func (w *World) inject(f Fault) {
	switch f.Kind { // the kinds that name no broker
	case FaultSpike:
		w.spikeEnd = w.now + f.DurNs
		w.notef("fault %s", f)
		w.stats.Armed[f.Kind]++
		w.stats.Struck[f.Kind]++
		return
	case FaultCandidateDies:
		// Armed: the next detect stage (the candidate dies), or in two
		// draws of three the next select (a proposed member dies as the
		// installations begin), strikes it (candidateStage). A later
		// arrival replaces one still armed.
		w.candidateDies, w.candidateAt = f, seam.StageDetect
		if w.rFault.Chance(2, 3) {
			w.candidateAt = seam.StageSelect
		}
		w.notef("fault %s at the next %s", f, w.candidateAt)
		w.stats.Armed[f.Kind]++
		return
	case FaultStaleTail:
		w.staleTailTry(f, staleTailTries)
		return
	case FaultOwnerKill:
		w.stats.Armed[f.Kind]++
		p, ok := w.placed[QueueName(0)]
		if !ok || p.deleted || p.owner == 0 || !w.brokers[p.owner-1].up {
			w.notef("fault %s skipped: q1 not placed or its owner down", f)
			return
		}
		b := w.brokers[p.owner-1]
		w.notef("fault %s strikes n%d, the owner of q1", f, b.id)
		w.stats.Struck[f.Kind]++
		w.stopProcess(b, f.DurNs, true)
		return
	case FaultPowerCycle:
		w.notef("fault %s", f)
		for _, b := range w.brokers {
			if b.up {
				w.crash(b, w.rFault.Range(1e6, max(f.DurNs, 2e6)))
			}
		}
		w.mark(MarkPowerCycle)
		w.stats.Armed[f.Kind]++
		w.stats.Struck[f.Kind]++
		return
	}
	var b *broker
	switch f.Kind {
	case FaultLeaderCrash, FaultLeaderIsolate, FaultLeaderPause:
		if b = w.ctrlLeader(); b == nil {
			return // no broker leads now
		}
		w.notef("fault %s strikes n%d, the metadata leader", f, b.id)
		w.stats.Armed[f.Kind]++
		w.stats.Struck[f.Kind]++
		w.mark(MarkLeaderFault)
		kind := FaultCrash
		switch f.Kind {
		case FaultLeaderIsolate:
			kind = FaultIsolate
		case FaultLeaderPause:
			kind = FaultPause
		}
		w.strike(b, Fault{AtNs: f.AtNs, Kind: kind, Node: int(b.id), DurNs: f.DurNs})
		return
	}
	b = w.brokers[f.Node-1]
	w.strike(b, f)
}

// strike applies fault f to broker b.
func (w *World) strike(b *broker, f Fault) {
	struck := true // most kinds strike as they are armed
	switch f.Kind {
	case FaultCrash:
		if !b.up {
			return
		}

		w.notef("fault %s", f)
		w.crash(b, f.DurNs)
	case FaultKill:
		if !b.up {
			return
		}
		w.notef("fault %s", f)
		w.stopProcess(b, f.DurNs, true)
	case FaultPause:
		if !b.up || b.paused {
			return
		}
		w.notef("fault %s", f)
		b.paused = true
		e := w.schedule1(w.now+f.DurNs, evResume)
		e.node, e.inc = int32(b.id-1), b.inc
	case FaultSlowSync:
		b.slowSyncEnd = w.now + f.DurNs
		w.notef("fault %s", f)
	case FaultSyncFail:
		if !b.up {
			return
		}
		b.failSync = true
		struck = false // when a sync meets it
		w.notef("fault %s", f)
	case FaultReadError:
		if !b.up {
			return
		}
		b.failRead = true
		struck = false // when a read meets it
		w.notef("fault %s", f)
	case FaultCorrupt:
		if !b.up || !w.corrupt(b, f) {
			return
		}
		w.crash(b, f.DurNs)
	case FaultCorruptLive:
		if !b.up || !w.corrupt(b, f) {
			return
		}
		b.armed |= armCorrupt
		struck = false // when a live read (or a scan) meets it
	case FaultLostWrite:
		if !b.up || !w.loseWrite(b, f) {
			return
		}
		w.mark(MarkLostWrite)
	case FaultLostDir:
		if !b.up || !w.loseDir(b, f) {
			return
		}
		w.mark(MarkLostDir)
	case FaultGone:
		if !b.up || !w.goneAllowed(b) {
			return
		}
		w.notef("fault %s", f)
		b.gone = true
		// A process killed for good: its peers see the exit, and the
		// controller its loss at once. (A silent power loss would be known
		// only at the liveness expiry, and a transition proposed meanwhile
		// may name it: see goneAllowed.)
		w.stopProcess(b, restartNever, true)
		w.mark(MarkGone)
	case FaultDiskReplaced:
		if !b.up || !w.replaceDisk(b, f) {
			return
		}
		w.mark(MarkDiskReplaced)
	case FaultDrain:
		if b.gone || !w.drainStrike(b, f) {
			return
		}
		struck = false // when its drain applies (drainApplied)
	case FaultUnreadable:
		if !b.up || !w.unreadable(b, f) {
			return
		}
		b.armed |= armUnreadable
		struck = false // when a read (or a scan) meets it
	case FaultTornSector:
		if !b.up {
			return
		}
		w.notef("fault %s", f)
		b.armed |= armTorn
		b.tornDurNs = f.DurNs
		struck = false // counted by tearSector when a sector tore
	case FaultDiskFull:
		b.diskFullEnd = w.now + f.DurNs
		b.fs.SetCapacity(max(b.fs.Usage(), 1))
		w.notef("fault %s", f)
		e := w.schedule1(b.diskFullEnd, evResume)
		e.node, e.inc = int32(b.id-1), diskEvent
	case FaultIsolate:
		w.isolated[b.id-1] = w.now + f.DurNs
		w.notef("fault %s", f)
	case FaultOneWay:
		w.oneWay[f.Node-1][f.Peer-1] = w.now + f.DurNs
		w.notef("fault %s", f)
	case FaultClog:
		w.clogged[f.Node-1][f.Peer-1] = w.now + f.DurNs
		w.notef("fault %s", f)
	default:
		panic("world: unknown scheduled fault")
	}
	w.stats.Armed[f.Kind]++
	if struck {
		w.stats.Struck[f.Kind]++
	}
}

// armed damage of a running broker's log, waiting for a read to meet it
const (
	armCorrupt uint8 = 1 << iota
	armUnreadable
	armTorn // a torn-sector power loss waits for a sync in flight
)

// damageMet is called when a read of b's log failed, or a scan reported
// damage: it counts the armed damage as struck.
func (w *World) damageMet(b *broker, text string) {
	if b.armed&armCorrupt != 0 && !strings.Contains(text, "i/o error") && !strings.HasPrefix(text, "unreadable") {
		b.armed &^= armCorrupt
		w.notef("struck corrupt-live n%d", b.id)
		w.stats.Struck[FaultCorruptLive]++
		w.mark(MarkCorruptLive)
	}
	if b.armed&armUnreadable != 0 && (strings.Contains(text, "i/o error") || strings.Contains(text, "unreadable")) {
		b.armed &^= armUnreadable
		w.notef("struck unreadable n%d", b.id)
		w.stats.Struck[FaultUnreadable]++
		w.mark(MarkUnreadable)
	}
}

// liveDir is the directory of b's live generation of q's log (the one its
// pointer names, io/seglog's gen.go): damage strikes what the replica
// serves from. A pointer that does not read names the first generation.
func liveDir(b *broker, q core.QueueID) string {
	gen, err := seglog.LiveGeneration(b.fs, logDir(q))
	if err != nil {
		return logDir(q)
	}
	return seglog.StageDir(logDir(q), gen)
}

// pickLog returns one of b's segment files whose copy the fault budget lets
// a fault damage, with its durable size, or ok false.
func (w *World) pickLog(b *broker) (q *placedQueue, name string, size int64, ok bool) {
	for _, q := range w.memberOf(b) {
		if !w.damageAllowed(b, q) {
			continue
		}
		dir := liveDir(b, q.id)
		names, err := b.fs.DurableList(dir)
		if err != nil {
			continue
		}
		var segs []string
		for _, n := range names {
			if strings.HasSuffix(n, ".seg") {
				segs = append(segs, n)
			}
		}
		if len(segs) == 0 {
			continue
		}
		name := dir + "/" + segs[w.rFault.Intn(len(segs))]
		durable, err := b.fs.DurableBytes(name)
		if err != nil || len(durable) == 0 {
			continue
		}
		return q, name, int64(len(durable)), true
	}
	return nil, "", 0, false
}

// injected accounts for damage struck on b's copy of q.
func (w *World) injected(b *broker, q *placedQueue) {
	w.checker.Injected(b.id, q.id)
	w.checker.DiskChanged(b.id)
	if q.owner == b.id {
		w.mark(MarkCorruptOwner)
	}
}

// loseWrite makes one recently synced write of one of b's logs revert.
func (w *World) loseWrite(b *broker, f Fault) bool {
	for _, q := range w.memberOf(b) {
		if !w.damageAllowed(b, q) {
			continue
		}
		dir := liveDir(b, q.id)
		names, err := b.fs.DurableList(dir)
		if err != nil {
			continue
		}
		for i := len(names) - 1; i >= 0; i-- { // the newest segment first
			if !strings.HasSuffix(names[i], ".seg") {
				continue
			}
			name := dir + "/" + names[i]
			if off, n, ok := b.fs.LoseSyncedWrite(name, w.rFault); ok {
				w.injected(b, q)
				w.notef("fault %s: %s bytes [%d,%d) lost", f, name, off, off+n)
				return true
			}
		}
	}
	return false
}

// unreadable makes one sector of one of b's logs unreadable.
func (w *World) unreadable(b *broker, f Fault) bool {
	q, name, size, ok := w.pickLog(b)
	if !ok || size < memfs.SectorBytes {
		return false
	}
	// A whole sector of durable bytes that no write still under way will
	// rewrite (and so cure): the sector the durable end falls in may hold
	// such writes, and so may any sector of zeros a log's file runs ahead
	// with (seglog's ExtendBytes). The drawn sector, else the nearest one
	// below it that memfs accepts.
	off := w.rFault.Int63n(size/memfs.SectorBytes) * memfs.SectorBytes
	for {
		err := b.fs.SetUnreadable(name, off, memfs.SectorBytes)
		if err == nil {
			break
		}
		if !errors.Is(err, memfs.ErrPending) || off == 0 {
			return false
		}
		off -= memfs.SectorBytes
	}
	w.injected(b, q)
	w.notef("fault %s: %s bytes [%d,%d) unreadable", f, name, off, off+memfs.SectorBytes)
	return true
}

// tearSector is a power loss of b that tears a sector holding synced bytes,
// when the budget allows for every queue b holds (the torn write may be any
// log's); otherwise an ordinary power loss.
func (w *World) tearSector(b *broker, restartNs int64) {
	// Every log on the disk may hold the torn sector, a member's or not
	// (a former member's log, one a recovery installs, a deleted queue's:
	// the checkers still judge what its confirms left).
	var onDisk []*placedQueue
	for _, id := range w.placedIDs {
		q := w.placedByID[id]
		if names, err := b.fs.DurableList(logDir(id)); err == nil && len(names) > 0 {
			if !w.damageAllowed(b, q) {
				w.crash(b, restartNs)
				return
			}
			onDisk = append(onDisk, q)
		}
	}
	w.powerLossCtrl(b)
	if n := b.fs.CrashTearSynced(w.rFault); n > 0 {
		for _, q := range onDisk {
			w.checker.Injected(b.id, q.id)
		}
		w.notef("struck torn-sector n%d: a torn write damaged %d synced bytes", b.id, n)
		w.stats.Struck[FaultTornSector]++
		w.mark(MarkTornSector)
	}
	w.checker.DiskChanged(b.id)
	w.stopProcess(b, restartNs, false)
}

// corrupt flips one bit of a durable byte in one of b's logs, when the fault
// budget allows (damageAllowed).
func (w *World) corrupt(b *broker, f Fault) bool {
	for _, q := range w.memberOf(b) {
		if !w.damageAllowed(b, q) {
			continue
		}
		dir := liveDir(b, q.id)
		names, err := b.fs.List(dir)
		// The generation pointer and later generations' directories are
		// not this generation's files (a pointer is written once, by
		// rename, and never rewritten in place: the fault model leaves it
		// alone; a damaged one fails the log's open, seglog's tests show).
		// Nor is the log's START (retention), or its storage binding
		// (BIND), written the same way (a damaged one is reported as the
		// copy's loss, seglog's and core's tests show).
		names = slices.DeleteFunc(names, func(n string) bool {
			return n == "GEN" || n == "GEN.tmp" || strings.HasPrefix(n, "gen-") || n == "START" || n == "START.tmp" ||
				n == "BIND" || n == "BIND.tmp"
		})
		if err != nil || len(names) == 0 {
			continue
		}
		name := dir + "/" + names[w.rFault.Intn(len(names))]
		durable, err := b.fs.DurableBytes(name)
		if err != nil || len(durable) == 0 {
			continue
		}
		off := w.rFault.Int63n(int64(len(durable)))
		if err := b.fs.CorruptMask(name, off, byte(1)<<w.rFault.Intn(8)); err != nil {
			continue
		}
		w.checker.FlippedAt(b.id, q.id, name, off)
		w.injected(b, q)
		w.notef("fault %s: %s byte %d flipped", f, name, off)
		return true
	}
	return false
}

// loseDir empties the live directory of one of b's queue logs that the
// fault budget lets it damage, after a power loss of b (which restarts
// after f.DurNs): every file of that generation, its storage binding
// among them, removed durably. The generation pointer and the other
// generations stay (a lost generation directory is its emptied live one).
func (w *World) loseDir(b *broker, f Fault) bool {
	for _, q := range w.memberOf(b) {
		if !w.damageAllowed(b, q) {
			continue
		}
		dir := liveDir(b, q.id)
		if names, err := b.fs.DurableList(dir); err != nil || len(names) == 0 {
			continue
		}
		w.injected(b, q)
		w.crash(b, f.DurNs)
		names, err := b.fs.List(dir)
		if err != nil {
			panic(fmt.Sprintf("world: n%d's %s after its power loss: %v", b.id, dir, err))
		}
		removed := 0
		for _, n := range names {
			if n == "GEN" || n == "GEN.tmp" || strings.HasPrefix(n, "gen-") {
				continue
			}
			if err := b.fs.Remove(dir + "/" + n); err != nil {
				panic(fmt.Sprintf("world: removing n%d's %s/%s: %v", b.id, dir, n, err))
			}
			removed++
		}
		if err := b.fs.SyncDir(dir); err != nil {
			panic(fmt.Sprintf("world: syncing n%d's %s: %v", b.id, dir, err))
		}
		w.checker.DiskChanged(b.id)
		w.notef("fault %s: %s emptied (%d files)", f, dir, removed)
		return true
	}
	return false
}

// goneMax returns how many brokers of a world of brokers brokers the gone
// fault may take: fewer than half the metadata group's voters, so that its
// majority lives on (two of 5), and none of a smaller world. (Three voters
// could lose one; but then any later loss of another voter stalls the
// group, and the leader elected after it counts the gone broker's expiry
// from its election: a transition it proposes meanwhile may name the gone
// broker, and a pending transition is never replaced, the known gap of
// goneAllowed.)
func goneMax(brokers int) int {
	voters := len(ctrlVoters(brokers))
	if voters < 5 {
		return 0
	}
	return (voters - 1) / 2
}

// goneAllowed reports whether b may be gone for good: fewer than goneMax
// brokers gone so far; every queue of the profile placed (one declared
// later could wait for b); every placed queue still able to serve at its
// replicas' W on the brokers left (placement and activation never go below
// it: an all_durable queue of 3 replicas on 3 brokers would stay fenced);
// every queue b is a member of within the fault budget with b's copy
// lost (damageAllowed counts gone members); and the metadata quiet: the
// live set the world's, no placed queue fenced, every member of each
// running the process its assignment names. (The controller never
// replaces a pending transition whose candidate or proposed members are
// lost, so a transition that names b, pending or proposed about another
// loss before b's commits, would keep its queue fenced for ever: a known
// gap, which the quiet shrinks to the eager failover's delay.)
func (w *World) goneAllowed(b *broker) bool { return w.goneAllowedBut(b, 0) }

// goneAllowedBut is goneAllowed with queue except (0: none) fenced, b
// among its proposed members: the quiet then asks of the other queues
// only that no pending transition names b (the loss that fenced except
// fenced them too, and may have a transition on the way that names b: the
// known gap goneAllowed keeps the gone fault from).
func (w *World) goneAllowedBut(b *broker, except core.QueueID) bool {
	gone := len(w.goneBrokers())
	if gone >= goneMax(len(w.brokers)) {
		return false
	}
	for i := range w.prof.Queues {
		if _, ok := w.placed[QueueName(i)]; !ok {
			return false
		}
	}
	if ok, _ := w.checker.MetaLiveSet(w.brokerTruth()); !ok {
		return false
	}
	left := len(w.brokers) - gone - 1
	for _, id := range w.placedIDs {
		p := w.placedByID[id]
		if p.deleted {
			continue
		}
		q, ok := w.checker.MetaQueue(p.name)
		if !ok {
			continue // deleted since: nothing to serve
		}
		n := min(q.Replicas, left)
		if q.Policy.WriteQuorum(n, min(q.MinInsync, n)) < q.Policy.WriteQuorum(q.Replicas, min(q.MinInsync, q.Replicas)) {
			return false
		}
		if (slices.Contains(p.members, b.id) || slices.Contains(p.proposed, b.id) || q.Learner == b.id) && !w.permanentLossAllowed(b, p) {
			// (A learner counts: its admission may be on its way, and
			// it would then be a member lost for good.)
			return false
		}
		if p.id == except {
			continue
		}
		if except != 0 {
			// Mid-recovery, the loss that fenced except fenced others
			// too: only a transition that already names b is refused.
			if w.checker.Fenced(p.id) && slices.Contains(p.proposed, b.id) {
				return false
			}
			continue
		}
		if w.checker.Fenced(p.id) {
			return false
		}
		for i, n := range p.members {
			if !w.brokers[n-1].up || !w.memberLive(p, i) {
				return false // a transition may be on its way
			}
		}
	}
	return true
}

// candidateKillNsMax bounds the delay between the recovery stage that
// strikes an armed candidate-dies fault and the kill: short, so that the
// broker dies in the middle of the recovery it took part in.
const candidateKillNsMax = 200e6

// candidateStage follows a recovery stage broker b reported: the
// candidate of each queue (detect), and an armed candidate-dies fault,
// which the stage it waits for strikes: a candidate's detect kills the
// candidate; a worker's select (the source chosen, the installations
// about to begin) kills a proposed member that is not the candidate, the
// first up after a drawn one.
func (w *World) candidateStage(b *broker, e *core.Effect) {
	if e.Stage == seam.StageDetect {
		w.candidates[e.Queue] = b.id
	}
	f := w.candidateDies
	if f.Kind == 0 || !w.working || e.Stage != w.candidateAt {
		return
	}
	victim, restartMs := b, int32(max(f.DurNs/1e6, 1))
	if e.Stage == seam.StageDetect && w.rFault.Chance(1, 2) {
		// The candidate gone for good, if the gone fault's rules allow
		// it: the controller must hand its recovery to another proposed
		// member.
		restartMs = -1
	}
	if e.Stage == seam.StageSelect {
		p := w.placedByID[e.Queue]
		if p == nil || len(p.proposed) < 2 {
			return // no member but the candidate: wait for another
		}
		victim = nil
		k := w.rFault.Intn(len(p.proposed))
		for i := range p.proposed {
			o := w.brokers[p.proposed[(k+i)%len(p.proposed)]-1]
			if o != b && o.up {
				victim = o
				break
			}
		}
		if victim == nil {
			return
		}
		restartMs = -1 // gone for good, if the gone fault's rules allow it then
	}
	w.candidateDies = Fault{}
	ev := w.schedule1(w.now+w.rFault.Range(1e6, candidateKillNsMax), evCandidateKill)
	ev.node, ev.inc, ev.q = int32(victim.id-1), victim.inc, restartMs
	ev.from = core.NodeID(e.Queue)
	w.notef("struck candidate-dies n%d at the %s of q=%d", victim.id, e.Stage, e.Queue)
	w.stats.Struck[FaultCandidateDies]++
	w.mark(MarkCandidateDies)
}

// candidateKill kills the process a candidate-dies fault struck, if it
// still runs in the workload phase: it restarts after the fault's
// duration, or never when the draw said so and the gone fault's rules
// allow it with the broker's own recovery under way (goneMidRecovery).
func (w *World) candidateKill(e *event) {
	b := w.brokers[e.node]
	if !w.working || !b.up || b.inc != e.inc {
		return
	}
	if e.q < 0 && w.goneMidRecovery(b, core.QueueID(e.from)) {
		w.notef("fault candidate-dies n%d inc=%d: gone for good", b.id, b.inc)
		b.gone = true
		w.stopProcess(b, restartNever, true)
		w.mark(MarkGone)
		w.mark(MarkCandidateGone)
		return
	}
	restartNs := int64(max(e.q, 1)) * 1e6
	w.notef("fault candidate-dies n%d inc=%d: killed, restarts in %d ms", b.id, b.inc, restartNs/1e6)
	w.stopProcess(b, restartNs, true)
}

// goneMidRecovery reports whether b, a proposed member of queue q's
// pending transition (its candidate or another), may be gone for good: the
// gone fault's rules (goneAllowed) but for q, which is fenced, and whose
// proposed members left without b must still meet its replicas' W (its
// recovery then activates without b, handed to another member if b was
// its candidate).
func (w *World) goneMidRecovery(b *broker, q core.QueueID) bool {
	p := w.placedByID[q]
	if p == nil || p.deleted || !w.checker.Fenced(q) {
		return false
	}
	mq, ok := w.checker.MetaQueue(p.name)
	if !ok {
		return false
	}
	n := p.proposedN - 1
	if n < 1 || mq.Policy.WriteQuorum(n, min(mq.MinInsync, n)) < mq.Policy.WriteQuorum(mq.Replicas, min(mq.MinInsync, mq.Replicas)) {
		return false
	}
	return w.goneAllowedBut(b, q)
}

// replaceDisk is a power loss of b after which it restarts (after f.DurNs)
// on a new, empty data disk: a storage instance of its own, no queue log,
// no binding, no marker. When the fault budget lets every queue with a
// log on the old disk (a member's or not, as tearSector), or b a member,
// lose b's copy;
// the metadata disk is another device and keeps what the power loss left.
func (w *World) replaceDisk(b *broker, f Fault) bool {
	// Only once the profile's queues are placed and the metadata's live
	// set is the world's: a placement on the way when the disk goes would
	// name the lost storage instance, and of a queue of W = 1 the budget
	// never saw (its recovery could never begin).
	for i := range w.prof.Queues {
		if _, ok := w.placed[QueueName(i)]; !ok {
			return false
		}
	}
	if ok, _ := w.checker.MetaLiveSet(w.brokerTruth()); !ok {
		return false
	}
	var onDisk []*placedQueue
	for _, id := range w.placedIDs {
		q := w.placedByID[id]
		names, err := b.fs.DurableList(logDir(id))
		if (err == nil && len(names) > 0) || (!q.deleted && (slices.Contains(q.members, b.id) || slices.Contains(q.proposed, b.id))) {
			// (A member's copy is lost with the storage instance its
			// assignment names, even before its log reached the disk;
			// so is a proposed member's: an activation may name the
			// storage the metadata still registers for it.)
			if !w.permanentLossAllowed(b, q) {
				return false
			}
			onDisk = append(onDisk, q)
		}
	}
	w.crash(b, f.DurNs)
	b.disks++
	b.fs = memfs.New()
	b.fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error { return w.diskAccess(b, a) }))
	b.fs.SetSyncFailureDropsPages(w.rFault)
	b.diskFullEnd = 0
	b.storage = prng.Derive(w.seed, "storage-n"+strconv.FormatUint(uint64(b.id), 10)+"-disk"+strconv.Itoa(b.disks)) | 1
	for _, q := range onDisk {
		w.checker.Injected(b.id, q.id)
	}
	w.checker.DiskReplaced(b.id)
	w.checker.DiskChanged(b.id)
	w.notef("fault %s: a new disk, storage %d (%d queues' copies lost)", f, b.storage, len(onDisk))
	return true
}

// staleTail is a stale-tail fault under way (FaultStaleTail).
type staleTail struct {
	// stage: 0 none; 1 the owner reaches only the follower; 2 the owner
	// killed, nothing reaches the follower, the recovery under way; 3 the
	// recovery activated, the next kill due
	stage           int
	queue           core.QueueID
	epoch           uint64 // the queue's epoch as it struck
	owner, follower core.NodeID
	ownerInc        uint64
	tailNs          int64  // how long the owner reached only the follower
	deafUntil       int64  // the follower's inbound links cut until then
	seq             uint64 // faults begun: an event of an earlier one is stale
}

// staleTailTries is how many times a stale-tail fault looks for a queue
// it can strike, staleTailRetryNs apart, before it gives up.
const (
	staleTailTries   = 10
	staleTailRetryNs = 200e6
)

// staleTailTry strikes stale-tail fault f, or when it cannot now, tries
// again later (tries left).
func (w *World) staleTailTry(f Fault, tries int32) {
	if !w.working {
		return
	}
	if w.staleTailStrike(f) {
		w.stats.Armed[f.Kind]++ // struck at its second kill
		return
	}
	if tries > 1 {
		e := w.schedule1(w.now+staleTailRetryNs, evStaleTail)
		e.q, e.t0 = tries-1, f.AtNs // inc 0: a try, not a stage
	}
}

// staleTailDeafNsMax bounds how long nothing reaches the follower while
// the recovery runs; past it the fault ends unfinished.
const staleTailDeafNsMax = 5e9

// staleTailStrike starts a stale-tail fault: a placed, serving queue of
// the profile's (whose publishers keep many publishes in flight) of
// W >= 3 and more than W members, all running the processes its
// assignment names (not isr: its recovery takes one in-sync witness),
// drawn; its owner reaches only its highest follower for a while.
func (w *World) staleTailStrike(f Fault) bool {
	t := &w.tail
	if t.stage != 0 {
		return false
	}
	if w.prof.InflightMax < 16 {
		return false // a tail of a publish or two: the new epoch outgrows it at once
	}
	var cands []*placedQueue
	for _, id := range w.placedIDs {
		p := w.placedByID[id]
		if p.deleted || p.isr || !w.profileQueue(p.name) || w.checker.Fenced(id) || p.w < 3 || len(p.members) < p.w+1 || len(p.processes) != len(p.members) {
			continue
		}
		ok := slices.Contains(p.members, p.owner)
		for i, n := range p.members {
			b := w.brokers[n-1]
			ok = ok && b.up && !b.paused && w.memberLive(p, i)
		}
		if ok {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return false
	}
	p := cands[w.rTail.Intn(len(cands))]
	follower := core.NodeID(0)
	for _, n := range p.members {
		if n != p.owner && n > follower {
			follower = n
		}
	}
	*t = staleTail{stage: 1, queue: p.id, epoch: p.epoch, owner: p.owner, follower: follower,
		ownerInc: w.brokers[p.owner-1].inc, tailNs: w.rTail.Range(300e6, 1e9), seq: t.seq + 1}
	for _, n := range p.members {
		if n != p.owner && n != follower {
			w.oneWay[p.owner-1][n-1] = max(w.oneWay[p.owner-1][n-1], w.now+t.tailNs+1e6)
		}
	}
	w.schedule1(w.now+t.tailNs, evStaleTail).inc = t.seq
	w.notef("fault %s: q=%d's owner n%d reaches only n%d for %d ms", f, p.id, p.owner, follower, t.tailNs/1e6)
	return true
}

// staleTailStep is an evStaleTail event of fault seq: the fault's next
// stage.
func (w *World) staleTailStep(seq uint64) {
	t := &w.tail
	if seq != t.seq {
		return // an earlier fault's
	}
	p := w.placedByID[t.queue]
	switch t.stage {
	case 1:
		o := w.brokers[t.owner-1]
		if !w.working || !o.up || o.inc != t.ownerInc || p.deleted || p.epoch != t.epoch {
			t.stage = 0
			return
		}
		// The owner stays down until the recovery activated (back
		// sooner, its longer log would be a witness, and the source).
		t.stage, t.deafUntil = 2, w.now+staleTailDeafNsMax
		w.staleTailDeaf(t.follower, t.deafUntil)
		w.notef("fault stale-tail: q=%d's owner n%d killed, nothing reaches n%d", t.queue, t.owner, t.follower)
		w.stopProcess(o, restartNever, true)
		w.schedule1(t.deafUntil, evStaleTail).inc = t.seq
	case 2:
		// The recovery did not activate in time: the fault ends.
		w.staleTailEnd()
	case 3:
		t.stage = 0
		w.staleTailDeaf(t.follower, w.now) // it hears again
		if !w.working || p.deleted || w.checker.Fenced(p.id) || !slices.Contains(p.members, t.follower) {
			return
		}
		// The next recovery's R = E - W + 1 witnesses: the follower's
		// seal and R - 1 others, the lowest ids (the candidate among
		// them); the rest are cut off for a while (isolated: a broker
		// that applies the transition seals unasked).
		var rest []core.NodeID
		for _, n := range p.members {
			if n != p.owner && n != t.follower {
				rest = append(rest, n)
			}
		}
		slices.Sort(rest)
		if keep := len(p.members) - p.w; keep < len(rest) {
			until := w.now + w.rTail.Range(1500e6, 3e9)
			for _, n := range rest[keep:] {
				w.isolated[n-1] = max(w.isolated[n-1], until)
			}
		}
		o := w.brokers[p.owner-1]
		w.notef("fault stale-tail: q=%d epoch=%d's owner n%d killed, n%d heard again", p.id, p.epoch, p.owner, t.follower)
		w.stats.Struck[FaultStaleTail]++
		if o.up {
			w.stopProcess(o, w.rTail.Range(500e6, 2e9), true)
		}
	}
}

// staleTailDeaf cuts every broker's messages to node until untilNs (now:
// ends the cut the fault made).
func (w *World) staleTailDeaf(node core.NodeID, untilNs int64) {
	for i := range w.brokers {
		if i != int(node-1) {
			if untilNs <= w.now {
				if w.oneWay[i][node-1] == w.tail.deafUntil {
					w.oneWay[i][node-1] = w.now
				}
				continue
			}
			w.oneWay[i][node-1] = max(w.oneWay[i][node-1], untilNs)
		}
	}
}

// staleTailActivated follows an activation of queue p: the recovery the
// fault waits for; the first owner restarts, and the new one is killed
// soon.
func (w *World) staleTailActivated(p *placedQueue) {
	t := &w.tail
	if t.stage != 2 || p.id != t.queue {
		return
	}
	if !w.working || !slices.Contains(p.members, t.follower) {
		w.staleTailEnd()
		return
	}
	t.stage = 3
	w.staleTailRestart()
	w.schedule1(w.now+w.rTail.Range(t.tailNs/4, t.tailNs/2), evStaleTail).inc = t.seq
}

// staleTailEnd ends a fault that waits for its recovery: the follower
// hears again, the first owner restarts.
func (w *World) staleTailEnd() {
	t := &w.tail
	t.stage = 0
	w.staleTailDeaf(t.follower, w.now)
	w.staleTailRestart()
}

// staleTailRestart restarts the first owner soon, if it is still down.
func (w *World) staleTailRestart() {
	if o := w.brokers[w.tail.owner-1]; w.working && !o.up && !o.restarting && !o.gone {
		o.restarting = true
		w.schedule1(w.now+w.rTail.Range(1e6, 50e6), evRestart).node = int32(o.id - 1)
	}
}
