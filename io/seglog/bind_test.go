package seglog

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/sim/memfs"
)

// A binding survives a crash and a reset (a reseed keeps the log's
// binding); a log whose directory was emptied reopens without one, and a
// binding that does not check is reported, never trusted.
func TestBindingDurableAndMissedWhenLost(t *testing.T) {
	fs := memfs.New()
	l, r := open(t, fs, Options{})
	if r.Binding != nil || r.BindingDamage != "" {
		t.Fatalf("a new log's binding %q (%q)", r.Binding, r.BindingDamage)
	}
	appendN(t, l, 1, 5, 20)
	must(t, l.Sync())
	must(t, l.WriteBinding([]byte("queue 7, storage 9")))
	fs.CrashClean()
	l, r = open(t, fs, Options{})
	if string(r.Binding) != "queue 7, storage 9" || r.End != 5 {
		t.Fatalf("after a crash: binding %q end %d", r.Binding, r.End)
	}
	must(t, l.Reset(100, nil))
	must(t, l.Close())
	if _, r = open(t, fs, Options{}); string(r.Binding) != "queue 7, storage 9" {
		t.Fatalf("after a reseed: binding %q", r.Binding)
	}
	if err := (&Log{}).WriteBinding(nil); err == nil {
		t.Fatal("an empty binding accepted")
	}

	if !r.BoundBefore {
		t.Fatal("a bound log's marker is not seen")
	}

	// The directory emptied: an empty log, no binding, and its marker
	// says it was bound (its loss is no new log).
	names, err := fs.List("q/log")
	must(t, err)
	for _, n := range names {
		must(t, fs.Remove("q/log/"+n))
	}
	must(t, fs.SyncDir("q/log"))
	l, r = open(t, fs, Options{})
	if r.Binding != nil || r.End != r.Start || !r.BoundBefore {
		t.Fatalf("an emptied directory: binding %q, [%d, %d), bound before %v", r.Binding, r.Start, r.End, r.BoundBefore)
	}
	// Bound again (made whole): its binding back, one marker still.
	must(t, l.WriteBinding([]byte("queue 7, storage 9")))
	must(t, l.Close())
	if _, r = open(t, fs, Options{}); string(r.Binding) != "queue 7, storage 9" || !r.BoundBefore {
		t.Fatalf("bound again: %q %v", r.Binding, r.BoundBefore)
	}
	// A stage's binding is its own; the marker is its log's.
	st, sr, err := OpenStage(fs, "q/log", 3, Options{})
	must(t, err)
	if sr.Binding != nil || !sr.BoundBefore {
		t.Fatalf("a new stage: binding %q, bound before %v", sr.Binding, sr.BoundBefore)
	}
	must(t, st.WriteBinding([]byte("stage")))
	must(t, st.Close())

	// A stage bound and not yet published writes no marker: the live log
	// (never bound) still reopens as new, not as one that lost its
	// directory; the publish writes it, and an open that finds the live
	// generation bound without one (a crash between the two) writes it.
	fs = memfs.New()
	l, _ = open(t, fs, Options{})
	must(t, l.Close())
	st, _, err = OpenStage(fs, "q/log", 2, Options{})
	must(t, err)
	must(t, st.WriteBinding([]byte("staged")))
	fs.CrashClean()
	if _, r = open(t, fs, Options{}); r.BoundBefore || r.Binding != nil {
		t.Fatalf("the live log after a stage's binding: bound before %v, binding %q", r.BoundBefore, r.Binding)
	}
	st, _, err = OpenStage(fs, "q/log", 2, Options{})
	must(t, err)
	must(t, st.WriteBinding([]byte("staged")))
	must(t, st.Publish())
	fs.CrashClean()
	if _, r = open(t, fs, Options{}); !r.BoundBefore || string(r.Binding) != "staged" {
		t.Fatalf("after the publish: bound before %v, binding %q", r.BoundBefore, r.Binding)
	}
	must(t, fs.Remove("q/log.bound"))
	must(t, fs.SyncDir("q"))
	if _, r = open(t, fs, Options{}); !r.BoundBefore {
		t.Fatal("a bound live generation without its marker: not bound before")
	}
	fs.CrashClean()
	if ok, err := boundMarker(fs, "q/log"); err != nil || !ok {
		t.Fatalf("the open did not write the missing marker durably: %v %v", ok, err)
	}
	// A log never bound has no marker.
	if _, r = open(t, memfs.New(), Options{}); r.BoundBefore {
		t.Fatal("a new log says it was bound")
	}

	// A flipped byte.
	fs = memfs.New()
	l, _ = open(t, fs, Options{})
	must(t, l.WriteBinding([]byte("the binding's bytes")))
	must(t, l.Close())
	rewriteFile(t, fs, "q/log/"+bindName, func(b []byte) []byte { b[len(bindMagic)+6] ^= 1; return b })
	if _, r = open(t, fs, Options{}); r.Binding != nil || !strings.Contains(r.BindingDamage, "storage binding checksum") {
		t.Fatalf("a flipped byte: binding %q damage %q", r.Binding, r.BindingDamage)
	}
}
