package timeline

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `t=0.000000000s * start n1 inc=0
t=0.000000000s n1 < start q=1 start=0 end=0 epochs=[]
t=0.001000000s n1 > send to=2 append q=1 e=1 p=1 prev=0 preve=0 commit=0 recs=1 bytes=0
t=0.002000000s n1 < client c=3 subscribe q=1 id=1 prefetch=64
t=0.002000000s n1 > reply c=3 id=1 confirmed q=1 o=0
t=0.003000000s n1 < client c=4 publish q=1 id=1 len=9
t=1.500000000s n1 > reply c=4 id=1 confirmed q=1 o=1
t=2.000000000s * fault at=2000000000 pause n1 dur=500000000
t=2.500000000s * resume n1
t=3.000000000s * fault at=3000000000 sync-fail n1
t=3.100000000s * struck sync-fail n1 q1/00000000000000000000.seg
t=3.100000000s * stop n1 inc=0 exit
t=3.200000000s * mark process-down
t=4.000000000s * start n1 inc=1
t=4.100000000s n1 > send to=2 append q=1 e=2 p=2 prev=0 preve=0 commit=0 recs=1 bytes=0
t=9.000000000s * drain: faults off, network healed, every broker up, publishers probe then stop
`

// The builder reads lives, pauses, faults, strikes, epochs and confirms
// from trace lines, whatever the chunks they arrive in, and numbers lines
// from 1.
func TestBuilderReadsTheTrace(t *testing.T) {
	b := New(Meta{Brokers: 2, Queues: []Queue{{ID: 1}}})
	for i := 0; i < len(sample); i += 7 {
		b.Write([]byte(sample[i:min(i+7, len(sample))]))
	}
	if b.line != 16 {
		t.Fatalf("counted %d lines, want 16", b.line)
	}
	var kinds []string
	for _, e := range b.events {
		kinds = append(kinds, e.Class+":"+e.Kind)
	}
	if got := strings.Join(kinds, " "); got != "fault:pause fault:sync-fail struck:sync-fail stop:exit mark:process-down drain:drain" {
		t.Fatalf("events %s", got)
	}
	var segs []string
	for _, s := range b.segs {
		segs = append(segs, s.Class+":"+s.Label)
	}
	if got := strings.Join(segs, " "); got != "process:n1 inc=0 epoch:n1 e=1 pause:paused process:n1 inc=1 epoch:n1 e=2" {
		t.Fatalf("segments %s", got)
	}
	if b.segs[2].ToNs != 2.5e9 || b.segs[0].ToNs != 3.1e9 || b.segs[1].ToNs != 3.1e9 {
		t.Fatalf("pause or life or epoch ends wrong: %+v", b.segs)
	}
	// The subscribe's reply is not a confirm; the publish's is, in second 1.
	if len(b.confirms) != 2 || b.confirms[0] != 0 || b.confirms[1] != 1 {
		t.Fatalf("confirms per second %v, want [0 1]", b.confirms)
	}
	if b.events[3].Line != 12 {
		t.Fatalf("the stop is on line %d, want 12", b.events[3].Line)
	}
	var page bytes.Buffer
	if err := b.Render(&page, Result{Verdict: "ok"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page.Bytes(), []byte(`"kind":"sync-fail"`)) || bytes.Contains(page.Bytes(), []byte("</script>\n<script src")) {
		t.Fatal("the page lacks its data")
	}
}

// Every list is bounded: a flood of events is cut at EventsMax and the cut
// is counted.
func TestBuilderIsBounded(t *testing.T) {
	b := New(Meta{Brokers: 1})
	line := []byte("t=1.000000000s * mark process-down\n")
	for i := 0; i < EventsMax+10; i++ {
		b.Write(line)
	}
	b.Write(bytes.Repeat([]byte("x"), lineBytesMax+10)) // an overlong line
	b.Write([]byte("\n"))
	if len(b.events) != EventsMax || b.dropped != 10 || b.line != EventsMax+11 || len(b.partial) != 0 {
		t.Fatalf("events %d dropped %d lines %d partial %d", len(b.events), b.dropped, b.line, len(b.partial))
	}
}
