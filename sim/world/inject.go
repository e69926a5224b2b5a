package world

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/io/seglog"

	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/memfs"
)

// diskAccess is each broker's disk's fault hook, consulted before every
// file-system operation: the one-shot sync and read failures, and the
// segment rolls the coverage table counts.
func (w *World) diskAccess(b *broker, a memfs.Access) error {
	switch a.Op {
	case memfs.OpSync:
		if b.failSync {
			b.failSync = false
			w.notef("struck sync-fail n%d %s", b.id, a.Name)
			w.stats.Struck[FaultSyncFail]++
			w.mark(MarkSyncFailDrop)
			return fmt.Errorf("injected sync failure on %s: %w", a.Name, vfs.ErrIO)
		}
	case memfs.OpRead:
		if b.failRead && b.up {
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
