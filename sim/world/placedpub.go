package world

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
)

// Publishers of the queues the controller places (the operator's queues
// sim-q0..2). Each learns where its queue lives by asking a random broker
// (ReqTopology, answered from the metadata it applied), then publishes to
// the owner, one publish at a time, and asks again when the answer says
// the queue moved, is fenced, or is gone, or when no answer comes. Every
// request goes on a connection of its own (ids from placedConnBase), and
// every draw comes from the controller's stream, so that the static
// queues' clients and runs stayed as they were. The checkers judge these
// publishes as any other (confirm-durable at the confirm, confirmed-lost
// at the end); fenced queues only refuse them.

// placedConnBase is the first of the placed publishers' connection ids
// (within the events' 32-bit from field, below the operator's).
const placedConnBase core.ClientID = 1 << 30

// placedSubBase is the first of the placed queues' consumers' connection
// ids (above every placed publisher's, below the operator's).
const placedSubBase core.ClientID = placedConnBase + 1<<29

// placedGapNs is the mean gap between a placed publisher's publishes;
// placedTimeoutNs how long it waits for an answer.
const (
	placedGapNs     = 50e6
	placedTimeoutNs = 2e9
)

// placedPub is one placed queue's publisher.
type placedPub struct {
	idx     int    // its index: keys and the queue name
	name    string // the queue it publishes to
	queue   core.QueueID
	owner   core.NodeID // 0: not known
	seq     uint64      // publishes sent
	reqs    uint64      // requests sent
	waiting core.ClientID
	asking  bool // the request outstanding is a topology request
	key     uint64
	stats   struct{ confirmed, failed, unknown uint64 }
	// nextNs: a scripted publisher's next publish slot; slot and of: its
	// place among its queue's scripted publishers, and their number
	nextNs   int64
	slot, of int
	to       core.NodeID // the broker its request outstanding went to
}

// placedBrokerGone ends the requests outstanding at broker n, whose
// process stopped: their connections close (a publish's outcome is
// unknown), and each publisher asks again shortly, as a client whose
// connection reset reconnects.
func (w *World) placedBrokerGone(n core.NodeID) {
	for _, p := range w.pubs {
		if p.waiting == 0 || p.to != n {
			continue
		}
		w.placedEnd(p, core.Unknown, 0, 0)
		p.owner = 0
		w.schedule1(w.now+w.rCtrl.Range(10e6, 100e6), evPlaced).cli = int32(p.idx)
	}
}

// placedStart creates the placed queues' publishers: one per operator
// queue, or scriptPublishersFor per queue the script declares (they start at
// the first publish step that names it).
func (w *World) placedStart() {
	if len(w.script) > 0 {
		for _, st := range w.script {
			if st.cmd.Kind != metadata.DeclareQueue || slices.ContainsFunc(w.pubs, func(p *placedPub) bool { return p.name == st.cmd.Queue }) {
				continue
			}
			k := scriptPublishersFor(w.script, st.cmd.Queue)
			for slot := range k {
				p := &placedPub{idx: len(w.pubs), name: st.cmd.Queue, slot: slot, of: k}
				w.pubs = append(w.pubs, p)
				w.schedule1(w.now, evPlaced).cli = int32(p.idx)
			}
			if w.prof.ConsumersPerQueue > 0 {
				w.addClient(consumer, st.cmd.Queue)
			}
		}
		return
	}
	for k := range adminQueues {
		w.pubs = append(w.pubs, &placedPub{idx: k, name: "sim-q" + itoa(k)})
		if w.prof.ConsumersPerQueue > 0 {
			w.addClient(consumer, "sim-q"+itoa(k))
		}
	}
	for _, p := range w.pubs {
		e := w.schedule1(w.now+w.rCtrl.Range(500e6, 1500e6), evPlaced)
		e.cli = int32(p.idx)
	}
}

func itoa(k int) string { return string(rune('0' + k)) }

// placedTimer is an evPlaced event: publisher cli's next request (inc 0),
// or the timeout of its request inc.
func (w *World) placedTimer(e *event) {
	p := w.pubs[e.cli]
	if e.inc != 0 {
		if p.waiting != core.ClientID(e.inc) {
			return // answered
		}
		w.placedEnd(p, core.Unknown, 0, 0)
		p.owner = 0
	}
	w.placedSend(p)
}

