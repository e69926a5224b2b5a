package seam

import (
	"strings"
	"testing"
)

// Every set-aside reason has a distinct stable name that parses back, and
// a set-aside mark prints it in the effect's one-line form.
func TestAsideReasonNames(t *testing.T) {
	seen := map[string]AsideReason{}
	for r := AsideReason(1); r <= AsideMax; r++ {
		name := r.String()
		if name == "reason?" || strings.ContainsAny(name, " _=\"") {
			t.Fatalf("reason %d: name %q, want a kebab name", r, name)
		}
		if o, dup := seen[name]; dup {
			t.Fatalf("reasons %d and %d share the name %q", o, r, name)
		}
		seen[name] = r
		if back, ok := ParseAsideReason(name); !ok || back != r {
			t.Fatalf("%q parses to %d (%v), want %d", name, back, ok, r)
		}
	}
	if _, ok := ParseAsideReason("reason?"); ok {
		t.Fatal("parsed the unknown reason's placeholder")
	}
	var o Out
	o.SetAside(7, 3, AsideInspectBytes, "blocked: a budget")
	if got, want := o.Effects[0].String(), "recovery q=7 stage=set-aside epoch=3 aside=inspect-bytes blocked: a budget"; got != want {
		t.Fatalf("set-aside mark: %q, want %q", got, want)
	}
	o.Recovery(7, StageDetect, 3, nil, "candidate")
	if got := o.Effects[1].String(); strings.Contains(got, "aside=") {
		t.Fatalf("a detect mark prints a set-aside reason: %q", got)
	}
}
