package world

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/sim/check"
	"github.com/sluicemq/sluice/sim/linear"
	"github.com/sluicemq/sluice/sim/metamem"
	"github.com/sluicemq/sluice/sim/prng"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The metadata group in the simulator. The first 1, 3 or 5 brokers (as
// many as the cluster has, up to five, odd) are its voters; each keeps its
// metadata on a metamem disk that outlives its processes and loses what a
// power loss takes (an unsynced batch whole, or kept whole). An operator's
// client sets a setting now and then, at the broker it believes leads,
// following "not the leader" redirects; the checkers (sim/check/meta.go)
// judge what the brokers applied, what the operator was told and what the
// disks hold.

// Controller timing in the simulator: a raft tick of 100 ms, the leader's
// heartbeat every 2 ticks, and a campaign after 500 ms plus a jitter of up
// to 500 ms without a leader. (A 50 ms tick cost the standard world 13 %
// of its speed; 100 ms costs 5 %.)
var ctrlTiming = struct {
	TickNs, CampaignTimeoutNs int64
	HeartbeatTicks            int
}{TickNs: 100e6, CampaignTimeoutNs: 500e6, HeartbeatTicks: 2}

// adminGapNs is the mean gap between two operator requests in the workload
// phase; adminTimeoutNs how long the operator waits for an answer before
// it gives up on one (the outcome then unknown) and sends the next.
const (
	adminGapNs     = 400e6
	adminTimeoutNs = 2e9
)

// adminConnBase is the first of the operator's connection ids.
const adminConnBase core.ClientID = 1 << 31 // within the events' 32-bit from field

// ctrlVoters returns the metadata group's voters for a cluster of n
// brokers: brokers 1.. as many as n allows of 5, 3 or 1.
func ctrlVoters(n int) []uint64 {
	k := 1
	switch {
	case n >= 5:
		k = 5
	case n >= 3:
		k = 3
	}
	vs := make([]uint64, k)
	for i := range vs {
		vs[i] = uint64(i + 1)
	}
	return vs
}

// metaStore drives a metamem store in the host's two steps: Write starts
// a batch, Sync completes the last one started.
type metaStore struct {
	s    *metamem.Store
	last metamem.Ticket
}

func (m *metaStore) Load() (meta.State, error) { return m.s.Load() }

func (m *metaStore) Write(b *meta.Batch) error {
	t, err := m.s.Start(b)
	if err == nil {
		m.last = t
	}
	return err
}

func (m *metaStore) Sync() error { return m.s.Complete(m.last) }

// admin is the operator's client of the metadata group.
type admin struct {
	seq uint64 // requests sent
	cid core.ClientID
	cmd []byte
	// arriveNs: when the request outstanding reaches its broker (a
	// leader proposes it then; 0: not known, see adminSend); prevCmd:
	// the request before's bytes
	arriveNs int64
	prevCmd  []byte
	// uncertain: the bytes of the latest requests whose outcome was
	// unknown (a timeout, an unknown answer), at most adminUncertainMax:
	// an old leader may still commit any of them, so a request with the
	// same bytes is not judged by when it arrived either (seed 5309: a
	// declaration, a deletion, the declaration again)
	uncertain [][]byte
	target    int  // broker index it sends to next
	waiting   bool // a request is outstanding
	probing   bool // the drain's probe is the request outstanding
	probed    bool // a probe was confirmed after the heal
	stats     struct{ confirmed, failed, rejected, unknown, redirects uint64 }
	// incarnations: per operator queue, the incarnation its last confirmed
	// declaration reported
	incarnations [adminQueues]uint64
	// declNext: the next of the profile's queues to declare (they come
	// first, and again in the drain until each committed); declaring: the
	// request outstanding is one of them; drawn: commands the swarm's
	// random operator drew
	declNext  int
	declaring bool
	drawn     int
	// scriptNext: the scripted operator's next step (operator.go)
	scriptNext int
	// drains: the drain fault's requests not yet committed, in the order
	// they were asked for (operator.go); drainOut: the request outstanding
	// is one of them; asleep: the operator sent nothing and set no timer
	// (a scripted operator past its last step), so a drain wakes it
	drains   []drainStep
	drainOut bool
	asleep   bool
}

// ctrlSetup gives brokers their metadata disks and draw streams.
func (w *World) ctrlSetup() {
	w.voters = ctrlVoters(len(w.brokers))
	for _, b := range w.brokers {
		b.draws = prng.New(prng.Derive(w.seed, "draws-n"+strconv.FormatUint(uint64(b.id), 10)))
		// Every broker is a member: a voter, or a learner that follows
		// the committed metadata.
		b.meta = metamem.NewDisk()
		// Its storage instance: one per data directory, and a simulated
		// broker keeps its disk for the whole run.
		b.storage = prng.Derive(w.seed, "storage-n"+strconv.FormatUint(uint64(b.id), 10)) | 1
	}
	w.schedule1(w.rCtrl.Range(100e6, 500e6), evAdmin)
}

// ctrlImageEntries is the simulated metadata groups' ImageEntries.
const ctrlImageEntries = 16

// ctrlLearners returns the brokers that are not voters.
func (w *World) ctrlLearners() []uint64 {
	var ls []uint64
	for _, b := range w.brokers {
		if uint64(b.id) > uint64(len(w.voters)) {
			ls = append(ls, uint64(b.id))
		}
	}
	return ls
}

// ctrlConfig opens b's metadata store for a new process: the host's store
// and the group's configuration, or nils for a broker that is no voter.
func (w *World) ctrlConfig(b *broker) (*ctrl.Config, *metaStore) {
	if b.meta == nil {
		return nil, nil
	}
	s, err := b.meta.Open()
	if err != nil {
		panic(fmt.Sprintf("world: n%d: %v", b.id, err))
	}
	cfg := ctrl.DefaultConfig(uint64(b.id), w.voters)
	cfg.Learners = w.ctrlLearners()
	cfg.TickNs, cfg.HeartbeatTicks, cfg.CampaignTimeoutNs = ctrlTiming.TickNs, ctrlTiming.HeartbeatTicks, ctrlTiming.CampaignTimeoutNs
	cfg.Bugs = w.prof.Bugs
	// An image every 16 applied entries: runs hold a few hundred, so the
	// swarm compacts logs, sends images to lagging followers and starts
	// processes from images (the daemon's default is 10,000).
	cfg.ImageEntries = ctrlImageEntries
	w.checker.MetaStarted(b.id)
	return &cfg, &metaStore{s: s}
}

// adminSend sends the operator's next request (or its drain probe).
func (w *World) adminSend() {
	a := &w.admin
	if a.waiting {
		return
	}
	declaring := a.declNext < len(w.prof.Queues)
	drain, drainNextNs := -1, int64(0)
	if !declaring {
		drain, drainNextNs = w.drainDue()
	}
	if !w.working && a.probed && !declaring && drain < 0 && !w.scriptOwed() {
		a.asleep = true
		return
	}
	scripted := w.scriptRuns() && !declaring && drain < 0
	var c metadata.Command
	switch {
	case declaring:
		q := w.prof.Queues[a.declNext]
		c = metadata.Command{Kind: metadata.DeclareQueue, Queue: QueueName(a.declNext), Replicas: q.Replicas, Policy: q.Policy, MinInsync: q.minInSync()}
	case drain >= 0:
		c = a.drains[drain].cmd
	case scripted:
		var due bool
		var nextNs int64
		if c, due, nextNs = w.scriptCommand(); !due {
			if nextNs == 0 || (drainNextNs != 0 && drainNextNs < nextNs) {
				nextNs = drainNextNs
			}
			if nextNs != 0 {
				w.schedule1(nextNs, evAdmin)
			} else {
				a.asleep = true
			}
			return // nothing else to send until the drain's probe
		}
	}
	b := w.brokers[a.target%len(w.voters)]
	a.seq++
	a.waiting, a.probing, a.declaring = true, !w.working && drain < 0 && !scripted, declaring
	a.drainOut, a.asleep = drain >= 0, false
	// Its connections have ids of their own, apart from the queue
	// clients' (whose ids stay as they were before the group came).
	a.cid = adminConnBase + core.ClientID(a.seq)
	if !scripted && !declaring && drain < 0 {
		c = w.adminCommand()
	}
	a.cmd = c.Encode(a.cmd[:0])
	same := bytes.Equal(a.prevCmd, a.cmd) || slices.ContainsFunc(a.uncertain, func(u []byte) bool { return bytes.Equal(u, a.cmd) })
	a.prevCmd = append(a.prevCmd[:0], a.cmd...)
	at := w.now + w.ctrlDelay()
	a.arriveNs = at
	if same || !w.working {
		// The same bytes as the last request (which an old leader may
		// still commit), or the drain's probes: when it was proposed is
		// not known (hold-ended does not judge it).
		a.arriveNs = 0
	}
	e := w.schedule1(at, evRequest)
	e.node, e.inc, e.from = int32(b.id-1), b.inc, core.NodeID(a.cid)
	e.req = core.Request{Kind: core.ReqMeta, ID: a.seq, Body: a.cmd}
	t := w.schedule1(w.now+adminTimeoutNs, evAdmin)
	t.inc = a.seq
}

// drawHoldMs draws a follower-loss hold for the swarm's operator: in a
// third of the draws none, in a third 0.5 to 6 s (held, then replaced
// within a run), in a third 20 s to 5 min (a run ends with its losses
// held: their copies are left behind, away, and the rest serve).
func (w *World) drawHoldMs() int64 {
	switch w.rCtrl.Intn(3) {
	case 0:
		return 0
	case 1:
		return w.rCtrl.Range(500, 6000)
	}
	return w.rCtrl.Range(20_000, 300_000)
}

// adminQueues is how many queue names the operator declares and deletes:
// few, so that declarations and deletions of one name race.
const adminQueues = 3

// adminCommand draws the operator's next command: a setting (one that
// leaves the liveness timing alone), or a declaration or deletion of one of
// a few queues (a deletion names the incarnation the operator last learned
// for that name, which may be stale; one declaration in eight asks for
// other arguments, which the catalogue refuses when the queue exists).
func (w *World) adminCommand() metadata.Command {
	a, r := &w.admin, w.rCtrl
	if !w.working {
		// The drain's probe: a setting written with the value it has (as
		// the world followed it), which changes nothing.
		return metadata.Command{Kind: metadata.SetSetting, Key: metadata.Settings[metadata.FollowerLossHoldMs].Key, Value: w.hold.holdMs}
	}
	a.drawn++
	if a.drawn == 1 {
		// A run lasts seconds: a liveness expiry of 1 to 4 s lets it
		// see brokers expire (the default is 9 s).
		return metadata.Command{Kind: metadata.SetSetting, Key: metadata.Settings[metadata.LivenessExpiryMs].Key, Value: r.Range(1000, 4000)}
	}
	lag := metadata.Command{Kind: metadata.SetSetting, Key: metadata.Settings[metadata.ReplicaLagTimeMaxMs].Key, Value: r.Range(300, 5000)}
	if a.drawn == 2 {
		// And a lag time of 0.3 to 5 s lets it see followers leave the
		// in-sync set and come back (the default is 30 s).
		return lag
	}
	hold := metadata.Command{Kind: metadata.SetSetting, Key: metadata.Settings[metadata.FollowerLossHoldMs].Key, Value: w.drawHoldMs()}
	if a.drawn == 3 {
		// And a follower-loss hold of its own draw (the default of 5
		// min holds every loss for the whole run).
		return hold
	}
	k := r.Intn(adminQueues)
	name := "sim-q" + strconv.Itoa(k)
	switch r.Intn(3) {
	case 0:
		if r.Chance(1, 2) {
			return lag
		}
		return hold
	case 1:
		c := metadata.Command{Kind: metadata.DeclareQueue, Queue: name, Replicas: 1 + k, Policy: core.MajorityDurable, MinInsync: 1}
		if r.Chance(1, 8) {
			c.Replicas = 5
		}
		if k%2 == 1 {
			// Odd queues confirm at the high watermark and need a
			// majority in sync to admit publishes.
			c.Policy, c.MinInsync = core.ISR, c.Replicas/2+1
		}
		return c
	}
	inc := a.incarnations[k]
	if inc == 0 {
		inc = 1 + uint64(r.Intn(4)) // never declared as far as it knows: a guess
	}
	return metadata.Command{Kind: metadata.DeleteQueue, Queue: name, Incarnation: inc}
}

// adminLearn keeps the incarnation a confirmed declaration reports.
func (w *World) adminLearn(c *metadata.Command, result string) {
	if c.Kind != metadata.DeclareQueue {
		return
	}
	_, v, ok := strings.Cut(result, "incarnation=")
	if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil && strings.HasPrefix(c.Queue, "sim-q") {
		k, _ := strconv.Atoi(strings.TrimPrefix(c.Queue, "sim-q"))
		w.admin.incarnations[k] = n
	}
}

// adminDone moves the operator past the command it sent, once the
// metadata group committed it (confirmed, or refused by the metadata).
func (w *World) adminDone() {
	if w.admin.declaring {
		w.admin.declNext++
		return
	}
	if w.admin.drainOut {
		w.drainDone()
		return
	}
	w.scriptDone()
}

// adminUncertainMax bounds the requests of unknown outcome the operator
// remembers (admin.uncertain).
const adminUncertainMax = 16

// uncertainAdd remembers the outstanding request's bytes as one whose
// outcome is unknown.
func (a *admin) uncertainAdd() {
	if len(a.uncertain) >= adminUncertainMax {
		a.uncertain = slices.Delete(a.uncertain, 0, 1)
	}
	a.uncertain = append(a.uncertain, slices.Clone(a.cmd))
}

// adminTimer is an evAdmin event: the operator's next request, or the
// timeout of request inc.
func (w *World) adminTimer(e *event) {
	a := &w.admin
	if e.inc != 0 {
		if !a.waiting || e.inc != a.seq {
			return // answered
		}
		// No answer: the broker died or the request was lost. Its outcome
		// is unknown; try another voter.
		a.stats.unknown++
		a.uncertainAdd()
		a.waiting = false
		a.target++
	}
	w.adminSend()
}

// adminReply is a broker's answer to the operator (judged as it leaves the
// broker, like a publisher's confirm).
func (w *World) adminReply(eff *core.Effect) {
	a := &w.admin
	if !a.waiting || eff.Client != a.cid {
		return
	}
	a.waiting = false
	switch eff.Outcome {
	case core.Confirmed:
		a.stats.confirmed++
		w.adminDone()
		w.checker.MetaConfirmed(w.now, eff.Offset, a.cmd, eff.Reason)
		if c, err := metadata.Decode(a.cmd); err == nil {
			w.adminLearn(&c, eff.Reason)
		}
		if a.probing {
			a.probed = true
			if a.declNext >= len(w.prof.Queues) {
				return // the drain's operator is done
			}
		}
	case core.Failed:
		a.stats.failed++
		if eff.Offset != 0 {
			// Committed, and refused by the metadata (a conflict).
			a.stats.rejected++
			w.adminDone()
			w.checker.MetaRejected(w.now, eff.Offset, a.cmd, eff.Reason)
		} else if _, lead, ok := strings.Cut(eff.Reason, "leader="); ok {
			if n, err := strconv.Atoi(lead); err == nil && n >= 1 && n <= len(w.voters) {
				a.target = n - 1
				a.stats.redirects++
			} else {
				a.target++
			}
		}
	case core.Unknown:
		a.stats.unknown++
		a.uncertainAdd()
		a.target++
	}
	if w.scriptRuns() {
		// A scripted operator sends its next step when it is due (a
		// script that declares 90 queues at 0 s gets them in a second, not
		// in half a minute); the instant is its own (scriptCommand).
		w.schedule1(w.now+scriptGapNs, evAdmin)
		return
	}
	gap := w.rCtrl.Range(adminGapNs/2, 3*adminGapNs/2)
	if !w.working {
		gap = 100e6
	}
	w.schedule1(w.now+gap, evAdmin)
}

// scriptGapNs is the scripted operator's pause between a step's answer and
// its next request.
const scriptGapNs = 1e6

// ctrlDelay is a controller message's or request's network delay, drawn
// from the controller's own stream so that adding the controller left the
// queues' draws as they were.
func (w *World) ctrlDelay() int64 {
	d := w.rCtrl.Range(w.prof.NetLatencyUsMin, w.prof.NetLatencyUsMax) * 1000
	if w.now < w.spikeEnd {
		d *= SpikeFactor
	}
	return d
}

// ctrlLeader returns the broker whose metadata group says it leads, in the
// highest term; nil when none does. It aims faults only: no checker reads
// what the code under test says of itself.
func (w *World) ctrlLeader() *broker {
	var best *broker
	var bestTerm uint64
	for _, b := range w.brokers {
		if !b.up || b.host == nil || b.host.Exited() {
			continue
		}
		if term, _, leader, ok := b.host.Node().CtrlStatus(); ok && leader && (best == nil || term > bestTerm) {
			best, bestTerm = b, term
		}
	}
	return best
}

// ctrlSeen watches the metadata group's messages as the network carries
// them: a heartbeat or append comes from the leader of its term, and a
// leader in a later term than an earlier one's is a change of leader.
func (w *World) ctrlSeen(from core.NodeID, msg []byte) {
	typ, t, ok := ctrl.MsgTypeTerm(msg) // allocates nothing: it runs on every send
	if !ok {
		return
	}
	switch typ {
	case pb.MsgApp, pb.MsgHeartbeat:
	default:
		return
	}
	if t > w.leaderTerm {
		if w.leaderTerm != 0 {
			w.mark(MarkLeaderChange)
		}
		w.leaderTerm = t
	}
}

// peersLost is eager failover's signal: b's process (instance process)
// exited, so its peers' connections to it close, as TCP's do when a process
// dies; each peer's transport tries to reconnect, fails while b is down,
// and reports the loss. (A power loss, a partition or a pause is silent:
// no report, the expiry decides.)
func (w *World) peersLost(b *broker, process uint64) {
	w.exited[b.id] = process
	for _, p := range w.brokers {
		if p == b || !p.up {
			continue
		}
		e := w.schedule1(w.now+2*w.ctrlDelay(), evPeerLost)
		e.node, e.inc, e.from, e.q = int32(p.id-1), p.inc, b.id, int32(process)
	}
}

// peerLost delivers one peer's report, if its reconnect fails: b is still
// down, or runs another process (the reconnect reaches a new process, and
// the old one is gone all the same).
func (w *World) peerLost(e *event) {
	p, b := w.brokers[e.node], w.brokers[e.from-1]
	process := uint64(e.q)
	if b.up && b.inc+1 == process {
		return // the same process answers (cannot happen: it exited)
	}
	p.host.PeerLost(w.now, b.id, process)
}

// brokerTruth is every broker's running process and storage instances.
func (w *World) brokerTruth() []check.BrokerTruth {
	out := make([]check.BrokerTruth, 0, len(w.brokers))
	for _, b := range w.brokers {
		t := check.BrokerTruth{Node: b.id, Storage: b.storage}
		if b.up {
			t.Process = b.inc + 1
		}
		out = append(out, t)
	}
	return out
}

// placedQueue is a queue the controller placed, as the world follows it.
type placedQueue struct {
	id          core.QueueID
	name        string
	incarnation uint64
	epoch       uint64 // of its assignment as followed
	owner       core.NodeID
	members     []core.NodeID // its assignment's members, the owner among them
	processes   []uint64      // the process instance the assignment names of each member
	storages    []uint64      // and the storage instance
	w           int           // its assignment's W
	isr         bool          // policy isr: confirms at the high watermark
	deleted     bool
	proposedN   int // members its pending transition proposed (while fenced)
	// proposed: those members, ascending (while fenced)
	proposed []core.NodeID
	// sinceNs: when each member's broker applied this assignment (index
	// as members; -1: not yet), or was admitted to it: what it sent
	// before belonged to an earlier epoch's group, or to a learner's
	// session (noteHeard)
	sinceNs []int64
}

// placedApplied follows a placement as the first broker applies it: the
// checkers learn the queue (its replicas, owner, W and log directory)
// before any replica opens its log, which happens after its broker
// applied the placement. The first application of an entry is when the
// checker's model folds it, so the model's catalogue is the one of that
// entry's index; later ones (other brokers, a restarted process applying
// the log again) are known by the incarnation, placed once.
func (w *World) placedApplied(c *metadata.Command) {
	if w.placedIncs[c.Incarnation] {
		return // applied by an earlier broker or process
	}
	w.placedIncs[c.Incarnation] = true
	// The queue's id and policy: from the declaration the model holds.
	q, ok := w.checker.MetaQueue(c.Queue)
	if !ok {
		panic(fmt.Sprintf("world: placement of %q, which the checker's model does not hold", c.Queue))
	}
	spec := check.QueueSpec{Queue: q.ID, Owner: c.Owner, W: q.Policy.WriteQuorum(c.Members.N, q.MinInsync), ISR: q.Policy == core.ISR, Placed: true, Dir: logDir(q.ID)}
	if w.profileQueue(c.Queue) {
		spec.Publishes = w.expectedPublishes()
	}
	for _, m := range c.Members.Slice() {
		spec.Replicas = append(spec.Replicas, m.Node)
	}
	w.checker.AddQueue(spec)
	p := &placedQueue{id: q.ID, name: c.Queue, incarnation: c.Incarnation, epoch: c.Epoch, owner: c.Owner,
		members: spec.Replicas, processes: memberProcesses(&c.Members), storages: memberStorages(&c.Members), w: spec.W, isr: q.Policy == core.ISR}
	w.placed[c.Queue], w.placedByID[q.ID] = p, p
	at, _ := slices.BinarySearch(w.placedIDs, q.ID)
	w.placedIDs = slices.Insert(w.placedIDs, at, q.ID)
	if len(w.placedIDs) >= ManyQueues && w.stats.Coverage[MarkQueuesMany] == 0 {
		live := 0
		for _, id := range w.placedIDs {
			if !w.placedByID[id].deleted {
				live++
			}
		}
		if live >= ManyQueues {
			w.mark(MarkQueuesMany)
		}
	}
	if _, ok := w.history[q.ID]; !ok && w.profileQueue(c.Queue) {
		// Its clients' history, for the linearizability check: publishes,
		// deliveries and the owner's ack records, presized (a hint).
		w.history[q.ID] = make([]linear.Op, 0, min(3*w.expectedPublishes(), linearOpsMax))
		// and the epochs of the internal records seen, by offset (a
		// publish and an ack record per publish)
		w.internalSeen[q.ID] = make([]uint64, 0, min(2*w.expectedPublishes()+64, internalOffsetsMax))
	}
}

// transitionApplied follows a fencing transition: the checkers learn the
// proposed members (their installations write the queue's log).
func (w *World) transitionApplied(c *metadata.Command) {
	if p, ok := w.placed[c.Queue]; ok && p.incarnation == c.Incarnation {
		p.proposedN = c.Proposed.N
		p.proposed = append(p.proposed[:0], c.Proposed.Slice()...)
		w.holdJudge(p, c.Proposed.Slice())
		w.checker.AddReplicas(p.id, c.Proposed.Slice())
	}
	w.fencedApplied(c.Queue, c.Incarnation, false)
}

// activatedApplied follows a recovery's activation as the first broker
// applies it: the checkers judge the new assignment (owner,
// members, W), consumers come back to the new owner.
func (w *World) activatedApplied(c *metadata.Command) {
	p, ok := w.placed[c.Queue]
	if !ok || p.incarnation != c.Incarnation || p.epoch > c.Epoch {
		return // another incarnation's, or applied by an earlier broker
	}
	q, _ := w.checker.MetaQueue(c.Queue)
	var members []core.NodeID
	for _, m := range c.Members.Slice() {
		members = append(members, m.Node)
	}
	if c.Members.N < p.proposedN {
		w.mark(MarkActivateShort)
	}
	n := c.Members.N
	p.epoch, p.owner, p.members, p.w = c.Epoch+1, c.Owner, members, q.Policy.WriteQuorum(n, min(q.MinInsync, n))
	p.processes, p.storages = memberProcesses(&c.Members), memberStorages(&c.Members)
	p.sinceNs = p.sinceNs[:0]
	delete(w.heardNs, p.id)
	defer w.staleTailActivated(p)
	for _, m := range c.Members.Slice() {
		// A member's copies made while it was away (a learner's, then
		// verified in place by the recovery) count as its own from now
		// on, as an admission's do.
		w.checker.Admitted(p.id, m.Node)
		w.noteSound(m.Node, p.id, true) // a member installed: whole again
		delete(w.sealedLost, unsoundKey{m.Node, p.id})
	} // heard by the new assignment's owner from now on
	w.checker.ActivationWitnesses(w.now, p.id, c.Epoch+1)
	w.checker.Reassign(w.now, p.id, c.Epoch+1, c.Owner, members, p.w)
	w.inSyncOf[c.Queue] = inSyncTruth{members: c.Members, inSync: c.InSync}
}

func memberStorages(ms *metadata.Members) []uint64 {
	var out []uint64
	for _, m := range ms.Slice() {
		out = append(out, m.Storage)
	}
	return out
}

// admittedApplied follows a learner's admission: the member on
// its node is its process now, its copy counted (the checkers read it
// again from the disk: what it synced as a learner counts from now on).
// learnerAppendingNs: a learner admitted within this of its owner's last
// publish append was admitted while the owner appended (its cut is a
// moving one).
const learnerAppendingNs = 100_000_000

func (w *World) admittedApplied(c *metadata.Command) {
	p, ok := w.placed[c.Queue]
	if !ok || p.incarnation != c.Incarnation || p.epoch != c.Epoch {
		return
	}
	if at, ok := w.publishAppendedNs[p.id]; ok && w.now-at <= learnerAppendingNs {
		w.mark(MarkLearnerAdmittedAppending)
	}
	i := slices.Index(p.members, c.Learner.Node)
	if i < 0 {
		// A new copy: one member more, ascending, W unchanged (the
		// checkers learned its replica when it was named).
		w.mark(MarkLearnerNewCopy)
		i, _ = slices.BinarySearch(p.members, c.Learner.Node)
		p.members = slices.Insert(slices.Clone(p.members), i, c.Learner.Node)
		p.processes = slices.Insert(p.processes, i, c.Learner.Process)
		p.storages = slices.Insert(p.storages, i, c.Learner.Storage)
		if i < len(p.sinceNs) {
			p.sinceNs = slices.Insert(p.sinceNs, i, -1)
		}
		if h := w.heardNs[p.id]; i < len(h) {
			w.heardNs[p.id] = slices.Insert(h, i, -1)
		}
		w.checker.Grown(p.id, p.members)
	}
	if i >= len(p.processes) {
		return
	}
	p.processes[i], p.storages[i] = c.Learner.Process, c.Learner.Storage
	if h := w.heardNs[p.id]; i < len(h) {
		h[i] = -1 // the learner's process was not the member's until now
	}
	p.sinceAt(i, true, w.now)
	w.checker.Admitted(p.id, c.Learner.Node)
}

// learnerApplied follows a learner's naming: a new copy's broker (no
// member's) becomes known to the checkers as a replica of the queue, whose
// disk they read (it becomes a member only at its admission).
func (w *World) learnerApplied(c *metadata.Command) {
	if p, ok := w.placed[c.Queue]; ok && p.incarnation == c.Incarnation && p.epoch == c.Epoch && !slices.Contains(p.members, c.Learner.Node) {
		w.checker.AddReplicas(p.id, []core.NodeID{c.Learner.Node})
	}
}

// memberApplied follows a broker's application (any, not only the first)
// of a queue's current assignment, the placement or the activation of the
// epoch the world follows: when a member applied it is when its messages
// begin to be the assignment's.
func (w *World) memberApplied(node core.NodeID, c *metadata.Command) {
	epoch := c.Epoch
	switch c.Kind {
	case metadata.Assign:
	case metadata.Activate:
		epoch++
	default:
		return
	}
	p, ok := w.placed[c.Queue]
	if !ok || p.incarnation != c.Incarnation || p.epoch != epoch {
		return
	}
	if i := slices.Index(p.members, node); i >= 0 {
		p.sinceAt(i, false, w.now)
	}
}

// sinceAt sets member i's since to atNs: if it has none yet, or always
// (again: an admission).
func (p *placedQueue) sinceAt(i int, again bool, atNs int64) {
	for len(p.sinceNs) < len(p.members) {
		p.sinceNs = append(p.sinceNs, -1)
	}
	if again || p.sinceNs[i] < 0 {
		p.sinceNs[i] = atNs
	}
}

func memberProcesses(ms *metadata.Members) []uint64 {
	var out []uint64
	for _, m := range ms.Slice() {
		out = append(out, m.Process)
	}
	return out
}

// away reports whether node, a member of placed queue q's assignment, no
// longer runs the process the assignment names (its broker is down or
// restarted since): under the follower-loss hold its copy is left behind
// (until a recovery replaces it), so the drain does not wait for it.
func (w *World) away(q core.QueueID, node core.NodeID) bool {
	p := w.placedByID[q]
	if p == nil {
		return false
	}
	i := slices.Index(p.members, node)
	if i < 0 || i >= len(p.processes) {
		return false
	}
	b := w.brokers[node-1]
	return !b.up || b.inc+1 != p.processes[i]
}

// fencedApplied follows a fencing transition or a deletion.
func (w *World) fencedApplied(name string, incarnation uint64, deleted bool) {
	p, ok := w.placed[name]
	if !ok || p.incarnation != incarnation {
		return
	}
	w.checker.Fence(p.id)
	w.fencedNs[p.id] = w.now
	p.deleted = p.deleted || deleted
}

// placedSettled reports whether every placed queue not fenced has
// converged: the drain waits for it.
func (w *World) placedSettled() bool {
	up, gone := w.upBrokers(), w.goneBrokers()
	for _, name := range slices.Sorted(maps.Keys(w.placed)) {
		p := w.placed[name]
		if w.checker.Fenced(p.id) {
			continue
		}
		if ok, _ := w.checker.Converged(p.id); !ok {
			return false
		}
		if w.placedConsumed(p.id) && w.checker.Undelivered(p.id) > 0 {
			return false
		}
		if w.checker.MetaShort(name, up, gone) != "" {
			return false // full health: every copy back, in sync
		}
	}
	return true
}

// upBrokers returns the brokers whose process runs, by the world.
func (w *World) upBrokers() []core.NodeID {
	var up []core.NodeID
	for _, b := range w.brokers {
		if b.up {
			up = append(up, b.id)
		}
	}
	return up
}

// goneBrokers returns the brokers the gone fault struck: they never return.
func (w *World) goneBrokers() []core.NodeID {
	var gone []core.NodeID
	for _, b := range w.brokers {
		if b.gone {
			gone = append(gone, b.id)
		}
	}
	return gone
}

// placedConsumed reports whether placed queue q has a consumer: one that
// subscribed to it, or one that follows its name.
func (w *World) placedConsumed(q core.QueueID) bool {
	p := w.placedByID[q]
	return slices.ContainsFunc(w.clients, func(c *client) bool {
		return c.kind == consumer && (c.queue == q || (p != nil && c.name == p.name))
	})
}

// powerLossCtrl is a power loss of b's metadata disk.
func (w *World) powerLossCtrl(b *broker) {
	b.meta.PowerLoss(w.rCtrl.Intn(b.meta.Pending() + 1))
}

// ctrlSyncDelay is a metadata sync's time on b's device, from the
// controller's stream.
func (w *World) ctrlSyncDelay(b *broker) int64 {
	d := w.rCtrl.Range(w.prof.SyncUsMin, w.prof.SyncUsMax) * 1000
	if w.now < b.slowSyncEnd {
		d *= SlowSyncFactor
	}
	return d
}

// ctrlFinal hands the voters' durable metadata to the checker.
func (w *World) ctrlFinal() {
	var nodes, voters []core.NodeID
	var states []*meta.State
	var errs []error
	for _, v := range w.voters {
		voters = append(voters, core.NodeID(v))
	}
	for _, b := range w.brokers {
		if b.meta == nil {
			continue
		}
		st, err := b.meta.Durable()
		nodes, states, errs = append(nodes, b.id), append(states, &st), append(errs, err)
	}
	w.checker.MetaFinal(w.now, voters, nodes, states, errs)
	w.checker.MetaLiveSetFinal(w.now, w.brokerTruth())
	if !w.admin.probed {
		w.checker.Liveness(w.now, "the metadata group confirmed no command after the heal")
	}
	for _, p := range w.pubs {
		w.notef("placed publisher of %s: %d confirmed, %d failed, %d unknown", p.name, p.stats.confirmed, p.stats.failed, p.stats.unknown)
	}
	st := &w.admin.stats
	w.notef("meta: %d entries applied; operator %d confirmed, %d failed (%d rejected by the metadata, %d redirects), %d unknown",
		w.checker.MetaHistory(), st.confirmed, st.failed, st.rejected, st.redirects, st.unknown)
}

// inSyncTruth is a placed queue's members and committed in-sync set.
type inSyncTruth struct {
	members metadata.Members
	inSync  metadata.Nodes
}

// inSyncApplied follows an applied placement or in-sync change (entry
// index; only its first application counts): a follower dropped while its
// process still runs left by its owner's lag timer (insync-drop-live); one
// added came back at the high watermark (insync-back).
func (w *World) inSyncApplied(index uint64, c *metadata.Command) {
	if index <= w.inSyncSeen {
		return
	}
	w.inSyncSeen = index
	if c.Kind == metadata.Assign {
		var all metadata.Nodes
		for _, m := range c.Members.Slice() {
			all.ID[all.N] = m.Node
			all.N++
		}
		w.inSyncOf[c.Queue] = inSyncTruth{members: c.Members, inSync: all}
		return
	}
	t, ok := w.inSyncOf[c.Queue]
	if !ok {
		return
	}
	was, now := t.inSync.Slice(), c.InSync.Slice()
	for _, m := range t.members.Slice() {
		in, wasIn := slices.Contains(now, m.Node), slices.Contains(was, m.Node)
		b := w.brokers[m.Node-1]
		switch {
		case wasIn && !in && b.up && b.inc+1 == m.Process:
			w.mark(MarkInSyncDropLive)
		case !wasIn && in:
			w.mark(MarkInSyncBack)
		}
	}
	t.inSync = c.InSync
	w.inSyncOf[c.Queue] = t
}
