package recovery

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicemq/sluice/core/digest"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// identityDomain separates content identities from every other BLAKE3 use.
const identityDomain = "sluice retained content v1\x00"

// Identity computes a log's retained content identity record by record, so
// that a seal can hash a log of any size a page of reads at a time.
type Identity struct {
	h         digest.Hasher
	next, end uint64 // the next offset wanted; the retained end
	// buf gathers the encoding of records not yet written to h, up to
	// identityBufBytes: two writes a record (its header, its body) cost
	// more than the hashing of a small record.
	buf []byte
}

// identityBufBytes bounds Identity.buf.
const identityBufBytes = 8 << 10

// NewIdentity starts the identity of queue q's log retaining [start, end).
func NewIdentity(q seam.QueueID, start, end uint64) (*Identity, error) {
	if start > end {
		return nil, fmt.Errorf("recovery: retained bounds [%d, %d)", start, end)
	}
	id := &Identity{next: start, end: end, buf: make([]byte, 0, identityBufBytes)}
	b := []byte(identityDomain)
	b = binary.AppendUvarint(b, uint64(q))
	b = binary.AppendUvarint(b, start)
	b = binary.AppendUvarint(b, end)
	id.h.Write(b)
	return id, nil
}

// Add feeds the next retained record: its offset must be the next one.
func (id *Identity) Add(r *record.Record) error {
	if r.Offset != id.next || r.Offset >= id.end {
		return fmt.Errorf("recovery: record at %d, want %d (retained up to %d)", r.Offset, id.next, id.end)
	}
	b := id.buf
	if len(b)+3*binary.MaxVarintLen64+1+len(r.Body) > identityBufBytes {
		id.h.Write(b)
		b = b[:0]
	}
	b = binary.AppendUvarint(b, r.Offset)
	b = binary.AppendUvarint(b, r.Epoch)
	b = append(b, byte(r.Kind))
	b = binary.AppendUvarint(b, uint64(len(r.Body)))
	if len(b)+len(r.Body) <= identityBufBytes {
		b = append(b, r.Body...)
	} else {
		// A body larger than the buffer goes to the hasher as it is.
		id.h.Write(b)
		id.h.Write(r.Body)
		b = b[:0]
	}
	id.buf = b
	id.next++
	return nil
}

// Next is the offset of the next record the identity wants.
func (id *Identity) Next() uint64 { return id.next }

// Sum returns the identity once every retained record was fed.
func (id *Identity) Sum() (Digest, error) {
	if id.next != id.end {
		return Digest{}, fmt.Errorf("recovery: identity fed up to %d of [.., %d)", id.next, id.end)
	}
	id.h.Write(id.buf)
	id.buf = id.buf[:0]
	return Digest(id.h.Sum()), nil
}

// IdentityOf is the identity of records, which retain [start, end).
func IdentityOf(q seam.QueueID, start, end uint64, records []record.Record) (Digest, error) {
	id, err := NewIdentity(q, start, end)
	if err != nil {
		return Digest{}, err
	}
	for i := range records {
		if err := id.Add(&records[i]); err != nil {
			return Digest{}, err
		}
	}
	return id.Sum()
}
