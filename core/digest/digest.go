package digest

import "lukechampine.com/blake3/guts"

// Hasher computes BLAKE3 (unkeyed, 32-byte digest) over what is
// written, as blake3.Hasher does, without its goroutines and allocations:
// Hasher.Write hashes every subtree of a large write in a goroutine of its
// own (and allocates their closures, their chaining values and, for a
// short last subtree, a 16 KiB copy), thousands a run. Here data gathers
// in one 16-chunk block, compressed in one SIMD call (guts.CompressBuffer,
// the call Hasher makes for such a subtree) once it is full and more
// follows, and its chaining value is merged into the stack of subtree
// roots exactly as Hasher merges them. The digest is BLAKE3's, byte for
// byte (TestHasherIsBLAKE3). The zero value is ready to use.
type Hasher struct {
	tree  subtrees
	block [blockChunks * guts.ChunkSize]byte
	n     int // bytes in block
}

// subtrees is the stack of subtree roots of the chunks hashed so far.
type subtrees struct {
	stack   [64][8]uint32 // at most one root per height
	counter uint64        // chunks hashed; bit i set: stack[i] holds a root
}

// blockChunks is the chunks of one block: guts.CompressBuffer's width.
const blockChunks = guts.MaxSIMD

// blockHeight is log2(blockChunks): the height of a block's subtree.
const blockHeight = 4

// Write adds p to the hashed bytes.
func (h *Hasher) Write(p []byte) {
	for len(p) > 0 {
		if h.n == len(h.block) {
			// A full block with more to come holds no part of the root's
			// last chunk, and the counter is a multiple of blockChunks:
			// it is a whole subtree.
			n := guts.CompressBuffer(&h.block, len(h.block), &guts.IV, h.tree.counter, 0)
			h.tree.push(guts.ChainingValue(n), blockHeight)
			h.n = 0
		}
		if h.n == 0 && len(p) > len(h.block) {
			// At a block boundary with more than a block to come: the
			// caller's bytes are compressed where they are, not copied.
			n := guts.CompressBuffer((*[blockChunks * guts.ChunkSize]byte)(p), len(h.block), &guts.IV, h.tree.counter, 0)
			h.tree.push(guts.ChainingValue(n), blockHeight)
			p = p[len(h.block):]
			continue
		}
		k := copy(h.block[h.n:], p)
		h.n += k
		p = p[k:]
	}
}

// pushChunks adds the subtree of the 2^height whole chunks in p, the next
// in counter order.
func (t *subtrees) pushChunks(p []byte, height int) {
	var n guts.Node
	if height == 0 {
		n = guts.CompressChunk(p, &guts.IV, t.counter, 0)
	} else {
		// CompressBuffer wants a whole block's array: the chunks are
		// copied into one (a few KiB, against their compression).
		var buf [blockChunks * guts.ChunkSize]byte
		copy(buf[:], p)
		n = guts.CompressBuffer(&buf, len(p), &guts.IV, t.counter, 0)
	}
	t.push(guts.ChainingValue(n), height)
}

// push adds the root of a subtree of 2^height chunks, merging equal
// heights as blake3.Hasher's pushSubtree does.
func (t *subtrees) push(cv [8]uint32, height int) {
	i := height
	for t.counter&(1<<i) != 0 {
		cv = guts.ChainingValue(guts.ParentNode(t.stack[i], cv, &guts.IV, 0))
		i++
	}
	t.stack[i] = cv
	t.counter += 1 << height
}

// Sum returns the digest of everything written so far; it does not change
// the state.
func (h *Hasher) Sum() [32]byte {
	t := h.tree
	// The block's chunks but the last go into the stack; the last
	// (possibly short, or empty for no input at all) is the one the root
	// is computed from, as blake3.Hasher keeps it buffered. The others go
	// in as whole subtrees of 8, 4, 2 and 1 chunks (the block starts at a
	// multiple of 16 chunks, so each is aligned as the tree cuts it), the
	// wider ones compressed in one SIMD call each: chunk by chunk, an
	// identity's Sum cost as much as hashing 100 KiB.
	last := h.block[:h.n]
	full := (len(last) - 1) / guts.ChunkSize // the chunks before the last
	if len(last) == 0 {
		full = 0
	}
	for height := blockHeight - 1; height >= 0; height-- {
		if k := 1 << height; full >= k {
			t.pushChunks(last[:k*guts.ChunkSize], height)
			last, full = last[k*guts.ChunkSize:], full-k
		}
	}
	root := guts.CompressChunk(last, &guts.IV, t.counter, 0)
	for i := 0; i < 64; i++ {
		if t.counter&(1<<i) != 0 {
			root = guts.ParentNode(t.stack[i], guts.ChainingValue(root), &guts.IV, 0)
		}
	}
	return rootDigest(root)
}

// Sum256 returns the BLAKE3 digest of b.
func Sum256(b []byte) [32]byte {
	if len(b) <= guts.ChunkSize {
		// One chunk, the root itself: what Sum computes for it (counter
		// 0, no subtrees), without a Hasher's 18 KiB to clear. Recovery
		// sums every record it verifies this way.
		return rootDigest(guts.CompressChunk(b, &guts.IV, 0, 0))
	}
	var h Hasher
	h.Write(b)
	return h.Sum()
}

// rootDigest returns the 32-byte digest of root, the tree's root node.
func rootDigest(root guts.Node) [32]byte {
	root.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(root))
	var d [32]byte
	copy(d[:], out[:32])
	return d
}
