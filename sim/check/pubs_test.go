package check

import "testing"

// The publish table answers as a map of every key would: dense client
// sequences in slices, any other key (far past a client's sequence, of a
// client never started, beyond the clients' bound) in the map, and a key
// seen before its publish started keeps what was seen.
func TestPubTableIsAMap(t *testing.T) {
	var tb pubTable
	ref := map[uint64]pubEntry{}
	put := func(key uint64, e pubEntry) {
		tb.put(key, e)
		if o, ok := ref[key]; ok && e.started {
			e.delivered = e.delivered || o.delivered
		}
		ref[key] = e
	}
	client := func(c, seq uint64) uint64 { return (c+1)<<pubKeyLowBits | seq }
	put(client(0, 5), pubEntry{delivered: true}) // delivered before it started: no slice for it
	if len(tb.clients) != 0 {
		t.Fatalf("a key no publish started made a client's slice: %d", len(tb.clients))
	}
	for seq := uint64(0); seq < 100; seq++ {
		put(client(0, seq), pubEntry{pubInfo: pubInfo{len: uint32(seq)}, started: true})
		put(client(1, seq), pubEntry{pubInfo: pubInfo{len: uint32(seq)}, started: true})
	}
	put(client(0, 3), pubEntry{pubInfo: pubInfo{state: pubFailed}, started: true, delivered: true})
	put(client(0, 1<<30), pubEntry{delivered: true})               // far past: the map
	put(client(0, 1<<30+1), pubEntry{started: true})               // a started one far past: the map too
	put(client(7, 2), pubEntry{delivered: true})                   // a client never started
	put(^uint64(0), pubEntry{pubInfo: pubInfo{state: pubUnknown}}) // garbage
	if len(tb.clients) != 2 || len(tb.clients[0].pubs) != 100 {
		t.Fatalf("clients %d, the first's slice %d long; want 2 and 100", len(tb.clients), len(tb.clients[0].pubs))
	}
	for key, want := range ref {
		if got := tb.get(key); got != want {
			t.Errorf("key %#x: %+v, want %+v", key, got, want)
		}
	}
	if got := tb.get(client(0, 5)); !got.delivered || !got.started {
		t.Errorf("a key delivered before its start lost what was seen: %+v", got)
	}
	for _, key := range []uint64{client(0, 100), client(2, 0), client(0, 1<<31), 12345} {
		if got := tb.get(key); got != (pubEntry{}) {
			t.Errorf("key %#x never put: %+v", key, got)
		}
	}
}
