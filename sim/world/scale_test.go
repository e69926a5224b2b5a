package world

import (
	"testing"

	"github.com/sluicemq/sluice/core"
)

// The scale profile draws valid profiles of every shape, each at its
// size: the deep shape one queue fed at 10,000/s with its consumers
// held to the drain, the owner's kill scheduled once the queue passes a
// million records and below ReadyMax at the publishes' end, the budgets
// raised by the operator; the rate shape 10,000 publishes/s in all; the
// long shape 10 simulated minutes, within the bytes a worker holds; the wide shape 30 to 50 queues. A
// shape drawn wrongly would pass every seed while testing nothing at
// scale.
func TestScaleProfileShapes(t *testing.T) {
	seen := map[ScaleShape]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		p := DrawScale(seed)
		if err := p.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if p.Brokers < 3 || p.Brokers > 7 {
			t.Fatalf("seed %d: %d brokers", seed, p.Brokers)
		}
		shape := ScaleShapeOf(seed)
		seen[shape]++
		rate := p.PublishersPerQueue * p.PublishesPerSec * len(p.Queues)
		switch shape {
		case ShapeDeep:
			publishes := int64(rate) * p.DurationMs / 1000
			if len(p.Queues) != 1 || rate != 10_000 || p.ConsumersFromMs != p.DurationMs || publishes >= 1<<20 {
				t.Fatalf("seed %d: deep shape %s", seed, p)
			}
			kill := p.Schedule[0]
			if kill.Kind != FaultOwnerKill || int64(rate)*(kill.AtNs/1e9-1) < DeepRecords {
				t.Fatalf("seed %d: the deep shape's first fault %s", seed, kill)
			}
			if len(p.Operator) != 2 {
				t.Fatalf("seed %d: the deep shape's operator %q", seed, p.Operator)
			}
		case ShapeRate:
			if rate < 9_900 || rate > 10_000 || p.DurationMs != 60_000 {
				t.Fatalf("seed %d: rate shape %s", seed, p)
			}
		case ShapeLong:
			if p.DurationMs != DurationMsMax || p.storedBytes() > longStoredBytesMax {
				t.Fatalf("seed %d: long shape %s (%d body bytes stored)", seed, p, p.storedBytes())
			}
		case ShapeWide:
			if len(p.Queues) < ManyQueues || len(p.Queues) > 50 {
				t.Fatalf("seed %d: wide shape with %d queues", seed, len(p.Queues))
			}
		}
		for _, q := range p.Queues {
			if q.Replicas < 2 || q.Replicas > min(p.Brokers, core.ReplicasMax) {
				t.Fatalf("seed %d: a queue of %d replicas on %d brokers", seed, q.Replicas, p.Brokers)
			}
		}
	}
	for s := ScaleShape(0); s < scaleShapes; s++ {
		if seen[s] < 60 {
			t.Errorf("shape %s drawn %d times in 400 seeds", s, seen[s])
		}
	}
}
