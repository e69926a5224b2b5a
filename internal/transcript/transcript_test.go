package transcript

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records what the runner reports instead of failing the test, so
// that a test can require a failure.
type fakeTB struct {
	testing.TB // the real test, for anything the runner is not expected to call
	msgs       []string
	fatal      bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.fatal = true
	runtime.Goexit()
}

// runFake runs r over a file holding text and returns what it reported,
// and the file as it is afterwards.
func runFake(t *testing.T, r Runner, text string) (*fakeTB, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends this goroutine, as it ends a test's
		defer close(done)
		r.Run(f, path)
	}()
	<-done
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f, path, string(after)
}

// echo is a small harness: "echo w..." outputs each positional word on a
// line of its own, "panic" panics, "fail" fails through Fatalf, "empty"
// outputs an empty line.
func echo(c *Cmd) []string {
	switch c.Name {
	case "echo":
		return c.Positional()
	case "panic":
		panic("boom")
	case "fail":
		c.Fatalf("as asked")
	case "empty":
		return []string{"x", ""}
	}
	c.Fatalf("unknown command")
	return nil
}

func withRewrite(t *testing.T) {
	old := *rewrite
	*rewrite = true
	t.Cleanup(func() { *rewrite = old })
}

const passing = `# a comment
echo a b
----
a
b

# an empty block
echo
----


echo c
----
c
`

func TestPassingFileReportsNothing(t *testing.T) {
	f, _, after := runFake(t, Runner{Step: echo}, passing)
	if len(f.msgs) > 0 {
		t.Fatalf("reported %q", f.msgs)
	}
	if after != passing {
		t.Fatalf("a run without -rewrite changed the file:\n%s", after)
	}
}

func TestMismatchIsReportedAtTheCommandsLine(t *testing.T) {
	text := "echo a\n----\nb\n\n# two\necho c d\n----\nc\n"
	f, path, _ := runFake(t, Runner{Step: echo}, text)
	if f.fatal {
		t.Fatalf("a mismatch stopped the run: %q", f.msgs)
	}
	if len(f.msgs) != 2 {
		t.Fatalf("want both mismatches reported, got %q", f.msgs)
	}
	want := []string{
		path + ":1: echo a\ngot:\na\nwant:\nb",
		path + ":6: echo c d\ngot:\nc\nd\nwant:\nc",
	}
	if !reflect.DeepEqual(f.msgs, want) {
		t.Fatalf("reported\n%q\nwant\n%q", f.msgs, want)
	}
}

func TestRewriteWritesWhatTheStepsReturn(t *testing.T) {
	withRewrite(t)
	stale := `# a comment
echo a b
----
old
lines

# an empty block
echo
----
stale


echo c
----
`
	f, _, after := runFake(t, Runner{Step: echo}, stale)
	if len(f.msgs) > 0 {
		t.Fatalf("a rewrite reported %q", f.msgs)
	}
	if after != passing {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", after, passing)
	}
	// A rewrite of a passing file is byte for byte the same.
	if _, _, again := runFake(t, Runner{Step: echo}, passing); again != passing {
		t.Fatalf("a rewrite changed a passing file:\n%s", again)
	}
}

func TestRewriteSkipsAFileThatFailed(t *testing.T) {
	withRewrite(t)
	text := "echo a\n----\nold\n\nfail\n----\n"
	f, _, after := runFake(t, Runner{Step: echo}, text)
	if !f.fatal || after != text {
		t.Fatalf("fatal %v, file now:\n%s", f.fatal, after)
	}
}

func TestCommandWithoutSeparatorFailsAtItsLine(t *testing.T) {
	for _, text := range []string{"# c\n\necho a\nb\n", "# c\n\necho a\n"} {
		f, path, _ := runFake(t, Runner{Step: echo}, text)
		want := path + ":3: echo a: a command must be followed by a line ----"
		if !f.fatal || len(f.msgs) != 1 || f.msgs[0] != want {
			t.Fatalf("%q: reported %q (fatal %v), want %q", text, f.msgs, f.fatal, want)
		}
	}
}

