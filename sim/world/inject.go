package world

import (
	"fmt"
	"strings"

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
			w.stats.Struck[FaultSyncFail]++
			return fmt.Errorf("injected sync failure on %s: %w", a.Name, vfs.ErrIO)
		}
	case memfs.OpRead:
		if b.failRead && b.up {
			b.failRead = false
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
	if f.Kind == FaultSpike { // the one kind that names no broker
		w.spikeEnd = w.now + f.DurNs
		w.notef("fault %s", f)
		w.stats.Armed[f.Kind]++
		w.stats.Struck[f.Kind]++
		return
	}
	b := w.brokers[f.Node-1]
	struck := true // most kinds strike as they are armed
	switch f.Kind {
	case FaultCrash:
		if !b.up {
			return
		}
		w.notef("fault %s", f)
		w.crash(b, f.DurNs)
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

// corrupt flips one bit of a durable byte in one of b's logs, when the fault
// budget allows (damageAllowed).
func (w *World) corrupt(b *broker, f Fault) bool {
	for _, q := range b.queues {
		if !w.damageAllowed(b, q) {
			continue
		}
		dir := logDir(q.Queue)
		names, err := b.fs.List(dir)
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
		w.checker.Injected(b.id, q.Queue)
		w.checker.DiskChanged(b.id)
		if q.Owner == b.id {
			w.mark(MarkCorruptOwner)
		}
		w.notef("fault %s: %s byte %d flipped", f, name, off)
		return true
	}
	return false
}
