// Package digest is BLAKE3 (unkeyed, 32-byte digests) without goroutines:
// blake3.Hasher hashes every subtree of a large write in a goroutine of its
// own, which a pure core must not start; Hasher here gathers 16 chunks and
// compresses them in one SIMD call of lukechampine.com/blake3/guts, merging
// subtree roots as blake3 does; Sum compresses the chunks still gathered
// as aligned subtrees of 8, 4, 2 and 1, the wider in one SIMD call each.
// The digest is BLAKE3's, byte for byte, for
// any input however it is cut into writes (TestHasherIsBLAKE3). It serves
// the trace hash (io/driver), the retained content identity and the sealed
// reads' page digests (core/recovery) and the transition digest
// (core/metadata). Deterministic, no allocation after the Hasher's own.
package digest
