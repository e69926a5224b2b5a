package driver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/metamem"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// memMeta drives a metamem store in the host's two steps.
type memMeta struct {
	s    *metamem.Store
	last metamem.Ticket
}

func (m *memMeta) Load() (meta.State, error) { return m.s.Load() }
func (m *memMeta) Write(b *meta.Batch) error {
	t, err := m.s.Start(b)
	m.last = t
	return err
}
func (m *memMeta) Sync() error { return m.s.Complete(m.last) }

// voteScript is a scripted world that, as each message leaves, checks the
// rule of point 10 against the disk's durable bytes: a vote request or a
// vote leaves only once the term and vote it carries are durable.
type voteScript struct {
	script
	disk       *metamem.Disk
	violations []string
}

func (s *voteScript) Send(to core.NodeID, g core.GroupID, msg []byte) {
	s.script.Send(to, g, msg)
	if g != core.GroupCtrl {
		return
	}
	var m pb.Message
	if err := proto.Unmarshal(msg, &m); err != nil {
		s.violations = append(s.violations, "undecodable message")
		return
	}
	if m.GetType() != pb.MsgVote {
		return
	}
	st, err := s.disk.Durable()
	if err != nil {
		s.violations = append(s.violations, err.Error())
		return
	}
	if st.HardState.Term < m.GetTerm() || st.HardState.Vote != m.GetFrom() {
		s.violations = append(s.violations, fmt.Sprintf("%s of term %d left with the durable hard state at term %d vote %d",
			m.GetType(), m.GetTerm(), st.HardState.Term, st.HardState.Vote))
	}
}

// campaignToVote starts node 1 of three voters, lets its failure detector
// campaign (a pre-vote), grants it node 2's pre-vote, and returns with
// its vote requested: the point where raft's hard state must be durable
// before the vote requests leave.
func campaignToVote(t *testing.T, bug bugs.Set) (*Host, *voteScript) {
	t.Helper()
	disk := metamem.NewDisk()
	store, err := disk.Open()
	if err != nil {
		t.Fatal(err)
	}
	cc := ctrl.DefaultConfig(1, []uint64{1, 2, 3})
	cc.Bugs = bug
	cfg := core.Config{Node: 1, Process: 1, Storage: 1, Ctrl: &cc}
	env := &voteScript{disk: disk}
	h := NewHost(cfg, memfs.New(), nil, &memMeta{s: store}, env, nil, nil, Options{CheckInvariants: true})
	if err := h.Open(); err != nil {
		t.Fatal(err)
	}
	h.Start(1)
	for i := 0; i < 100 && !hasPrefix(env.calls, "send to=2 MsgPreVote"); i++ {
		h.Tick(env.timer, env.timer)
	}
	if !hasPrefix(env.take(), "send to=2 MsgPreVote") {
		t.Fatal("the failure detector never campaigned")
	}
	resp, _ := proto.Marshal(&pb.Message{Type: pb.MsgPreVoteResp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(1))})
	h.Message(env.timer, 2, core.GroupCtrl, resp)
	return h, env
}

// Point 10: a persist is written as it starts and reported durable only by
// its sync; the messages of its Ready leave after that.
func TestHostPersistsBeforeSend(t *testing.T) {
	h, env := campaignToVote(t, 0)
	calls := env.take()
	if !hasPrefix(calls, fmt.Sprintf("start l%d persist", h.MetaLog())) {
		t.Fatalf("no persist started for the vote: %q", calls)
	}
	if hasPrefix(calls, "send to=2 MsgVote") || hasPrefix(calls, "send to=3 MsgVote") {
		t.Fatalf("the vote requests left before the vote was durable: %q", calls)
	}
	if env.disk.Pending() != 1 {
		t.Fatalf("the persist's batch is not written-and-pending: %d pending", env.disk.Pending())
	}
	h.Run(env.timer, env.pending[0])
	calls = env.take()
	if !hasPrefix(calls, "send to=2 MsgVote") || !hasPrefix(calls, "send to=3 MsgVote") {
		t.Fatalf("the vote requests did not leave after the persist completed: %q", calls)
	}
	if len(env.violations) > 0 {
		t.Fatalf("point 10 broken: %s", strings.Join(env.violations, "; "))
	}
	if env.disk.Pending() != 0 {
		t.Fatal("the completed persist is not durable")
	}
}

// The check above catches a group that sends before its persist is
// durable (a planted bug).
func TestHostPersistCheckCatchesSendBeforePersist(t *testing.T) {
	_, env := campaignToVote(t, bugs.CtrlSendBeforePersist)
	if len(env.violations) == 0 {
		t.Fatal("the vote requests left before the persist completed, and the check saw nothing")
	}
}

// A failed metadata sync is the persist's completion with its error, and
// the process exits (rule 4).
func TestHostMetaSyncFailureExits(t *testing.T) {
	h, env := campaignToVote(t, 0)
	env.take()
	env.disk.FailNextSync()
	h.Run(env.timer, env.pending[0])
	calls := env.take()
	if env.script.exited == nil || !hasPrefix(calls, "exit persist metadata store failed") {
		t.Fatalf("a failed metadata sync did not end the process: %q", calls)
	}
	if hasPrefix(calls, "send to=2 MsgVote") {
		t.Fatalf("the vote requests left after the persist failed: %q", calls)
	}
}
