package front

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// Queues that end with their consumers or connection (RabbitMQ's
// auto-delete and exclusive queues). The catalogue keeps each queue's
// lifetime (metadata.Lifetime) and a topology answer carries it; this
// front deletes what ends here:
//
//   - an exclusive queue is its connection's: declared with this
//     broker as its home and one replica, refused to every other
//     connection (405 RESOURCE_LOCKED) but for publishes, and deleted
//     when its connection ends. (The metadata deletes it too when this
//     process ends: its broker down, or a new process registered.)
//   - an auto-delete queue goes once its last consumer goes: when a
//     subscription to it ends here, its owner is asked for its count,
//     and no consumer left, the incarnation it counted is deleted.
//
// These deletions outlive the connection that caused them: the front's
// janitor runs them, as a core client of its own, retried while the
// metadata has no leader or the outcome is unknown, for at most
// DeclareTimeoutNs.

// janitorJobsMax bounds the janitor's jobs; past it a deletion is not
// started (and counted in Stats.JanitorDropped): an auto-delete queue
// then stays until deleted, an exclusive one until its process ends.
const janitorJobsMax = 4096

// janJob is one deletion the janitor runs: of queue name's incarnation
// (known), or of whatever incarnation its owner counts no consumers of
// (count: first a ReqCount to node).
type janJob struct {
	name        string
	queue       seam.QueueID
	node        seam.NodeID // where its count goes
	incarnation uint64
	count       bool
	leader      seam.NodeID
	reqID       uint64
	atNs        int64 // asked again then (0: in flight)
	untilNs     int64
}

// janitor is the front's own core client and its jobs, by request id
// while in flight.
type janitor struct {
	client seam.ClientID
	lastID uint64
	jobs   []*janJob
}

// ownsExclusive says whether connection c is the owner life names.
func (f *Front) ownsExclusive(c *connState, life *seam.QueueLife) bool {
	return life.OwnerNode == f.cfg.Node && life.OwnerProcess == f.cfg.Process && life.OwnerConn == uint64(c.id)
}

// lockedFor says whether queue name is exclusive to a connection other
// than c (by the lifetime its last topology answer carried).
func (f *Front) lockedFor(c *connState, name string) bool {
	life := f.lives[name]
	return life != nil && life.Exclusive && !f.ownsExclusive(c, life)
}

// lockedText is RabbitMQ's words for a queue exclusive to another
// connection.
func lockedText(name string) string {
	return fmt.Sprintf("cannot obtain exclusive access to locked queue '%s' in vhost '/'", name)
}

// learnLife records the lifetime a topology answer for queue name
// carries.
func (f *Front) learnLife(name string, e *seam.Effect) {
	if e.Life == nil {
		delete(f.lives, name)
		return
	}
	if len(f.lives) >= livesMax {
		if _, known := f.lives[name]; !known {
			return // at the limit: such a queue is treated as durable here
		}
	}
	life := *e.Life
	f.lives[name] = &life
}

// livesMax bounds the lifetimes the front remembers.
const livesMax = 1 << 16

// declareLife fills in a declaration's lifetime from the client's
// properties: exclusive to connection c (with this broker its home, one
// replica), auto-delete, non-durable, server-named.
func (f *Front) declareLife(c *connState, q conn.QueueSpec, cmd *metadata.Command) {
	cmd.Life.AutoDelete = q.AutoDelete
	cmd.Life.Transient = !q.Durable
	if q.Exclusive {
		cmd.Life.Exclusive, cmd.Life.OwnerNode, cmd.Life.OwnerProcess, cmd.Life.OwnerConn = true, f.cfg.Node, f.cfg.Process, uint64(c.id)
		cmd.Life.Home = f.cfg.Node
		if q.Replicas == 0 {
			cmd.Replicas, cmd.MinInsync = 1, 1
		}
	}
	cmd.ServerNamed = q.ServerNamed
	if cmd.Life != (metadata.Lifetime{}) || cmd.ServerNamed {
		cmd.Kind = metadata.DeclareLifetime
	}
}

// subscriptionEnded starts the auto-delete check of queue name, whose
// subscription here ended.
func (f *Front) subscriptionEnded(name string) {
	life := f.lives[name]
	if life == nil || !life.AutoDelete {
		return
	}
	q, ok := f.names[name]
	if !ok {
		return
	}
	node := f.routes[q]
	f.janStart(&janJob{name: name, queue: q, node: node, count: true})
}

