package detguard

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestTree is the guard itself: every guarded package of the module must
// be free of violations.
func TestTree(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := FindModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, vs, err := CheckTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no guarded packages found under %s; discovery is broken", root)
	}
	t.Logf("guarded packages: %s", strings.Join(pkgs, " "))
	for _, p := range pkgs {
		if !InScope(p) {
			t.Errorf("package %s is outside the guarded set but was checked", p)
		}
	}
	if len(vs) > 0 {
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "\n%s", v)
		}
		t.Fatalf("determinism guard: %d violation(s) (see internal/detguard/doc.go for the rules and the %s marker):%s",
			len(vs), MarkerDirective, b.String())
	}
}

func TestInScope(t *testing.T) {
	for rel, want := range map[string]bool{
		"core":              true,
		"core/record":       true,
		"core/queue/state":  true,
		"corex":             false,
		"io/vfs":            true,
		"io/seglog":         true,
		"io/driver":         true,
		"io/meta":           true,
		"io/meta/metakv":    true,
		"io/meta/metatest":  false,
		"io/vfs/osfs":       false,
		"io":                false,
		"io/other":          false,
		"sim":               true,
		"sim/prng":          true,
		"sim/net/fault":     true,
		"sim/sweep":         false,
		"sim/sweep/worker":  false,
		"sim/sweeper":       true,
		"cmd/sluice":        false,
		"internal/detguard": false,
		"fsio":              false,
		"scenarios":         false,
	} {
		if got := InScope(rel); got != want {
			t.Errorf("InScope(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestPackagesSkipsTestdata checks that discovery never descends into
// testdata and skips directories holding only tests.
func TestPackagesDiscovery(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("core/a/a.go", "package a\n")
	write("core/a/testdata/x/x.go", "package x\n")
	write("core/onlytests/x_test.go", "package onlytests\n")
	write("sim/b/b.go", "package b\n")
	write("sim/sweep/s.go", "package sweep\n")
	write("sim/sweep/inner/i.go", "package inner\n")
	write("io/vfs/v.go", "package vfs\n")
	write("io/vfs/osfs/o.go", "package osfs\n")
	write("cmd/c/c.go", "package main\n")
	dirs, err := Packages(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dirs {
		rel, _ := filepath.Rel(root, d)
		got = append(got, filepath.ToSlash(rel))
	}
	want := []string{"core/a", "io/vfs", "sim/b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Packages = %v, want %v", got, want)
	}
}

// expectation is one (line, rule) pair, as "file:line: rule".
func key(file string, line int, rule string) string {
	return fmt.Sprintf("%s:%d: %s", filepath.Base(file), line, rule)
}

// wants collects the "// want rule..." annotations of the non-test .go
// files in dir; "// want@+1 rule..." expects the rules on the next line.
func wants(t *testing.T, dir string) map[string]int {
	t.Helper()
	names, err := goFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]int{}
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				_, rest, ok := strings.Cut(c.Text, "// want")
				if !ok {
					continue
				}
				line := fset.Position(c.Pos()).Line
				if r, ok := strings.CutPrefix(rest, "@+1"); ok {
					rest, line = r, line+1
				}
				if !strings.HasPrefix(rest, " ") {
					t.Fatalf("%s:%d: malformed want comment %q", n, line, c.Text)
				}
				for _, rule := range strings.Fields(rest) {
					out[key(n, line, rule)]++
				}
			}
		}
	}
	return out
}

func TestBadFixture(t *testing.T) {
	dir := filepath.Join("testdata", "bad")
	want := wants(t, dir)
	if len(want) == 0 {
		t.Fatal("bad fixture declares no expected violations")
	}
	vs, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, v := range vs {
		got[key(v.File, v.Line, v.Rule)]++
		if v.Detail == "" {
			t.Errorf("%s: empty detail", v)
		}
		if !strings.HasPrefix(v.String(), v.File+":") {
			t.Errorf("bad report format: %q", v)
		}
	}
	var missing, extra []string
	for k, n := range want {
		if got[k] < n {
			missing = append(missing, k)
		}
	}
	for k, n := range got {
		if want[k] < n {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, k := range missing {
		t.Errorf("expected violation not reported: %s", k)
	}
	for _, k := range extra {
		t.Errorf("unexpected violation reported: %s", k)
	}
	if t.Failed() {
		for _, v := range vs {
			t.Logf("reported: %s", v)
		}
	}
	// Every rule is exercised by the fixture.
	for _, rule := range []string{RuleImport, RuleGo, RuleSelect, RuleChan, RuleSend, RuleRecv, RuleMapRange, RuleReflectMap, RuleFloatTrans, RuleFloatFused, RuleMarker} {
		found := false
		for _, v := range vs {
			found = found || v.Rule == rule
		}
		if !found {
			t.Errorf("rule %s not exercised by the bad fixture", rule)
		}
	}
}

func TestGoodFixture(t *testing.T) {
	vs, err := Check(filepath.Join("testdata", "good"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("unexpected violation in good fixture: %s", v)
	}
}

// TestTypeErrorFails makes sure a package that does not type-check is an
// error, not a silent pass.
func TestTypeErrorFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/broken\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "package broken\n\nfunc F(m map[string]int) int {\n\tfor k := range m {\n\t\treturn undefinedName + len(k)\n\t}\n\treturn 0\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(dir); err == nil {
		t.Fatal("Check succeeded on a package with a type error")
	} else {
		t.Logf("error as expected: %v", err)
	}
}

// TestCheckTreePlanted plants a violation in a throwaway module and checks
// that the tree walk reports it, relative to the root, and ignores code
// outside the guarded set.
func TestCheckTreePlanted(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/m\n\ngo 1.26\n",
		"core/a/a.go":      "package a\n\nimport \"time\"\n\nvar T = time.Now\n",
		"core/a/a_test.go": "package a\n\nimport \"os\"\n\nvar _ = os.Getpid\n",
		"sim/sweep/s.go":   "package sweep\n\nimport \"sync\"\n\nvar Mu sync.Mutex\n",
		"sim/b/b.go":       "package b\n\nfunc F(m map[int]int) (n int) {\n\tfor k := range m {\n\t\tn += k\n\t}\n\treturn\n}\n",
	}
	for rel, src := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, vs, err := CheckTree(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, fmt.Sprintf("%s:%d: %s", v.File, v.Line, v.Rule))
	}
	want := []string{"core/a/a.go:3: import", "sim/b/b.go:4: map-range"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("CheckTree reported %q, want %q", got, want)
	}
}
