package metapebble

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/sim/metamem"
)

// The SIGKILL test re-executes this test binary as a child that applies
// batches to a store in a directory and prints "ack N" after batch N is
// acknowledged; the parent kills it with SIGKILL after a seeded number of
// acknowledgements (and a seeded pause of 0-9 ms, so that the kill lands
// inside later batches), reopens the store and checks that it holds exactly
// batches 1..M for some M at or above the last acknowledged one: nothing
// acknowledged lost, nothing half applied. Several rounds run on the same
// directory, each child continuing where the recovered store ends.
//
// Seeds are fixed by default; KillSeedEnv sets one fresh seed (printed
// either way):
//
//	SLUICE_METAPEBBLE_KILL_SEED=987 go test ./fsio/metapebble -run SIGKILL -v
const (
	// KillSeedEnv picks the SIGKILL test's seed.
	KillSeedEnv = "SLUICE_METAPEBBLE_KILL_SEED"
	// childDirEnv, set to a directory, makes TestSIGKILLChild the child.
	childDirEnv = "SLUICE_METAPEBBLE_CHILD_DIR"
	// childSplitEnv plants a bug in the child: each batch is applied as
	// two batches, so a kill between them leaves half of it.
	childSplitEnv = "SLUICE_METAPEBBLE_CHILD_SPLIT"
	// childHaltEnv: with the planted bug, the batch after which the child
	// stops, half applied, for the parent to kill.
	childHaltEnv = "SLUICE_METAPEBBLE_CHILD_HALT"
	killRounds   = 8
)

// killBatch is batch n of the child's run; it depends only on n and the
// state the earlier batches left (sum), so the parent can replay it. Every
// batch writes the applied record "batch n", which names the last batch a
// recovered store holds; the rest of the state must then match it.
func killBatch(n uint64, sum meta.Summary) *meta.Batch {
	term := 1 + n/10
	first := sum.LastIndex + 1
	if n%7 == 0 && sum.LastIndex >= 2 && sum.LastIndex-1 > max(sum.HardState.Commit, sum.Compacted.Index) {
		first = sum.LastIndex - 1 // a new leader overwrites the last two entries
	}
	b := &meta.Batch{}
	for i := range 1 + n%5 {
		data := make([]byte, (n*911+i*37)%9000)
		for j := range data {
			data[j] = byte(n + uint64(j))
		}
		b.Entries = append(b.Entries, meta.Entry{Index: first + i, Term: term, Data: data})
	}
	commit := first - 1
	b.HardState = &meta.HardState{Term: term, Vote: 1, Commit: commit}
	b.Applied = &meta.Applied{Index: commit, Data: []byte(fmt.Sprintf("batch %d", n))}
	if n%10 == 0 && commit > sum.Compacted.Index {
		b.CompactIndex = commit
	}
	return b
}

func batchOf(st *meta.State) uint64 {
	if st.Applied.Data == nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(string(st.Applied.Data), "batch "), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("applied record %q is not the SIGKILL test's", st.Applied.Data))
	}
	return n
}

// TestSIGKILLChild is the child's role; without childDirEnv it does nothing.
func TestSIGKILLChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("the SIGKILL test's child; run by TestSIGKILL")
	}
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	st, err := s.Load()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	split := os.Getenv(childSplitEnv) != ""
	halt, _ := strconv.ParseUint(os.Getenv(childHaltEnv), 10, 64)
	for n := batchOf(&st) + 1; ; n++ {
		b := killBatch(n, s.sum)
		if split {
			// The planted bug: the batch goes in two commits, with a pause
			// between them for the kill to land in.
			first := &meta.Batch{Entries: b.Entries, HardState: b.HardState}
			if err := s.Apply(first); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			if n == halt {
				// Say the first half is durable, then wait: the parent
				// kills here, so the torn batch is on disk every time
				// (no timing involved).
				fmt.Printf("half %d\n", n)
				time.Sleep(time.Hour)
			}
			b = &meta.Batch{Applied: b.Applied, CompactIndex: b.CompactIndex}
		}
		if err := s.Apply(b); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("ack %d\n", n) // os.Stdout is unbuffered: one write
	}
}

func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	seed := uint64(1)
	if v := os.Getenv(KillSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", KillSeedEnv, v, err)
		}
	}
	t.Logf("seed %d (replay: %s=%d go test ./fsio/metapebble -run 'SIGKILL$' -v)", seed, KillSeedEnv, seed)
	if err := killRun(t, seed, killRounds, false); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
}

// TestSIGKILLCatchesSplitBatches plants a bug, a child that applies each
// batch as two, and requires the SIGKILL check to report a half-applied
// batch.
func TestSIGKILLCatchesSplitBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	err := killRun(t, 1, killRounds, true)
	if err == nil {
		t.Fatal("the SIGKILL check passed a store that applies each batch in two commits")
	}
	t.Logf("caught: %v", err)
}

