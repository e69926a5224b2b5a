package ctrl

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/meta"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// electionTickUnreachable is raft's election timeout, in raft ticks: set so
// far out (2^40 ticks: 34 years at a tick of 1 ms, and raft resets the count
// on every term change) that raft never campaigns on its own. Campaigns come
// from the group's failure detector, whose jitter arrives in the input.
const electionTickUnreachable = 1 << 40

// maxSizePerMsg is raft's MaxSizePerMsg: the entries one append carries.
const maxSizePerMsg = 1 << 20

// ticksPerStepMax bounds the raft ticks one tick input replays after a long
// gap (a paused process): enough for a heartbeat, never a loop over hours.
const ticksPerStepMax = 8

// MsgBytesMax bounds a peer message's encoding, in and out. The largest is
// a snapshot carrying the largest image (metadata.ImageBytesMax) with raft's
// envelope (its conf state names at most BrokersMax nodes); appends carry at
// most MaxSizePerMsg of entries. core/wire checks that a frame holds it.
const MsgBytesMax = metadata.ImageBytesMax + 8<<20

// A persist batch holds a snapshot with the largest image and a Ready's
// entries (raft's MaxSizePerMsg of them, each under CommandBytesMax): this
// constant does not compile otherwise.
const _ = uint(meta.BatchBytesMax - metadata.ImageBytesMax - 2*maxSizePerMsg)

// Config configures one node's metadata group.
type Config struct {
	ID     uint64   // this node's id, one of Voters or Learners
	Voters []uint64 // 1, 3 or 5 distinct non-zero node ids, sparse
	// Learners follow the committed metadata (raft learners: they get
	// the log, never vote, never campaign): every broker that is not a
	// voter. Distinct, non-zero, none a voter.
	Learners []uint64
	// Process and Storage are this node's process and storage instances,
	// which its heartbeats carry to the leader (0: no heartbeats, as in
	// tests of raft alone).
	Process, Storage uint64
	// TickNs is one raft tick; the leader heartbeats every HeartbeatTicks.
	TickNs         int64
	HeartbeatTicks int
	// CampaignTimeoutNs is the failure detector's base timeout: a
	// non-leader that has heard nothing from a leader for
	// CampaignTimeoutNs plus a jitter in [0, CampaignTimeoutNs), drawn
	// from a tick input's Draw, campaigns.
	CampaignTimeoutNs int64
	// Bugs: planted bugs (tests and the simulator only; core/bugs).
	Bugs bugs.Set
	// ImageEntries: once this many entries were applied since the last
	// image, the group persists the applied metadata's image (io/meta's
	// Applied record) and compacts the log up to it (CompactIndex); a
	// follower that needs compacted entries is sent the image as a raft
	// snapshot. 0: never (the log grows without bound).
	ImageEntries uint64
}

// DefaultImageEntries is the daemon's ImageEntries: a few MB of log at
// most between images.
const DefaultImageEntries = 10_000

// DefaultConfig is a configuration for id among voters.
func DefaultConfig(id uint64, voters []uint64) Config {
	return Config{ID: id, Voters: voters, TickNs: 10_000_000, HeartbeatTicks: 1, CampaignTimeoutNs: 150_000_000,
		ImageEntries: DefaultImageEntries}
}

func (c Config) validate() (voters, learners []uint64, err error) {
	vs, err := c.validVoters()
	if err != nil {
		return nil, nil, err
	}
	ls := slices.Clone(c.Learners)
	slices.Sort(ls)
	for i, l := range ls {
		_, isVoter := slices.BinarySearch(vs, l)
		if l == 0 || raft.IsLocalMsgTarget(l) || isVoter || (i > 0 && ls[i-1] == l) {
			return nil, nil, fmt.Errorf("ctrl: learner ids %v must be distinct, non-zero and not voters", c.Learners)
		}
	}
	_, voter := slices.BinarySearch(vs, c.ID)
	_, learner := slices.BinarySearch(ls, c.ID)
	if !voter && !learner {
		return nil, nil, fmt.Errorf("ctrl: node %d is neither a voter %v nor a learner %v", c.ID, vs, ls)
	}
	if (c.Process == 0) != (c.Storage == 0) {
		return nil, nil, fmt.Errorf("ctrl: process %d and storage %d instances: both or neither", c.Process, c.Storage)
	}
	return vs, ls, nil
}

func (c Config) validVoters() ([]uint64, error) {
	vs := slices.Clone(c.Voters)
	slices.Sort(vs)
	switch len(vs) {
	case 1, 3, 5:
	default:
		return nil, fmt.Errorf("ctrl: %d voters, want 1, 3 or 5", len(vs))
	}
	for i, v := range vs {
		if v == 0 || raft.IsLocalMsgTarget(v) || (i > 0 && vs[i-1] == v) {
			return nil, fmt.Errorf("ctrl: voter ids %v must be distinct and non-zero", c.Voters)
		}
	}
	if c.TickNs <= 0 || c.HeartbeatTicks <= 0 || c.CampaignTimeoutNs <= c.TickNs*int64(c.HeartbeatTicks) {
		return nil, fmt.Errorf("ctrl: TickNs %d, HeartbeatTicks %d and CampaignTimeoutNs %d: want positive, timeout above the heartbeat",
			c.TickNs, c.HeartbeatTicks, c.CampaignTimeoutNs)
	}
	return vs, nil
}

