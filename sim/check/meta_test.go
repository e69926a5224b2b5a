package check

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/io/meta"
)

func enc(c metadata.Command) string { return string(c.Encode(nil)) }

var (
	setA1 = enc(metadata.Command{Kind: metadata.SetSetting, Key: "liveness.expiry_ms", Value: 1000})
	setA2 = enc(metadata.Command{Kind: metadata.SetSetting, Key: "liveness.expiry_ms", Value: 2000})
	setB1 = enc(metadata.Command{Kind: metadata.SetSetting, Key: "replica.lag_time_max_ms", Value: 1000})
	declQ = enc(metadata.Command{Kind: metadata.DeclareQueue, Queue: "q", Replicas: 3, Policy: core.MajorityDurable, MinInsync: 2})
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
			c.MetaApplied(1, n, 1, 1, nil, "")
			c.MetaApplied(2, n, 2, 1, []byte(setA1), "")
		}
	}
	noErrs := make([]error, 3)
	cases := []struct {
		name, want string
		run        func(c *Checker)
	}{
		{"consistent", "", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte(setA1), "")
			c.MetaFinal(9, voters, voters, []*meta.State{disk(2, "", setA1), disk(2, "", setA1), disk(1, "")}, noErrs)
		}},
		{"committed on a voter, a learner behind", "", func(c *Checker) {
			// One voter (n1) and a learner (n2): the entry the voter alone
			// committed is durable on a majority of the voters.
			c.MetaStarted(1)
			c.MetaApplied(1, 1, 1, 1, nil, "")
			c.MetaApplied(2, 1, 2, 1, []byte(setA1), "")
			c.MetaConfirmed(3, 2, []byte(setA1), "")
			c.MetaFinal(9, []core.NodeID{1}, []core.NodeID{1, 2}, []*meta.State{disk(2, "", setA1), disk(1, "")}, noErrs[:2])
		}},
		{"confirmed on one voter of three and a learner", "meta-committed", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte(setA1), "")
			c.MetaFinal(9, voters, []core.NodeID{1, 2, 3, 4}, []*meta.State{disk(2, "", setA1), disk(1, ""), disk(1, ""), disk(2, "", setA1)},
				make([]error, 4))
		}},
		{"diverging apply", "meta-one-history", func(c *Checker) {
			ok(c)
			c.MetaStarted(1)
			c.MetaApplied(4, 1, 1, 1, nil, "")
			c.MetaApplied(4, 1, 2, 2, []byte(setA2), "")
		}},
		{"gap in apply", "meta-one-history", func(c *Checker) {
			c.MetaStarted(1)
			c.MetaApplied(4, 1, 2, 1, nil, "")
		}},
		{"confirmed but not in history", "meta-committed", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte(setB1), "")
			c.MetaFinal(9, voters, voters, []*meta.State{disk(2, "", setA1), disk(2, "", setA1), disk(2, "", setA1)}, noErrs)
		}},
		{"confirmed on a minority of disks", "meta-committed", func(c *Checker) {
			ok(c)
			c.MetaConfirmed(3, 2, []byte(setA1), "")
			c.MetaFinal(9, voters, voters, []*meta.State{disk(2, "", setA1), disk(1, ""), disk(1, "")}, noErrs)
		}},
		{"a disk's committed entry differs", "meta-one-history", func(c *Checker) {
			ok(c)
			c.MetaFinal(9, voters, voters, []*meta.State{disk(2, "", setA1), disk(2, "", setB1), disk(1, "")}, noErrs)
		}},
		{"declaration confirmed with another incarnation", "meta-catalogue", func(c *Checker) {
			ok(c)
			c.MetaApplied(5, 1, 3, 1, []byte(declQ), "")
			c.MetaApplied(5, 1, 4, 1, []byte(declQ), "")
			c.MetaConfirmed(5, 4, []byte(declQ), "declared \"q\" id=1 incarnation=4")
		}},
		{"a conflict-free command answered refused", "meta-catalogue", func(c *Checker) {
			ok(c)
			c.MetaApplied(5, 1, 3, 1, []byte(declQ), "")
			c.MetaRejected(5, 3, []byte(declQ), "refused: exists")
		}},
		{"a placement outside the live set", "meta-placement", func(c *Checker) {
			ok(c)
			reg := metadata.Command{Kind: metadata.RegisterBroker, Node: 1, Process: 1, Storage: 1}
			c.MetaApplied(5, 1, 3, 1, []byte(enc(reg)), "")
			c.MetaApplied(5, 1, 4, 1, []byte(declQ), "")
			var ms metadata.Members
			ms.N = 3
			ms.M[0] = metadata.Member{Node: 1, Process: 1, Storage: 1}
			ms.M[1] = metadata.Member{Node: 2, Process: 1, Storage: 1} // never registered
			ms.M[2] = metadata.Member{Node: 3, Process: 1, Storage: 1}
			as := metadata.Command{Kind: metadata.Assign, Queue: "q", Incarnation: 4, Epoch: 1, Owner: 1, Members: ms}
			c.MetaApplied(5, 1, 5, 1, []byte(enc(as)), "placed")
		}},
		{"an activation without a committed plan", "meta-plan", func(c *Checker) {
			planned(c, false)
		}},
		{"an activation of a planned transition", "", func(c *Checker) {
			planned(c, true)
		}},
		{"the state machine accepts what the model refuses", "meta-model", func(c *Checker) {
			ok(c)
			del := metadata.Command{Kind: metadata.DeleteQueue, Queue: "q", Incarnation: 9}
			c.MetaApplied(5, 1, 3, 1, []byte(enc(del)), "deleted")
		}},
		{"a disk does not load", "meta-disk", func(c *Checker) {
			ok(c)
			c.MetaFinal(9, voters, voters, []*meta.State{disk(2, "", setA1), {}, disk(1, "")}, []error{nil, meta.ErrCorrupt, nil})
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

// The live-set check compares the applied registrations and losses with
// the world's brokers.
func TestMetaLiveSet(t *testing.T) {
	c := New(nil, func(core.NodeID) Disk { return nil })
	c.MetaStarted(1)
	reg := enc(metadata.Command{Kind: metadata.RegisterBroker, Node: 2, Process: 3, Storage: 7})
	c.MetaApplied(1, 1, 1, 1, []byte(reg), "")
	truth := []BrokerTruth{{Node: 2, Process: 3, Storage: 7}}
	if ok, why := c.MetaLiveSet(truth); !ok {
		t.Fatalf("a registered broker is not live: %s", why)
	}
	if ok, _ := c.MetaLiveSet([]BrokerTruth{{Node: 2, Process: 4, Storage: 7}}); ok {
		t.Fatal("a broker running a newer process than registered passed")
	}
	if ok, _ := c.MetaLiveSet([]BrokerTruth{{Node: 2, Storage: 7}}); ok {
		t.Fatal("a broker down but live in the metadata passed")
	}
	// A stale loss (an older process) changes nothing; the right one does.
	c.MetaApplied(2, 1, 2, 1, []byte(enc(metadata.Command{Kind: metadata.BrokerDown, Node: 2, Process: 2})), "=> refused: stale")
	if ok, _ := c.MetaLiveSet(truth); !ok {
		t.Fatal("a stale loss took the broker out of the live set")
	}
	c.MetaApplied(3, 1, 3, 1, []byte(enc(metadata.Command{Kind: metadata.BrokerDown, Node: 2, Process: 3})), "")
	if ok, _ := c.MetaLiveSet(truth); ok {
		t.Fatal("a broker lost in the metadata passed as live")
	}
	c.MetaLiveSetFinal(4, truth)
	if got := metaFailures(c); !strings.HasPrefix(got, "meta-live-set:") {
		t.Fatalf("want a meta-live-set failure, got %q", got)
	}
}

// planned applies a queue placed on n1..n3, n1's loss, its transition and,
// if plan, a plan from n2; then the activation.
func planned(c *Checker, plan bool) {
	c.MetaStarted(1)
	index := uint64(0)
	apply := func(cmd metadata.Command, result string) {
		index++
		c.MetaApplied(5, 1, index, 1, []byte(enc(cmd)), result)
	}
	for n := core.NodeID(1); n <= 3; n++ {
		apply(metadata.Command{Kind: metadata.RegisterBroker, Node: n, Process: 1, Storage: uint64(n)}, "")
	}
	apply(metadata.Command{Kind: metadata.DeclareQueue, Queue: "q", Replicas: 3, Policy: core.MajorityDurable, MinInsync: 2}, "")
	var ms metadata.Members
	ms.N = 3
	for i := range 3 {
		ms.M[i] = metadata.Member{Node: core.NodeID(i + 1), Process: 1, Storage: uint64(i + 1)}
	}
	apply(metadata.Command{Kind: metadata.Assign, Queue: "q", Incarnation: 4, Epoch: 1, Owner: 1, Members: ms}, "placed")
	apply(metadata.Command{Kind: metadata.BrokerDown, Node: 1, Process: 1}, "")
	var mq metadata.Queue
	mq.Incarnation, mq.Policy, mq.MinInsync = 4, core.MajorityDurable, 2
	mq.Assignment.Epoch, mq.Assignment.Members = 1, ms
	var proposed metadata.Nodes
	proposed.N, proposed.ID[0], proposed.ID[1] = 2, 2, 3
	digest := metadata.TransitionDigest(&mq, &proposed)
	apply(metadata.Command{Kind: metadata.Transition, Queue: "q", Incarnation: 4, Epoch: 1, Proposed: proposed, Digest: digest}, "fenced")
	if plan {
		apply(metadata.Command{Kind: metadata.Plan, Queue: "q", Incarnation: 4, Epoch: 1, Digest: digest,
			Plan: metadata.RecoveryPlan{Source: 2, Storage: 2, End: 10, LastEpoch: 1, Identity: metadata.Digest{1}}}, "planned")
	}
	act := metadata.Command{Kind: metadata.Activate, Queue: "q", Incarnation: 4, Epoch: 1, Digest: digest, Owner: 2}
	act.Members.N = 2
	act.Members.M[0], act.Members.M[1] = ms.M[1], ms.M[2]
	act.InSync = proposed
	apply(act, "activated")
}
