package sweep

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/sim/world"
)

func TestCoverageMinimums(t *testing.T) {
	m, err := ParseMinimums("owner-crash-inflight=2, struck:crash=1")
	if err != nil || m["owner-crash-inflight"] != 2 || m["struck:crash"] != 1 {
		t.Fatalf("parse: %v %v", m, err)
	}
	for _, bad := range []string{"owner-crash-inflight=0", "nope=3", "owner-crash-inflight", "struck:nope=1", ""} {
		if _, err := ParseMinimums(bad); err == nil {
			t.Errorf("%q: want an error (a minimum of 0 is not a minimum; rows must exist)", bad)
		}
	}
	var c Coverage
	var r world.Result
	r.Stats.Coverage[world.MarkOwnerCrashInFlight] = 3
	r.Stats.Struck[world.FaultCrash] = 1
	c.Add(r)
	short := c.Below(m)
	if len(short) != 1 || !strings.Contains(short[0], "owner-crash-inflight reached in 1 seeds, minimum 2") {
		t.Fatalf("below: %v", short)
	}
	c.Add(r)
	if short := c.Below(m); len(short) != 0 {
		t.Fatalf("a met minimum reported: %v", short)
	}
	if !strings.Contains(c.Table(), "owner-crash-inflight          2") {
		t.Fatalf("table:\n%s", c.Table())
	}
}
