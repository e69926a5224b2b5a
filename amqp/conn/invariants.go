package conn

import (
	"fmt"
	"slices"
)

// checkCheap runs after every Step: constant-time checks of the limits.
func (c *Conn) checkCheap() {
	if c.state == stClosed {
		return
	}
	assert(len(c.in) <= c.cfg.InputBytesMax, "input buffer within its limit")
	assert(c.queuedRequests >= 0 && c.queuedBytes <= 1<<62, "queued counts non-negative")
	assert(c.assemblyBytes <= c.cfg.AssemblyBytesMax, "assembly within its limit")
	assert(len(c.channelIDs) == len(c.channels), "channel index matches the channels")
}

// CheckInvariants walks the whole state and returns the first broken
// invariant, or nil. Tests and the fuzz target call it after every Step;
// it costs time linear in the state.
func (c *Conn) CheckInvariants() error {
	if c.state == stClosed {
		return nil
	}
	if len(c.in) > c.cfg.InputBytesMax {
		return fmt.Errorf("input buffer %d over %d", len(c.in), c.cfg.InputBytesMax)
	}
	if c.state >= stOpen && c.state != stClosing && (c.frameMaxBytes < 4096 || c.frameMaxBytes > c.cfg.FrameMaxBytes) {
		return fmt.Errorf("frame_max %d outside the negotiated range", c.frameMaxBytes)
	}
	queued, queuedBytes, assembly := 0, uint64(0), uint64(0)
	heads, unconfirmedPubs, subs := 0, 0, 0
	var prev uint16
	for i, id := range c.channelIDs {
		ch := c.channels[id]
		if ch == nil || ch.id != id {
			return fmt.Errorf("channel index %d names %d, not in the map", i, id)
		}
		if i > 0 && id <= prev {
			return fmt.Errorf("channel index not sorted at %d", i)
		}
		prev = id
		if id == 0 || id > c.channelMax {
			return fmt.Errorf("channel %d outside 1..%d", id, c.channelMax)
		}
		if ch.closing != ch.released {
			return fmt.Errorf("channel %d: closing %t but released %t", id, ch.closing, ch.released)
		}
		if ch.released {
			if len(ch.queue) != 0 || ch.asm != nil || len(ch.unacked) != 0 || len(ch.consumers) != 0 || len(ch.unconfirmed) != 0 {
				return fmt.Errorf("released channel %d still holds work", id)
			}
			continue
		}
		for _, r := range ch.queue {
			queued++
			queuedBytes += r.bytes
		}
		if ch.asm != nil {
			assembly += ch.asm.reservedBytes
			if uint64(len(ch.asm.body)) > ch.asm.sizeBytes {
				return fmt.Errorf("channel %d: body over its size", id)
			}
		}
		switch {
		case ch.head != nil && ch.head.kind == reqTxCommit:
			// A commit waits for its publishes' outcomes, not for an
			// operation's.
			if ch.txOutstanding == 0 {
				return fmt.Errorf("channel %d: a commit waits with no publish outstanding", id)
			}
		case ch.head != nil:
			heads++
			if c.ops[ch.head.op] != ch.head {
				return fmt.Errorf("channel %d: head op %d not pending", id, ch.head.op)
			}
		}
		var lastSeq uint64
		for _, p := range ch.unconfirmed {
			if p.seq <= lastSeq || p.seq > ch.nextSeq {
				return fmt.Errorf("channel %d: unconfirmed seq %d out of order", id, p.seq)
			}
			if p.resolved != 0 {
				return fmt.Errorf("channel %d: seq %d resolved but kept", id, p.seq)
			}
			lastSeq = p.seq
			unconfirmedPubs++
		}
		var lastTag uint64
		gets := 0
		perCons := map[*consumer]int{}
		for _, u := range ch.unacked {
			if u.tag <= lastTag || u.tag > ch.lastDelivery {
				return fmt.Errorf("channel %d: unacked tag %d out of order", id, u.tag)
			}
			lastTag = u.tag
			if u.cons == nil {
				gets++
			} else {
				perCons[u.cons]++
			}
		}
		// A transaction's settles hold their deliveries until commit.
		for _, t := range ch.txSettles {
			if slices.ContainsFunc(ch.unacked, func(u unacked) bool { return u.tag == t.u.tag }) {
				return fmt.Errorf("channel %d: tag %d both unacked and settled in the transaction", id, t.u.tag)
			}
			if t.u.cons == nil {
				gets++
			} else {
				perCons[t.u.cons]++
			}
		}
		if !ch.tx && (len(ch.txSettles) > 0 || len(ch.txPubs) > 0) {
			return fmt.Errorf("channel %d: transaction work outside transaction mode", id)
		}
		if ch.tx && ch.confirm {
			return fmt.Errorf("channel %d: both confirm and transaction mode", id)
		}
		if gets > ch.getUnacked || ch.getUnacked > c.cfg.GetUnackedPerChannelMax {
			return fmt.Errorf("channel %d: %d get deliveries unacked, count %d", id, gets, ch.getUnacked)
		}
		if len(ch.consumers) > c.cfg.ConsumersPerChannelMax {
			return fmt.Errorf("channel %d: %d consumers", id, len(ch.consumers))
		}
		for _, k := range ch.consumers {
			subs++
			if c.subs[k.sub] != k || k.ch != ch {
				return fmt.Errorf("channel %d: consumer %q not indexed", id, k.tag)
			}
			if k.unsettled != perCons[k] {
				return fmt.Errorf("consumer %q: unsettled %d, unacked entries %d", k.tag, k.unsettled, perCons[k])
			}
			if !k.noAck && k.unsettled > int(k.prefetch) {
				return fmt.Errorf("consumer %q: %d unsettled over prefetch %d", k.tag, k.unsettled, k.prefetch)
			}
		}
	}
	if queued != c.queuedRequests || queuedBytes != c.queuedBytes {
		return fmt.Errorf("queued %d/%dB, counted %d/%dB", queued, queuedBytes, c.queuedRequests, c.queuedBytes)
	}
	if assembly != c.assemblyBytes {
		return fmt.Errorf("assembly %dB, counted %dB", assembly, c.assemblyBytes)
	}
	if subs != len(c.subs) {
		return fmt.Errorf("%d consumers on channels, %d subscriptions indexed", subs, len(c.subs))
	}
	// Reading pauses at the limit; an answered operation can then release
	// at most the queued requests behind it.
	if len(c.pubs) > c.cfg.PublishesInFlightMax+c.cfg.QueuedRequestsMax {
		return fmt.Errorf("%d publishes in flight, limit %d + %d queued", len(c.pubs), c.cfg.PublishesInFlightMax, c.cfg.QueuedRequestsMax)
	}
	if heads > len(c.ops) {
		return fmt.Errorf("%d channel heads, %d pending ops", heads, len(c.ops))
	}
	_ = unconfirmedPubs
	return nil
}
