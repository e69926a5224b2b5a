package seglog

import (
	"testing"

	"github.com/sluicemq/sluice/sim/memfs"
)

// Damage to a frame a later sync's frames lie beyond is Durable (the
// frame had been synced: acknowledged records are certainly lost); damage
// in the last synced batch, or past the synced end, is not: a crash can
// tear those, and the format cannot tell the two apart. The copy that
// proves it is the first frame's after each completed sync, flagged.
func TestDamageDurableOnlyBeforeALaterSync(t *testing.T) {
	const body = 20
	for _, c := range []struct {
		name    string
		batches []int // records per synced batch
		unsync  int   // records appended after the last sync
		flip    int   // the record whose frame gets a flipped byte
		durable bool
	}{
		{"an earlier batch", []int{10, 10}, 0, 3, true},
		{"the first batch's last record", []int{10, 10}, 0, 9, true},
		{"the last synced batch", []int{10, 10}, 0, 15, false},
		{"the only batch", []int{10}, 0, 4, false},
		{"a synced batch before an unsynced tail", []int{10}, 5, 4, false},
	} {
		fs := memfs.New()
		l, _ := open(t, fs, Options{})
		for _, n := range c.batches {
			appendN(t, l, 1, n, body)
			must(t, l.Sync())
		}
		if c.unsync > 0 {
			appendN(t, l, 1, c.unsync, body)
			must(t, l.Flush())
		}
		slots := l.segs[0].slots
		must(t, l.Close())
		fs.CrashClean()
		name := "q/log/00000000000000000000.seg"
		pos := framesStart(slots) + int64(c.flip)*int64(frameBytesMin+body) + frameHeaderBytes + 3
		must(t, fs.CorruptMask(name, pos, 0x10))
		_, r := open(t, fs, Options{})
		if r.Damage == nil || r.Damage.Offset != uint64(c.flip) {
			t.Fatalf("%s: damage %v, want it at offset %d", c.name, r.Damage, c.flip)
		}
		if r.Damage.Durable != c.durable {
			t.Errorf("%s: durable %v, want %v (%s)", c.name, r.Damage.Durable, c.durable, r.Damage)
		}
	}
}

// A later segment's flagged copy proves it too.
func TestDamageDurableAcrossSegments(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{SlotsPerSegment: 8})
	appendN(t, l, 1, 8, 20) // fills the first segment
	must(t, l.Sync())
	appendN(t, l, 1, 4, 20) // the second segment's, after a sync
	must(t, l.Sync())
	slots := l.segs[0].slots
	must(t, l.Close())
	fs.CrashClean()
	must(t, fs.CorruptMask("q/log/00000000000000000000.seg", framesStart(slots)+int64(frameBytesMin+20)*2+frameHeaderBytes+1, 1))
	_, r := open(t, fs, Options{SlotsPerSegment: 8})
	if r.Damage == nil || !r.Damage.Durable {
		t.Fatalf("damage %v, want it durable: the next segment's first frame was appended after a sync", r.Damage)
	}
}
