package daemon

import (
	"slices"
	"testing"
)

// A batch runs what was queued before it began, in order, and nothing
// that it queues: a chain of work that asks for its next step yields to
// the loop's inputs at every step.
func TestWorkRunsInBatches(t *testing.T) {
	var f workFIFO
	var ran []string
	var chain func(left int) func()
	chain = func(left int) func() {
		return func() {
			ran = append(ran, "chain")
			if left > 0 {
				f.push(chain(left - 1))
			}
		}
	}
	f.push(chain(3))
	f.push(func() { ran = append(ran, "other") })
	batches := 0
	for f.pending() > 0 {
		f.runBatch()
		batches++
		if f.pending() > 1 {
			t.Fatalf("after batch %d, %d items wait: a batch ran past what was queued before it", batches, f.pending())
		}
		ran = append(ran, "input") // what the loop takes between batches
	}
	want := []string{"chain", "other", "input", "chain", "input", "chain", "input", "chain", "input"}
	if !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}