func TestPanicIsReportedAtTheCommandsLine(t *testing.T) {
	f, path, _ := runFake(t, Runner{Step: echo}, "echo a\n----\na\n\npanic now\n----\n")
	if !f.fatal || len(f.msgs) != 1 || !strings.HasPrefix(f.msgs[0], path+":5: panic now: the step panicked: boom\n") {
		t.Fatalf("reported %q", f.msgs)
	}
	if !strings.Contains(f.msgs[0], "TestPanicIsReportedAtTheCommandsLine") && !strings.Contains(f.msgs[0], "transcript.echo") {
		t.Fatalf("no stack in %q", f.msgs[0])
	}
}

func TestStepFatalfNamesTheCommand(t *testing.T) {
	f, path, _ := runFake(t, Runner{Step: echo}, "\nfail x=1\n----\n")
	if want := path + ":2: fail x=1: as asked"; !f.fatal || len(f.msgs) != 1 || f.msgs[0] != want {
		t.Fatalf("reported %q, want %q", f.msgs, want)
	}
}

func TestOutputThatWouldNotReadBackFails(t *testing.T) {
	withRewrite(t)
	text := "empty\n----\n"
	f, _, after := runFake(t, Runner{Step: echo}, text)
	if !f.fatal || len(f.msgs) != 1 || !strings.Contains(f.msgs[0], `output line 2 is ""`) || after != text {
		t.Fatalf("reported %q, file now %q", f.msgs, after)
	}
}

func TestAfterRunsAfterEveryStep(t *testing.T) {
	n := 0
	after := func() error {
		if n++; n == 3 {
			return errors.New("broken")
		}
		return nil
	}
	f, path, _ := runFake(t, Runner{Step: echo, After: after}, "echo\n----\n\necho\n----\n\necho third\n----\nthird\n\necho\n----\n")
	if want := path + ":7: echo third: after the step: broken"; n != 3 || !f.fatal || len(f.msgs) != 1 || f.msgs[0] != want {
		t.Fatalf("After ran %d times; reported %q, want %q", n, f.msgs, want)
	}
	panicky := func() error { panic("invariant") }
	f, path, _ = runFake(t, Runner{Step: echo, After: panicky}, "echo\n----\n")
	if !f.fatal || len(f.msgs) != 1 || !strings.HasPrefix(f.msgs[0], path+":1: echo: the check after the step panicked: invariant") {
		t.Fatalf("reported %q", f.msgs)
	}
}

func TestEndRunsOnceAtTheEnd(t *testing.T) {
	var cmds []string
	r := Runner{
		Step: func(c *Cmd) []string { cmds = append(cmds, c.Name); return nil },
		End: func(end *Cmd) {
			cmds = append(cmds, "end")
			if end.Name != "" || len(end.Args) != 0 {
				end.Fatalf("the end has words: %q %v", end.Name, end.Args)
			}
			end.Fatalf("left open")
		},
	}
	f, path, _ := runFake(t, r, "a\n----\n\nb\n----\n")
	if want := path + ":end: left open"; !reflect.DeepEqual(cmds, []string{"a", "b", "end"}) || len(f.msgs) != 1 || f.msgs[0] != want {
		t.Fatalf("ran %v; reported %q, want %q", cmds, f.msgs, want)
	}
}

func TestRunDirRunsEachFileWithItsOwnRunner(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"one.txt", "two.txt", "other.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("echo "+name+"\n----\n"+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ran []string
	RunDir(t, filepath.Join(dir, "*.txt"), func(t *testing.T) Runner {
		ran = append(ran, t.Name())
		return Runner{Step: echo}
	})
	if want := []string{t.Name() + "/one", t.Name() + "/two"}; !reflect.DeepEqual(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		line string
		name string
		args []Arg
	}{
		{"tick", "tick", nil},
		{"  recv\tfrom=2  append ", "recv", []Arg{{Key: "from", Val: "2", Raw: "from=2"}, {Key: "append", Bare: true, Raw: "append"}}},
		{`client cmd="set a b" err="x=\"y\"" e=`, "client", []Arg{
			{Key: "cmd", Val: "set a b", Raw: `cmd="set a b"`},
			{Key: "err", Val: `x="y"`, Raw: `err="x=\"y\""`},
			{Key: "e", Val: "", Raw: "e="}}},
		{`done recs=[2:epoch 2:pub:a=b] queue=1:[1,2,3]:owner=1:x`, "done", []Arg{
			{Key: "recs", Val: "[2:epoch 2:pub:a=b]", Raw: "recs=[2:epoch 2:pub:a=b]"},
			{Key: "queue", Val: "1:[1,2,3]:owner=1:x", Raw: "queue=1:[1,2,3]:owner=1:x"}}},
		{`say "hello world" [a=b c] k=[x "]" y]`, "say", []Arg{
			{Key: "hello world", Bare: true, Raw: `"hello world"`},
			{Key: "[a=b c]", Bare: true, Raw: "[a=b c]"},
			{Key: "k", Val: `[x "]" y]`, Raw: `k=[x "]" y]`}}},
		{`body a"b c"d`, "body", []Arg{{Key: `a"b c"d`, Bare: true, Raw: `a"b c"d`}}},
	} {
		c := &Cmd{Line: tc.line}
		if err := c.parse(); err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if c.Name != tc.name || !reflect.DeepEqual(c.Args, tc.args) {
			t.Errorf("%q: name %q args %+v\nwant name %q args %+v", tc.line, c.Name, c.Args, tc.name, tc.args)
		}
	}
}

