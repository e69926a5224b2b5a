package world

import "github.com/sluicemq/sluice/core"

type evKind uint8

const (
	evMsg          evKind = iota + 1 // a peer message reaches node
	evStorage                        // the host runs the head storage op of (node, log q)
	evTick                           // node's deadline
	evRequest                        // a client request reaches node
	evClientGone                     // a closed connection's notice reaches node
	evReply                          // a reply or delivery reaches a client
	evPublish                        // a publisher's next publish
	evAck                            // a consumer acks a delivery
	evConnect                        // a client (re)connects
	evConsumerLoss                   // a consumer drops its connection
	evFault                          // a scheduled fault strikes (q: its index)
	evRestart                        // a crashed broker restarts
	evResume                         // a paused broker continues; a full disk frees
	evPhase                          // the workload phase ends
	evDrainCheck                     // is the drain's work done?
	evClose                          // a dead process's connection closes, after its last reply
	evTear                           // an armed torn-sector power loss strikes during a sync
	evAdmin                          // the operator's next metadata request (inc 0), or its timeout (inc: its seq)
	evPeerLost                       // node's connection to broker from (its process q) closed and a reconnect failed
	evPlaced                         // placed publisher cli's next request (inc 0), or its timeout (inc: the request's connection)
)

// event is one scheduled happening. Events live in a slab; the heap orders
// slab indices by (at, seq), so equal instants keep scheduling order.
type event struct {
	at   int64
	seq  uint64
	kind evKind
	node int32 // broker index
	q    int32 // queue index within the node (storage)
	cli  int32 // client index
	from core.NodeID
	inc  uint64 // broker incarnation (or connection id) the event belongs to
	data []byte // a peer message's encoded frame
	t0   int64  // evReply: when the broker sent it
	eff  core.Effect
	req  core.Request
}

type eventHeap struct {
	slab []event
	free []int32
	heap []int32
	seq  uint64
}

// eventsMax bounds the events in flight; a run that needs more is a bug.
const eventsMax = 1 << 22

func (h *eventHeap) alloc() (int32, *event) {
	var i int32
	if n := len(h.free); n > 0 {
		i = h.free[n-1]
		h.free = h.free[:n-1]
	} else {
		if len(h.slab) >= eventsMax {
			panic("world: too many events in flight")
		}
		h.slab = append(h.slab, event{})
		i = int32(len(h.slab) - 1)
	}
	return i, &h.slab[i]
}

func (h *eventHeap) less(a, b int32) bool {
	ea, eb := &h.slab[a], &h.slab[b]
	if ea.at != eb.at {
		return ea.at < eb.at
	}
	return ea.seq < eb.seq
}

func (h *eventHeap) push(i int32) {
	h.seq++
	h.slab[i].seq = h.seq
	h.heap = append(h.heap, i)
	j := len(h.heap) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(h.heap[j], h.heap[p]) {
			break
		}
		h.heap[j], h.heap[p] = h.heap[p], h.heap[j]
		j = p
	}
}

func (h *eventHeap) pop() int32 {
	top := h.heap[0]
	n := len(h.heap) - 1
	h.heap[0] = h.heap[n]
	h.heap = h.heap[:n]
	j := 0
	for {
		c := 2*j + 1
		if c >= n {
			break
		}
		if c+1 < n && h.less(h.heap[c+1], h.heap[c]) {
			c++
		}
		if !h.less(h.heap[c], h.heap[j]) {
			break
		}
		h.heap[j], h.heap[c] = h.heap[c], h.heap[j]
		j = c
	}
	return top
}

// release returns a popped event's slot, dropping its references.
func (h *eventHeap) release(i int32) {
	h.slab[i] = event{}
	h.free = append(h.free, i)
}
