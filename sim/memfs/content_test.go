package memfs

import (
	"bytes"
	"testing"

	"github.com/sluicemq/sluice/sim/prng"
)

// content must behave as one plain byte slice: random writes, size
// changes, clears and reads, checked against that model after each one,
// with the invariant that nothing non-zero lies past the size. Odd rounds
// take chunks from a slab, so that the chunks a shrink or a clear gives
// back are reused (dirty, cleared when taken), by this content and by
// another one written alongside.
func TestContentMatchesASlice(t *testing.T) {
	r := prng.New(7)
	reused := int64(0)
	for round := 0; round < 200; round++ {
		var c, other content
		if round%2 == 1 {
			c.slab = &chunkSlab{}
			other.slab = c.slab
		}
		otherModel := []byte{}
		var model []byte
		for step := 0; step < 100; step++ {
			span := int64(3*chunkBytes + 100)
			switch r.Intn(5) {
			case 0: // write within or past the size (the size grows)
				off := r.Int63n(span)
				p := make([]byte, 1+r.Intn(2*chunkBytes))
				for i := range p {
					p[i] = byte(1 + r.Intn(255))
				}
				if end := off + int64(len(p)); end > c.size {
					c.setSize(end)
					model = append(model, make([]byte, end-int64(len(model)))...)
				}
				c.write(p, off)
				copy(model[off:], p)
			case 1: // size change
				size := r.Int63n(span)
				c.setSize(size)
				if size < int64(len(model)) {
					model = model[:size]
				} else {
					model = append(model, make([]byte, size-int64(len(model)))...)
				}
			case 2: // clear a range
				if c.size > 0 {
					lo := r.Int63n(c.size)
					hi := lo + r.Int63n(c.size-lo+1)
					c.zero(lo, hi)
					clear(model[lo:hi])
				}
			case 3: // a byte through its pointer
				if c.size > 0 {
					off := r.Int63n(c.size)
					*c.bytePtr(off) ^= 0x10
					model[off] ^= 0x10
				}
			case 4: // a clone is independent
				d := c.clone()
				if !bytes.Equal(d.bytes(), model) {
					t.Fatalf("round %d step %d: clone differs", round, step)
				}
				if d.size > 0 {
					*d.bytePtr(0) ^= 1
				}
			}
			// The other content takes (and gives back) chunks of the
			// same slab.
			if k := r.Int63n(3 * chunkBytes); r.Intn(2) == 0 {
				other.setSize(k)
				if k < int64(len(otherModel)) {
					otherModel = otherModel[:k]
				} else {
					otherModel = append(otherModel, make([]byte, k-int64(len(otherModel)))...)
				}
			} else if k > 0 {
				b := byte(1 + r.Intn(255))
				if k > other.size {
					other.setSize(k)
					otherModel = append(otherModel, make([]byte, k-int64(len(otherModel)))...)
				}
				other.write(bytes.Repeat([]byte{b}, int(k)), 0)
				copy(otherModel, bytes.Repeat([]byte{b}, int(k)))
			}
			if !bytes.Equal(other.bytes(), otherModel) {
				t.Fatalf("round %d step %d: the other content differs from its model", round, step)
			}
			if c.size != int64(len(model)) || !bytes.Equal(c.bytes(), model) {
				t.Fatalf("round %d step %d: content differs from the model", round, step)
			}
			// Reads at any offset, of any length; ranges appended.
			off := r.Int63n(span)
			p := make([]byte, r.Intn(2*chunkBytes))
			n := c.read(p, off)
			want := 0
			if off < int64(len(model)) {
				want = copy(make([]byte, len(p)), model[off:])
			}
			if n != want || !bytes.Equal(p[:n], model[min(off, int64(len(model))):][:n]) {
				t.Fatalf("round %d step %d: read(%d, %d) = %d bytes, want %d", round, step, len(p), off, n, want)
			}
			if c.size > 0 {
				lo := r.Int63n(c.size)
				hi := lo + r.Int63n(c.size-lo+1)
				if got := c.appendRange([]byte{9}, lo, hi); !bytes.Equal(got[1:], model[lo:hi]) || got[0] != 9 {
					t.Fatalf("round %d step %d: appendRange(%d, %d) differs", round, step, lo, hi)
				}
			}
			// Nothing non-zero past the size, in the chunks still held.
			for i, ch := range c.chunks {
				if ch == nil {
					continue
				}
				for k := range ch {
					if pos := int64(i)*chunkBytes + int64(k); pos >= c.size && ch[k] != 0 {
						t.Fatalf("round %d step %d: byte %d past the size %d is %d", round, step, pos, c.size, ch[k])
					}
				}
			}
			if len(c.chunks) != chunksFor(c.size) {
				t.Fatalf("round %d step %d: %d chunks for size %d", round, step, len(c.chunks), c.size)
			}
		}
		if c.slab != nil {
			reused += c.slab.reused
		}
	}
	if reused == 0 {
		t.Fatal("no chunk was reused")
	}
}
