package driver

import (
	"github.com/sluicemq/sluice/core"
)

// Env is the world a driver executes effects in.
type Env interface {
	// Send starts sending msg, a message of group g, from node to peer to.
	// msg is valid only during the call: copy what must outlive it.
	Send(from, to core.NodeID, g core.GroupID, msg []byte)
	// Client passes a reply or delivery effect to the client it names.
	Client(from core.NodeID, e *core.Effect)
	// Storage starts a storage effect on the node's log; its completion
	// comes back later as an InStorage input through Driver.Step.
	Storage(node core.NodeID, e *core.Effect)
	// Deadline asks for an InTick at or after atNs.
	Deadline(node core.NodeID, atNs int64)
}

// Driver runs one broker process.
type Driver struct {
	node   core.NodeID
	broker *core.Node
	env    Env
	trace  *Trace
}

// New returns a driver for a new process of cfg.Node. trace may be nil.
func New(cfg core.Config, env Env, trace *Trace) *Driver {
	return &Driver{node: cfg.Node, broker: core.New(cfg), env: env, trace: trace}
}

// Node returns the driver's node id.
func (d *Driver) Node() core.NodeID { return d.node }

// Step passes one input to the core and executes the effects it returns.
func (d *Driver) Step(in *core.Input) {
	if d.trace != nil {
		d.trace.end(in.AppendText(d.trace.begin(in.NowNs, d.node, '<'), core.MsgTexts))
	}
	effects := d.broker.Step(in)
	for i := range effects {
		e := &effects[i]
		if d.trace != nil {
			d.trace.end(e.AppendText(d.trace.begin(in.NowNs, d.node, '>'), core.MsgTexts))
		}
		switch e.Kind {
		case core.EfSend:
			d.env.Send(d.node, e.To, e.Group, e.Data)
		case core.EfStorage:
			d.env.Storage(d.node, e)
		case core.EfReply, core.EfDeliver:
			d.env.Client(d.node, e)
		case core.EfDeadline:
			d.env.Deadline(d.node, e.AtNs)
		default:
			panic("driver: unknown effect kind")
		}
	}
}
