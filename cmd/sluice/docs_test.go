package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// docSeedsMax is the documented rule (docs/simulator.md, "Documented
// commands are tested"): a documented sweep of more seeds runs this many.
const docSeedsMax = 4

// docCommands returns the indented `go run ./cmd/sluice ...` lines of a
// Markdown file (not those in fenced blocks, such as the fleet's YAML),
// without their comments.
func docCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	fenced := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := s.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "    ") {
			continue
		}
		cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "go run ./cmd/sluice ")
		if !ok {
			continue
		}
		if i := strings.Index(cmd, " #"); i >= 0 {
			cmd = cmd[:i]
		}
		out = append(out, strings.TrimSpace(cmd))
	}
	return out
}

// docArgs applies the documented budget rule to a command's arguments.
func docArgs(args []string) []string {
	out := append([]string{}, args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--seeds" {
			if n, err := strconv.Atoi(out[i+1]); err == nil && n > docSeedsMax {
				out[i+1] = strconv.Itoa(docSeedsMax)
			}
		}
	}
	if len(out) >= 2 && out[0] == "sim" && out[1] == "mutants" && !strings.Contains(strings.Join(out, " "), "--bugs") {
		out = append(out, "--bugs", "ack-before-sync,confirm-short,confirm-without-owner")
	}
	return out
}

// docWant is the exit status a documented command must have: 1 when it
// runs a seed or sweep with a planted bug, or diffs two different runs; 0
// otherwise.
func docWant(args []string) int {
	joined := " " + strings.Join(args, " ") + " "
	if len(args) >= 2 && args[0] == "sim" {
		switch args[1] {
		case "shrink", "replay", "mutants", "help", "--help":
			return 0
		case "diff":
			if len(args) >= 4 && (args[2] != args[3] || strings.Contains(joined, " --bugs-b ")) {
				return 1
			}
			return 0
		}
	}
	if strings.Contains(joined, " --bugs ") && !strings.Contains(joined, " --bugs list ") {
		return 1
	}
	return 0
}

// copyDir copies the files of src (one level of subdirectories) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// limitedBuffer keeps the last bytes written, so that a long trace stays
// bounded in memory.
type limitedBuffer struct {
	b bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.n += len(p)
	l.b.Write(p)
	if l.b.Len() > 1<<20 {
		keep := append([]byte{}, l.b.Bytes()[l.b.Len()-64<<10:]...)
		l.b.Reset()
		l.b.Write(keep)
	}
	return len(p), nil
}

// Every command README.md and docs/simulator.md print is run as printed
// (under the documented budget rule), in order, in a scratch directory with
// a copy of scenarios/, and exits as the docs say: the walkthroughs (a seed
// that fails, shrink it, replay it) work as shown.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"README.md", filepath.Join("docs", "simulator.md")} {
		cmds := docCommands(t, filepath.Join(root, doc))
		if len(cmds) < 5 {
			t.Fatalf("%s: found only %d commands", doc, len(cmds))
		}
		t.Run(filepath.Base(doc), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join(root, "scenarios"), filepath.Join(dir, "scenarios"))
			t.Chdir(dir)
			for _, cmd := range cmds {
				if strings.ContainsAny(cmd, `"'$`) {
					t.Fatalf("%s: %q: quoted or shell arguments; the test splits on spaces", doc, cmd)
				}
				args := docArgs(strings.Fields(cmd))
				var out, errb limitedBuffer
				code := run(args, env{stdout: &out, stderr: &errb})
				if want := docWant(args); code != want {
					t.Errorf("%s: go run ./cmd/sluice %s: exit %d, want %d\nstderr: %s\nstdout (end): %s",
						doc, cmd, code, want, errb.b.String(), tail(out.b.String()))
				}
			}
		})
	}
}

func TestDocRule(t *testing.T) {
	got := strings.Join(docArgs(strings.Fields("sim --seeds 20000 --shard 3/8")), " ")
	if got != "sim --seeds 4 --shard 3/8" {
		t.Fatal(got)
	}
	for cmd, want := range map[string]int{
		"sim --seed 1 --bugs sync-skip": 1, "sim --bugs list": 0, "sim shrink --seed 1 --bugs sync-skip --name x": 0,
		"sim diff 1 1 --bugs-b sync-skip": 1, "sim diff 1 1": 0, "sim diff 3 4": 1, "sim --seeds 100 --json": 0,
	} {
		if got := docWant(strings.Fields(cmd)); got != want {
			t.Errorf("%s: want exit %d, rule says %d", cmd, want, got)
		}
	}
}
