package world

import (
	"math/bits"

	"github.com/sluicemq/sluice/core"
)

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

// publishBody returns a publish's body of n zero bytes, from the frame
// pool: the broker's core copies what it keeps of a request (core/doc.go),
// so the body goes back to the pool once the request's step ran
// (putPublishBody), or once the request is lost with its process.
func (w *World) publishBody(n int) []byte {
	b := w.frames.get(n)[:n]
	clear(b)
	return b
}

// putPublishBody gives back the body of e if e is a publish request.
func (w *World) putPublishBody(e *event) {
	if e.kind == evRequest && e.req.Kind == core.ReqPublish {
		w.frames.put(e.req.Body)
		e.req.Body = nil
	}
}
