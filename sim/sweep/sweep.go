// Package sweep runs many simulated worlds, one seed each, on parallel
// goroutines. It is the one simulator package allowed concurrency and the
// wall clock (the determinism guard leaves it out): each world is still
// single-threaded and deterministic, results are reported in seed order
// whatever the scheduling, and the clock only decides whether a seed is
// reported as timed out, never what a run found.
package sweep

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/sim/world"
)

// Job says which seeds to run and how to draw each one's profile.
type Job struct {
	First    uint64 // first seed
	Count    uint64 // number of seeds
	Parallel int    // worlds at once; at least 1
	Profile  func(seed uint64) world.Profile
	// SeedTimeout bounds each seed's wall-clock time; 0: no bound. A seed
	// that runs longer is stopped and reported with ErrTimedOut: an error
	// of the run, with no verdict, never a failure of a checker.
	SeedTimeout time.Duration
	// Stop, when closed, stops the sweep (Ctrl-C): no seed starts after it,
	// running ones are interrupted, and no further seed is reported.
	Stop <-chan struct{}
	// Done, if set, is called once per finished seed, in seed order. When
	// it returns false the sweep stops as for Stop (--fail-fast): the
	// seeds reported are then always the same for the same job.
	Done func(o Outcome) bool
}

// Outcome is one seed's run as a sweep reports it.
type Outcome struct {
	Seed   uint64
	Result world.Result
	// Err: nil, ErrTimedOut, or the world's refusal of the profile.
	Err  error
	Wall time.Duration
}

// ErrTimedOut is an Outcome's error for a seed over Job.SeedTimeout.
var ErrTimedOut = errors.New("timed out")

// Summary says how a sweep ended.
type Summary struct {
	Reported uint64 // seeds passed to Done, from First on
	Stopped  bool   // Stop was closed or Done returned false before the end
}

// Run runs the job. Results reach Done in seed order; only a bounded window
// of finished results waits for an earlier seed.
func Run(j Job) Summary {
	par := max(j.Parallel, 1)
	// A window of 4 results per worker keeps memory bounded on long sweeps
	// while one slow seed holds back reporting.
	window := uint64(par * 4)
	slots := make(chan struct{}, window)
	results := make(map[uint64]Outcome)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var next uint64
	var stopping atomic.Bool
	stopped := func() bool {
		if stopping.Load() {
			return true
		}
		if j.Stop != nil {
			select {
			case <-j.Stop:
				stopping.Store(true)
				return true
			default:
			}
		}
		return false
	}
	// Tokens in slots bound the results in flight: a worker puts one in
	// before it takes a seed, the reporter takes one out per seed reported.
	// A worker that finds no seed left (or the sweep stopped) returns
	// without taking its token out; the drain below frees any worker still
	// waiting to put one in.
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
				if i >= j.Count || stopped() {
					mu.Lock()
					cond.Broadcast()
					mu.Unlock()
					return
				}
				seed := j.First + i
				start := time.Now()
				var timedOut bool
				opts := world.Options{Interrupt: func() bool {
					if j.SeedTimeout > 0 && time.Since(start) > j.SeedTimeout {
						timedOut = true
						return true
					}
					return stopped()
				}}
				r, err := world.Run(seed, j.Profile(seed), opts)
				if errors.Is(err, world.ErrInterrupted) && timedOut {
					err = ErrTimedOut
				}
				mu.Lock()
				results[i] = Outcome{Seed: seed, Result: r, Err: err, Wall: time.Since(start)}
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	// Ctrl-C must wake the reporting loop even while every worker is busy.
	watchDone := make(chan struct{})
	if j.Stop != nil {
		go func() {
			select {
			case <-j.Stop:
				stopping.Store(true)
				mu.Lock()
				cond.Broadcast()
				mu.Unlock()
			case <-watchDone:
			}
		}()
	}
	var sum Summary
	for i := uint64(0); i < j.Count; i++ {
		mu.Lock()
		var o Outcome
		var ok bool
		for {
			if o, ok = results[i]; ok || stopped() {
				break
			}
			cond.Wait()
		}
		delete(results, i)
		mu.Unlock()
		if !ok || errors.Is(o.Err, world.ErrInterrupted) {
			break // stopped: this seed did not finish
		}
		sum.Reported++
		<-slots
		if j.Done != nil && !j.Done(o) {
			stopping.Store(true)
			break
		}
	}
	stopping.Store(true) // nothing more is reported: running seeds stop
	drainDone := make(chan struct{})
	go func() {
		for {
			select {
			case <-slots:
			case <-drainDone:
				return
			}
		}
	}()
	wg.Wait()
	close(drainDone)
	close(watchDone)
	sum.Stopped = sum.Reported < j.Count
	return sum
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

// ParseShard reads "k/n" strictly: two decimal numbers, 0 <= k < n <=
// ShardsMax, nothing else.
func ParseShard(s string) (k, n int, err error) {
	var ks, ns string
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			ks, ns = s[:i], s[i+1:]
			break
		}
	}
	digits := func(x string) (int, bool) {
		if len(x) == 0 || len(x) > 7 {
			return 0, false
		}
		v := 0
		for _, c := range []byte(x) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	k, okK := digits(ks)
	n, okN := digits(ns)
	if !okK || !okN || n < 1 || n > ShardsMax || k >= n {
		return 0, 0, fmt.Errorf("--shard %q: want k/n with 0 <= k < n <= %d, e.g. 3/8", s, ShardsMax)
	}
	return k, n, nil
}

// ShardsMax bounds a sweep's shards.
const ShardsMax = 1_000_000
