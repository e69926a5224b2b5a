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
	{"lukechampine.com/blake3/guts", "BLAKE3's compression functions, called by core/digest's Hasher " +
		"(the trace hash, the retained content identity, the sealed reads' page digests, the transition " +
		"digest), which uses only goroutine-free ones (CompressBuffer, CompressChunk, ParentNode, " +
		"ChainingValue, CompressNode); blake3.Hasher, which starts goroutines for large writes, is " +
		"reached by no guarded package."},
	{"github.com/klauspost/cpuid/v2", "guts reads the CPU's features at init to pick an assembly " +
		"path; the path changes speed, never the digest (BLAKE3 is specified bit for bit)."},

	// The metadata group (core/ctrl): etcd's raft v3.7.0 and the protobuf
	// runtime its raftpb messages are generated for. Reviewed against the
	// v3.7.0 source in the module cache.
	{"go.etcd.io/raft/v3", "core/ctrl's RawNode. Its one randomness is raft.go's globalRand (crypto/rand " +
		"behind a sync.Mutex), drawn only for randomizedElectionTimeout, which only tickElection compares with " +
		"electionElapsed: core/ctrl sets ElectionTick to 2^40 ticks and CheckQuorum off, so raft never campaigns " +
		"on its own (campaigns come from core/ctrl's failure detector, jittered by the input's draw); the draw " +
		"happens but its value reaches no effect. No goroutine in RawNode's paths (node.go's StartNode/run, " +
		"which use goroutines and context, are never called); no clock. Message order in a Ready is deterministic: " +
		"peers are visited in sorted id order (tracker.Visit, campaign's sorted ids). Its package logger " +
		"(log, os: stderr) is replaced by core/ctrl's Config.Logger; getLogger is reached only on a panic path " +
		"of MemoryStorage and Status, which core/ctrl does not use."},
	{"go.etcd.io/raft/v3/raftpb", "raft's messages (google.golang.org/protobuf generated code, no map " +
		"fields): core/ctrl marshals them with Deterministic set and formats them by their getters, never " +
		"by prototext (String)."},
	{"go.etcd.io/raft/v3/quorum", "raft's quorum arithmetic. It ranges over maps of voter ids, but only " +
		"to count votes or to fill a slice it sorts before taking the committed index: order-free results."},
	{"go.etcd.io/raft/v3/tracker", "raft's progress tracker. Its map ranges either sort the ids first " +
		"(Visit, VoterNodes, LearnerNodes, ProgressMap.String) or count (TallyVotes) or copy (Clone); the " +
		"messages built while visiting peers therefore come out in sorted id order."},
	{"go.etcd.io/raft/v3/confchange", "raft's configuration changes, reached through raft's restore and " +
		"ApplyConfChange. core/ctrl proposes no configuration change (a conf-change entry panics, and the " +
		"voters come from its configuration), so these map ranges never run in its paths."},
	{"google.golang.org/protobuf/proto", "Marshal/Unmarshal of raftpb messages. core/ctrl marshals with " +
		"MarshalOptions{Deterministic: true} (raftpb has no maps, so the bytes are a function of the message)."},
	{"google.golang.org/protobuf/internal/detrand", "protobuf's deliberately unstable text output: a seed " +
		"from a hash of the running binary (not the clock or the OS's randomness) that perturbs prototext and " +
		"protojson whitespace. It reaches only text formatting, which core/ctrl never produces (effects format " +
		"messages by their getters)."},
	{"google.golang.org/protobuf/encoding/prototext", "reached through the generated String methods; " +
		"core/ctrl never calls them (see detrand)."},
	{"google.golang.org/protobuf/internal/impl", protobufRuntime + " The message-info cache is " +
		"initialised once under sync/atomic guards; the result does not depend on which call initialises it."},
	{"google.golang.org/protobuf/reflect/protoregistry", protobufRuntime + " The global registry is " +
		"filled at init by generated code and only looked up by name."},
	{"google.golang.org/protobuf/encoding/protowire", protobufRuntime},
	{"google.golang.org/protobuf/internal/descfmt", protobufRuntime + " Descriptor formatting, for " +
		"String only."},
	{"google.golang.org/protobuf/internal/descopts", protobufRuntime},
	{"google.golang.org/protobuf/internal/editiondefaults", protobufRuntime},
	{"google.golang.org/protobuf/internal/encoding/defval", protobufRuntime},
	{"google.golang.org/protobuf/internal/encoding/messageset", protobufRuntime},
	{"google.golang.org/protobuf/internal/encoding/tag", protobufRuntime},
	{"google.golang.org/protobuf/internal/encoding/text", protobufRuntime + " Text encoding, for " +
		"String only (see detrand)."},
	{"google.golang.org/protobuf/internal/errors", protobufRuntime},
	{"google.golang.org/protobuf/internal/filedesc", protobufRuntime + " Lazy descriptor " +
		"initialisation under sync.Once: the same descriptors whoever triggers it."},
	{"google.golang.org/protobuf/internal/filetype", protobufRuntime},
	{"google.golang.org/protobuf/internal/flags", protobufRuntime},
	{"google.golang.org/protobuf/internal/genid", protobufRuntime},
	{"google.golang.org/protobuf/internal/order", protobufRuntime + " It exists to give map " +
		"entries and fields one order when Deterministic is set, as core/ctrl sets it."},
	{"google.golang.org/protobuf/internal/pragma", protobufRuntime},
	{"google.golang.org/protobuf/internal/protolazy", protobufRuntime + " Lazy decoding is off for " +
		"raftpb (no lazy fields)."},
	{"google.golang.org/protobuf/internal/set", protobufRuntime},
	{"google.golang.org/protobuf/internal/strs", protobufRuntime},
	{"google.golang.org/protobuf/internal/version", protobufRuntime},
	{"google.golang.org/protobuf/reflect/protoreflect", protobufRuntime},
	{"google.golang.org/protobuf/runtime/protoiface", protobufRuntime},
	{"google.golang.org/protobuf/runtime/protoimpl", protobufRuntime},
}

// protobufRuntime is the common review of the protobuf runtime's packages,
// reached through raftpb.
const protobufRuntime = "The protobuf runtime behind raftpb's generated code: descriptors, " +
	"reflection, wire encoding. No goroutines, clock or OS randomness; its unsafe and reflect use lays out " +
	"and reads structs, and its encoded bytes are a function of the message under Deterministic marshalling."

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
