package core

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/seam"
)

func TestDivergence(t *testing.T) {
	cases := []struct {
		a    []EpochStart
		aEnd uint64
		b    []EpochStart
		bEnd uint64
		want uint64
	}{
		{[]EpochStart{{Epoch: 1, Offset: 0}}, 10, []EpochStart{{Epoch: 1, Offset: 0}}, 5, 5},
		{[]EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 5}}, 10, []EpochStart{{Epoch: 1, Offset: 0}}, 8, 5},
		{[]EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 3, Offset: 7}}, 10, []EpochStart{{Epoch: 1, Offset: 0}, {Epoch: 2, Offset: 6}}, 9, 6},
		{nil, 0, []EpochStart{{Epoch: 1, Offset: 0}}, 4, 0},
		{[]EpochStart{{Epoch: 2, Offset: 0}}, 4, []EpochStart{{Epoch: 1, Offset: 0}}, 4, 0},
	}
	for i, c := range cases {
		if got := seam.Divergence(c.a, c.aEnd, c.b, c.bEnd); got != c.want {
			t.Errorf("case %d: divergence = %d, want %d", i, got, c.want)
		}
		if got := seam.Divergence(c.b, c.bEnd, c.a, c.aEnd); got != c.want {
			t.Errorf("case %d (swapped): divergence = %d, want %d", i, got, c.want)
		}
	}
}

func TestPolicyQuorum(t *testing.T) {
	// n: W under each policy, isr with min in-sync 2
	for n, want := range map[int][4]int{1: {1, 1, 1, 2}, 3: {1, 2, 3, 2}, 5: {1, 3, 5, 2}, 4: {1, 3, 4, 2}} {
		got := [4]int{LeaderDurable.WriteQuorum(n, 2), MajorityDurable.WriteQuorum(n, 2), AllDurable.WriteQuorum(n, 2), ISR.WriteQuorum(n, 2)}
		if got != want {
			t.Errorf("n=%d: %v, want %v", n, got, want)
		}
	}
}

func TestTextFormsAreOneLine(t *testing.T) {
	in := Input{Kind: InStart, Logs: []LogState{{Group: 1, End: 3, Epochs: []EpochStart{{Epoch: 1, Offset: 0}}, Damage: "crc\nmismatch"}}}
	if s := in.String(); strings.Contains(s, "\n") || !strings.HasPrefix(s, "start q=1") {
		t.Fatalf("input text %q", s)
	}
	e := Effect{Kind: EfReply, Client: 3, ReqID: 4, Outcome: Failed, Reason: "a\nb"}
	if s := e.String(); strings.Contains(s, "\n") {
		t.Fatalf("effect text %q", s)
	}
}

func TestAppendUintMatchesStrconv(t *testing.T) {
	for _, v := range []uint64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 1<<32 + 7, 1<<64 - 1} {
		if got, want := string(seam.AppendUint(nil, v)), strconv.FormatUint(v, 10); got != want {
			t.Fatalf("AppendUint(%d) = %q, want %q", v, got, want)
		}
	}
}
