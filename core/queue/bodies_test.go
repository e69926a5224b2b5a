package queue

import (
	"bytes"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// TestPublishBodyIsCopied: the owner keeps a copy of a publish's body, so
// the caller may reuse its buffer once the step returned (core/doc.go
// point 2): the cached record, and what the owner later sends its
// followers, keep the bytes published.
func TestPublishBodyIsCopied(t *testing.T) {
	x := &Ctx{Node: 1, Process: 1, Lim: seam.Limits{}.WithDefaults(), Out: &seam.Out{}}
	r := New(x, seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1}, Owner: 1, Policy: seam.MajorityDurable})
	r.Restore(&seam.LogState{Group: seam.QueueGroup(7)})
	l := &r.log
	buf := []byte("the first body")
	x.Out.Reset()
	rec := l.appendCached(record.Record{Epoch: 1, Offset: 0, Kind: record.KindPublish, Body: buf}, 1<<20, x.Out.Steps)
	copy(buf, "overwritten!!!") // the caller's next request
	if string(l.cached(0).Body) != "the first body" || string(rec.Body) != "the first body" {
		t.Fatalf("the cache holds %q after the caller reused its buffer", l.cached(0).Body)
	}
}

// TestBodyArenaReusesChunksFromTheNextStep: the arena's chunks are reused
// once the cache let go of every body in them, but only from the Step
// after (the Step's effects may still name them); bodies still cached are
// never touched.
func TestBodyArenaReusesChunksFromTheNextStep(t *testing.T) {
	var a bodyArena
	body := bytes.Repeat([]byte{1}, 1000)
	held := map[uint64][]byte{}
	want := map[uint64]byte{}
	o := uint64(0)
	keepN := func(n int, step uint64) {
		for range n {
			b := body
			b[0] = byte(o)
			held[o] = a.keep(o, b, step)
			want[o] = byte(o)
			o++
		}
	}
	keepN(200, 1) // about three chunks
	first := &a.chunks[0].buf[0]
	a.release(100, 2)        // chunk 0 holds offsets below 66 or so: let go
	keepN(100, 2)            // same Step: chunk 0 must not come back
	for k, b := range held { // every body still cached, or let go this Step, intact
		if b[0] != want[k] {
			t.Fatalf("step 2: the body of offset %d was overwritten", k)
		}
	}
	if len(a.free)+len(a.freeing) == 0 {
		t.Fatal("nothing was let go: the test proves nothing")
	}
	for k := range held {
		if k < 100 {
			delete(held, k) // no longer cached
		}
	}
	keepN(400, 3) // a later Step: the chunks let go are reused
	reused := false
	for _, c := range a.chunks {
		reused = reused || &c.buf[0] == first
	}
	if !reused {
		t.Fatal("the chunk let go in step 2 was not reused in step 3")
	}
	for k, b := range held {
		if b[0] != want[k] {
			t.Fatalf("step 3: the body of offset %d, still cached, was overwritten", k)
		}
	}
}
