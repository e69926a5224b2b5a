package world

import (
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/prng"
)

// Profile is everything a run does, drawn from its seed or set by a
// scenario. It prints as one line with the seed.
type Profile struct {
	Brokers int
	Queues  []core.QueueConfig

	PublishersPerQueue int
	PublishesPerSec    int // per publisher
	BodyBytesMin       int
	BodyBytesMax       int
	InflightMax        int // unconfirmed publishes per publisher
	ConsumersPerQueue  int
	Prefetch           int
	AckDelayUsMax      int64

	// ConsumerLossPerMin: consumers drop their connection this often (mean
	// per simulated minute) during the workload phase.
	ConsumerLossPerMin Rate
	// Faults: the rates the schedule is drawn from, and the per-message
	// network faults. Schedule, when not nil, replaces the drawn schedule
	// (a scenario or a shrunk regression).
	Faults   FaultRates
	Schedule []Fault
	// Bugs plants known protocol bugs (the canary); tests only.
	Bugs bugs.Set

	NetLatencyUsMin, NetLatencyUsMax int64
	SyncUsMin, SyncUsMax             int64

	DurationMs int64 // workload phase
	DrainMs    int64 // bound on the drain phase
}

// Standard returns the standard world of the benchmark: 3 brokers, 1 queue
// of 3 replicas under majority_durable, 200 publishes/s, 1 consumer acking,
// 60 simulated seconds, no faults.
func Standard() Profile {
	return Profile{
		Brokers:            3,
		Queues:             []core.QueueConfig{{Queue: 1, Replicas: []core.NodeID{1, 2, 3}, Owner: 1, Policy: core.MajorityDurable}},
		PublishersPerQueue: 1,
		PublishesPerSec:    200,
		BodyBytesMin:       64,
		BodyBytesMax:       512,
		InflightMax:        256,
		ConsumersPerQueue:  1,
		Prefetch:           64,
		AckDelayUsMax:      2000,
		NetLatencyUsMin:    50,
		NetLatencyUsMax:    500,
		SyncUsMin:          100,
		SyncUsMax:          2000,
		DurationMs:         60_000,
		DrainMs:            10_000,
	}
}

// StandardWithFaults is the standard world with every fault kind on: each
// scheduled kind twice a simulated minute, and drops, duplicates and corrupt
// frames at 1 in 1000 peer messages.
func StandardWithFaults() Profile {
	p := Standard()
	for k := FaultCrash; k < FaultDrop; k++ {
		p.Faults.PerMin[k] = PerMin(2)
	}
	p.Faults.DropPer1000, p.Faults.DupPer1000, p.Faults.CorruptPer1000 = 1, 1, 1
	return p
}

