package seglog

import "math/bits"

// Buffers recycles the byte buffers of logs that are gone (Options.Buffers):
// read windows, write buffers, header-copy windows and lent read blocks.
// A process that restarts opens its logs again, and without it each
// reopening allocates (and clears) megabytes that the previous process's
// logs no longer use; the simulator, which restarts brokers tens of times
// a run, keeps one per broker. A log gives its buffers back when it is
// closed or released (Log.Release). A buffer's contents are unspecified:
// the log writes every byte it reads back. Not safe for concurrent use.
type Buffers struct {
	free [buffersClasses][][]byte
}

const (
	buffersClassMin = 12 // 4 KiB
	buffersClasses  = 27 // up to 64 MiB
	buffersKeptMax  = 8  // per class
)

// get returns a buffer of length n and capacity at least c (c >= n).
func (b *Buffers) get(n, c int) []byte {
	k := max(bits.Len(uint(c-1)), buffersClassMin)
	if b == nil || k >= buffersClasses {
		return make([]byte, n, c)
	}
	if m := len(b.free[k]); m > 0 {
		p := b.free[k][m-1]
		b.free[k][m-1] = nil
		b.free[k] = b.free[k][:m-1]
		return p[:n]
	}
	return make([]byte, n, 1<<k)
}

// put takes back a buffer nothing refers to any more.
func (b *Buffers) put(p []byte) {
	if b == nil || cap(p) == 0 {
		return
	}
	k := bits.Len(uint(cap(p))) - 1 // the class whose size it holds
	if k < buffersClassMin || k >= buffersClasses || len(b.free[k]) >= buffersKeptMax {
		return
	}
	b.free[k] = append(b.free[k], p[:0])
}