// connectionEnded deletes the exclusive queues connection c declared.
func (f *Front) connectionEnded(c *connState) {
	for _, x := range c.exclusive {
		f.janStart(&janJob{name: x.name, incarnation: x.incarnation})
	}
}

func (f *Front) janStart(j *janJob) {
	if len(f.jan.jobs) >= janitorJobsMax {
		f.stats.JanitorDropped++
		return
	}
	j.untilNs = f.nowNs + f.cfg.DeclareTimeoutNs
	f.jan.jobs = append(f.jan.jobs, j)
	f.janAsk(j)
}

// janAsk sends job j's next request: the count, or the deletion.
func (f *Front) janAsk(j *janJob) {
	f.jan.lastID++
	j.reqID, j.atNs = f.jan.lastID, 0
	req := seam.Request{ID: j.reqID, Kind: seam.ReqCount, Queue: j.queue}
	node := j.node
	if !j.count {
		cmd := metadata.Command{Kind: metadata.DeleteQueue, Queue: j.name, Incarnation: j.incarnation}
		req = seam.Request{ID: j.reqID, Kind: seam.ReqMeta, Body: cmd.Encode(nil)}
		node = j.leader
	}
	if node == f.cfg.Node {
		node = 0
	}
	f.out = append(f.out, Effect{Kind: EfRequest, Client: f.jan.client, Req: req, Node: node})
}

// janDone ends job j.
func (f *Front) janDone(j *janJob) {
	f.jan.jobs = slices.DeleteFunc(f.jan.jobs, func(x *janJob) bool { return x == j })
}

// janitorReply takes the core's answer to a janitor request.
func (f *Front) janitorReply(e *seam.Effect) {
	i := slices.IndexFunc(f.jan.jobs, func(j *janJob) bool { return j.reqID == e.ReqID && j.atNs == 0 })
	if i < 0 {
		return
	}
	j := f.jan.jobs[i]
	switch {
	case j.count && e.Outcome == seam.Confirmed:
		if e.Count > 0 || e.Tag == 0 {
			f.janDone(j) // a consumer came meanwhile: it lives on
			return
		}
		j.count, j.incarnation = false, e.Tag
		f.janAsk(j)
	case j.count:
		f.janDone(j) // not served there (moved, fenced, gone): nothing counted to delete
	case e.Outcome == seam.Confirmed, e.Outcome == seam.Failed && e.Offset != 0:
		// Deleted, or refused committed (deleted already, or a newer
		// incarnation): done either way.
		delete(f.names, j.name)
		delete(f.lives, j.name)
		f.janDone(j)
	case f.cfg.Forward && e.Outcome == seam.Failed && f.leaderMovedTo(&j.leader, e.Reason):
		f.janAsk(j)
	case e.Outcome == seam.Unknown, strings.HasPrefix(e.Reason, "not the leader"):
		j.leader = 0
		if f.nowNs+f.cfg.RetryNs > j.untilNs {
			f.janDone(j)
			return
		}
		j.atNs = f.nowNs + f.cfg.RetryNs
	default:
		f.janDone(j)
	}
}

// janitorDue asks again the jobs whose time came, and gives up those past
// their time with no answer.
func (f *Front) janitorDue() {
	for _, j := range slices.Clone(f.jan.jobs) {
		switch {
		case j.atNs > 0 && j.atNs <= f.nowNs:
			f.janAsk(j)
		case j.atNs == 0 && j.untilNs <= f.nowNs:
			f.janDone(j) // no answer in time (a broker gone)
		}
	}
}

// janitorTimer is the janitor's next deadline (0: none).
func (f *Front) janitorTimer() int64 {
	at := int64(0)
	for _, j := range f.jan.jobs {
		d := j.atNs
		if d == 0 {
			d = j.untilNs
		}
		if at == 0 || d < at {
			at = d
		}
	}
	return at
}

// refuseLocked answers operation op on queue name, exclusive to another
// connection, with RabbitMQ's 405.
func (f *Front) refuseLocked(c *connState, op conn.OpID, name string) {
	f.input(c, conn.InResult{NowNs: f.nowNs, Op: op, Code: wire.ResourceLocked, Text: lockedText(name)})
}
