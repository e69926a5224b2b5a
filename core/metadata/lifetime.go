package metadata

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/seam"
)

// Lifetime is what ends a queue besides its deletion (seam.QueueLife,
// which topology answers carry).
type Lifetime = seam.QueueLife

// The flags byte of a lifetime's encoding.
const (
	lifeAutoDelete = 1 << iota
	lifeTransient
	lifeExclusive
	lifeHome
	lifeServerNamed // a declaration's only: the broker names the queue
	lifeFlags       = lifeServerNamed<<1 - 1
)

// appendLife appends a lifetime: the flags byte (with lifeServerNamed if
// serverNamed), the exclusive owner's node, process and connection, and
// the home node, each only when its flag is set.
func appendLife(dst []byte, l *Lifetime, serverNamed bool) []byte {
	var flags byte
	for _, f := range []struct {
		set bool
		bit byte
	}{{l.AutoDelete, lifeAutoDelete}, {l.Transient, lifeTransient}, {l.Exclusive, lifeExclusive}, {l.Home != 0, lifeHome}, {serverNamed, lifeServerNamed}} {
		if f.set {
			flags |= f.bit
		}
	}
	dst = append(dst, flags)
	if l.Exclusive {
		dst = binary.AppendUvarint(dst, uint64(l.OwnerNode))
		dst = binary.AppendUvarint(dst, l.OwnerProcess)
		dst = binary.AppendUvarint(dst, l.OwnerConn)
	}
	if l.Home != 0 {
		dst = binary.AppendUvarint(dst, uint64(l.Home))
	}
	return dst
}

// life reads what appendLife wrote; a flags byte of zero, or with bits no
// lifetime has, is refused (the zero lifetime is written as nothing).
func (r *reader) life() (l Lifetime, serverNamed bool) {
	flags := r.byte()
	switch {
	case r.err != nil:
		return
	case flags == 0:
		r.fail("trailing bytes: a zero lifetime is written as none")
		return
	case flags&^lifeFlags != 0:
		r.fail(fmt.Sprintf("lifetime flags %#x", flags))
		return
	}
	l.AutoDelete, l.Transient, l.Exclusive = flags&lifeAutoDelete != 0, flags&lifeTransient != 0, flags&lifeExclusive != 0
	if l.Exclusive {
		l.OwnerNode, l.OwnerProcess, l.OwnerConn = r.node(), r.uvarint(), r.uvarint()
	}
	if flags&lifeHome != 0 {
		if l.Home = r.node(); r.err == nil && l.Home == 0 {
			r.fail("home node 0")
		}
	}
	if r.err == nil {
		if err := l.Check(); err != nil {
			r.fail(err.Error())
		}
	}
	return l, flags&lifeServerNamed != 0
}

// ServerNamePrefix starts the names the broker gives queues declared with
// an empty name (RabbitMQ's amq.gen-).
const ServerNamePrefix = "amq.gen-"

// ServerName is the name of the queue a server-named DeclareLifetime
// committed at index declares: unique over the catalogue's history, the
// same on every replica, and one the proposer computes from the index it
// is answered with.
func ServerName(index uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], index)
	return ServerNamePrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// endLives deletes the queues that end with a broker's process: when
// broker node's process ended (gone: the process that ended) exclusive
// queues it owned, and when a new process of it registered (restarted:
// the process before it, 0 if none) also the non-durable queues it owns.
// It returns how many queues it deleted.
func (s *State) endLives(node seam.NodeID, gone uint64, restarted bool) int {
	n := 0
	for i := 0; i < len(s.queues); {
		q := &s.queues[i]
		l := &q.Life
		ends := l.Exclusive && l.OwnerNode == node && l.OwnerProcess == gone ||
			restarted && l.Transient && q.Assigned && q.Assignment.Owner == node
		if !ends {
			i++
			continue
		}
		name := q.Name
		s.queues = slices.Delete(s.queues, i, i+1)
		s.unbindWhere(func(b *Binding) bool { return b.Queue == name })
		n++
	}
	return n
}
