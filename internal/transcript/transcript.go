package transcript

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// rewrite is one flag for every package's transcripts, so that each is
// rewritten with the same command.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected blocks of the transcripts with what the code does now")

// Runner replays transcripts through a caller's harness.
type Runner struct {
	// Step runs one command and returns its output lines.
	Step func(c *Cmd) []string
	// After, if set, runs after every step; an error fails the test at
	// the command's line.
	After func() error
	// End, if set, runs once after the file's last command, before the
	// rewrite; it fails through end.Fatalf, at "file:end".
	End func(end *Cmd)
}

// RunDir runs every file that glob matches as a subtest, named by the
// file's name without its extension, each with the Runner that newRunner
// makes for it. No file matching is a failure: a mistyped glob would
// otherwise pass without testing anything.
func RunDir(t *testing.T, glob string, newRunner func(t *testing.T) Runner) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatalf("transcripts %s: %v", glob, err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts match %s", glob)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		t.Run(name, func(t *testing.T) { newRunner(t).Run(t, f) })
	}
}

// Run replays the transcript at path: each command through Step, its
// output compared with the expected block, or, with -rewrite, written
// back in its place.
func (r Runner) Run(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var lines []string
	if len(data) > 0 {
		lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		if lines[i] == "" || strings.HasPrefix(lines[i], "#") {
			continue
		}
		c := &Cmd{Line: lines[i], file: path, line: i + 1, t: t}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			c.Fatalf("a command must be followed by a line ----")
		}
		if err := c.parse(); err != nil {
			c.Fatalf("%v", err)
		}
		var want []string
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := r.step(c)
		out = append(out, "----")
		out = append(out, got...)
		if i < len(lines) {
			out = append(out, "") // the blank line that ends the block
		}
		if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); !*rewrite && g != w {
			t.Errorf("%s\ngot:\n%s\nwant:\n%s", c.where(), g, w)
		}
	}
	if r.End != nil {
		end := &Cmd{file: path, t: t}
		end.try("End", func() { r.End(end) })
	}
	if *rewrite {
		text := ""
		if len(out) > 0 {
			text = strings.Join(out, "\n") + "\n"
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatalf("%v", err)
		}
	}
}

// step runs one command, checks what it returned can be written back as
// it is, and runs the After hook.
func (r Runner) step(c *Cmd) []string {
	c.t.Helper()
	if r.Step == nil {
		c.Fatalf("the Runner has no Step")
	}
	var got []string
	c.try("the step", func() { got = r.Step(c) })
	for n, l := range got {
		if l == "" || strings.Contains(l, "\n") {
			c.Fatalf("output line %d is %q: a blank line or a newline would end the block", n+1, l)
		}
	}
	if r.After != nil {
		var err error
		c.try("the check after the step", func() { err = r.After() })
		if err != nil {
			c.Fatalf("after the step: %v", err)
		}
	}
	return got
}

// try runs f and turns a panic into a failure at the command's line, with
// the stack that says where it came from.
func (c *Cmd) try(what string, f func()) {
	c.t.Helper()
	defer func() {
		if p := recover(); p != nil {
			c.Fatalf("%s panicked: %v\n%s", what, p, debug.Stack())
		}
	}()
	f()
}

// Cmd is one command of a transcript: its line as written, its position
// and its words.
type Cmd struct {
	Line string // the command's line as written
	Name string // its first word
	Args []Arg  // the words after the name, in order

	file string
	line int // 1-based; 0 for the Cmd that stands for the end of the file
	t    testing.TB
}

// Arg is one word of a command after its name.
type Arg struct {
	Key  string // up to the first = outside quotes and brackets; a bare word's whole text, unquoted
	Val  string // after the =, unquoted; "" for a bare word
	Bare bool   // the word has no =
	Raw  string // the word as written
}

// Pos is the command's position, "file:line", or "file:end" for the Cmd
// that the End hook gets.
func (c *Cmd) Pos() string {
	if c.line == 0 {
		return c.file + ":end"
	}
	return fmt.Sprintf("%s:%d", c.file, c.line)
}

// where is the position and the command, for failure messages.
func (c *Cmd) where() string {
	if c.Line == "" {
		return c.Pos()
	}
	return c.Pos() + ": " + c.Line
}

// Fatalf fails the test at the command's position, naming the command,
// and stops it.
func (c *Cmd) Fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s: %s", c.where(), fmt.Sprintf(format, args...))
}

// Tail is c with only the arguments from i on: the lookups of a
// subcommand's fields, which must not see the words before it.
func (c *Cmd) Tail(i int) *Cmd {
	d := *c
	d.Args = c.Args[min(i, len(c.Args)):]
	return &d
}

