package driver

import (
	"testing"

	"github.com/sluicemq/sluice/core"
)

func TestAppendInstant(t *testing.T) {
	for ns, want := range map[int64]string{0: "t=0.000000000s", 2288518965: "t=2.288518965s", 60e9: "t=60.000000000s", 5: "t=0.000000005s"} {
		if got := string(AppendInstant(nil, ns)); got != want {
			t.Errorf("AppendInstant(%d) = %s, want %s", ns, got, want)
		}
		if back, ok := readInstant([]byte(want + " * x")); !ok || back != ns {
			t.Errorf("readInstant(%s) = %d, %v", want, back, ok)
		}
	}
}

// Filters select by instant, node (world notes that name the node, or no
// node, pass), queue and kind.
func TestFilterMatch(t *testing.T) {
	lines := []string{
		"t=1.000000000s n1 < recv from=2 append q=1 e=1",
		"t=1.000000000s n1 > send to=2 append-reply q=2 e=1",
		"t=2.000000000s * fault at=2000000000 one-way n5->n4 dur=1",
		"t=2.000000000s * mark process-down",
		"t=3.000000000s n4 > storage sync q=1 o=3",
	}
	for _, c := range []struct {
		f    TraceFilter
		want string // which lines match, as 0/1
	}{
		{TraceFilter{}, "11111"},
		{TraceFilter{FromNs: 2e9}, "00111"},
		{TraceFilter{UntilNs: 2e9}, "11110"},
		{TraceFilter{Nodes: []core.NodeID{4}}, "00111"},
		{TraceFilter{Nodes: []core.NodeID{1}}, "11010"},
		{TraceFilter{Queues: []core.QueueID{1}}, "10111"},
		{TraceFilter{Kinds: []string{"send", "mark"}}, "01010"},
	} {
		got := ""
		for _, l := range lines {
			if c.f.Match([]byte(l + "\n")) {
				got += "1"
			} else {
				got += "0"
			}
		}
		if got != c.want {
			t.Errorf("%+v: matched %s, want %s", c.f, got, c.want)
		}
	}
	if (&TraceFilter{}).Match([]byte("seed=1 ok hash=...\n")) {
		t.Error("a summary line matched as a trace line")
	}
}

// The hash covers a message's bytes at both ends: whole where it arrives,
// by length and checksum where it is sent. A change of one byte in either
// changes the hash.
func TestTraceHashesMessageBytes(t *testing.T) {
	hashOf := func(sent, received []byte) string {
		tr := NewTrace(nil, TraceFilter{})
		tr.Effect(1, 1, &core.Effect{Kind: core.EfSend, To: 2, Group: 3, Data: sent})
		tr.Input(2, 2, &core.Input{Kind: core.InMessage, From: 1, Group: 3, Data: received})
		return tr.Hash()
	}
	msg := []byte("an append of two records")
	other := []byte("an append of two recorde")
	base := hashOf(msg, msg)
	if hashOf(other, msg) == base {
		t.Fatal("a sent message's bytes do not reach the hash")
	}
	if hashOf(msg, other) == base {
		t.Fatal("a received message's bytes do not reach the hash")
	}
	if hashOf(msg, msg) != base {
		t.Fatal("the same entries hash differently")
	}
}
