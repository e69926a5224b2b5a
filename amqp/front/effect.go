package front

import (
	"fmt"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/core/seam"
)

// ConnID names one accepted socket; the driver chooses it and never reuses
// it.
type ConnID uint64

// EffectKind says what the driver must do.
type EffectKind uint8

const (
	// EfWrite: write Bytes to connection Conn's socket.
	EfWrite EffectKind = iota + 1
	// EfClose: close Conn's socket after the writes before it (Reason says
	// why; ClientCloses: the last write is a close-ok, whose receiver, the
	// client, closes the socket: wait a bounded while for that first). The
	// connection is gone; nothing more names it.
	EfClose
	// EfPauseRead and EfResumeRead: stop or resume reading Conn's socket.
	EfPauseRead
	EfResumeRead
	// EfRequest: pass Req from core client Client to the host of broker
	// Node (0: this broker's own host; another: forward it there).
	EfRequest
	// EfClientGone: core client Client is gone (Host.ClientGone) at broker
	// Node (0: this broker).
	EfClientGone
	// EfTimer: call Tick at or after AtNs; only the latest counts.
	EfTimer
)

// Effect is one thing the driver must do.
type Effect struct {
	Kind         EffectKind
	Conn         ConnID
	Bytes        []byte
	Reason       string
	ClientCloses bool
	Client       seam.ClientID
	Req          seam.Request
	// Node is the broker an EfRequest or EfClientGone is for: 0 for this
	// one, another for the broker the request is forwarded to (Forward).
	Node seam.NodeID
	AtNs int64
}

// String is the effect's one-line text form.
func (e *Effect) String() string {
	switch e.Kind {
	case EfWrite:
		return fmt.Sprintf("write conn=%d bytes=%d", e.Conn, len(e.Bytes))
	case EfClose:
		if e.ClientCloses {
			return fmt.Sprintf("close conn=%d reason=%q client-closes", e.Conn, e.Reason)
		}
		return fmt.Sprintf("close conn=%d reason=%q", e.Conn, e.Reason)
	case EfPauseRead:
		return fmt.Sprintf("read-pause conn=%d", e.Conn)
	case EfResumeRead:
		return fmt.Sprintf("read-resume conn=%d", e.Conn)
	case EfRequest:
		in := seam.Input{Kind: seam.InClient, Client: e.Client, Req: e.Req}
		if e.Node != 0 {
			return fmt.Sprintf("request node=%d %s", e.Node, in.String())
		}
		return "request " + in.String()
	case EfClientGone:
		if e.Node != 0 {
			return fmt.Sprintf("client-gone node=%d c=%d", e.Node, e.Client)
		}
		return fmt.Sprintf("client-gone c=%d", e.Client)
	case EfTimer:
		return fmt.Sprintf("timer at=%d", e.AtNs)
	}
	return fmt.Sprintf("effect?%d", e.Kind)
}

// Config configures a front.
type Config struct {
	// Conn is every connection's configuration (users, limits).
	Conn conn.Config
	// Node is this broker's node id; Process its process instance (the
	// one it registered in the metadata: an exclusive queue's owner is a
	// connection of it).
	Node    seam.NodeID
	Process uint64
	// Forward serves a queue owned by another broker by forwarding its
	// requests there (EfRequest and EfClientGone with Node), and follows
	// a changed owner: a publish the owner it went to refused without
	// storing it (not the owner, no such queue, fenced) waits for the
	// topology to name a serving owner again, up to RouteWaitNs, and is
	// sent there; a declaration is sent to the metadata leader the
	// refusal names. Without it (a single broker) a queue owned elsewhere
	// is refused and a fenced queue's publishes are nacked.
	Forward bool
	// RouteWaitNs bounds how long a publish waits for its queue to have
	// a serving owner again (Forward only). Default 30 s.
	RouteWaitNs int64
	// RouteRetryNs is the wait between two topology questions while a
	// publish waits for an owner (Forward only). Default 10 ms.
	RouteRetryNs int64
	// Brokers is how many brokers can hold a queue's replicas: a
	// declaration asking for more is refused (406) rather than left
	// declared and never placed.
	Brokers int
	// RetryNs is the wait before asking again (not the leader yet, not
	// placed yet, epoch not ready). Default 2 ms.
	RetryNs int64
	// DeclareTimeoutNs bounds a queue.declare's wait for the controller.
	// Default 10 s.
	DeclareTimeoutNs int64
	// Serves says whether the node runs a queue's replica group, unfenced
	// (core.Node.Serves, a pure read of the core): a queue the topology
	// places here is promised to a client only then. Nil: always.
	Serves func(seam.QueueID) bool
	// PrefetchMax is the core's largest prefetch (seam.Limits): a no-ack
	// subscription asks for it. Default seam.DefaultLimits.PrefetchMax.
	PrefetchMax int
}

func (c Config) withDefaults() Config {
	if c.RetryNs <= 0 {
		c.RetryNs = 2_000_000
	}
	if c.DeclareTimeoutNs <= 0 {
		c.DeclareTimeoutNs = 10_000_000_000
	}
	if c.RouteWaitNs <= 0 {
		c.RouteWaitNs = 30_000_000_000
	}
	if c.RouteRetryNs <= 0 {
		c.RouteRetryNs = 10_000_000
	}
	if c.PrefetchMax <= 0 {
		c.PrefetchMax = seam.DefaultLimits.PrefetchMax
	}
	if c.Brokers <= 0 {
		c.Brokers = 1
	}
	return c
}