// pending is the Ready whose batch the host is persisting: its messages are
// held until the completion. An image batch (image true) has no Ready.
type pending struct {
	firstSeq uint64 // the Seq of batches[0]; the rest follow in order
	done     int    // how many of batches are durable
	image    bool
	rd       raft.Ready
	batches  []*meta.Batch // one Ready, split to io/meta's limits
	sends    []Effect
}

// Group is one node's replica of the metadata group: a raft RawNode driven
// by inputs, its effects returned as values. It is not safe for concurrent
// use; it never reads the clock or draws randomness.
type Group struct {
	cfg      Config
	voters   []uint64 // sorted
	learners []uint64 // sorted
	members  []uint64 // voters and learners, sorted
	isVoter  bool
	rn       *raft.RawNode
	store    *logStore
	log      *traceLogger

	started      bool
	nowNs        int64
	lastTickNs   int64
	heardNs      int64 // last instant a leader was heard (or a vote cast, or a campaign started)
	campaignAtNs int64 // 0: not armed; armed at the next tick with its draw
	// leaderGone: the process of the leader this voter follows exited
	// (InPeerLost): the first of the other voters by id campaigns at once,
	// the next ones at their ticks, a slot of the timeout later each with
	// a jitter (leaderGoneRank), instead of waiting out the timeout
	// for a leader known dead; goneLeader: that leader
	leaderGone bool
	goneLeader uint64
	// downApplied: this step applied a broker's BrokerDown
	downApplied bool

	nextSeq uint64
	pend    *pending
	failed  string

	applied uint64
	// startCommit: the commit index the store held at the start; until the
	// group applied it, the applied metadata lacks what this node knew
	// committed before (a restart re-applies its log from the image)
	startCommit uint64
	md          metadata.State
	proposals   []proposal // in proposal order, all of the current term
	fresh       freshReads // fresh reads asked and not yet answered

	// liveness (liveness.go)
	nextHeartbeatNs int64
	heard           []heard // the leader's, by node; reset when heardTerm changes
	heardTerm       uint64
	// lost: the peer processes whose exit this replica was told of
	// (InPeerLost), kept while the committed metadata holds them live,
	// so that a leader taking office acts on what it saw as a follower
	lost    []lostPeer
	placing []placed // the leader's last placement proposals, by queue
	// loadsBuf: loads' slice, reused from one placement check to the next
	loadsBuf loads
	// the follower-loss hold (hold.go): when each broker's process left
	// the live set, as this replica applied it; the queues the leader's
	// placement holds; its counters
	down                       []downAt
	held                       []heldQueue
	holdsEntered, holdsExpired uint64
	learnersAdmitted           uint64 // AdmitLearner commands applied (HoldStats)
	out                        []Effect

	// bugSendBeforePersist is a planted bug for this package's tests: the
	// messages of a Ready leave with its batch, before its completion.
	bugSendBeforePersist bool
}

// New returns the group of cfg.ID, restarted from st, what its metadata
// store loaded (the zero State for a new store). The applied metadata
// starts from the newest image the store holds (its applied record, or a
// snapshot a leader sent) and re-applies the committed entries above it.
func New(cfg Config, st meta.State) (*Group, error) {
	vs, ls, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	img := st.Applied
	if st.Snapshot.Index > img.Index {
		img = meta.Applied{Index: st.Snapshot.Index, Data: st.Snapshot.Data}
	}
	if img.Index > st.HardState.Commit {
		return nil, fmt.Errorf("ctrl: the store's image at %d is above its commit index %d", img.Index, st.HardState.Commit)
	}
	var md metadata.State
	if img.Index > 0 {
		if md, err = metadata.DecodeImage(img.Data); err != nil {
			return nil, fmt.Errorf("ctrl: the store's image at %d: %w", img.Index, err)
		}
		if md.Applied() > img.Index {
			// (Below is fine: raft's empty entries apply no command.)
			return nil, fmt.Errorf("ctrl: the store's image at %d holds the metadata applied to %d", img.Index, md.Applied())
		}
	}
	store, err := newLogStore(vs, ls, st)
	if err != nil {
		return nil, err
	}
	store.image = img
	if img.Index > 0 {
		if _, err := store.Term(img.Index); err != nil {
			return nil, fmt.Errorf("ctrl: the store's image at %d: no term for it: %w", img.Index, err)
		}
	}
	members := slices.Sorted(slices.Values(append(slices.Clone(vs), ls...)))
	_, isVoter := slices.BinarySearch(vs, cfg.ID)
	applied := img.Index
	if cfg.Bugs.Has(bugs.CtrlImageSkipsCommitted) && img.Index > 0 {
		applied = st.HardState.Commit // planted: the image taken as of the commit index
	}
	g := &Group{cfg: cfg, voters: vs, learners: ls, members: members, isVoter: isVoter, store: store, log: &traceLogger{max: LogLinesMax},
		bugSendBeforePersist: cfg.Bugs.Has(bugs.CtrlSendBeforePersist), md: md, applied: applied, startCommit: st.HardState.Commit}
	g.rn, err = raft.NewRawNode(&raft.Config{
		ID:              cfg.ID,
		Applied:         applied,
		ElectionTick:    electionTickUnreachable,
		HeartbeatTick:   cfg.HeartbeatTicks,
		Storage:         store,
		MaxSizePerMsg:   maxSizePerMsg,
		MaxInflightMsgs: 64,
		CheckQuorum:     false,
		// A proposal goes to the leader; a follower drops it (the caller retries
		// at the leader) rather than forward it as a peer message.
		DisableProposalForwarding: true,
		PreVote:                   true,
		Logger:                    g.log,
	})
	if err != nil {
		return nil, fmt.Errorf("ctrl: %w", err)
	}
	return g, nil
}

