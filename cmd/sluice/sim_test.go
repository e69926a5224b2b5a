package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// buildSluice builds the command once per test binary run.
func buildSluice(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var hashRe = regexp.MustCompile(`hash=([0-9a-f]+)`)

func runHash(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
	}
	m := hashRe.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("%v printed no hash:\n%s", args, out.String())
	}
	return m[1]
}

// One seed, two processes, different GOMAXPROCS: the same trace hash.
func TestSameSeedSameHashAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSluice(t)
	for _, args := range [][]string{
		{"--seed", "7", "--duration-ms", "3000"},
		{"--seed", "42", "--duration-ms", "3000"},
		{"--seed", "5", "--profile", "standard-faults", "--duration-ms", "8000"},
	} {
		args = append([]string{"sim"}, args...)
		a := runHash(t, bin, []string{"GOMAXPROCS=1"}, args...)
		b := runHash(t, bin, []string{"GOMAXPROCS=2"}, args...)
		if a != b {
			t.Fatalf("%v: hash %s under GOMAXPROCS=1, %s under GOMAXPROCS=2", args, a, b)
		}
	}
}

// Seeds whose faults crash the metadata group's raft leader: the same hash
// in two processes (raft's own randomness never reaches a run: its
// election timer is out of reach, and campaigns draw from the inputs).
func TestLeaderCrashSeedsSameHashAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSluice(t)
	for _, seed := range []string{"8", "10"} {
		args := []string{"sim", "--seed", seed, "--trace", "--trace-kind", "fault"}
		var hashes []string
		for _, procs := range []string{"GOMAXPROCS=1", "GOMAXPROCS=2"} {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), procs)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			if !regexp.MustCompile(`fault at=\d+ leader-crash dur=\d+ strikes n\d, the metadata leader`).Match(out) {
				t.Fatalf("seed %s no longer crashes the metadata leader; pick another:\n%s", seed, out)
			}
			m := hashRe.FindSubmatch(out)
			if m == nil {
				t.Fatalf("%v printed no hash", args)
			}
			hashes = append(hashes, string(m[1]))
		}
		if hashes[0] != hashes[1] {
			t.Fatalf("seed %s: hash %s under GOMAXPROCS=1, %s under GOMAXPROCS=2", seed, hashes[0], hashes[1])
		}
	}
}

func TestDifferentSeedsDifferentHashes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSluice(t)
	seen := map[string]string{}
	for _, seed := range []string{"1", "2", "3", "4"} {
		h := runHash(t, bin, nil, "sim", "--seed", seed, "--duration-ms", "2000")
		if prev, dup := seen[h]; dup {
			t.Fatalf("seeds %s and %s gave the same hash %s", prev, seed, h)
		}
		seen[h] = seed
	}
}

// --trace prints the lines the hash is made of, and the standard profile's
// summary names the seed.
func TestTraceAndSummary(t *testing.T) {
	var out, errb bytes.Buffer
	code := runSim([]string{"--seed", "5", "--profile", "standard", "--duration-ms", "500", "--trace"}, env{stdout: &out, stderr: &errb})
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, errb.String(), tail(out.String()))
	}
	s := out.String()
	for _, want := range []string{"t=0.000000000s n1 < start", " n1 > storage append", " * drain", "seed=5 ok"} {
		if !strings.Contains(s, want) {
			t.Fatalf("trace lacks %q:\n%s", want, tail(s))
		}
	}
}

func TestSweepSummaryAndShards(t *testing.T) {
	var out, errb bytes.Buffer
	code := runSim([]string{"--seeds", "6", "--parallel", "2", "--duration-ms", "500", "--shard", "1/2"}, env{stdout: &out, stderr: &errb})
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, errb.String(), out.String())
	}
	if !strings.Contains(out.String(), "seeds      3 (4..6)") {
		t.Fatalf("shard 1/2 of seeds 1..6 should run 4..6:\n%s", out.String())
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
