package recovery

import (
	"encoding/binary"
	"errors"

	"github.com/sluicemq/sluice/core/seam"
)

// The storage binding (docs/design/recovery.md, "Storage binding"). A replica's
// log is bound, durably and before it acknowledges anything, to the queue
// incarnation it is a copy of and the storage instance that holds it
// (io/seglog's BIND, written by OpBind). A log opened without its binding
// (a queue or generation directory lost or emptied, the files of another
// queue or storage) may lack records it acknowledged: it is no witness of
// a recovery (its seal says damaged) and its copy comes back only as a
// learner's or an installation's, which bind it again once whole.
//
// Encoding: the marker "SB1", then the queue id, the incarnation and the
// storage instance as uvarints (minimal, non-zero).

const bindingMarker = "SB1"

var errBinding = errors.New("recovery: not a storage binding")

// AppendBinding appends the binding of queue q's incarnation to storage.
func AppendBinding(dst []byte, q seam.QueueID, incarnation, storage uint64) []byte {
	dst = append(dst, bindingMarker...)
	dst = binary.AppendUvarint(dst, uint64(q))
	dst = binary.AppendUvarint(dst, incarnation)
	return binary.AppendUvarint(dst, storage)
}

// DecodeBinding reads a binding exactly.
func DecodeBinding(b []byte) (q seam.QueueID, incarnation, storage uint64, err error) {
	if len(b) < len(bindingMarker) || string(b[:len(bindingMarker)]) != bindingMarker {
		return 0, 0, 0, errBinding
	}
	b = b[len(bindingMarker):]
	var v [3]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, x)) || x == 0 {
			return 0, 0, 0, errBinding
		}
		v[i], b = x, b[n:]
	}
	if len(b) != 0 || v[0] > 1<<32-1 {
		return 0, 0, 0, errBinding
	}
	return seam.QueueID(v[0]), v[1], v[2], nil
}

// Binds reports whether binding b binds a log to queue q's incarnation on
// storage.
func Binds(b []byte, q seam.QueueID, incarnation, storage uint64) bool {
	bq, bi, bs, err := DecodeBinding(b)
	return err == nil && bq == q && bi == incarnation && bs == storage
}
