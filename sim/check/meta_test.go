package check

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/io/meta"
)

func metaFailures(c *Checker) string {
	var s []string
	for _, f := range c.Failures() {
		s = append(s, f.Checker+": "+f.Detail)
	}
	return strings.Join(s, "\n")
}

// The metadata checkers pass a consistent run and fail each planted
// inconsistency.
func TestMetaCheckers(t *testing.T) {
	voters := []core.NodeID{1, 2, 3}
	disk := func(commit uint64, cmds ...string) *meta.State {
		st := &meta.State{HardState: meta.HardState{Term: 1, Commit: commit}}
		for i, c := range cmds {
			st.Entries = append(st.Entries, meta.Entry{Index: uint64(i + 1), Term: 1, Data: []byte(c)})
		}
		return st
	}
	ok := func(c *Checker) {
		for _, n := range voters {
			c.MetaStarted(n)
			c.MetaApplied(1, n, 1, 1, nil)
			c.MetaApplied(2, n, 2, 1, []byte("set a 1"))
		}
	}
	noErrs := make([]error, 3)
	cases := []struct {
		name, want string
		run        func(c *Checker)
	}{
		{"consistent", "", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte("set a 1"))
			c.MetaFinal(9, voters, []*meta.State{disk(2, "", "set a 1"), disk(2, "", "set a 1"), disk(1, "")}, noErrs)
		}},
		{"diverging apply", "meta-one-history", func(c *Checker) {
			ok(c)
			c.MetaStarted(1)
			c.MetaApplied(4, 1, 1, 1, nil)
			c.MetaApplied(4, 1, 2, 2, []byte("set a 2"))
		}},
		{"gap in apply", "meta-one-history", func(c *Checker) {
			c.MetaStarted(1)
			c.MetaApplied(4, 1, 2, 1, nil)
		}},
		{"confirmed but not in history", "meta-committed", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte("set b 1"))
			c.MetaFinal(9, voters, []*meta.State{disk(2, "", "set a 1"), disk(2, "", "set a 1"), disk(2, "", "set a 1")}, noErrs)
		}},
		{"confirmed on a minority of disks", "meta-committed", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte("set a 1"))
			c.MetaFinal(9, voters, []*meta.State{disk(2, "", "set a 1"), disk(1, ""), disk(1, "")}, noErrs)
		}},
		{"a disk's committed entry differs", "meta-one-history", func(c *Checker) {
			ok(c)
			c.MetaFinal(9, voters, []*meta.State{disk(2, "", "set a 1"), disk(2, "", "set a 9"), disk(1, "")}, noErrs)
		}},
		{"a disk does not load", "meta-disk", func(c *Checker) {
			ok(c)
			c.MetaFinal(9, voters, []*meta.State{disk(2, "", "set a 1"), {}, disk(1, "")}, []error{nil, meta.ErrCorrupt, nil})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(nil, func(core.NodeID) Disk { return nil })
			tc.run(c)
			got := metaFailures(c)
			if tc.want == "" && got != "" {
				t.Fatalf("a consistent run failed:\n%s", got)
			}
			if tc.want != "" && !strings.HasPrefix(got, tc.want+":") {
				t.Fatalf("want a %s failure, got:\n%s", tc.want, got)
			}
		})
	}
}
