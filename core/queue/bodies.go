package queue

// bodyArena holds the bodies of the owner's cached records. A request's
// body is its caller's once the Step returns (the simulator's clients and
// the daemon's readers reuse their buffers), so the cache keeps a copy;
// the copies are carved, in log order, out of chunks that are reused once
// the cache let go of every record whose body a chunk holds. The cache
// keeps its records in log order and lets them go from the front (its
// byte bound, a retention), so the chunks free in the order they filled:
// the memory a cache costs is what it holds, not what passed through it.
//
// A chunk freed during a Step may still be named by that Step's effects
// (a delivery, a storage effect: valid until the next Step, core/doc.go),
// so it is reused only from the next Step on (stepNo, seam.Out.Steps).
// A body over a quarter of a chunk gets an allocation of its own.
type bodyArena struct {
	chunks []bodyChunk // in use, oldest first; the last is being filled
	free   [][]byte    // chunks to reuse (each bodyChunkBytes)
	// freeing: chunks let go in Step freeingStep, reusable after it
	freeing     [][]byte
	freeingStep uint64
}

// bodyChunk is a chunk of the arena: buf[:used] holds the bodies of
// records up to offset last.
type bodyChunk struct {
	buf  []byte
	used int
	last uint64
}

const (
	bodyChunkBytes = 64 << 10
	// bodyChunksFreeMax bounds the chunks kept for reuse (1 MiB): more
	// go back to the garbage collector.
	bodyChunksFreeMax = 16
)

// keep returns a copy of body, the body of the record at offset o, in
// the arena; step is the Step under way (seam.Out.Steps).
func (a *bodyArena) keep(o uint64, body []byte, step uint64) []byte {
	if len(body) == 0 {
		return nil
	}
	if len(body) > bodyChunkBytes/4 {
		return append([]byte(nil), body...)
	}
	n := len(a.chunks)
	if n == 0 || a.chunks[n-1].used+len(body) > len(a.chunks[n-1].buf) {
		a.chunks = append(a.chunks, bodyChunk{buf: a.chunk(step)})
		n++
	}
	c := &a.chunks[n-1]
	b := c.buf[c.used : c.used+len(body) : c.used+len(body)]
	copy(b, body)
	c.used += len(body)
	// (After a truncation of the cache, offsets come again: last stays
	// the highest, so the chunk is let go no earlier than all of them.)
	c.last = max(c.last, o)
	return b
}

// chunk returns an empty chunk: one freed before step, or a new one.
func (a *bodyArena) chunk(step uint64) []byte {
	if a.freeingStep < step {
		a.free = append(a.free, a.freeing...)
		clear(a.freeing)
		a.freeing = a.freeing[:0]
	}
	if k := len(a.free); k > 0 {
		b := a.free[k-1]
		a.free[k-1] = nil
		a.free = a.free[:k-1]
		return b
	}
	return make([]byte, bodyChunkBytes)
}

// release lets go of the chunks holding only bodies of records below
// start (the cache's new front), in step; the chunk being filled stays.
func (a *bodyArena) release(start uint64, step uint64) {
	k := 0
	for k < len(a.chunks)-1 && a.chunks[k].last < start {
		k++
	}
	if k == 0 {
		return
	}
	if a.freeingStep < step {
		// What was freed in earlier Steps may be reused now.
		a.free = append(a.free, a.freeing...)
		clear(a.freeing)
		a.freeing = a.freeing[:0]
	}
	a.freeingStep = step
	for _, c := range a.chunks[:k] {
		if len(a.free)+len(a.freeing) < bodyChunksFreeMax {
			a.freeing = append(a.freeing, c.buf)
		}
	}
	n := copy(a.chunks, a.chunks[k:])
	clear(a.chunks[n:])
	a.chunks = a.chunks[:n]
}
