package check

import (
	"testing"

	"github.com/sluicemq/sluice/core/record"
)

// TestIdentTableIsExact: refs of one offset are equal iff their
// identities are, every ref gives back its identity, and an identity that
// is not intact interns as none; random identities at a few offsets,
// checked against the identities themselves.
func TestIdentTableIsExact(t *testing.T) {
	var tab identTable
	type held struct {
		o   uint64
		id  Ident
		ref identRef
	}
	var all []held
	x := uint64(7)
	for range 5000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		o := x % 8
		id := identOf(1+x>>60, record.Kind(1+x>>62), []byte{byte(x >> 8), 0, 0, 0, 0, 0, 0, 0, byte(x >> 20 & 3)})
		all = append(all, held{o, id, tab.ref(o, id)})
	}
	for i, a := range all {
		if got := tab.id(a.o, a.ref); got != a.id || tab.find(a.o, a.id) != a.ref {
			t.Fatalf("ref %d at o=%d gives %v, interned %v", a.ref, a.o, got, a.id)
		}
		for _, b := range all[i+1 : min(len(all), i+200)] {
			if a.o == b.o && (a.ref == b.ref) != (a.id == b.id) {
				t.Fatalf("o=%d: refs %d, %d for %v, %v", a.o, a.ref, b.ref, a.id, b.id)
			}
		}
	}
	if tab.ref(3, Ident{}) != 0 || tab.id(3, 0).Intact() || tab.find(99, all[0].id) != 0 {
		t.Fatal("a missing identity interned as a record")
	}
	if len(tab.more) == 0 {
		t.Fatal("no offset held a second identity: the test proves nothing")
	}
}
