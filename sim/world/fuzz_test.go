package world

import (
	"testing"

	"github.com/sluicemq/sluice/core"
)

// FuzzWorld lets Go's coverage-guided fuzzer steer the simulator: its input
// picks the seed and the profile's knobs (shape, policy, workload, which
// fault kinds are on), so inputs that reach new branches of the core are
// kept and mutated. Run it with
//
//	go test -run '^$' -fuzz FuzzWorld -fuzztime 10m ./sim/world
//
// Plain `go test` runs the seed corpus below.
func FuzzWorld(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(3), uint8(2), uint16(200), uint16(0xffff), uint8(10), uint8(10))
	f.Add(uint64(434), uint8(5), uint8(2), uint8(3), uint16(50), uint16(1<<FaultCorrupt|1<<FaultDiskFull), uint8(0), uint8(0))
	f.Add(uint64(26), uint8(3), uint8(2), uint8(2), uint16(25), uint16(1<<FaultCrash|1<<FaultCorrupt), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, brokers, replicas, policy uint8, rate uint16, faultMask uint16, dropPer1000, dupPer1000 uint8) {
		p := Draw(seed)
		p.Brokers = 1 + int(brokers)%5
		n := 1 + int(replicas)%p.Brokers
		p.Queues = []QueueDecl{{Replicas: n, Policy: core.Policy(1 + policy%3)}}
		p.PublishesPerSec = 1 + int(rate)%1000
		p.DurationMs = 1500
		for k := FaultCrash; k < FaultDrop; k++ {
			if faultMask&(1<<k) == 0 {
				p.Faults.PerMin[k] = Rate{}
			} else if !p.Faults.PerMin[k].On() {
				p.Faults.PerMin[k] = PerMin(20)
			}
		}
		p.Faults.DropPer1000 = int(dropPer1000) % 200
		p.Faults.DupPer1000 = int(dupPer1000) % 200
		r, err := Run(seed, p, Options{})
		if err != nil {
			t.Skip(err) // a profile the world refuses is no finding
		}
		if r.Failed > 0 {
			t.Fatalf("seed %d profile %s: %v", seed, p, r.Failures)
		}
	})
}