// Has reports whether a word has key: a bare flag, or key=value.
func (c *Cmd) Has(key string) bool {
	_, ok := c.arg(key)
	return ok
}

// Str returns the value of key ("" for a bare flag), or def without one.
func (c *Cmd) Str(key, def string) string {
	if a, ok := c.arg(key); ok {
		return a.Val
	}
	return def
}

// Int returns the number that key says, or def without one.
func (c *Cmd) Int(key string, def int64) int64 { return number(c, key, def, strconv.ParseInt) }

// Uint returns the number that key says, or def without one.
func (c *Cmd) Uint(key string, def uint64) uint64 { return number(c, key, def, strconv.ParseUint) }

func number[N int64 | uint64](c *Cmd, key string, def N, parse func(string, int, int) (N, error)) N {
	a, ok := c.arg(key)
	if !ok {
		return def
	}
	n, err := parse(a.Val, c.base(a), 64)
	if err != nil {
		c.Fatalf("%s=%s: want a number: %v", a.Key, a.Val, err)
	}
	return n
}

// base is the base strconv reads a's number in: with 0x, base 0, which
// reads the prefix; otherwise 10, so that a leading zero is no octal.
func (c *Cmd) base(a Arg) int {
	if a.Bare {
		c.Fatalf("%s: want %s=N", a.Key, a.Key)
	}
	if s := strings.TrimPrefix(a.Val, "-"); strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return 0
	}
	return 10
}

// Positional returns the bare words, in order, unquoted.
func (c *Cmd) Positional() []string {
	var out []string
	for _, a := range c.Args {
		if a.Bare {
			out = append(out, a.Key)
		}
	}
	return out
}

// arg is the first argument with key.
func (c *Cmd) arg(key string) (Arg, bool) {
	for _, a := range c.Args {
		if a.Key == key {
			return a, true
		}
	}
	return Arg{}, false
}

// parse splits c.Line into its name and arguments.
func (c *Cmd) parse() error {
	words, err := split(c.Line)
	if err != nil {
		return err
	}
	c.Name, c.Args = words[0], nil
	for _, w := range words[1:] {
		a := Arg{Raw: w, Key: w, Bare: true}
		if eq := outside(w, '='); eq >= 0 {
			a.Key, a.Val, a.Bare = w[:eq], w[eq+1:], false
		}
		s := &a.Val
		if a.Bare {
			s = &a.Key
		}
		if strings.HasPrefix(*s, `"`) {
			u, err := strconv.Unquote(*s)
			if err != nil {
				return fmt.Errorf("%s: a quoted value must be one Go string literal", w)
			}
			*s = u
		}
		c.Args = append(c.Args, a)
	}
	return nil
}

// split cuts a line into words at spaces and tabs outside "quotes" and
// [brackets]. A backslash inside quotes escapes the byte after it, so \"
// does not end them.
func split(line string) ([]string, error) {
	var words []string
	from := -1
	err := scan(line, func(i int, b byte, inside bool) {
		switch {
		case inside || (b != ' ' && b != '\t'):
			if from < 0 {
				from = i
			}
		case from >= 0:
			words, from = append(words, line[from:i]), -1
		}
	})
	if err != nil {
		return nil, err
	}
	if from >= 0 {
		words = append(words, line[from:])
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("an empty command")
	}
	return words, nil
}

// outside returns the index of the first b in w outside quotes and
// brackets, or -1.
func outside(w string, b byte) int {
	at := -1
	scan(w, func(i int, c byte, inside bool) {
		if at < 0 && c == b && !inside {
			at = i
		}
	})
	return at
}

// scan calls f for each byte of s with whether it is inside quotes or
// brackets (a quote or bracket that opens or closes counts as inside),
// and reports an unterminated quote or unbalanced bracket.
func scan(s string, f func(i int, b byte, inside bool)) error {
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case quoted && b == '\\' && i+1 < len(s):
			f(i, b, true)
			i++
			b = s[i]
		case b == '"':
			quoted = !quoted
			f(i, b, true)
			continue
		case quoted:
		case b == '[':
			depth++
		case b == ']':
			if depth == 0 {
				return fmt.Errorf("a ] without its [")
			}
			depth--
			f(i, b, true)
			continue
		}
		f(i, b, quoted || depth > 0)
	}
	switch {
	case quoted:
		return fmt.Errorf("a quote without its end")
	case depth > 0:
		return fmt.Errorf("a [ without its ]")
	}
	return nil
}