// InputKind names an input.
type InputKind uint8

const (
	// InTick: time passed. Draw is a random value (the simulator's PRNG,
	// the daemon's crypto source) that jitters the failure detector.
	InTick InputKind = iota + 1
	// InMessage: Msg is a marshalled raftpb.Message from peer From.
	InMessage
	// InPersisted: the batch of persist effect Seq is durable, or failed
	// with Err.
	InPersisted
	// InPropose: Msg is a command to commit (core/metadata's encoding),
	// asked by the caller's Client and ReqID (opaque here), answered by an
	// EfOutcome.
	InPropose
	// InPeerMessage: Msg is a controller peer message (a heartbeat) from
	// node From (AppendPeerMsg's encoding).
	InPeerMessage
	// InPeerLost: the connection to node From closed and a reconnect
	// failed: its process Process is gone (eager failover). A silent
	// failure (a power loss, a partition) gives none.
	InPeerLost
	// InRequestInSync: Msg is this node's owner's in-sync request
	// (AppendInSyncRequest), for the leader.
	InRequestInSync
	// InFreshRead: the caller (its token in Seq) wants a fresh committed
	// view (raft's ReadIndex, fresh.go), answered by an EfFresh.
	InFreshRead
	// InRequestActivate: Msg is this node's recovery worker's activation
	// request (AppendActivateRequest), for the leader.
	InRequestActivate
	// InRequestAdmit: Msg is this node's owner's request to admit its
	// queue's learner (AppendAdmitRequest), for the leader.
	InRequestAdmit
)

// Input is one input to the group. NowNs never decreases.
type Input struct {
	Kind  InputKind
	NowNs int64
	Draw  uint64
	From  uint64
	Msg   []byte
	Seq   uint64
	Err   string
	// Client and ReqID: who proposed (InPropose), echoed in its EfOutcome.
	Client, ReqID uint64
	// Process: InPeerLost's process instance.
	Process uint64
}

// EffectKind names an effect.
type EffectKind uint8

const (
	// EfPersist: make Batch durable in this node's metadata store (one
	// atomic synced io/meta batch), then return InPersisted with Seq.
	EfPersist EffectKind = iota + 1
	// EfSend: send Msg (a marshalled raftpb.Message) to node To.
	EfSend
	// EfApplied: the committed entry (Index, Term) was applied; Cmd is its
	// command's encoding (empty for raft's own empty entries), Note the
	// command and its result as text ("... => refused: why" when the
	// metadata refused it).
	EfApplied
	// EfNote: a trace note (raft's log lines, the failure detector).
	EfNote
	// EfOutcome: the answer to proposal (Client, ReqID): Result, with the
	// entry's Index when committed, Note why otherwise.
	EfOutcome
	// EfSendPeer: send Msg, a controller peer message (a heartbeat), to
	// node To.
	EfSendPeer
	// EfFresh: the answer to fresh read Seq: Committed once this node
	// applied at least Index, the leader's commit index when it confirmed
	// the read with a quorum, so the applied metadata is at least as new
	// as any committed at the request; Unknown (Note why) when no answer
	// came in time.
	EfFresh
)

// Result is how a proposal ended.
type Result uint8

const (
	// Committed: this node applied the proposal's entry (Index).
	Committed Result = iota + 1
	// Refused: the command is malformed, or too many proposals are
	// pending; it was never proposed.
	Refused
	// NotLeader: this node does not lead; Note names the leader it knows.
	NotLeader
	// Unknown: this node lost its leadership (or the term changed) before
	// the proposal was applied; it may commit yet, or never.
	Unknown
	// Rejected: committed, and refused by the metadata state (a conflict:
	// a stale conditional delete, say); it changed nothing.
	Rejected
)

