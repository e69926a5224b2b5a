package world

import "github.com/sluicemq/sluice/core"

type evKind uint8

const (
	evMsg           evKind = iota + 1 // a peer message reaches node
	evStorage                         // the host runs the head storage op of (node, log q)
	evTick                            // node's deadline
	evRequest                         // a client request reaches node
	evClientGone                      // a closed connection's notice reaches node
	evReply                           // a reply or delivery reaches a client
	evPublish                         // a publisher's next publish
	evAck                             // a consumer acks a delivery
	evConnect                         // a client (re)connects
	evConsumerLoss                    // a consumer drops its connection
	evFault                           // a scheduled fault strikes (q: its index)
	evRestart                         // a crashed broker restarts
	evResume                          // a paused broker continues; a full disk frees
	evPhase                           // the workload phase ends
	evDrainCheck                      // is the drain's work done?
	evClose                           // a dead process's connection closes, after its last reply
	evTear                            // an armed torn-sector power loss strikes during a sync
	evAdmin                           // the operator's next metadata request (inc 0), or its timeout (inc: its seq)
	evPeerLost                        // node's connection to broker from (its process q) closed and a reconnect failed
	evPlaced                          // placed publisher cli's next request (inc 0), or its timeout (inc: the request's connection)
	evAskTimeout                      // client cli's topology request (connection inc) has had no answer
	evCandidateKill                   // candidate-dies strikes node's process inc, in queue from's recovery (q: its restart in ms, -1 never)
	evDrainKill                       // a drain fault's maintenance restart kills node's process inc (q: its restart in ms)
	evStaleTail                       // a stale-tail fault's next stage (inc: the fault's seq), or its next try (inc 0; q: tries left, t0: its instant)
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
	t0   int64  // evReply, evMsg: when the broker sent it
	eff  core.Effect
	req  core.Request
}

// heapEntry is one scheduled event in the heap: its ordering key held
// inline, so that sifting compares neighbouring entries instead of reaching
// into the slab's large events.
type heapEntry struct {
	at  int64
	seq uint64
	i   int32 // slab index
}

type eventHeap struct {
	slab []event
	free []int32
	heap []heapEntry
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

// less orders by (at, seq): a total order, so the pop order does not
// depend on how the heap is arranged.
func (a *heapEntry) less(b *heapEntry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// push schedules slab entry i at its instant (set before the push, never
// changed after).
func (h *eventHeap) push(i int32) {
	h.seq++
	h.pushSeq(i, h.seq)
}

// reserve sets aside n sequence numbers, the first returned, for events
// pushed later with pushSeq (which then order as if pushed now).
func (h *eventHeap) reserve(n int) uint64 {
	first := h.seq + 1
	h.seq += uint64(n)
	return first
}

// pushSeq schedules slab entry i with sequence number seq: a new one from
// push, or one reserve set aside.
func (h *eventHeap) pushSeq(i int32, seq uint64) {
	h.slab[i].seq = seq
	x := heapEntry{at: h.slab[i].at, seq: seq, i: i}
	h.heap = append(h.heap, x)
	hp := h.heap
	j := len(hp) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !x.less(&hp[p]) {
			break
		}
		hp[j] = hp[p]
		j = p
	}
	hp[j] = x
}

func (h *eventHeap) pop() int32 {
	hp := h.heap
	top := hp[0].i
	n := len(hp) - 1
	x := hp[n]
	hp = hp[:n]
	h.heap = hp
	if n == 0 {
		return top
	}
	j := 0
	for {
		c := 2*j + 1
		if c >= n {
			break
		}
		if c+1 < n && hp[c+1].less(&hp[c]) {
			c++
		}
		if !hp[c].less(&x) {
			break
		}
		hp[j] = hp[c]
		j = c
	}
	hp[j] = x
	return top
}

// release returns a popped event's slot, dropping its references.
func (h *eventHeap) release(i int32) {
	h.slab[i] = event{}
	h.free = append(h.free, i)
}
