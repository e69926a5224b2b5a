package memfs

import "bytes"

// chunkBytes is the unit in which a file's contents are kept: one sector,
// so that a crash's decision about a sector never spans two chunks.
const chunkBytes = SectorBytes

// chunk holds chunkBytes bytes of a file.
type chunk = [chunkBytes]byte

// content is a file's bytes [0, size), kept in fixed-size chunks: chunks[i]
// holds bytes [i*chunkBytes, (i+1)*chunkBytes). A nil chunk reads as zeros
// (nothing was written there since it was last cleared), and the bytes of
// a chunk at or past size are zero, so growing a file never clears
// anything. Growing adds chunks and never copies the ones it has: a file
// grown by appends costs its size in chunks, where one contiguous slice
// doubled and copied as it grew (twice the bytes allocated, all of them
// copied again at each doubling).
//
// A chunk is held by one slot of one content and by nothing else (clone
// copies, bytePtr's pointer is used at once), so a chunk the content lets
// go of (a shrink, a chunk cleared whole, release) goes back to the slab
// for another file.
type content struct {
	size   int64
	chunks []*chunk
	slab   *chunkSlab // where new chunks come from and go back; nil: one allocation each
	// freed: the file was freed (FS.free): its chunks are another file's
	// now, and any use of its contents is a bug that must be loud.
	freed bool
}

// chunkSlab hands out zeroed chunks: first the chunks that freed files and
// shrinks gave back (cleared when taken again), else chunks carved from
// allocations of slabChunks (one allocation per 64 KiB of file contents
// instead of one per 4 KiB). A slab lives as long as any of its chunks; an
// FS's files share one.
type chunkSlab struct {
	fresh    []chunk  // carved, never handed out
	recycled []*chunk // given back, dirty; cleared when taken
	// Counters for Stats: chunks carved from new memory and chunks taken
	// from the recycled ones.
	allocated, reused int64
	// noReuse: give drops the chunks (the tests' reference, FS.noRecycle).
	noReuse bool
}

const slabChunks = 16

func (s *chunkSlab) take() *chunk {
	if s == nil {
		return new(chunk)
	}
	if k := len(s.recycled); k > 0 {
		ch := s.recycled[k-1]
		s.recycled[k-1] = nil
		s.recycled = s.recycled[:k-1]
		clear(ch[:]) // a chunk never written reads as zeros
		s.reused++
		return ch
	}
	if len(s.fresh) == 0 {
		s.fresh = make([]chunk, slabChunks)
	}
	ch := &s.fresh[0]
	s.fresh = s.fresh[1:]
	s.allocated++
	return ch
}

// give takes back a chunk no content holds any longer.
func (s *chunkSlab) give(ch *chunk) {
	if s != nil && ch != nil && !s.noReuse {
		s.recycled = append(s.recycled, ch)
	}
}

// mustLive panics if the contents were freed: a use after free must never
// read or write the chunks that another file now holds.
func (c *content) mustLive() {
	if c.freed {
		panic("memfs: use of a freed file's contents")
	}
}

// release gives every chunk back to the slab and leaves the contents
// freed: every later use panics.
func (c *content) release() {
	c.mustLive()
	for _, ch := range c.chunks {
		c.slab.give(ch)
	}
	clear(c.chunks) // a spare's table holds no chunk (FS.free keeps it)
	c.chunks, c.size, c.freed = nil, 0, true
}

// chunksFor returns how many chunks hold size bytes.
func chunksFor(size int64) int { return int((size + chunkBytes - 1) / chunkBytes) }

// setSize sets the size; bytes that become visible read as zeros, bytes cut
// off are gone (the invariant: nothing non-zero at or past size).
func (c *content) setSize(size int64) {
	c.mustLive()
	if size < c.size {
		c.zero(size, c.size)
		k := chunksFor(size)
		for _, ch := range c.chunks[k:] {
			c.slab.give(ch)
		}
		clear(c.chunks[k:])
		c.chunks = c.chunks[:k]
	} else if k := chunksFor(size); k > len(c.chunks) {
		if k > cap(c.chunks) {
			// The chunk table is the only thing that is copied when a
			// file grows: 8 bytes per 4 KiB.
			t := make([]*chunk, len(c.chunks), max(k, 2*cap(c.chunks), 8))
			copy(t, c.chunks)
			c.chunks = t
		}
		c.chunks = c.chunks[:k]
	}
	c.size = size
}