func (r Result) String() string {
	switch r {
	case Committed:
		return "committed"
	case Refused:
		return "refused"
	case NotLeader:
		return "not-leader"
	case Unknown:
		return "unknown"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// ProposalsPendingMax bounds the proposals a leader holds awaiting their
// entries' application; one more is refused.
const ProposalsPendingMax = 4096

// proposal is one proposal waiting for its entry to be applied.
type proposal struct {
	client, reqID uint64
	term          uint64 // the leader's term when proposed: its entry's term
	cmd           []byte
}

// Effect is one effect. Byte slices belong to the effect.
type Effect struct {
	Kind  EffectKind
	Seq   uint64
	Batch *meta.Batch
	To    uint64
	Msg   []byte
	Index uint64
	Term  uint64
	Cmd   []byte
	Note  string
	// EfOutcome: the proposal and how it ended; Rejected: the metadata's
	// typed cause (metadata.Refused's Code).
	Client, ReqID uint64
	Result        Result
	Refusal       seam.Refusal
}

// String is the effect's stable one-line text form.
func (e Effect) String() string {
	switch e.Kind {
	case EfPersist:
		b := e.Batch
		s := fmt.Sprintf("persist seq=%d", e.Seq)
		if n := len(b.Entries); n > 0 {
			s += fmt.Sprintf(" ents=%d..%d@%d", b.Entries[0].Index, b.Entries[n-1].Index, b.Entries[n-1].Term)
		}
		if hs := b.HardState; hs != nil {
			s += fmt.Sprintf(" hs=t%d,v%d,c%d", hs.Term, hs.Vote, hs.Commit)
		}
		return s
	case EfSend:
		return string(AppendMsgText([]byte(fmt.Sprintf("send to=%d ", e.To)), e.Msg))
	case EfApplied:
		return fmt.Sprintf("applied %d@%d %s", e.Index, e.Term, e.Note)
	case EfNote:
		return "note " + e.Note
	case EfSendPeer:
		return string(AppendPeerMsgText([]byte(fmt.Sprintf("send-peer to=%d ", e.To)), e.Msg))
	case EfFresh:
		if e.Result == Committed {
			return fmt.Sprintf("fresh seq=%d committed i=%d", e.Seq, e.Index)
		}
		return fmt.Sprintf("fresh seq=%d %s %s", e.Seq, e.Result, e.Note)
	case EfOutcome:
		s := fmt.Sprintf("outcome c=%d id=%d %s", e.Client, e.ReqID, e.Result)
		if e.Result == Committed {
			s += fmt.Sprintf(" i=%d", e.Index)
		}
		if e.Note != "" {
			s += " " + e.Note
		}
		return s
	}
	return fmt.Sprintf("effect(%d)", e.Kind)
}

// Metadata returns the applied metadata (the caller must not change it).
func (g *Group) Metadata() *metadata.State { return &g.md }

// AppliedIndex is the index of the last applied entry.
func (g *Group) AppliedIndex() uint64 { return g.applied }

// CaughtUp reports whether the group applied every entry its store held
// committed at the start: before, the applied metadata may lack a queue
// this node declared, so its absence proves nothing.
func (g *Group) CaughtUp() bool { return g.applied >= g.startCommit }

// LogEnd is the index of the last entry this replica's log holds, stored
// or being stored (a batch in flight), committed or not: entries between
// AppliedIndex and LogEnd are metadata on its way, which a caller may
// choose to wait for before it acts (core's recovery workers, recover.go).
// Entries raft appended since the batch in flight are not counted until
// their own batch; an uncommitted suffix a new leader overwrites may be.
func (g *Group) LogEnd() uint64 {
	end := g.store.lastIndex()
	if g.pend != nil {
		if es := g.pend.rd.Entries; len(es) > 0 {
			end = es[len(es)-1].GetIndex() // (a conflicting suffix is replaced, not kept)
		}
	}
	return end
}

// Status is raft's view: the term, the leader known, whether this node leads.
func (g *Group) Status() (term, lead uint64, leader bool) {
	st := g.rn.BasicStatus()
	return st.GetTerm(), st.Lead, st.RaftState == raft.StateLeader
}

// Failed returns why the group stopped (a failed persist), or "".
func (g *Group) Failed() string { return g.failed }

func (g *Group) note(format string, a ...any) {
	g.out = append(g.out, Effect{Kind: EfNote, Note: fmt.Sprintf(format, a...)})
}

// Begin starts the group's clock at nowNs, the process's start (before it,
// the first Step does): the failure detector counts from here. It returns
// raft's notes of its start.
func (g *Group) Begin(nowNs int64) []Effect {
	if g.started {
		panic("ctrl: Begin after the group started")
	}
	g.started = true
	g.nowNs, g.lastTickNs, g.heardNs = nowNs, nowNs, nowNs
	if g.applied > 0 {
		g.restored()
	}
	for _, l := range g.log.take() {
		g.note("%s", l)
	}
	out := g.out
	g.out = nil
	return out
}

// Step takes one input and returns the effects, in the order the host must
// start them. The returned slice is the caller's.
func (g *Group) Step(in Input) []Effect {
	g.out = nil
	if in.NowNs < g.nowNs {
		panic(fmt.Sprintf("ctrl: time went back from %d to %d", g.nowNs, in.NowNs))
	}
	g.nowNs = in.NowNs
	if !g.started {
		g.started = true
		g.lastTickNs, g.heardNs = in.NowNs, in.NowNs
		if g.applied > 0 {
			g.restored()
		}
	}
	if g.failed != "" {
		return nil
	}
	g.downApplied = false
	switch in.Kind {
	case InTick:
		g.tick(in)
	case InMessage:
		g.message(in)
	case InPersisted:
		g.persisted(in)
	case InPropose:
		g.propose(in)
	case InPeerMessage:
		g.peerMessage(in)
	case InPeerLost:
		g.peerLost(in)
	case InRequestInSync:
		g.requestInSync(in)
	case InFreshRead:
		g.freshRead(in)
	case InRequestActivate:
		g.requestActivate(in)
	case InRequestAdmit:
		g.requestAdmit(in)
	default:
		panic(fmt.Sprintf("ctrl: input kind %d", in.Kind))
	}
	if g.failed == "" {
		g.ready()
		if g.downApplied && in.Kind != InTick && g.failed == "" && g.rn.BasicStatus().RaftState == raft.StateLeader {
			// A broker went down: its queues' transitions (or holds) are
			// proposed now, not at the next tick, which in the daemon is
			// up to 20 ms away on the path of an owner's failover. (Only
			// then: a placement right after a declaration would be made
			// before the other brokers registered.)
			g.placementCheck()
			g.ready()
		}
		g.dropStaleProposals()
		g.answerFresh()
	}
	for _, l := range g.log.take() {
		g.note("%s", l)
	}
	out := g.out
	g.out = nil
	return out
}

func (g *Group) tick(in Input) {
	n := (in.NowNs - g.lastTickNs) / g.cfg.TickNs
	g.lastTickNs += n * g.cfg.TickNs
	for i := int64(0); i < min(n, ticksPerStepMax); i++ {
		g.rn.Tick()
	}
	g.heartbeat()
	// The failure detector.
	st := g.rn.BasicStatus()
	if st.RaftState == raft.StateLeader {
		g.heardNs, g.campaignAtNs = in.NowNs, 0
		g.livenessCheck()
		g.placementCheck()
		return
	}
	if !g.isVoter {
		return // a learner never campaigns
	}
	if g.campaignAtNs == 0 {
		timeout := uint64(g.cfg.CampaignTimeoutNs)
		g.campaignAtNs = g.heardNs + g.cfg.CampaignTimeoutNs + int64(in.Draw%timeout)
	}
	if g.leaderGone {
		// The slots and their jitter keep the surviving voters from
		// splitting the vote.
		g.leaderGone = false
		slotNs := g.cfg.CampaignTimeoutNs / leaderGoneJitterDiv
		rank := int64(g.leaderGoneRank())
		g.campaignAtNs = min(g.campaignAtNs, in.NowNs+rank*slotNs+int64(in.Draw%uint64(slotNs)))
	}
	if in.NowNs >= g.campaignAtNs {
		g.note("campaign: no leader heard for %dns (term %d)", in.NowNs-g.heardNs, st.GetTerm())
		if err := g.rn.Campaign(); err != nil {
			g.note("campaign failed: %v", err)
		}
		g.heardNs, g.campaignAtNs = in.NowNs, 0
	}
}

func (g *Group) message(in Input) {
	if len(in.Msg) > MsgBytesMax {
		g.note("refused message from %d: %d bytes, over %d", in.From, len(in.Msg), MsgBytesMax)
		return
	}
	m, err := decodeMessage(in.Msg)
	if err != nil {
		g.note("refused message from %d: %v", in.From, err)
		return
	}
	_, member := slices.BinarySearch(g.members, m.GetFrom())
	switch {
	case m.GetFrom() != in.From || m.GetTo() != g.cfg.ID || !member || m.GetFrom() == g.cfg.ID:
		g.note("refused message from %d: from %d to %d", in.From, m.GetFrom(), m.GetTo())
		return
	case raft.IsLocalMsg(m.GetType()) || m.GetType() == pb.MsgProp:
		g.note("refused message from %d: type %s is not a peer message", in.From, m.GetType())
		return
	}
	for _, e := range m.GetEntries() {
		if len(e.GetData()) > meta.EntryDataBytesMax || e.GetType() != pb.EntryNormal {
			g.note("refused message from %d: entry %d is a %s entry of %d bytes (limit %d, normal only)",
				in.From, e.GetIndex(), e.GetType(), len(e.GetData()), meta.EntryDataBytesMax)
			return
		}
	}
	if err := g.rn.Step(m); err != nil {
		g.note("step %s from %d: %v", m.GetType(), in.From, err)
		return
	}
	st := g.rn.BasicStatus()
	switch m.GetType() {
	case pb.MsgApp, pb.MsgHeartbeat, pb.MsgSnap:
		if st.Lead == m.GetFrom() {
			g.heardNs, g.campaignAtNs, g.leaderGone = in.NowNs, 0, false
		}
	case pb.MsgVote:
		if st.GetVote() == m.GetFrom() && st.GetTerm() == m.GetTerm() {
			g.heardNs, g.campaignAtNs = in.NowNs, 0
		}
	}
}

// ready turns raft's Ready into effects: with nothing to persist, its
// messages leave and its committed entries apply at once; otherwise one
// persist effect leaves and the rest waits for its completion. At most one
// Ready is outstanding.
func (g *Group) ready() {
	for g.pend == nil && g.rn.HasReady() {
		rd := g.rn.Ready()
		g.readStates(rd.ReadStates)
		snap := rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot)
		if len(rd.Entries) == 0 && rd.HardState == nil && !snap {
			// Nothing to persist (most Readies: a heartbeat's, a
			// response's): no batch, and the messages go straight out.
			g.out = g.sends(g.out, rd.Messages)
			g.apply(rd.CommittedEntries)
			g.rn.Advance(rd)
			g.maybeImage()
			continue
		}
		b := &meta.Batch{}
		for _, e := range rd.Entries {
			b.Entries = append(b.Entries, toMetaEntry(e))
		}
		if rd.HardState != nil {
			b.HardState = &meta.HardState{Term: rd.HardState.GetTerm(), Vote: rd.HardState.GetVote(), Commit: rd.HardState.GetCommit()}
		}
		if snap {
			// A leader's image, to install: it replaces the log at or
			// below its index and, once durable, the applied metadata.
			m := rd.Snapshot.GetMetadata()
			b.Snapshot = &meta.Snapshot{Index: m.GetIndex(), Term: m.GetTerm(), Data: slices.Clone(rd.Snapshot.GetData())}
		}
		sends := g.sends(nil, rd.Messages)
		g.pend = &pending{firstSeq: g.nextSeq + 1, rd: rd, batches: splitBatch(b), sends: sends}
		for _, c := range g.pend.batches {
			g.nextSeq++
			g.out = append(g.out, Effect{Kind: EfPersist, Seq: g.nextSeq, Batch: c})
		}
		if g.bugSendBeforePersist {
			g.out = append(g.out, sends...)
			g.pend.sends = nil
		}
	}
}

// sends appends to out the sends of raft's messages, in raft's order,
// which is deterministic: raft visits peers in sorted id order
// (tracker.Visit, campaign). The messages of one Ready are marshalled into
// one new array (one allocation, not one per message); each effect's Msg
// is its own part of it, capped, and nothing else writes to the array.
func (g *Group) sends(out []Effect, ms []*pb.Message) []Effect {
	if len(ms) == 0 {
		return out
	}
	opt := proto.MarshalOptions{Deterministic: true}
	total := 0
	for _, m := range ms {
		total += opt.Size(m)
	}
	// (Were a size short, MarshalAppend would move on to a larger
	// array; the earlier messages keep theirs.)
	arena := make([]byte, 0, total)
	out = slices.Grow(out, len(ms))
	for _, m := range ms {
		if m.GetTo() == g.cfg.ID {
			panic(fmt.Sprintf("ctrl: raft sent %s to itself", m.GetType()))
		}
		start := len(arena)
		var err error
		arena, err = opt.MarshalAppend(arena, m)
		if err != nil {
			panic(err)
		}
		bs := arena[start:len(arena):len(arena)]
		if len(bs) > MsgBytesMax {
			panic(fmt.Sprintf("ctrl: %s of %d bytes, over MsgBytesMax", m.GetType(), len(bs)))
		}
		out = append(out, Effect{Kind: EfSend, To: m.GetTo(), Msg: bs})
		if m.GetType() == pb.MsgSnap {
			// Sends are best effort and report nothing back: count the
			// image as sent, so the leader probes the follower again
			// (a lost one is sent again when the probe finds the
			// follower still behind the compacted log) rather than
			// wait for a report forever.
			g.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
		}
	}
	return out
}

// splitBatch cuts a Ready's batch into batches io/meta takes
// (BatchEntriesMax entries, BatchBytesMax bytes of entry data), in index
// order, with the hard state in the last: its commit index may name
// entries of any of them. A crash between two of them keeps a prefix of
// the entries without the new hard state, which raft allows (unstable
// entries may be lost or kept; none was acknowledged, since the Ready's
// messages wait for the last).
func splitBatch(b *meta.Batch) []*meta.Batch {
	if len(b.Entries) <= meta.BatchEntriesMax && entryBytes(b.Entries) <= meta.BatchBytesMax {
		return []*meta.Batch{b}
	}
	var out []*meta.Batch
	ents := b.Entries
	for len(ents) > 0 {
		n, bytes := 0, 0
		for n < len(ents) && n < meta.BatchEntriesMax && bytes+len(ents[n].Data) <= meta.BatchBytesMax {
			bytes += len(ents[n].Data)
			n++
		}
		out = append(out, &meta.Batch{Entries: ents[:n:n]})
		ents = ents[n:]
	}
	out[len(out)-1].HardState = b.HardState
	return out
}

func entryBytes(es []meta.Entry) int {
	n := 0
	for i := range es {
		n += len(es[i].Data)
	}
	return n
}

func (g *Group) persisted(in Input) {
	p := g.pend
	if p == nil || in.Seq != p.firstSeq+uint64(p.done) {
		panic(fmt.Sprintf("ctrl: completion of persist %d, outstanding %v", in.Seq, p != nil))
	}
	if in.Err != "" {
		// The driver contract's failure policy: the host ends the process;
		// until then the group does nothing.
		g.failed = in.Err
		g.note("persist %d failed: %s; the group stops", in.Seq, in.Err)
		return
	}
	b := p.batches[p.done]
	g.store.persisted(b)
	if b.Snapshot != nil {
		md, err := metadata.DecodeImage(b.Snapshot.Data)
		if err != nil || md.Applied() > b.Snapshot.Index {
			// Our own leader's image, checked before it left; a peer's
			// bytes could still be anything. Nothing applies it.
			g.failed = fmt.Sprintf("snapshot at %d: image does not decode (%v) or holds %d", b.Snapshot.Index, err, md.Applied())
			g.note("%s; the group stops", g.failed)
			return
		}
		g.md, g.applied = md, b.Snapshot.Index
		g.restored()
	}
	if p.image {
		g.pend = nil // raft's next Ready goes (Step calls ready)
		return
	}
	if g.cfg.Bugs.Has(bugs.CtrlConfirmUncommitted) {
		for _, e := range p.batches[p.done].Entries {
			if len(g.proposals) > 0 && len(e.Data) > 0 {
				g.resolveApplied(e.Index, e.Term, e.Data, "(not yet applied)", nil)
			}
		}
	}
	p.done++
	if p.done < len(p.batches) {
		return // the Ready's messages wait for its last batch
	}
	g.pend = nil
	g.out = append(g.out, p.sends...)
	g.apply(p.rd.CommittedEntries)
	g.rn.Advance(p.rd)
	g.maybeImage()
}

// ImageRestoredNote is the Note of the EfApplied effect that says the
// group's applied metadata is now an image's (its Index; no Cmd): at a
// start from a stored image, or once a leader's snapshot is durable. A
// watcher that follows every applied entry continues after Index.
const ImageRestoredNote = "(the metadata restored from an image)"

// restored says that the applied metadata is an image's, as of g.applied.
func (g *Group) restored() {
	t, _ := g.store.Term(g.applied)
	g.out = append(g.out, Effect{Kind: EfApplied, Index: g.applied, Term: t, Note: ImageRestoredNote})
}

// maybeImage persists the applied metadata's image and compacts the log
// up to it, once ImageEntries entries were applied since the last image
// and nothing else is being persisted. The image's batch is persisted like
// a Ready's, in turn (raft's next Ready waits for it).
func (g *Group) maybeImage() {
	n := g.cfg.ImageEntries
	if n == 0 || g.pend != nil || g.failed != "" || g.applied < g.store.image.Index+n {
		return
	}
	img := &meta.Applied{Index: g.applied, Data: g.md.AppendImage(nil)}
	b := &meta.Batch{Applied: img, CompactIndex: g.applied}
	if g.applied <= g.store.compacted.Index {
		b.CompactIndex = 0 // a snapshot compacted it already
	}
	g.nextSeq++
	g.pend = &pending{firstSeq: g.nextSeq, image: true, batches: []*meta.Batch{b}}
	g.out = append(g.out, Effect{Kind: EfPersist, Seq: g.nextSeq, Batch: b})
}

func (g *Group) apply(ents []*pb.Entry) {
	for _, e := range ents {
		if e.GetIndex() != g.applied+1 {
			panic(fmt.Sprintf("ctrl: applying %d after %d", e.GetIndex(), g.applied))
		}
		g.applied = e.GetIndex()
		if e.GetType() != pb.EntryNormal {
			panic(fmt.Sprintf("ctrl: committed %s entry %d; this group proposes none", e.GetType(), e.GetIndex()))
		}
		ef := Effect{Kind: EfApplied, Index: e.GetIndex(), Term: e.GetTerm(), Cmd: slices.Clone(e.GetData())}
		var result string
		var err error
		if len(e.GetData()) == 0 {
			ef.Note = "(raft's empty entry)"
		} else if c, derr := metadata.Decode(e.GetData()); derr != nil {
			// No replica proposes what does not decode; a peer's bytes
			// might. Every replica refuses it alike.
			err = derr
			ef.Note = "refused: " + derr.Error()
		} else {
			before, known := g.md.Broker(c.Node)
			result, err = g.md.Apply(e.GetIndex(), &c)
			if known && (c.Kind == metadata.BrokerDown || c.Kind == metadata.RegisterBroker) {
				g.noteBrokerChange(c.Node, before.Live, before.Process)
			}
			if c.Kind == metadata.AdmitLearner && err == nil {
				g.learnersAdmitted++
			}
			if c.Kind == metadata.BrokerDown && err == nil {
				g.downApplied = true
			}
			if err != nil {
				ef.Note = c.String() + " => " + err.Error()
			} else {
				ef.Note = c.String() + " => " + result
			}
		}
		g.out = append(g.out, ef)
		if len(g.proposals) > 0 && len(e.GetData()) > 0 {
			g.resolveApplied(e.GetIndex(), e.GetTerm(), e.GetData(), result, err)
		}
	}
}

// DeadlineNs is the instant of the next tick the group needs: its next raft
// tick (the leader's heartbeats, the failure detector's clock).
func (g *Group) DeadlineNs() int64 {
	if !g.started || g.failed != "" {
		return 1<<63 - 1
	}
	return g.lastTickNs + g.cfg.TickNs // heartbeats and liveness go by these ticks too
}

func (g *Group) outcome(client, reqID uint64, r Result, index uint64, note string) {
	g.out = append(g.out, Effect{Kind: EfOutcome, Client: client, ReqID: reqID, Result: r, Index: index, Note: note})
}

// propose proposes a command at the leader; elsewhere it is answered at
// once (a follower drops proposals; the caller retries at the leader).
func (g *Group) propose(in Input) {
	if _, err := metadata.Decode(in.Msg); err != nil {
		g.outcome(in.Client, in.ReqID, Refused, 0, err.Error())
		return
	}
	st := g.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		g.outcome(in.Client, in.ReqID, NotLeader, 0, fmt.Sprintf("leader=%d", st.Lead))
		return
	}
	if len(g.proposals) >= ProposalsPendingMax {
		g.outcome(in.Client, in.ReqID, Refused, 0, fmt.Sprintf("%d proposals pending, the limit", ProposalsPendingMax))
		return
	}
	cmd := slices.Clone(in.Msg)
	if err := g.rn.Propose(cmd); err != nil {
		// A leader transferring its leadership drops proposals.
		g.outcome(in.Client, in.ReqID, NotLeader, 0, err.Error())
		return
	}
	g.proposals = append(g.proposals, proposal{client: in.Client, reqID: in.ReqID, term: st.GetTerm(), cmd: cmd})
}

