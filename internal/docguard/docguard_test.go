package docguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRoot returns the directory holding go.mod, above the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// TestNoHistoryReferences is the guard: the module's Go comments and
// Markdown cite no work ticket, specification document or work session.
func TestNoHistoryReferences(t *testing.T) {
	fs, err := Scan(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		t.Error(f)
	}
	if len(fs) > 0 {
		t.Logf("%d history references: say what holds now, or cite the design note by subject (docs/design/)", len(fs))
	}
}

// TestPlantedGo shows the guard failing: planted references in comments
// are reported with their lines, wrapped ones too; code and the word
// "session" alone are not.
func TestPlantedGo(t *testing.T) {
	src := `package p

// fixed in issue 12
func f() string {
	return "issue 12 is a string, not a comment" // an AMQP client session ends
}

// Wrapped: the recovery (issue
// 11) activates it; as seed
// 004 has it.
var x = 1

/* measured in the sixth session; see Issue #7 */
var y = 2

// A Proof recorded from an earlier session does not verify; seed 627
// of a sweep is a run.
var z = 3
`
	fs, err := CheckGo("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`p.go:3: ticket: "issue 12"`,
		`p.go:8: ticket: "issue 11"`,
		`p.go:9: spec: "seed 004"`,
		`p.go:13: ticket: "Issue #7"`,
		`p.go:13: session: "sixth session"`,
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlantedMarkdown shows the guard failing on Markdown, and scenarios
// exempt.
func TestPlantedMarkdown(t *testing.T) {
	md := "# Notes\n\nThe budget is seed 004's; measured\nin this session.\n"
	fs := CheckMarkdown("docs/x.md", []byte(md))
	if len(fs) != 2 || fs[0].Line != 3 || fs[0].Rule != "spec" || fs[1].Line != 4 || fs[1].Rule != "session" {
		t.Errorf("findings %v, want a spec reference on line 3 and a session one on line 4", fs)
	}
	if !markdownExempt("scenarios/named/README.md") {
		t.Error("scenarios/named/README.md not exempt")
	}
	for _, rel := range []string{"docs/design/recovery.md", "docs/archive/history.md"} {
		if markdownExempt(rel) {
			t.Errorf("%s exempt", rel)
		}
	}
}

// TestPlantedTree shows Scan finding a planted comment in a file of a
// tree, and skipping testdata.
func TestPlantedTree(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\n\n// fixed in issue 12\nvar A = 1\n")
	write("a/testdata/t.go", "package t\n\n// fixed in issue 12\n")
	write("docs/h.md", "the sixth session\n")
	write("README.md", "clean\n")
	fs, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].String() != `a/a.go:3: ticket: "issue 12"` || !strings.HasPrefix(fs[1].String(), "docs/h.md:1: session") {
		t.Errorf("findings %v, want a/a.go:3's and docs/h.md:1's", fs)
	}
}
