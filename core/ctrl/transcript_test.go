package ctrl

// Transcript tests, in the manner of core/testdata: each file under
// testdata/ drives one Group through Step, each command followed by the
// effects that step must produce, one line each in their stable text
// forms. internal/transcript reads the files (its doc.go gives the format
// and the words of a command); `go test ./core/ctrl -run TestTranscripts
// -rewrite` writes what the group does now into every expected block;
// review the diff before committing.
//
// Commands (t is absolute, in ms; time never goes back):
//
//	group id=1 voters=1,2,3        a new group on an empty store
//	tick t=200 [draw=N]            a tick input (draw defaults to 0)
//	recv t=.. from=2 type=MsgVoteResp term=1 [index= logterm= commit= reject]
//	persisted [t=..] seq=1 [err=...]
//	propose [t=..] key value        a setting (encoded as given, even a bad one)
//	status                         term, known leader, whether it leads

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/internal/transcript"
	"github.com/sluicemq/sluice/io/meta"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestTranscripts(t *testing.T) {
	transcript.RunDir(t, "testdata/*.txt", func(*testing.T) transcript.Runner {
		h := &harness{}
		return transcript.Runner{Step: h.step}
	})
}

// harness is one transcript's group and clock.
type harness struct {
	g     *Group
	nowNs int64
}

func (h *harness) step(c *transcript.Cmd) []string {
	if c.Has("t") {
		h.nowNs = int64(c.Uint("t", 0)) * 1_000_000
	}
	if c.Name == "group" {
		var vs []uint64
		for _, s := range strings.Split(c.Str("voters", ""), ",") {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				c.Fatalf("voters: %v", err)
			}
			vs = append(vs, v)
		}
		g, err := New(DefaultConfig(c.Uint("id", 0), vs), meta.State{})
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		h.g = g
		return nil
	}
	g := h.g
	if g == nil {
		c.Fatalf("no group yet")
	}
	var in Input
	switch c.Name {
	case "tick":
		in = Input{Kind: InTick, Draw: c.Uint("draw", 0)}
	case "recv":
		typ, ok := pb.MessageType_value[c.Str("type", "")]
		if !ok {
			c.Fatalf("type %q", c.Str("type", ""))
		}
		m := &pb.Message{Type: pb.MessageType(typ).Enum(), From: new(c.Uint("from", 0)), To: new(g.cfg.ID),
			Term: new(c.Uint("term", 0)), Index: new(c.Uint("index", 0)), LogTerm: new(c.Uint("logterm", 0)),
			Commit: new(c.Uint("commit", 0)), Reject: new(c.Has("reject"))}
		bs, err := proto.Marshal(m)
		if err != nil {
			c.Fatalf("%v", err)
		}
		in = Input{Kind: InMessage, From: c.Uint("from", 0), Msg: bs}
	case "persisted":
		in = Input{Kind: InPersisted, Seq: c.Uint("seq", 0), Err: c.Str("err", "")}
	case "propose":
		pos := c.Positional()
		if len(pos) != 2 {
			c.Fatalf("propose key value")
		}
		v, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			c.Fatalf("propose key value: %v", err)
		}
		// Encoded as given, unvalidated: the group must refuse a bad one.
		in = Input{Kind: InPropose, Msg: setCmd(pos[0], v)}
	case "status":
		term, lead, leader := g.Status()
		md := g.Metadata()
		return []string{fmt.Sprintf("term=%d lead=%d leader=%t applied=%d liveness.expiry_ms=%d", term, lead, leader, g.AppliedIndex(),
			md.Setting(metadata.LivenessExpiryMs))}
	default:
		c.Fatalf("unknown command %q", c.Name)
	}
	in.NowNs = h.nowNs
	var out []string
	for _, e := range g.Step(in) {
		out = append(out, e.String())
	}
	return out
}

// setCmd encodes a set command as given, without validating it.
func setCmd(key string, v int64) []byte {
	c := metadata.Command{Kind: metadata.SetSetting, Key: key, Value: v}
	return c.Encode(nil)
}