// at returns the chunk holding byte off (off < size), made if it was nil.
func (c *content) at(off int64) *chunk {
	c.mustLive()
	i := off / chunkBytes
	ch := c.chunks[i]
	if ch == nil {
		ch = c.slab.take()
		c.chunks[i] = ch
	}
	return ch
}

// write copies p to [off, off+len(p)), which must lie within the size.
func (c *content) write(p []byte, off int64) {
	c.mustLive()
	if off < 0 || off+int64(len(p)) > c.size {
		panic("memfs: write past the size")
	}
	for len(p) > 0 {
		k := off % chunkBytes
		n := min(int64(len(p)), chunkBytes-k)
		if c.chunks[off/chunkBytes] == nil && bytes.Equal(p[:n], zeroChunk[:n]) {
			// Zeros onto a chunk that reads as zeros: nothing to keep. The
			// simulator's bodies are a key and zeros, so a log of large
			// bodies costs its frames' headers, not its size.
			p, off = p[n:], off+n
			continue
		}
		copy(c.at(off)[k:], p[:n])
		p, off = p[n:], off+n
	}
}

// read copies bytes from off on into p, as many as fit and lie below the
// size, and returns how many.
func (c *content) read(p []byte, off int64) int {
	c.mustLive()
	if off >= c.size {
		return 0
	}
	p = p[:min(int64(len(p)), c.size-off)]
	m := 0
	for m < len(p) {
		k := off % chunkBytes
		var n int
		if ch := c.chunks[off/chunkBytes]; ch != nil {
			n = copy(p[m:], ch[k:])
		} else {
			n = int(min(int64(len(p)-m), chunkBytes-k))
			clear(p[m : m+n])
		}
		m, off = m+n, off+int64(n)
	}
	return m
}

// zeroChunk is a chunk of zeros, never written.
var zeroChunk chunk

// allZero reports whether bytes [lo, hi) (within the size) are all zero.
func (c *content) allZero(lo, hi int64) bool {
	c.mustLive()
	for lo < hi {
		k := lo % chunkBytes
		n := min(hi-lo, chunkBytes-k)
		if ch := c.chunks[lo/chunkBytes]; ch != nil && !bytes.Equal(ch[k:k+n], zeroChunk[:n]) {
			return false
		}
		lo += n
	}
	return true
}

// appendRange appends bytes [lo, hi) (within the size) to dst.
func (c *content) appendRange(dst []byte, lo, hi int64) []byte {
	c.mustLive()
	for lo < hi {
		k := lo % chunkBytes
		n := min(hi-lo, chunkBytes-k)
		if ch := c.chunks[lo/chunkBytes]; ch != nil {
			dst = append(dst, ch[k:k+n]...)
		} else {
			dst = append(dst, make([]byte, n)...)
		}
		lo += n
	}
	return dst
}

// zero clears bytes [lo, hi) (hi may pass the size; only chunks held are
// touched). A chunk cleared whole is dropped (it reads as zeros) and goes
// back to the slab.
func (c *content) zero(lo, hi int64) {
	c.mustLive()
	hi = min(hi, int64(len(c.chunks))*chunkBytes)
	for lo < hi {
		i := lo / chunkBytes
		k := lo % chunkBytes
		n := min(hi-lo, chunkBytes-k)
		if ch := c.chunks[i]; ch != nil {
			if n == chunkBytes {
				c.chunks[i] = nil
				c.slab.give(ch)
			} else {
				clear(ch[k : k+n])
			}
		}
		lo += n
	}
}

// bytePtr returns the location of byte off (off < size).
func (c *content) bytePtr(off int64) *byte { return &c.at(off)[off%chunkBytes] }

// clone returns an independent copy.
func (c *content) clone() content {
	c.mustLive()
	d := content{size: c.size, chunks: make([]*chunk, len(c.chunks))}
	for i, ch := range c.chunks {
		if ch != nil {
			cp := *ch
			d.chunks[i] = &cp
		}
	}
	return d
}

// bytes returns the contents as one slice.
func (c *content) bytes() []byte {
	b := make([]byte, c.size)
	c.read(b, 0)
	return b
}
