package ctrl

// Transcript tests, in the manner of core/testdata: each file under
// testdata/ drives one Group through Step, each command followed by what
// that step must produce:
//
//	# comments and blank lines are kept as they are
//	<command>
//	----
//	<one line per effect, in order, in their stable text forms>
//
// `go test ./core/ctrl -run TestTranscripts -rewrite` writes what the group
// does now into every expected block; review the diff before committing.
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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/io/meta"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected blocks of core/ctrl/testdata")

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runTranscript(t, f) })
	}
}

func runTranscript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []string
	var g *Group
	var nowNs int64
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			out = append(out, line)
			continue
		}
		cmd := line
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command without ----", path, i+1)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		i-- // the blank line is kept by the loop
		got := transcriptStep(t, fmt.Sprintf("%s:%d", path, i), cmd, &g, &nowNs)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", path, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		out = append(out, cmd, "----")
		out = append(out, got...)
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func transcriptStep(t *testing.T, where, cmd string, gp **Group, nowNs *int64) []string {
	f := strings.Fields(cmd)
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	num := func(k string) uint64 {
		v, ok := args[k]
		if !ok {
			return 0
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %s=%q: %v", where, k, v, err)
		}
		return n
	}
	if _, ok := args["t"]; ok {
		*nowNs = int64(num("t")) * 1_000_000
	}
	if f[0] == "group" {
		var vs []uint64
		for _, s := range strings.Split(args["voters"], ",") {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("%s: voters: %v", where, err)
			}
			vs = append(vs, v)
		}
		g, err := New(DefaultConfig(num("id"), vs), meta.State{})
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		*gp = g
		return nil
	}
	g := *gp
	if g == nil {
		t.Fatalf("%s: no group yet", where)
	}
	var in Input
	switch f[0] {
	case "tick":
		in = Input{Kind: InTick, Draw: num("draw")}
	case "recv":
		typ, ok := pb.MessageType_value[args["type"]]
		if !ok {
			t.Fatalf("%s: type %q", where, args["type"])
		}
		m := &pb.Message{Type: pb.MessageType(typ).Enum(), From: new(num("from")), To: new(g.cfg.ID),
			Term: new(num("term")), Index: new(num("index")), LogTerm: new(num("logterm")),
			Commit: new(num("commit")), Reject: new(args["reject"] == "true")}
		bs, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		in = Input{Kind: InMessage, From: num("from"), Msg: bs}
	case "persisted":
		in = Input{Kind: InPersisted, Seq: num("seq"), Err: args["err"]}
	case "propose":
		if len(pos) != 2 {
			t.Fatalf("%s: propose key value", where)
		}
		v, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			t.Fatalf("%s: propose key value: %v", where, err)
		}
		// Encoded as given, unvalidated: the group must refuse a bad one.
		in = Input{Kind: InPropose, Msg: setCmd(pos[0], v)}
	case "status":
		term, lead, leader := g.Status()
		md := g.Metadata()
		return []string{fmt.Sprintf("term=%d lead=%d leader=%t applied=%d liveness.expiry_ms=%d", term, lead, leader, g.AppliedIndex(),
			md.Setting(metadata.LivenessExpiryMs))}
	default:
		t.Fatalf("%s: unknown command %q", where, f[0])
	}
	in.NowNs = *nowNs
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
