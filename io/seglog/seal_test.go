package seglog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/sim/memfs"
)

// A seal receipt is durable once WriteSeal returns, survives a crash and a
// reopen beside the records it leaves alone, and a newer one replaces it.
func TestSealReceiptDurable(t *testing.T) {
	fs := memfs.New()
	l, _ := open(t, fs, Options{})
	want := appendN(t, l, 1, 5, 20)
	must(t, l.Sync())
	must(t, l.WriteSeal([]byte("first seal")))
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
		f, err := fs.Open("q/log/" + sealName)
		must(t, err)
		size, _ := f.Size()
		b := make([]byte, size)
		_, err = f.ReadAt(b, 0)
		must(t, err)
		f.Close()
		g, err := fs.Create("q/log/" + sealName)
		must(t, err)
		_, err = g.WriteAt(change(bytes.Clone(b)), 0)
		must(t, err)
		must(t, g.Sync())
		g.Close()
		_, r := open(t, fs, Options{})
		if r.Seal != nil || !strings.Contains(r.SealDamage, "seal receipt") {
			t.Fatalf("%s: seal %q damage %q", what, r.Seal, r.SealDamage)
		}
	}
}
