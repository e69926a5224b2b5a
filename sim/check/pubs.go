package check

import "slices"

// pubTable holds what the checker knows of each publish by its key: the
// outcome its client learned, its body's length, whether it was ever
// handed to a consumer. The world's keys are a client's number above bit
// 40 and the client's sequence below it, dense per client, so each
// client's publishes are a slice indexed by sequence: a run of a million
// publishes spent more time in a map of them than in any check. A key of
// another form (a damaged body read back, a bug's invention) lives in a
// bounded map beside them, so that no key makes the table allocate past
// the publishes really made.
type pubTable struct {
	clients []pubClient // ascending by hi
	last    int         // the index of the client looked up last
	other   map[uint64]pubEntry
}

type pubClient struct {
	hi   uint64
	pubs []pubEntry // by the key's low 40 bits
}

// pubEntry is one key's state: started says PublishStarted named it.
type pubEntry struct {
	pubInfo
	started   bool
	delivered bool
}

// pubKeyLowBits splits a key into its client (above) and sequence.
const pubKeyLowBits = 40

// pubDenseGapMax bounds how far past a client's last sequence a key may
// lie and still grow the client's slice; beyond it, the key is kept in
// the map.
const pubDenseGapMax = 1 << 16

// get returns key's entry (the zero entry when the table never saw it).
func (t *pubTable) get(key uint64) pubEntry {
	if c := t.client(key>>pubKeyLowBits, false); c != nil {
		if lo := key & (1<<pubKeyLowBits - 1); lo < uint64(len(c.pubs)) {
			return c.pubs[lo]
		}
	}
	return t.other[key]
}

// put stores key's entry. Only a started publish (PublishStarted) makes
// a client's slice or grows it; any other key goes to the slice only
// where it already reaches, else to the map, so that no key a run did
// not publish allocates.
func (t *pubTable) put(key uint64, e pubEntry) {
	if o, ok := t.other[key]; ok && e.started {
		// (Seen before it started: what the map knew carries over.)
		e.delivered = e.delivered || o.delivered
		delete(t.other, key)
	}
	lo := key & (1<<pubKeyLowBits - 1)
	if c := t.client(key>>pubKeyLowBits, e.started); c != nil {
		if lo < uint64(len(c.pubs)) {
			c.pubs[lo] = e
			return
		}
		if e.started && lo < uint64(len(c.pubs))+pubDenseGapMax {
			c.pubs = append(c.pubs, make([]pubEntry, int(lo)+1-len(c.pubs))...)
			c.pubs[lo] = e
			return
		}
	}
	if t.other == nil {
		t.other = map[uint64]pubEntry{}
	}
	t.other[key] = e
}

// client returns the client hi's slice, made if create is set (nil when
// it is not there, or when hi would make more clients than a run has).
func (t *pubTable) client(hi uint64, create bool) *pubClient {
	if t.last < len(t.clients) && t.clients[t.last].hi == hi {
		return &t.clients[t.last]
	}
	i, ok := slices.BinarySearchFunc(t.clients, hi, func(c pubClient, hi uint64) int {
		switch {
		case c.hi < hi:
			return -1
		case c.hi > hi:
			return 1
		}
		return 0
	})
	if !ok {
		if !create || len(t.clients) >= pubClientsMax {
			return nil
		}
		t.clients = slices.Insert(t.clients, i, pubClient{hi: hi})
	}
	t.last = i
	return &t.clients[i]
}

// pubClientsMax bounds the clients the table keeps slices for.
const pubClientsMax = 4096
