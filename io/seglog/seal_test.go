package seglog

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/vfs"
	"github.com/sluicemq/sluice/sim/memfs"
)

// A seal receipt is durable once WriteSeal returns, survives a crash and a
// reopen beside the records it leaves alone, and a newer one replaces it.
func TestSealReceiptDurable(t *testing.T) {
	fs := memfs.New()
	_, want := sealedLog(t, fs, 5, "first seal")
	fs.CrashClean()
	l, r := open(t, fs, Options{})
	if string(r.Seal) != "first seal" || r.SealDamage != "" || r.End != 5 {
		t.Fatalf("after a crash: seal %q damage %q end %d", r.Seal, r.SealDamage, r.End)
	}
	sameRecords(t, readAll(t, l), want)
	must(t, l.WriteSeal([]byte("second")))
	must(t, l.Close())
	if _, r = open(t, fs, Options{}); string(r.Seal) != "second" {
		t.Fatalf("the newer receipt: %q", r.Seal)
	}
	// A log without one has none.
	if _, r = open(t, memfs.New(), Options{}); r.Seal != nil || r.SealDamage != "" {
		t.Fatalf("a new log's receipt %q (%q)", r.Seal, r.SealDamage)
	}
}

// A receipt that does not check is reported, never dropped or trusted.
func TestSealReceiptDamageReported(t *testing.T) {
	for what, change := range map[string]func(b []byte) []byte{
		"a flipped payload byte": func(b []byte) []byte { b[len(sealMagic)+5] ^= 1; return b },
		"a wrong magic":          func(b []byte) []byte { b[0] = 'X'; return b },
		"cut short":              func(b []byte) []byte { return b[:len(b)-3] },
		"a trailing byte":        func(b []byte) []byte { return append(b, 0) },
	} {
		fs := memfs.New()
		l, _ := open(t, fs, Options{})
		must(t, l.WriteSeal([]byte("the seal's bytes")))
		must(t, l.Close())
		rewriteFile(t, fs, "q/log/"+sealName, change)
		_, r := open(t, fs, Options{})
		if r.Seal != nil || !strings.Contains(r.SealDamage, "seal receipt") {
			t.Fatalf("%s: seal %q damage %q", what, r.Seal, r.SealDamage)
		}
	}
}

// sealedLog opens a new log on fs, appends n synced records of epoch 1 and
// stores receipt as its seal receipt.
func sealedLog(t *testing.T, fs *memfs.FS, n int, receipt string) (*Log, []record.Record) {
	t.Helper()
	l, _ := open(t, fs, Options{})
	recs := appendN(t, l, 1, n, 20)
	must(t, l.Sync())
	must(t, l.WriteSeal([]byte(receipt)))
	return l, recs
}

// A stage is a log apart: writing it leaves the live log alone, and a
// crash before Publish leaves the live log the log. Once Publish returns,
// the stage is the log, across a crash, with its own seal receipt; the
// earlier generation stays on the disk untouched.
func TestStagePublishedAtomically(t *testing.T) {
	fs := memfs.New()
	_, old := sealedLog(t, fs, 4, "old seal")

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

// rewriteFile replaces file name on fs by change of its contents, durably.
func rewriteFile(t *testing.T, fs *memfs.FS, name string, change func([]byte) []byte) {
	t.Helper()
	f, err := fs.Open(name)
	must(t, err)
	size, _ := f.Size()
	b := make([]byte, size)
	_, err = f.ReadAt(b, 0)
	must(t, err)
	f.Close()
	g, err := fs.Create(name)
	must(t, err)
	_, err = g.WriteAt(change(bytes.Clone(b)), 0)
	must(t, err)
	must(t, g.Sync())
	g.Close()
}

// A publish keeps the generation it replaces and removes the ones before
// it, and stages older than the one it publishes: a log holds at most two
// generations however many recoveries installed one. A removal that fails
// fails the publish before its pointer: the live log is as it was, and the
// next publish removes what is left.
func TestPublishReclaimsOlderGenerations(t *testing.T) {
	fs := memfs.New()
	_, _ = sealedLog(t, fs, 4, "generation 0")
	publish := func(gen uint64, n int) []record.Record {
		t.Helper()
		st, _, err := OpenStage(fs, "q/log", gen, Options{})
		must(t, err)
		recs := appendN(t, st, gen, n, 16)
		must(t, st.Sync())
		must(t, st.Publish())
		must(t, st.Close())
		return recs
	}
	files := func(dir string) []string {
		t.Helper()
		names, err := fs.DurableList(dir)
		must(t, err)
		return names
	}
	gen5 := publish(5, 3)
	if g0 := files("q/log"); !slices.ContainsFunc(g0, func(n string) bool { return strings.HasSuffix(n, segSuffix) }) {
		t.Fatalf("generation 0, replaced by 5, was removed: %v", g0)
	}
	abandoned, _, err := OpenStage(fs, "q/log", 7, Options{})
	must(t, err)
	appendN(t, abandoned, 7, 2, 16)
	must(t, abandoned.Sync())
	must(t, abandoned.Close())

	// A removal fails part way: nothing is published.
	fs.SetInjector(memfs.InjectorFunc(func(a memfs.Access) error {
		if a.Op == memfs.OpRemove && strings.HasPrefix(a.Name, "q/log/gen-7/") {
			return vfs.ErrIO
		}
		return nil
	}))
	st, _, err := OpenStage(fs, "q/log", 9, Options{})
	must(t, err)
	gen9 := appendN(t, st, 9, 5, 16)
	must(t, st.Sync())
	if err := st.Publish(); err == nil {
		t.Fatal("a publish whose removal failed succeeded")
	}
	_ = st.Close() // (the log failed: its Close reports it)
	fs.SetInjector(nil)
	fs.CrashClean()
	l, r := open(t, fs, Options{})
	if r.Generation != 5 {
		t.Fatalf("after a failed publish the live generation is %d, want 5", r.Generation)
	}
	sameRecords(t, readAll(t, l), gen5)
	must(t, l.Close())

	publish(9, 0) // the stage resumed: its 5 records, durable before
	l, r = open(t, fs, Options{})
	if r.Generation != 9 {
		t.Fatalf("the live generation is %d, want 9", r.Generation)
	}
	sameRecords(t, readAll(t, l), gen9)
	must(t, l.Close())
	gen11 := publish(11, 2)
	for dir, want := range map[string]int{"q/log/gen-7": 0, "q/log/gen-5": 0} {
		if got := len(files(dir)); got != want {
			t.Fatalf("%s holds %d files after generations 9 and 11 were published: %v", dir, got, files(dir))
		}
	}
	if root := files("q/log"); slices.ContainsFunc(root, func(n string) bool { return strings.HasSuffix(n, segSuffix) || n == sealName }) {
		t.Fatalf("generation 0's files are still there: %v", root)
	}
	if len(files("q/log/gen-9")) == 0 {
		t.Fatal("generation 9, replaced by 11, was removed")
	}
	l, r = open(t, fs, Options{})
	if r.Generation != 11 {
		t.Fatalf("the live generation is %d, want 11", r.Generation)
	}
	sameRecords(t, readAll(t, l), gen11)
}
