package seam

import "fmt"

// QueueLife is what ends a queue besides its deletion: RabbitMQ's
// auto-delete, non-durable and exclusive queues (core/metadata's
// Lifetime). The zero QueueLife is a durable queue that lives until
// deleted.
type QueueLife struct {
	// AutoDelete: deleted once its last consumer goes (the broker whose
	// front ended that consumer commits the deletion of the incarnation
	// its owner counted no consumers of).
	AutoDelete bool
	// Transient (durable=false): deleted when the broker that owns it
	// starts a new process, as RabbitMQ deletes a non-durable queue when
	// its node restarts.
	Transient bool
	// Exclusive: owned by one connection, OwnerConn of OwnerNode's
	// process OwnerProcess: no other connection may use it (405
	// RESOURCE_LOCKED), and it is deleted with the connection (by that
	// broker's front) or with the process (its broker down, or a new
	// process registered).
	Exclusive    bool
	OwnerNode    NodeID
	OwnerProcess uint64
	OwnerConn    uint64
	// Home: the broker placement makes the owner while it is live and
	// undrained (an exclusive queue's connection's broker); 0: none.
	Home NodeID
}

// Check reports a lifetime no declaration could give: an owner without
// exclusive, or exclusive without one.
func (l *QueueLife) Check() error {
	if l.Exclusive != (l.OwnerNode != 0 && l.OwnerProcess != 0 && l.OwnerConn != 0) ||
		!l.Exclusive && (l.OwnerNode != 0 || l.OwnerProcess != 0 || l.OwnerConn != 0) {
		return fmt.Errorf("exclusive %t with owner n%d/%d connection %d: want an owner exactly when exclusive",
			l.Exclusive, l.OwnerNode, l.OwnerProcess, l.OwnerConn)
	}
	return nil
}

// String is the lifetime's stable text form: "" for the zero one.
func (l QueueLife) String() string {
	s := ""
	if l.AutoDelete {
		s += " auto-delete"
	}
	if l.Transient {
		s += " transient"
	}
	if l.Exclusive {
		s += fmt.Sprintf(" exclusive=n%d/%d/c%d", l.OwnerNode, l.OwnerProcess, l.OwnerConn)
	}
	if l.Home != 0 {
		s += fmt.Sprintf(" home=n%d", l.Home)
	}
	return s
}
