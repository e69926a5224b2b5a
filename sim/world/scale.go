package world

import (
	"fmt"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/sim/prng"
)

// ScaleShape names one of the scale profile's shapes: the dimension a seed
// takes to the size users run, the others kept at the swarm's.
type ScaleShape uint8

const (
	// ShapeDeep: one queue fed at 10,000 publishes/s with no consumer
	// until the drain, its owner killed once it holds a million records
	// (row recovery-deep); the consumers then take the whole backlog.
	ShapeDeep ScaleShape = iota
	// ShapeRate: 1 to 4 queues sharing 10,000 publishes/s for a minute,
	// consumed as they go.
	ShapeRate
	// ShapeLong: 10 simulated minutes of the swarm's workload and faults.
	ShapeLong
	// ShapeWide: 30 to 50 queues on 5 to 7 brokers (row queues-many).
	ShapeWide
	scaleShapes
)

var scaleShapeNames = [...]string{ShapeDeep: "deep", ShapeRate: "rate", ShapeLong: "long", ShapeWide: "wide"}

func (s ScaleShape) String() string {
	if int(s) < len(scaleShapeNames) {
		return scaleShapeNames[s]
	}
	return "shape?"
}

// The deep shape's sizes: 2 publishers at 5,000/s pass DeepRecords
// records about 101 s in (the first second places the queue); the owner
// is killed at 102.5 s, and the publishes stop 1.5 s later, below the
// queue's ReadyMax of 1,048,576 ready messages. A history of more than a
// million records is over the default recovery budgets (a million
// records per inspection and per stage): the operator raises them, at the
// start in half the seeds, else a second after the kill, once the
// recovery is blocked, which then must retry and finish.
const (
	deepPublishersPerSec = 5000
	deepKillNs           = 102_500_000_000
	deepDurationMs       = 104_000
	deepRaiseLateMs      = 103_500
	deepBudgetRecords    = 4_000_000
)

// longStoredBytesMax bounds the body bytes a long seed's queues store,
// every copy counted: the swarm's rates and bodies drawn for a minute
// would fill 10 minutes with tens of GiB (scale seed 557: 2 publishers at
// 62/s, bodies to 64 KiB, 9 copies, no consumer: the run was killed at
// 24 GiB), which no sweep's worker holds. Ten minutes of the workload,
// not its bytes, is the long shape's dimension.
const longStoredBytesMax = 1 << 30

// storedBytes is about how many body bytes the profile's publishes put
// in its queues' copies, if none were deleted.
func (p *Profile) storedBytes() int64 {
	copies := int64(0)
	for _, q := range p.Queues {
		copies += int64(q.Replicas)
	}
	publishes := int64(p.PublishersPerQueue) * int64(p.PublishesPerSec) * p.DurationMs / 1000
	return copies * publishes * int64(p.BodyBytesMin+p.BodyBytesMax) / 2
}

// boundStoredBytes halves the profile's largest body, then its rate, until
// what it stores (storedBytes) is within maxBytes; no draw.
func (p *Profile) boundStoredBytes(maxBytes int64) {
	for p.storedBytes() > maxBytes && p.BodyBytesMax > p.BodyBytesMin {
		p.BodyBytesMax = max(p.BodyBytesMin, p.BodyBytesMax/2)
	}
	for p.storedBytes() > maxBytes && p.PublishesPerSec > 1 {
		p.PublishesPerSec /= 2
	}
}

// ScaleShapeOf returns the shape the scale profile draws for seed.
func ScaleShapeOf(seed uint64) ScaleShape {
	return ScaleShape(prng.New(prng.Derive(seed, "profile-scale")).Intn(int(scaleShapes)))
}

