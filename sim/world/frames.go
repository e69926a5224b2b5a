package world

import "math/bits"

// framePool recycles the byte buffers of peer frames: a run sends hundreds
// of thousands, each alive only until it is delivered (or dropped). Buffers
// come in power-of-two classes; each class keeps at most framesKeptMax free.
type framePool struct {
	free [framesClasses][][]byte
}

const (
	framesClassMin = 6  // 64 bytes
	framesClasses  = 27 // up to 64 MiB, a frame's limit
	framesKeptMax  = 1024
)

func frameClass(n int) int {
	c := bits.Len(uint(n - 1))
	return max(c, framesClassMin)
}

// get returns an empty buffer with room for n bytes.
func (p *framePool) get(n int) []byte {
	c := frameClass(n)
	if c >= framesClasses {
		return make([]byte, 0, n)
	}
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		return b[:0]
	}
	return make([]byte, 0, 1<<c)
}

// put takes back a buffer nobody refers to any more.
func (p *framePool) put(b []byte) {
	c := frameClass(cap(b))
	if cap(b) != 1<<c || c >= framesClasses || len(p.free[c]) >= framesKeptMax {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
}

// bodyArena carves publish bodies out of larger zeroed chunks: a body lives
// as long as the broker or the checkers hold it, and the chunk with it.
type bodyArena struct{ chunk []byte }

const bodyChunkBytes = 256 << 10

// take returns n zero bytes of their own.
func (a *bodyArena) take(n int) []byte {
	if n > bodyChunkBytes/4 {
		return make([]byte, n)
	}
	if len(a.chunk) < n {
		a.chunk = make([]byte, bodyChunkBytes)
	}
	b := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return b
}