// resolveApplied answers the oldest pending proposal whose command and term
// the applied entry carries: that entry is the one it proposed (a leader
// proposes in its own term, and equal commands of one term are answered in
// order, as they were appended).
func (g *Group) resolveApplied(index, term uint64, cmd []byte, result string, err error) {
	for i, p := range g.proposals {
		if p.term == term && string(p.cmd) == string(cmd) {
			g.proposals = slices.Delete(g.proposals, i, i+1)
			if err != nil {
				g.outcome(p.client, p.reqID, Rejected, index, err.Error())
				if rf := (*metadata.Refused)(nil); errors.As(err, &rf) {
					g.out[len(g.out)-1].Refusal = rf.Code
				}
			} else {
				g.outcome(p.client, p.reqID, Committed, index, result)
			}
			return
		}
	}
}

// dropStaleProposals answers unknown every pending proposal once this node
// no longer leads in the term it proposed in: its entry may still commit
// under a later leader, or be overwritten.
func (g *Group) dropStaleProposals() {
	if len(g.proposals) == 0 {
		return
	}
	st := g.rn.BasicStatus()
	keep := g.proposals[:0]
	for _, p := range g.proposals {
		if st.RaftState == raft.StateLeader && st.GetTerm() == p.term {
			keep = append(keep, p)
			continue
		}
		g.outcome(p.client, p.reqID, Unknown, 0, fmt.Sprintf("leadership of term %d lost", p.term))
	}
	clear(g.proposals[len(keep):])
	g.proposals = keep
}

// AppendMsgText renders a peer message of the group (a marshalled
// raftpb.Message) as its stable text: its type, term, index, log term,
// commit, rejection, entry count and an FNV-64a hash of its bytes. A
// message that does not decode prints as its size.
func AppendMsgText(dst []byte, msg []byte) []byte {
	var m pb.Message
	if err := proto.Unmarshal(msg, &m); err != nil {
		return fmt.Appendf(dst, "raft undecodable bytes=%d", len(msg))
	}
	h := fnv.New64a()
	h.Write(msg)
	return fmt.Appendf(dst, "%s t%d i%d lt%d c%d rej=%t n=%d h=%016x", m.GetType(), m.GetTerm(),
		m.GetIndex(), m.GetLogTerm(), m.GetCommit(), m.GetReject(), len(m.GetEntries()), h.Sum64())
}