// DrawScale returns the scale profile of seed: the swarm's profile of the
// seed (its fault kinds and rates, latencies, bodies, retention) with one
// dimension taken to the sizes users run, a shape per seed (ScaleShape):
// 3 to 7 brokers, a queue a million records deep at its owner's loss,
// 10,000 publishes/s, 10 simulated minutes, or up to 50 queues. One
// dimension at a time keeps a seed's memory and time bounded (the
// checkers keep state per publish): a deep seed makes about a million
// publishes, a rate seed 600,000.
func DrawScale(seed uint64) Profile {
	p := Draw(seed)
	r := prng.New(prng.Derive(seed, "profile-scale"))
	shape := ScaleShape(r.Intn(int(scaleShapes)))
	p.Brokers = 3 + r.Intn(5)
	queue := func() QueueDecl {
		n := 2 + r.Intn(min(p.Brokers, core.ReplicasMax)-1)
		policy := []core.Policy{core.MajorityDurable, core.AllDurable, core.LeaderDurable, core.ISR}[r.Intn(4)]
		q := QueueDecl{Replicas: n, Policy: policy}
		if policy == core.ISR {
			q.MinInSync = 1 + r.Intn(n)
		}
		return q
	}
	queues := func(n int) {
		p.Queues = nil
		for range n {
			p.Queues = append(p.Queues, queue())
		}
	}
	switch shape {
	case ShapeDeep:
		queues(1)
		q := &p.Queues[0]
		q.Replicas = min(3, p.Brokers)
		q.MinInSync = min(q.MinInSync, q.Replicas)
		p.PublishersPerQueue, p.PublishesPerSec = 2, deepPublishersPerSec
		p.BodyBytesMin, p.BodyBytesMax = 8, 64
		p.InflightMax = 256
		p.ConsumersPerQueue, p.ConsumersFromMs, p.ConsumerLossPerMin = 1+r.Intn(2), deepDurationMs, Rate{}
		p.DurationMs, p.DrainMs = deepDurationMs, 60_000
		p.Prefetch = 1024
		// Fast enough for 10,000/s, and no fault that refuses publishes
		// while the queue fills: the per-message faults as drawn, the
		// owner's kill, and in half the seeds a recovery's candidate or
		// a proposed member dying with it (below).
		p.NetLatencyUsMax, p.SyncUsMax = min(p.NetLatencyUsMax, 2000), min(p.SyncUsMax, 5000)
		p.Faults.PerMin = [faultKinds]Rate{}
		raiseMs := int64(0)
		if r.Chance(1, 2) {
			raiseMs = deepRaiseLateMs
		}
		p.Operator = nil
		for _, key := range []string{"recovery.inspect_records_max", "recovery.stage_records_max"} {
			p.Operator = append(p.Operator, fmt.Sprintf("at=%d set %s %d", raiseMs, key, deepBudgetRecords))
		}
	case ShapeRate:
		queues(1 + r.Intn(4))
		p.NetLatencyUsMax, p.SyncUsMax = min(p.NetLatencyUsMax, 2000), min(p.SyncUsMax, 5000)
		p.PublishersPerQueue = 2
		p.PublishesPerSec = 10_000 / (2 * len(p.Queues))
		p.BodyBytesMin, p.BodyBytesMax = 8, []int{8, 64, 512}[r.Intn(3)]
		p.InflightMax = 256
		p.ConsumersPerQueue = 1 + r.Intn(2)
		p.DurationMs, p.DrainMs = 60_000, 30_000
	case ShapeLong:
		queues(1 + r.Intn(3))
		p.DurationMs, p.DrainMs = DurationMsMax, 30_000
		p.boundStoredBytes(longStoredBytesMax)
	case ShapeWide:
		p.Brokers = 5 + r.Intn(3)
		queues(ManyQueues + r.Intn(21))
		p.PublishersPerQueue = 1
		p.PublishesPerSec = []int{10, 20, 50}[r.Intn(3)]
		p.ConsumersPerQueue = r.Intn(2)
		p.DurationMs, p.DrainMs = []int64{30_000, 60_000}[r.Intn(2)], 30_000
	}
	p.raisePrefetch()
	if shape == ShapeDeep {
		// The deep shape's own schedule, none drawn: the owner's kill
		// once the queue is a million records deep.
		p.Schedule = []Fault{{AtNs: deepKillNs, Kind: FaultOwnerKill, DurNs: r.Range(1e6, 3e9)}}
		if r.Chance(1, 2) {
			p.Schedule = append(p.Schedule, Fault{AtNs: deepKillNs + 1, Kind: FaultCandidateDies, DurNs: r.Range(1e6, 3e9)})
		}
	}
	return p
}
