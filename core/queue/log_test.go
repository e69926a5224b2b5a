package queue

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// TestRetentionEmptiesTheCacheBelowTheStart: once a retention completes,
// the owner's cache lets go of the records below the log's new start
// (nothing reads them again), and keeps those between the start the
// storage kept and the one asked; Invariants catches a cache left holding
// records below the start.
func TestRetentionEmptiesTheCacheBelowTheStart(t *testing.T) {
	x := &Ctx{Node: 1, Process: 1, Lim: seam.Limits{}.WithDefaults(), Out: &seam.Out{}}
	r := New(x, seam.QueueConfig{Queue: 7, Replicas: []seam.NodeID{1}, Owner: 1, Policy: seam.MajorityDurable})
	r.Restore(&seam.LogState{Group: seam.QueueGroup(7)})
	l := &r.log
	for o := range uint64(10) {
		l.appendCached(record.Record{Epoch: 1, Offset: o, Kind: record.KindPublish, Body: []byte("body")}, 1<<20, 1)
	}
	l.retain(6)
	r.Invariants()   // in flight: the records below 6 may still be held
	l.retained(4, 2) // the storage kept the segment from 4 on
	r.Invariants()
	if l.cacheStart != 4 || len(l.cache) != 6 || l.cacheBytes != 6*4 || l.cached(3) != nil || l.cached(4) == nil {
		t.Fatalf("cache [%d,+%d) of %d bytes after a retention to 4, want [4,+6) of 24", l.cacheStart, len(l.cache), l.cacheBytes)
	}
	// Planted: a cache that kept a record below the start.
	l.cacheStart--
	l.cache = l.cacheBuf[cap(l.cacheBuf)-cap(l.cache)-1 : len(l.cache)+cap(l.cacheBuf)-cap(l.cache)]
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "below the log start") {
			t.Fatalf("Invariants let a cache below the start pass: %v", p)
		}
	}()
	r.Invariants()
}
