// Package sweep runs many simulated worlds, one seed each, on parallel
// goroutines. It is the one simulator package allowed concurrency (the
// determinism guard leaves it out): each world is still single-threaded and
// deterministic, and results are reported in seed order whatever the
// scheduling.
package sweep

import (
	"sync"

	"github.com/sluicemq/sluice/sim/world"
)

// Job says which seeds to run and how to draw each one's profile.
type Job struct {
	First    uint64 // first seed
	Count    uint64 // number of seeds
	Parallel int    // worlds at once; at least 1
	Profile  func(seed uint64) world.Profile
	// Done, if set, is called once per finished seed, in seed order.
	Done func(r world.Result, err error)
}

// Run runs the job. Results reach Done in seed order; only a bounded window
// of finished results waits for an earlier seed.
func Run(j Job) {
	par := max(j.Parallel, 1)
	type out struct {
		r   world.Result
		err error
	}
	// A window of 4 results per worker keeps memory bounded on long sweeps
	// while one slow seed holds back reporting.
	window := uint64(par * 4)
	slots := make(chan struct{}, window)
	results := make(map[uint64]out)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var next uint64
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				slots <- struct{}{}
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= j.Count {
					<-slots
					return
				}
				seed := j.First + i
				r, err := world.Run(seed, j.Profile(seed), world.Options{})
				mu.Lock()
				results[i] = out{r, err}
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	for i := uint64(0); i < j.Count; i++ {
		mu.Lock()
		for {
			if _, ok := results[i]; ok {
				break
			}
			cond.Wait()
		}
		o := results[i]
		delete(results, i)
		mu.Unlock()
		if j.Done != nil {
			j.Done(o.r, o.err)
		}
		<-slots
	}
	wg.Wait()
}

// Shard returns the seeds [first, first+count) that shard k of n runs: a
// contiguous block, so shards are disjoint and together cover the range.
func Shard(first, count uint64, k, n int) (uint64, uint64) {
	if n < 1 || k < 0 || k >= n {
		panic("sweep: shard k/n out of range")
	}
	lo := count * uint64(k) / uint64(n)
	hi := count * uint64(k+1) / uint64(n)
	return first + lo, hi - lo
}
