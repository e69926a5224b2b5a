package conn

import (
	"slices"

	"github.com/sluicemq/sluice/amqp/wire"
)

// Transactions (tx.select, tx.commit, tx.rollback), as RabbitMQ's: on a
// channel in transaction mode the machine holds the publishes and the
// settles (basic.ack, nack, reject) of the transaction; tx.commit hands
// them to the broker, the publishes first, in order, and answers
// commit-ok once every publish of it has its outcome (confirmed, or
// unroutable); a publish the broker failed closes the channel (406: the
// transaction did not commit whole), an unknown outcome the connection
// (320, as on a confirm channel); tx.rollback drops them, and the deliveries
// settled in it are unacked again (RabbitMQ's). A channel is in confirm
// mode or in transaction mode, never both (406). A transaction holds at
// most TxPublishesMax publishes and QueuedBytesMax bytes of bodies; one
// more is 406.

// TxPublishesMax bounds the publishes one transaction holds.
const TxPublishesMax = 4096

// txSettle is a settle held in a transaction: the delivery (out of the
// channel's unacked list until commit or rollback) and how.
type txSettle struct {
	u       unacked
	how     Settle
	requeue bool
}

// onTxSelect puts the channel in transaction mode.
func (c *Conn) onTxSelect(ch *channel, cls, id uint16) {
	if ch.confirm {
		c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "cannot switch from confirm to tx mode"))
		return
	}
	ch.tx = true
	c.reply(ch, &wire.TxSelectOk{})
}

// txHold takes publish r of a transaction channel; it reports false when
// the transaction is full (the channel closed).
func (c *Conn) txHold(ch *channel, r *request) bool {
	if len(ch.txPubs) >= TxPublishesMax || ch.txBytes+r.bytes > c.cfg.QueuedBytesMax {
		c.fail(ch, errorf(wire.PreconditionFailed, wire.ClassBasic, wire.MethodBasicPublish,
			"transaction over its limit (%d publishes, %d bytes): commit more often", TxPublishesMax, c.cfg.QueuedBytesMax))
		return false
	}
	r.pub.inTx = true
	ch.txPubs = append(ch.txPubs, r)
	ch.txBytes += r.bytes
	return true
}

// onTxCommit hands the transaction to the broker.
func (c *Conn) onTxCommit(ch *channel, cls, id uint16) {
	if !ch.tx {
		c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "channel is not transactional"))
		return
	}
	pubs, settles := ch.txPubs, ch.txSettles
	ch.txPubs, ch.txSettles, ch.txBytes = nil, nil, 0
	for _, r := range pubs {
		c.enqueue(ch, r)
	}
	c.enqueue(ch, &request{kind: reqTxCommit, settles: settles, classID: cls, methodID: id})
}

// onTxRollback drops the transaction: its deliveries are unacked again.
func (c *Conn) onTxRollback(ch *channel, cls, id uint16) {
	if !ch.tx {
		c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "channel is not transactional"))
		return
	}
	c.txUnsettle(ch)
	ch.txPubs, ch.txBytes = nil, 0
	c.reply(ch, &wire.TxRollbackOk{})
}

// txUnsettle puts the deliveries the transaction settled back among the
// channel's unacked ones.
func (c *Conn) txUnsettle(ch *channel) {
	for _, s := range ch.txSettles {
		i, _ := slices.BinarySearchFunc(ch.unacked, s.u.tag, func(u unacked, t uint64) int { return cmpU64(u.tag, t) })
		ch.unacked = slices.Insert(ch.unacked, i, s.u)
	}
	ch.txSettles = nil
}

// issueTxCommit runs a commit at its turn: the settles go, and commit-ok
// once its publishes (issued before it) all have outcomes.
func (c *Conn) issueTxCommit(ch *channel, r *request) {
	for _, s := range r.settles {
		c.settleOne(ch, s.u, s.how, s.requeue)
	}
	if ch.txOutstanding == 0 {
		c.writeMethod(ch.id, &wire.TxCommitOk{})
		return
	}
	ch.head = r
}

// txPublished counts the outcome of a transaction's publish p; a failed
// one closes the channel, and the last one answers a commit waiting.
func (c *Conn) txPublished(ch *channel, failed bool, text string) {
	ch.txOutstanding--
	assert(ch.txOutstanding >= 0, "transaction publishes outstanding")
	if failed {
		c.fail(ch, errorf(wire.PreconditionFailed, wire.ClassTx, wire.MethodTxCommit, "a publish of the transaction failed: %s", text))
		return
	}
	if h := ch.head; ch.txOutstanding == 0 && h != nil && h.kind == reqTxCommit {
		ch.head = nil
		c.writeMethod(ch.id, &wire.TxCommitOk{})
		c.issue(ch)
	}
}