func TestArgsThatDoNotParse(t *testing.T) {
	for line, want := range map[string]string{
		`say "open`:        "a quote without its end",
		`say recs=[a b`:    "a [ without its ]",
		`say a]`:           "a ] without its [",
		`say k="a"b`:       `k="a"b: a quoted value must be one Go string literal`,
		`say k="\q"`:       `k="\q": a quoted value must be one Go string literal`,
		`say "a \" b`:      "a quote without its end",
		`say k=[a "]" b]]`: "a ] without its [",
	} {
		c := &Cmd{Line: line}
		if err := c.parse(); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", line, err, want)
		}
	}
	// In a file, the failure is at the command's line.
	f, path, _ := runFake(t, Runner{Step: echo}, "echo a\n----\na\n\necho \"b\n----\n")
	if want := path + `:5: echo "b: a quote without its end`; len(f.msgs) != 1 || f.msgs[0] != want {
		t.Fatalf("reported %q, want %q", f.msgs, want)
	}
}

func TestLookups(t *testing.T) {
	c := &Cmd{Line: `cmd n=12 h=0x1f neg=-3 z=010 s="a b" flag n=99 pos1 t=+5ms pos2`}
	if err := c.parse(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"Has flag", c.Has("flag"), true},
		{"Has n", c.Has("n"), true},
		{"Has absent", c.Has("absent"), false},
		{"Str s", c.Str("s", "def"), "a b"},
		{"Str flag", c.Str("flag", "def"), ""},
		{"Str absent", c.Str("absent", "def"), "def"},
		{"Str t", c.Str("t", ""), "+5ms"},
		{"Uint n (first wins)", c.Uint("n", 0), uint64(12)},
		{"Uint h", c.Uint("h", 0), uint64(31)},
		{"Uint z (decimal)", c.Uint("z", 0), uint64(10)},
		{"Uint absent", c.Uint("absent", 7), uint64(7)},
		{"Int neg", c.Int("neg", 0), int64(-3)},
		{"Int absent", c.Int("absent", -1), int64(-1)},
		{"Positional", c.Positional(), []string{"flag", "pos1", "pos2"}},
		{"Tail Has", c.Tail(6).Has("n"), true},
		{"Tail Uint", c.Tail(6).Uint("n", 0), uint64(99)},
		{"Tail Has before", c.Tail(6).Has("s"), false},
		{"Tail past the end", len(c.Tail(99).Args), 0},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

func TestBadNumbersFailAtTheCommandsLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		get  func(c *Cmd)
		want string
	}{
		{"n x=abc", func(c *Cmd) { c.Uint("x", 0) }, `:3: n x=abc: x=abc: want a number`},
		{"n x=-1", func(c *Cmd) { c.Uint("x", 0) }, `:3: n x=-1: x=-1: want a number`},
		{"n x=", func(c *Cmd) { c.Int("x", 0) }, `:3: n x=: x=: want a number`},
		{"n x", func(c *Cmd) { c.Int("x", 0) }, `:3: n x: x: want x=N`},
	} {
		step := func(c *Cmd) []string { tc.get(c); return nil }
		f, path, _ := runFake(t, Runner{Step: step}, "# c\n\n"+tc.line+"\n----\n")
		if !f.fatal || len(f.msgs) != 1 || !strings.HasPrefix(f.msgs[0], path+tc.want) {
			t.Errorf("%q: reported %q, want the prefix %q", tc.line, f.msgs, path+tc.want)
		}
	}
}
