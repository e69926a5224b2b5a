package detguard

import (
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// RuleDependency names violations of the dependency rule: a guarded
// package that reaches, directly or through other packages, a package the
// guard does not check and no review has accepted.
const RuleDependency = "dependency"

// Reviewed is one package outside the guarded set that guarded code may
// import, with the reason a reviewer accepted it. The rules of this guard
// are not run on it (its source is not ours to change), so the reason must
// say why its nondeterminism, if any, cannot reach an effect or the trace.
type Reviewed struct {
	Pkg    string // exact import path
	Reason string
}

// ReviewedDeps is the reviewed allowlist of the dependency rule. An entry
// that no guarded package reaches any more is reported as stale, so that it
// cannot excuse a later import without a fresh review.
var ReviewedDeps = []Reviewed{
	{"github.com/anishathalye/porcupine", "sim/linear's second decider of linearizability. " +
		"It starts one goroutine per partition and joins them before it returns; with CheckOperations " +
		"(no timeout, no time.After) its verdict is the AND of the partitions' verdicts, a pure function " +
		"of the history. It only judges, never drives the world, and the offset sweep must agree with it."},
	{"lukechampine.com/blake3", "the trace hash (io/driver). Hasher.Write of more than one chunk " +
		"hashes subtrees in goroutines joined by a WaitGroup, each writing its own slot: the digest is a " +
		"pure function of the bytes written."},
	{"lukechampine.com/blake3/guts", "blake3's compression functions, reached through it; the same " +
		"goroutine pattern (indexed slots, joined), same digest on every path."},
	{"lukechampine.com/blake3/bao", "imported by blake3's package itself; the trace never calls it."},
	{"github.com/klauspost/cpuid/v2", "blake3 reads the CPU's features at init to pick an assembly " +
		"path; the path changes speed, never the digest (BLAKE3 is specified bit for bit)."},
}

// DepGraph is what the dependency rule judges: for each guarded package
// (import path), every package it imports directly or not.
type DepGraph map[string][]string

// CheckDeps applies the dependency rule to g. A dependency is fine when it
// is in the standard library, is itself guarded (a package of module
// modPath whose directory InScope accepts), or is on the reviewed list.
// Anything else is a violation reported against the guarded package that
// reaches it; a reviewed entry that nothing reaches is reported as stale.
func CheckDeps(g DepGraph, modPath string, reviewed []Reviewed) []Violation {
	ok := make(map[string]bool, len(reviewed))
	var vs []Violation
	for _, r := range reviewed {
		if strings.TrimSpace(r.Reason) == "" {
			vs = append(vs, Violation{File: "internal/detguard/modules.go", Rule: RuleDependency,
				Detail: fmt.Sprintf("reviewed dependency %s has no reason", r.Pkg)})
		}
		ok[r.Pkg] = true
	}
	used := make(map[string]bool)
	guarded := make([]string, 0, len(g))
	for p := range g {
		guarded = append(guarded, p)
	}
	sort.Strings(guarded) // the reports come out in one order
	for _, p := range guarded {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, modPath), "/")
		for _, d := range g[p] {
			switch {
			case isStandard(d):
			case d == modPath || strings.HasPrefix(d, modPath+"/"):
				if !InScope(strings.TrimPrefix(strings.TrimPrefix(d, modPath), "/")) {
					vs = append(vs, Violation{File: rel, Rule: RuleDependency,
						Detail: fmt.Sprintf("imports %s, a package of this module outside the guarded set", d)})
				}
			case ok[d]:
				used[d] = true
			default:
				vs = append(vs, Violation{File: rel, Rule: RuleDependency,
					Detail: fmt.Sprintf("imports %s, which is neither guarded nor on the reviewed list (internal/detguard/modules.go)", d)})
			}
		}
	}
	for _, r := range reviewed {
		if !used[r.Pkg] {
			vs = append(vs, Violation{File: "internal/detguard/modules.go", Rule: RuleDependency,
				Detail: fmt.Sprintf("reviewed dependency %s is reached by no guarded package: remove it (a stale entry would excuse a later import unreviewed)", r.Pkg)})
		}
	}
	Sort(vs)
	return vs
}

// isStandard reports whether an import path belongs to the standard
// library: its first element has no dot (the go command's own rule for
// GOROOT paths, which also covers the toolchain's vendor/ tree).
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// LoadDeps asks the go command (in the module root) for the transitive
// imports of each guarded package, tests excluded: the packages the
// simulator and the host really link.
func LoadDeps(root string, pkgs []string) (DepGraph, error) {
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("detguard: go list: %v: %s", err, stderr.String())
	}
	g := DepGraph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] != mod && !strings.HasPrefix(f[0], mod+"/") {
			return nil, fmt.Errorf("detguard: go list named %s, outside module %s", f[0], mod)
		}
		g[f[0]] = f[1:]
	}
	if len(g) != len(pkgs) {
		return nil, fmt.Errorf("detguard: go list gave %d packages for %d guarded ones", len(g), len(pkgs))
	}
	return g, nil
}
