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
	fs.crash(r, false)
}

// CrashClean simulates a power loss that keeps exactly the durable state:
// every synced write and truncation and every directory change made durable
// by SyncDir, nothing else.
func (fs *FS) CrashClean() { fs.crash(nil, false) }

// CrashTearSynced simulates a power loss like Crash, except that one
// pending write that shares a 4 KiB sector with already-synced bytes (bytes
// below the file's durable size that the write does not cover) is torn in
// that sector, and those synced bytes are overwritten with random non-zero
// garbage: a torn sector reads back as garbage, never as a clean run of
// zeros. The write's own bytes in the sector are split at a random point:
// one side holds what the crash left there, the other garbage. r picks the
// write and sector (among the candidates, in the order of the durable
// names, then of the writes, first sector before last), then the crash
// proceeds as Crash, then the garbage is drawn. It returns how many synced
// bytes it damaged; 0 when no pending write shares a sector with synced
// bytes, and then it is an ordinary Crash.
func (fs *FS) CrashTearSynced(r Rand) (damagedBytes int64) {
	if r == nil {
		panic("memfs: CrashTearSynced with a nil Rand")
	}
	return fs.crash(r, true)
}

// tearVictim is the write and sector CrashTearSynced damages.
type tearVictim struct {
	n       *node
	w       undoOp // the pending write
	sector  int64
	durSize int64 // the file's durable size before the crash
}

func (fs *FS) crash(r Rand, tear bool) (damagedBytes int64) {
	fs.stats.Crashes++
	// Directory journal: a prefix survives.
	keep := 0
	if r != nil && len(fs.journal) > 0 {
		keep = r.Intn(len(fs.journal) + 1)
	}
	for i := 0; i < keep; i++ {
		fs.apply(&fs.journal[i])
	}
	fs.journal = nil // its references are dropped by crashSweep
	fs.durGen++      // the kept prefix changed the durable namespace

	// The files that survive, in name order so that r's draws are
	// deterministic; a file with several names once.
	var files []*node
	seen := map[*node]bool{}
	dirs := slices.Sorted(maps.Keys(fs.dur))
	for _, d := range dirs {
		ents := fs.dur[d]
		for _, name := range slices.Sorted(maps.Keys(ents)) {
			if n := ents[name]; !n.isDir && !seen[n] {
				n.c.mustLive() // a durable name refers to it
				seen[n] = true
				files = append(files, n)
			}
		}
	}
	var victim *tearVictim
	if tear {
		victim = pickTearVictim(files, r)
	}
	fs.usage = 0
	stamp := fs.nextStamp()
	for _, n := range files {
		if r != nil {
			n.forgetSyncedTouchedByPending()
		}
		n.notePending(stamp)
		n.crash(r, fs.crashSector)
		if victim != nil && victim.n == n {
			damagedBytes = n.tearSector(victim, r)
			n.noteChange(stamp, victim.sector*SectorBytes, (victim.sector+1)*SectorBytes)
		}
		n.links = 0
		fs.usage += n.footprint()
	}
	cur := make(map[string]map[string]*node, len(fs.dur))
	for _, d := range dirs {
		ents := fs.dur[d]
		for _, name := range slices.Sorted(maps.Keys(ents)) {
			if n := ents[name]; !n.isDir {
				n.links++
			}
		}
		cur[d] = maps.Clone(ents)
	}
	fs.cur = cur
	fs.gen++
	fs.crashSweep() // every handle is dead: free what has no durable name
	return damagedBytes
}

// pickTearVictim lists the (pending write, sector) pairs where the sector
// holds synced bytes outside the write, and picks one with r (nil if none).
func pickTearVictim(files []*node, r Rand) *tearVictim {
	var cands []tearVictim
	for _, n := range files {
		durSize := n.durableSize()
		for _, u := range n.undo {
			if u.trunc || u.n == 0 {
				continue
			}
			first, last := u.off/SectorBytes, (u.off+u.n-1)/SectorBytes
			if min(u.off, durSize) > first*SectorBytes { // synced bytes before the write
				cands = append(cands, tearVictim{n: n, w: u, sector: first, durSize: durSize})
			}
			if min((last+1)*SectorBytes, durSize) > u.off+u.n && (last != first || min(u.off, durSize) <= first*SectorBytes) {
				cands = append(cands, tearVictim{n: n, w: u, sector: last, durSize: durSize})
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	v := cands[r.Intn(len(cands))]
	return &v
}

// tearSector overwrites, after the file's crash, the synced bytes of the
// victim's sector outside its write with non-zero garbage, and one side of
// a random split of the write's own bytes there; it returns the synced
// bytes damaged.
func (n *node) tearSector(v *tearVictim, r Rand) (damaged int64) {
	size := n.c.size
	lo, hi := v.sector*SectorBytes, min((v.sector+1)*SectorBytes, size)
	wLo, wHi := max(v.w.off, lo), min(v.w.off+v.w.n, hi)
	garbage := func(a, b int64) {
		for i := a; i < b; i++ {
			*n.c.bytePtr(i) = byte(1 + r.Intn(255))
		}
	}
	// Synced bytes outside the write (the durable size never exceeds the
	// size a crash leaves).
	syncedHi := min(hi, v.durSize)
	garbage(lo, min(wLo, syncedHi))
	if wHi < syncedHi {
		garbage(max(wHi, lo), syncedHi)
	}
	damaged = max(min(wLo, syncedHi)-lo, 0) + max(syncedHi-max(wHi, lo), 0)
	// The write's bytes: torn at t, garbage on one side.
	if wLo < wHi {
		t := wLo + int64(r.Intn(int(wHi-wLo)+1))
		if r.Intn(2) == 0 {
			garbage(wLo, t)
		} else {
			garbage(t, wHi)
		}
	}
	n.forgetSyncedTouching(func(a, b int64) bool { return a < hi && lo < b })
	return damaged
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
				n.setSize(max(n.c.size, u.oldSize))
				for lo := u.off; lo < u.oldSize; {
					s := lo / SectorBytes
					hi := min(u.oldSize, (s+1)*SectorBytes)
					if !settled[s] {
						n.putOld(savedOld(u, n.undoBuf, lo, hi), lo, hi)
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

// putOld puts old contents back at [lo, hi): old, or zeros when nil.
func (n *node) putOld(old []byte, lo, hi int64) {
	if old == nil {
		n.c.zero(lo, hi)
		return
	}
	n.c.write(old, lo)
}

// restore puts back the contents [lo, hi) had before the write u.
func (n *node) restore(u *undoOp, lo, hi int64) {
	savedEnd := u.off + u.savedN
	if lo < savedEnd {
		m := min(hi, savedEnd)
		n.putOld(savedOld(u, n.undoBuf, lo, m), lo, m)
		lo = m
	}
	if lo < hi {
		n.c.zero(lo, hi)
	}
}
