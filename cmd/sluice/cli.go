package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// command is one subcommand's flag set and help.
type command struct {
	name     string // "sluice sim shrink"
	synopsis string // usage lines
	about    string // what it does; examples
	fs       *flag.FlagSet
}

func newCommand(name, synopsis, about string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors and help are printed by parse, in this command's words.
	fs.SetOutput(discard{})
	fs.Usage = func() {}
	return &command{name: name, synopsis: synopsis, about: about, fs: fs}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// help returns the command's full help text.
func (c *command) help() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "usage: %s\n\n%s\nflags:\n", c.synopsis, c.about)
	c.fs.SetOutput(&b)
	c.fs.PrintDefaults()
	c.fs.SetOutput(discard{})
	return b.String()
}

// parse parses args, allowing flags after positional arguments (`sim replay
// FILE --trace`, the form people type), and returns the positional ones.
// done is true when the command is finished: help was printed (status 0)
// or a usage error was (status 2).
func (c *command) parse(e env, args []string) (pos []string, status int, done bool) {
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(e.stdout, c.help())
				return nil, 0, true
			}
			msg := err.Error()
			if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
				var names []string
				c.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
				msg = fmt.Sprintf("unknown flag --%s%s", name, suggest(name, names))
			}
			return nil, c.fail(e, msg), true
		}
		args = c.fs.Args()
		if len(args) == 0 {
			return pos, 0, false
		}
		pos = append(pos, args[0])
		args = args[1:]
		if len(pos) > 16 {
			return nil, c.fail(e, "too many arguments"), true
		}
	}
}

// fail prints a usage error and returns 2.
func (c *command) fail(e env, msg string) int {
	return usageError(e, c.name, c.name+" --help", msg)
}

// set reports whether flag name was given on the command line.
func (c *command) set(name string) bool {
	given := false
	c.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// suggest returns ` (did you mean "x"?)` for the candidate closest to word,
// if one is close enough to be a typo.
func suggest(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD || (d == bestD && best == "" && d <= len(c)/3) {
			if d <= max(1, len(c)/3) {
				best, bestD = c, d
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance, with a swap of two neighbours
// counting one (shirnk for shrink).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// parseInstant reads a simulated instant as the trace and failures print it
// ("t=2.288518965s" or "2.288518965s"), or any Go duration ("2.5s",
// "1500ms").
func parseInstant(s string) (int64, error) {
	d, err := time.ParseDuration(strings.TrimPrefix(s, "t="))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a simulated instant such as 2.5s or t=2.288518965s, as the trace prints it", s)
	}
	return int64(d), nil
}

// instantFlag is a flag holding a simulated instant.
type instantFlag struct{ ns int64 }

func (f *instantFlag) String() string {
	if f == nil || f.ns == 0 {
		return ""
	}
	return time.Duration(f.ns).String()
}

func (f *instantFlag) Set(s string) error {
	ns, err := parseInstant(s)
	f.ns = ns
	return err
}
