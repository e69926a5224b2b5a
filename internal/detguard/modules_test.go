package detguard

import (
	"os"
	"strings"
	"testing"
)

// guardedDeps loads the real module's dependency graph of its guarded
// packages.
func guardedDeps(t *testing.T) (DepGraph, string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := FindModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := Packages(root)
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, d := range dirs {
		rels = append(rels, strings.TrimPrefix(strings.TrimPrefix(d, root), "/"))
	}
	g, err := LoadDeps(root, rels)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modulePath(root)
	if err != nil {
		t.Fatal(err)
	}
	return g, mod
}

// TestDependencies is the dependency rule on the real tree: every package a
// guarded package links, directly or not, is standard, guarded or reviewed.
func TestDependencies(t *testing.T) {
	g, mod := guardedDeps(t)
	for _, v := range CheckDeps(g, mod, ReviewedDeps) {
		t.Error(v)
	}
}

// TestDependenciesCatchUnreviewed: the same tree with porcupine taken off
// the reviewed list fails, naming the guarded package that reaches it.
func TestDependenciesCatchUnreviewed(t *testing.T) {
	g, mod := guardedDeps(t)
	var without []Reviewed
	for _, r := range ReviewedDeps {
		if r.Pkg != "github.com/anishathalye/porcupine" {
			without = append(without, r)
		}
	}
	vs := CheckDeps(g, mod, without)
	if len(vs) == 0 {
		t.Fatal("porcupine off the reviewed list, yet no violation")
	}
	found := false
	for _, v := range vs {
		if v.File == "sim/linear" && strings.Contains(v.Detail, "github.com/anishathalye/porcupine") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no violation names sim/linear -> porcupine: %v", vs)
	}
}

// TestCheckDepsPlanted: each way a dependency escapes the guard is
// reported, and what is fine is not.
func TestCheckDepsPlanted(t *testing.T) {
	const mod = "example.com/m"
	reviewed := []Reviewed{
		{"example.com/ok", "pure"},
		{"example.com/stale", "nobody imports it any more"},
		{"example.com/noreason", " "},
	}
	g := DepGraph{
		mod + "/core/x": {"fmt", "vendor/golang.org/x/net/http2/hpack", "example.com/ok", "example.com/noreason",
			mod + "/core/y", mod + "/io/driver", "example.com/evil/rand", mod + "/cmd/sluice"},
		mod + "/sim/world": {"example.com/ok"},
	}
	vs := CheckDeps(g, mod, reviewed)
	want := []string{
		"core/x: dependency: imports example.com/evil/rand, which is neither guarded nor on the reviewed list",
		"core/x: dependency: imports example.com/m/cmd/sluice, a package of this module outside the guarded set",
		"internal/detguard/modules.go: dependency: reviewed dependency example.com/noreason has no reason",
		"internal/detguard/modules.go: dependency: reviewed dependency example.com/stale is reached by no guarded package",
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		// File:Line: prefix: line is 0 for dependency reports.
		g := strings.Replace(got[i], ":0:", ":", 1)
		if !strings.HasPrefix(g, want[i]) {
			t.Errorf("violation %d:\n got %s\nwant %s...", i, g, want[i])
		}
	}
}

func TestIsStandard(t *testing.T) {
	for p, want := range map[string]bool{
		"fmt": true, "hash/crc32": true, "vendor/golang.org/x/crypto/chacha20": true,
		"lukechampine.com/blake3": false, "github.com/a/b": false, "example.com/m/core": false,
	} {
		if got := isStandard(p); got != want {
			t.Errorf("isStandard(%q) = %v, want %v", p, got, want)
		}
	}
}
