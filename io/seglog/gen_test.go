package seglog

import (
	"errors"
	"testing"

	"github.com/sluicemq/sluice/sim/memfs"
)

// A stage is a log apart: writing it leaves the live log alone, and a
// crash before Publish leaves the live log the log. Once Publish returns,
// the stage is the log, across a crash, with its own seal receipt; the
// earlier generation stays on the disk untouched.
func TestStagePublishedAtomically(t *testing.T) {
	fs := memfs.New()
	live, _ := open(t, fs, Options{})
	old := appendN(t, live, 1, 4, 16)
	must(t, live.Sync())
	must(t, live.WriteSeal([]byte("old seal")))

	st, rec, err := OpenStage(fs, "q/log", 7, Options{})
	if err != nil || rec.End != 0 || rec.Generation != 7 {
		t.Fatalf("a new stage: %+v, %v", rec, err)
	}
	staged := appendN(t, st, 7, 6, 16)
	must(t, st.Sync())
	must(t, st.WriteSeal([]byte("new seal")))
	fs.CrashClean()
	l, r := open(t, fs, Options{})
	if r.Generation != 0 || r.End != 4 || string(r.Seal) != "old seal" {
		t.Fatalf("a crash before publish: generation %d end %d seal %q", r.Generation, r.End, r.Seal)
	}
	sameRecords(t, readAll(t, l), old)
	must(t, l.Close())

	// The stage resumes from what it holds durably.
	st, rec, err = OpenStage(fs, "q/log", 7, Options{})
	if err != nil || rec.End != 6 {
		t.Fatalf("the stage reopened: end %d, %v", rec.End, err)
	}
	must(t, st.Publish())
	fs.CrashClean()
	l, r = open(t, fs, Options{})
	if r.Generation != 7 || r.End != 6 || string(r.Seal) != "new seal" || l.Generation() != 7 {
		t.Fatalf("after publish and a crash: generation %d end %d seal %q", r.Generation, r.End, r.Seal)
	}
	sameRecords(t, readAll(t, l), staged)
	must(t, l.Close())

	// The first generation is still there, as it was.
	g0, r0, err := openDir(fs, "q/log", Options{})
	if err != nil || r0.End != 4 || string(r0.Seal) != "old seal" {
		t.Fatalf("generation 0 after publish: end %d seal %q, %v", r0.End, r0.Seal, err)
	}
	sameRecords(t, readAll(t, g0), old)

	// A live log is no stage.
	if err := g0.Publish(); err == nil {
		t.Fatal("publish of the first generation succeeded")
	}
}

// A pointer that does not check fails Open: the log is not opened on a
// guess at its generation.
func TestPointerDamageFailsOpen(t *testing.T) {
	for _, off := range []int64{0, int64(len(genMagic)), int64(genBytes - 1)} {
		fs := memfs.New()
		open(t, fs, Options{})
		st, _, err := OpenStage(fs, "q/log", 3, Options{})
		must(t, err)
		must(t, st.Publish())
		must(t, fs.Corrupt("q/log/"+genPointerName, off))
		if _, _, err := Open(fs, "q/log", Options{}); !errors.Is(err, ErrPointer) {
			t.Fatalf("a pointer flipped at byte %d: Open says %v", off, err)
		}
	}
}