// killRun runs rounds of kill and recovery; an error is a broken promise of
// the store (or of the child).
func killRun(t *testing.T, seed uint64, rounds int, split bool) error {
	r := seed
	dir := t.TempDir()
	// The model: the same batches applied to the simulator's store.
	model, _ := metamem.NewDisk().Open()
	modelBatches := uint64(0)
	modelAt := func(n uint64) (meta.State, error) {
		for modelBatches < n {
			modelBatches++
			st, err := model.Load()
			if err != nil {
				return st, err
			}
			if err := model.Apply(killBatch(modelBatches, st.Summary())); err != nil {
				return st, fmt.Errorf("model batch %d: %w", modelBatches, err)
			}
		}
		return model.Load()
	}

	acked := uint64(0)
	for round := range rounds {
		r = r*6364136223846793005 + 1442695040888963407
		killAfter := 3 + (r>>33)%25 // acknowledgements in this round
		// Then a pause, so that the kill lands at varied points of the
		// batches after the last one seen (not only right after an ack).
		killDelay := time.Duration((r>>13)%10) * time.Millisecond
		cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLChild$")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
		if split {
			cmd.Env = append(cmd.Env, childSplitEnv+"=1", fmt.Sprintf("%s=%d", childHaltEnv, acked+killAfter+1))
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		start := time.Now()
		sc := bufio.NewScanner(out)
		seen := uint64(0)
		var childErr error
		for childErr == nil && seen < killAfter && sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "ack "); ok {
				v, err := strconv.ParseUint(n, 10, 64)
				if err != nil || v != acked+1 {
					childErr = fmt.Errorf("round %d: child printed %q after ack %d", round, line, acked)
				}
				acked, seen = v, seen+1
			} else if strings.HasPrefix(line, "error") || strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "---") {
				childErr = fmt.Errorf("round %d: child: %s", round, line)
			}
		}
		if childErr == nil && seen == killAfter {
			if split {
				// The planted bug's child says when half a batch is
				// durable; kill it right then, so that the check meets a
				// half-applied batch in every run, not by chance.
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "half ") {
						break
					}
				}
			} else {
				time.Sleep(killDelay)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			return err
		}
		_ = cmd.Wait()
		if childErr != nil {
			return childErr
		}
		if seen < killAfter {
			return fmt.Errorf("round %d: child ended after %d acknowledgements, want %d (scan: %v)", round, seen, killAfter, sc.Err())
		}

		s, err := Open(dir, Options{})
		if err != nil {
			return fmt.Errorf("round %d: reopening after SIGKILL: %w", round, err)
		}
		got, err := s.Load()
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("round %d: Load after SIGKILL: %w", round, err)
		}
		n := batchOf(&got)
		if n < acked {
			return fmt.Errorf("round %d: the store ends at batch %d, but batch %d was acknowledged", round, n, acked)
		}
		if n < modelBatches {
			return fmt.Errorf("round %d: the store went back to batch %d after holding %d", round, n, modelBatches)
		}
		want, err := modelAt(n)
		if err != nil {
			return err
		}
		// The whole state must be exactly batches 1..n: the applied record
		// of batch n with anything less of it (or anything of n+1) is a
		// half-applied batch.
		if d := diff(&got, &want); d != "" {
			return fmt.Errorf("round %d: the store holds batch %d's applied record but not exactly batches 1..%d: %s", round, n, n, d)
		}
		t.Logf("round %d: killed %v after %d acknowledgements (%d in all, %v), recovered batches 1..%d (%d unacknowledged kept)",
			round, killDelay, seen, acked, time.Since(start).Round(time.Millisecond), n, n-acked)
		acked = n
	}
	return nil
}

// diff compares the parts of two states that the SIGKILL test checks.
func diff(got, want *meta.State) string {
	if got.HardState != want.HardState || got.Compacted != want.Compacted || string(got.Applied.Data) != string(want.Applied.Data) || got.Applied.Index != want.Applied.Index {
		return fmt.Sprintf("hard state %+v compacted %+v applied %d, want %+v %+v %d",
			got.HardState, got.Compacted, got.Applied.Index, want.HardState, want.Compacted, want.Applied.Index)
	}
	if len(got.Entries) != len(want.Entries) {
		return fmt.Sprintf("%d entries, want %d", len(got.Entries), len(want.Entries))
	}
	for i := range got.Entries {
		g, w := &got.Entries[i], &want.Entries[i]
		if g.Index != w.Index || g.Term != w.Term || g.Kind != w.Kind || string(g.Data) != string(w.Data) {
			return fmt.Sprintf("entry %d differs", w.Index)
		}
	}
	return ""
}
