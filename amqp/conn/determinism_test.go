package conn

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/detguard"
)

// TestDeterminismRules runs the determinism guard's checks on this package,
// which its discovery does not cover (it guards core/, io/... and sim/):
// no clock, randomness, goroutines, channels, select or map iteration here.
func TestDeterminismRules(t *testing.T) {
	vs, err := detguard.Check(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("%s", v)
	}
}

// TestSameInputsSameEffects drives two machines with the same inputs (the
// fuzz seeds, with the in-test broker) and compares their traces, line for
// line.
func TestSameInputsSameEffects(t *testing.T) {
	for i, seed := range fuzzSeeds() {
		var a, b strings.Builder
		runFuzz(t, seed, &a)
		runFuzz(t, seed, &b)
		if a.String() != b.String() {
			t.Fatalf("seed %d: two runs differ:\n%s\n---\n%s", i, a.String(), b.String())
		}
		if i == 2 && !strings.Contains(a.String(), "basic.ack") {
			t.Fatalf("seed 2 should reach a confirm:\n%s", a.String())
		}
	}
}