// Draw returns the default swarm profile of seed: shape, policy, workload
// and fault rates all vary per seed.
func Draw(seed uint64) Profile {
	r := prng.New(prng.Derive(seed, "profile"))
	p := Standard()
	p.DurationMs = 10_000
	p.Brokers = []int{3, 5}[r.Intn(2)]
	queues := 1 + r.Intn(2)
	p.Queues = nil
	for q := 1; q <= queues; q++ {
		// Weighted so that most seeds replicate with W >= 2, where the
		// protocol's hard cases live: one replica in 8 queues, leader_durable
		// in 1 of 5 (together, 3 of 4 seeds or more have a W >= 2 queue).
		n := 1
		if !r.Chance(1, 8) {
			n = 2 + r.Intn(p.Brokers-1)
		}
		policy := core.LeaderDurable
		if !r.Chance(1, 5) {
			policy = []core.Policy{core.MajorityDurable, core.AllDurable}[r.Intn(2)]
		}
		first := r.Intn(p.Brokers)
		var reps []core.NodeID
		for i := 0; i < n; i++ {
			reps = append(reps, core.NodeID((first+i)%p.Brokers+1))
		}
		p.Queues = append(p.Queues, core.QueueConfig{
			Queue:    core.QueueID(q),
			Replicas: reps,
			Owner:    reps[r.Intn(n)],
			Policy:   policy,
		})
	}
	p.PublishersPerQueue = 1 + r.Intn(2)
	p.PublishesPerSec = []int{20, 100, 200, 500}[r.Intn(4)]
	// Bodies from the smallest that carries a publish's identity (its
	// 8-byte key) to 64 KiB.
	p.BodyBytesMax = []int{8, 64, 512, 4096, 64 << 10}[r.Intn(5)]
	p.BodyBytesMin = 8
	// Keep a run's disk footprint sane: at most about 4 MB/s per queue.
	for p.PublishesPerSec > 10 && p.PublishesPerSec*p.PublishersPerQueue*(p.BodyBytesMax+p.BodyBytesMin)/2 > 4<<20 {
		p.PublishesPerSec /= 2
	}
	p.InflightMax = []int{1, 16, 256}[r.Intn(3)]
	p.ConsumersPerQueue = r.Intn(3)
	p.Prefetch = []int{1, 8, 64}[r.Intn(3)]
	if r.Chance(1, 2) {
		p.ConsumerLossPerMin = []Rate{PerMin(3), PerMin(30)}[r.Intn(2)]
	}
	// Swarm: each fault kind is on in about half the seeds, at its own
	// rate; power losses in 3 of 4, often enough that 7 seeds in 10 or more
	// lose a process.
	for k := FaultCrash; k < FaultDrop; k++ {
		if k == FaultCrash {
			if r.Chance(3, 4) {
				p.Faults.PerMin[k] = []Rate{PerMin(6), PerMin(12), PerMin(20)}[r.Intn(3)]
			}
			continue
		}
		if r.Chance(1, 2) {
			p.Faults.PerMin[k] = []Rate{PerMin(2), PerMin(6), PerMin(20)}[r.Intn(3)]
		}
	}
	if r.Chance(1, 2) {
		p.Faults.DropPer1000 = []int{1, 10, 100}[r.Intn(3)]
	}
	if r.Chance(1, 2) {
		p.Faults.DupPer1000 = []int{1, 10, 100}[r.Intn(3)]
	}
	if r.Chance(1, 2) {
		p.Faults.CorruptPer1000 = []int{1, 10}[r.Intn(2)]
	}
	p.NetLatencyUsMax = []int64{200, 2000, 20000}[r.Intn(3)]
	p.SyncUsMax = []int64{500, 5000, 50000}[r.Intn(3)]
	// Consumers must outpace publishers, or no drain phase could ever
	// deliver everything: raise the prefetch until one consumer's credit
	// per round trip covers twice the publish rate.
	if p.ConsumersPerQueue > 0 {
		rttUs := 2*p.NetLatencyUsMax + p.AckDelayUsMax
		for p.Prefetch < 1024 && int64(p.Prefetch)*1e6/rttUs < int64(2*p.PublishesPerSec*p.PublishersPerQueue) {
			p.Prefetch *= 2
		}
	}
	return p
}

// String prints the profile as one stable line.
func (p Profile) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "brokers=%d queues=[", p.Brokers)
	for i, q := range p.Queues {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "q%d:%s:owner=n%d:reps=%v", q.Queue, q.Policy, q.Owner, q.Replicas)
	}
	fmt.Fprintf(&b, "] pubs=%dx%d/s body=%d..%d inflight=%d consumers=%d prefetch=%d closs/min=%s net=%d..%dus sync=%d..%dus dur=%dms faults=[%s]",
		p.PublishersPerQueue, p.PublishesPerSec, p.BodyBytesMin, p.BodyBytesMax, p.InflightMax,
		p.ConsumersPerQueue, p.Prefetch, p.ConsumerLossPerMin,
		p.NetLatencyUsMin, p.NetLatencyUsMax, p.SyncUsMin, p.SyncUsMax, p.DurationMs, p.Faults)
	if p.Schedule != nil {
		fmt.Fprintf(&b, " schedule=%d", len(p.Schedule))
	}
	if p.Bugs != 0 {
		fmt.Fprintf(&b, " bugs=%s", p.Bugs)
	}
	return b.String()
}

// Validate reports a profile the world cannot run.
func (p Profile) Validate() error {
	if p.Brokers < 1 || p.Brokers > 16 {
		return fmt.Errorf("profile: %d brokers, want 1..16", p.Brokers)
	}
	for _, q := range p.Queues {
		if err := q.Validate(); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		for _, n := range q.Replicas {
			if int(n) < 1 || int(n) > p.Brokers {
				return fmt.Errorf("profile: queue %d names broker n%d of %d", q.Queue, n, p.Brokers)
			}
		}
	}
	if p.BodyBytesMin < 8 || p.BodyBytesMax < p.BodyBytesMin || p.BodyBytesMax > 1<<20 {
		return fmt.Errorf("profile: body sizes %d..%d, want 8 <= min <= max <= 1 MiB", p.BodyBytesMin, p.BodyBytesMax)
	}
	if p.PublishesPerSec < 0 || p.InflightMax < 1 || p.DurationMs <= 0 {
		return fmt.Errorf("profile: bad workload")
	}
	return nil
}
