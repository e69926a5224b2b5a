package metadata

import (
	"encoding/binary"

	"github.com/sluicemq/sluice/core/digest"
	"github.com/sluicemq/sluice/core/quorum"
)

// digestDomain separates transition digests from any other BLAKE3 use.
const digestDomain = "sluice transition v1\x00"

// TransitionDigest is the digest that binds a pending transition of queue
// q's current assignment to the proposed members: BLAKE3-256 over one
// canonical encoding of the queue's incarnation id, the previous
// activation (its epoch), the old members with their exact instances, the
// old W, the witness threshold R = E - W + 1 (E the old member count),
// the new W (the policy over the proposed count), and the proposed
// members and epoch. Any change to any of them changes the digest, so a
// seal authorized for one transition authorizes no other.
func TransitionDigest(q *Queue, proposed *Nodes) Digest {
	a := &q.Assignment
	e := a.Members.N
	// An isr queue's W is its min in-sync (the copies a confirm
	// guarantees); its recovery follows the clean-election rule instead of
	// R, but the digest binds the same numbers either way.
	oldW := q.Policy.WriteQuorum(e, q.MinInsync)
	newW := q.Policy.WriteQuorum(proposed.N, min(q.MinInsync, proposed.N))
	b := make([]byte, 0, 256)
	b = append(b, digestDomain...)
	b = binary.AppendUvarint(b, q.Incarnation)
	b = binary.AppendUvarint(b, a.Epoch)
	b = binary.AppendUvarint(b, uint64(e))
	for _, m := range a.Members.Slice() {
		b = binary.AppendUvarint(b, uint64(m.Node))
		b = binary.AppendUvarint(b, m.Process)
		b = binary.AppendUvarint(b, m.Storage)
	}
	b = binary.AppendUvarint(b, uint64(oldW))
	b = binary.AppendUvarint(b, uint64(quorum.RecoveryThreshold(e, oldW)))
	b = binary.AppendUvarint(b, uint64(newW))
	b = binary.AppendUvarint(b, uint64(proposed.N))
	for _, n := range proposed.Slice() {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = binary.AppendUvarint(b, a.Epoch+1)
	return digest.Sum256(b)
}