// placedSend sends p's next request: a topology request when it does not
// know the owner, else a publish.
func (w *World) placedSend(p *placedPub) {
	if p.waiting != 0 || !w.working {
		return
	}
	if len(w.script) > 0 && p.owner != 0 {
		// A scripted publish: at its slot of the rate (the publishers of
		// a queue start a quarter gap apart); none while stopped.
		gap, next := w.scriptGap(p.name, p.of)
		if gap != 0 && p.nextNs == 0 {
			p.nextNs = w.now + int64(p.slot)*gap/int64(p.of)
		}
		if gap == 0 || w.now < p.nextNs {
			at := next
			if gap != 0 && (at == 0 || p.nextNs < at) {
				at = p.nextNs
			}
			if at != 0 {
				w.schedule1(at, evPlaced).cli = int32(p.idx)
			}
			return
		}
		p.nextNs = max(p.nextNs, w.now-gap) + gap // late by more than a gap: from now
	}
	if p.owner != 0 && !w.brokers[p.owner-1].up {
		p.owner = 0 // its connection refused at once: where does the queue live now?
	}
	p.reqs++
	cid := placedConnBase + core.ClientID(p.idx)<<20 + core.ClientID(p.reqs&(1<<20-1))
	p.waiting = cid
	to := p.owner
	var req core.Request
	if to == 0 {
		p.asking = true
		to = core.NodeID(1 + w.rCtrl.Intn(len(w.brokers)))
		// A connection to a broker whose process is gone is refused at
		// once (a reset), not left to time out: ask the next one up.
		for k := 0; k < len(w.brokers) && !w.brokers[to-1].up; k++ {
			to = to%core.NodeID(len(w.brokers)) + 1
		}
		req = core.Request{Kind: core.ReqTopology, ID: p.reqs, Body: []byte(p.name)}
	} else {
		p.asking = false
		p.seq++
		p.key = uint64(1000+p.idx)<<40 | p.seq
		n := int(w.rCtrl.Range(int64(w.prof.BodyBytesMin), int64(w.prof.BodyBytesMax)))
		body := w.publishBody(max(n, 8))
		binary.LittleEndian.PutUint64(body, p.key)
		w.checker.PublishStarted(p.key, len(body))
		req = core.Request{Kind: core.ReqPublish, ID: p.reqs, Queue: p.queue, Body: body}
	}
	p.to = to
	b := w.brokers[to-1]
	e := w.schedule1(w.now+w.ctrlDelay(), evRequest)
	e.node, e.inc, e.from, e.req = int32(to-1), b.inc, core.NodeID(cid), req
	t := w.schedule1(w.now+placedTimeoutNs, evPlaced)
	t.cli, t.inc = int32(p.idx), uint64(cid)
}

// placedPubOf returns the placed publisher whose request connection c is.
func (w *World) placedPubOf(c core.ClientID) *placedPub {
	if c < placedConnBase || c >= adminConnBase {
		return nil
	}
	k := int((c - placedConnBase) >> 20)
	if k >= len(w.pubs) || w.pubs[k].waiting != c {
		return nil
	}
	return w.pubs[k]
}

// placedReply is a broker's answer to a placed publisher, judged as it
// leaves the broker.
func (w *World) placedReply(p *placedPub, eff *core.Effect) {
	if p.asking {
		p.waiting = 0
		if eff.Outcome == core.Confirmed {
			p.queue, p.owner = eff.Queue, core.NodeID(eff.Offset)
		}
	} else {
		if eff.Outcome == core.Confirmed {
			w.checker.ConfirmEmitted(w.now, eff.Queue, eff.Offset)
			if p := w.placedByID[eff.Queue]; p != nil && p.isr {
				w.mark(MarkISRConfirm)
			}
		}
		if eff.Outcome == core.Failed && strings.Contains(eff.Reason, "below min_insync") {
			w.mark(MarkISRRefused)
		}
		w.placedEnd(p, eff.Outcome, eff.Queue, eff.Offset)
		if eff.Outcome != core.Confirmed {
			p.owner = 0 // moved, fenced or gone: ask again
		}
	}
	if len(w.script) > 0 {
		w.placedSend(p) // at its rate (placedSend waits out the gap)
		return
	}
	w.schedule1(w.now+w.rCtrl.Range(placedGapNs/2, 3*placedGapNs/2), evPlaced).cli = int32(p.idx)
}

// placedEnd ends p's request: a publish's outcome goes to the checker.
func (w *World) placedEnd(p *placedPub, o core.Outcome, q core.QueueID, offset uint64) {
	p.waiting = 0
	if p.asking {
		return
	}
	w.checker.PublishEnded(w.now, p.key, o, q, offset)
	switch o {
	case core.Confirmed:
		p.stats.confirmed++
	case core.Failed:
		p.stats.failed++
	default:
		p.stats.unknown++
	}
}
