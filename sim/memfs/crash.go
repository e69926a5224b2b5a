package memfs

import (
	"maps"
	"slices"
)

// Rand is the randomness a crash draws from; the simulator's *prng.Rand
// satisfies it.
type Rand interface {
	Intn(n int) int
}

// Crash simulates a power loss followed by a reboot: every pending write and
// truncation of every file is lost, kept or (writes, per 4 KiB sector) torn,
// and a random prefix of the pending directory operations survives; see the
// package documentation. Every File opened before is dead afterwards. The
// outcome is a function of the FS state and the draws from r.
func (fs *FS) Crash(r Rand) {
	if r == nil {
		panic("memfs: Crash with a nil Rand")
	}
	fs.crash(r)
}

// CrashClean simulates a power loss that keeps exactly the durable state:
// every synced write and truncation and every directory change made durable
// by SyncDir, nothing else.
func (fs *FS) CrashClean() { fs.crash(nil) }

func (fs *FS) crash(r Rand) {
	fs.stats.Crashes++
	// Directory journal: a prefix survives.
	keep := 0
	if r != nil && len(fs.journal) > 0 {
		keep = r.Intn(len(fs.journal) + 1)
	}
	for i := 0; i < keep; i++ {
		fs.journal[i].apply(fs.dur)
	}
	fs.journal = nil

	// File contents, in name order so that r's draws are deterministic.
	dirs := slices.Sorted(maps.Keys(fs.dur))
	seen := map[*node]bool{}
	fs.usage = 0
	cur := make(map[string]map[string]*node, len(fs.dur))
	for _, d := range dirs {
		ents := fs.dur[d]
		names := slices.Sorted(maps.Keys(ents))
		for _, name := range names {
			n := ents[name]
			if n.isDir {
				continue
			}
			if !seen[n] {
				seen[n] = true
				n.crash(r, fs.crashSector)
				n.links = 0
				fs.usage += n.footprint()
			}
			n.links++
		}
		cur[d] = maps.Clone(ents)
	}
	fs.cur = cur
	fs.gen++
}

// crash undoes the pending operations of the file as a power loss might:
// with r nil it undoes all of them. settled is scratch space (nil when r is
// nil).
func (n *node) crash(r Rand, settled map[int64]bool) {
	if len(n.undo) == 0 {
		return
	}
	if settled != nil {
		clear(settled)
	}
	// floor: no size revert may cut below a byte that a crash kept.
	floor := int64(0)
	for i := len(n.undo) - 1; i >= 0; i-- {
		u := &n.undo[i]
		if u.trunc {
			if r != nil && r.Intn(2) == 0 {
				break // kept, and with it every earlier operation
			}
			if u.oldSize > u.off { // undo a shrink: the cut bytes come back
				n.setSize(max(int64(len(n.data)), u.oldSize))
				for lo := u.off; lo < u.oldSize; {
					s := lo / SectorBytes
					hi := min(u.oldSize, (s+1)*SectorBytes)
					if !settled[s] {
						copy(n.data[lo:hi], n.undoBuf[u.saved+lo-u.off:])
					}
					lo = hi
				}
			} else { // undo a growth
				n.setSize(max(u.oldSize, floor))
			}
			continue
		}
		end := u.off + u.n
		for lo := u.off; lo < end; {
			s := lo / SectorBytes
			hi := min(end, (s+1)*SectorBytes)
			if settled[s] {
				lo = hi
				continue
			}
			choice := 0
			if r != nil {
				choice = r.Intn(3)
			}
			switch {
			case choice == 0: // lost
				n.restore(u, lo, hi)
			case choice == 1 || hi-lo < 2: // kept
				settled[s] = true
				floor = max(floor, hi)
			default: // torn: a prefix or a suffix survives
				t := lo + 1 + int64(r.Intn(int(hi-lo-1)))
				if r.Intn(2) == 0 {
					n.restore(u, t, hi)
					floor = max(floor, t)
				} else {
					n.restore(u, lo, t)
					floor = max(floor, hi)
				}
				settled[s] = true
			}
			lo = hi
		}
		if end > u.oldSize { // the write grew the file
			if r == nil || r.Intn(2) == 0 {
				n.setSize(max(u.oldSize, floor))
			} else {
				floor = max(floor, end) // the size survives, maybe over zeros
			}
		}
	}
	n.undo = n.undo[:0]
	n.undoBuf = n.undoBuf[:0]
}

// restore puts back the contents [lo, hi) had before the write u.
func (n *node) restore(u *undoOp, lo, hi int64) {
	savedEnd := u.off + u.savedN
	if lo < savedEnd {
		m := min(hi, savedEnd)
		copy(n.data[lo:m], n.undoBuf[u.saved+lo-u.off:])
		lo = m
	}
	if lo < hi {
		clear(n.data[lo:hi])
	}
}
