package world

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/sim/prng"
)

// Profile is everything a run does, drawn from its seed or set by a
// scenario. It prints as one line with the seed.
type Profile struct {
	Brokers int
	// Queues are declared through the metadata group as the run starts
	// (the operator's first commands, named q1, q2, ...) and placed by the
	// controller like every queue: no queue has a static assignment.
	Queues []QueueDecl

	PublishersPerQueue int
	PublishesPerSec    int // per publisher
	BodyBytesMin       int
	BodyBytesMax       int
	InflightMax        int // unconfirmed publishes per publisher
	ConsumersPerQueue  int
	// ConsumersFromMs: the consumers connect from this instant on (0: as
	// the run starts), so that a queue's backlog can grow first (the
	// scale profile's deep queue).
	ConsumersFromMs int64
	Prefetch        int
	AckDelayUsMax   int64

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

	// Operator, when not empty, scripts the operator of the metadata
	// group and the placed queues' publishers (operator.go) instead of the
	// swarm's random operator.
	Operator []string

	// RetainSilentMs and RetainRecordsMin set the brokers' retention
	// limits (core/seam's Limits; 0: the default, 60 s and 1024
	// records): a swarm seed may shorten them, so that a follower away
	// stops protecting its owner's log within a run and comes back to a
	// reseed.
	RetainSilentMs   int64
	RetainRecordsMin int
}

// QueueDecl is one of the profile's queues as the operator declares it:
// its replica count, durability policy and min in-sync (isr: the smallest
// in-sync set that admits publishes; 0 means 1 for the others). Where its
// replicas and its owner live is the controller's choice.
type QueueDecl struct {
	Replicas  int
	Policy    core.Policy
	MinInSync int
}

// W returns the queue's write requirement when its whole replica set is
// placed.
func (q QueueDecl) W() int { return q.Policy.WriteQuorum(q.Replicas, q.minInSync()) }

func (q QueueDecl) minInSync() int { return max(q.MinInSync, 1) }

// QueueName returns the catalogue name of the profile's queue i (from 0).
func QueueName(i int) string { return "q" + strconv.Itoa(i+1) }

// Standard returns the standard world of the benchmark: 3 brokers, 1 queue
// of 3 replicas under majority_durable, 200 publishes/s, 1 consumer acking,
// 60 simulated seconds, no faults. The metadata group runs (raft,
// heartbeats, liveness), and its operator only sets one setting (to the
// default) after it declared the profile's queue: the world holds the one
// queue its definition names, where the swarm's random operator would
// declare three more.
func Standard() Profile {
	return Profile{
		Brokers:            3,
		Queues:             []QueueDecl{{Replicas: 3, Policy: core.MajorityDurable}},
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
		Operator:           []string{"at=0 set liveness.expiry_ms 9000"},
	}
}

// StandardWithFaults is the standard world with every fault kind on: each
// scheduled kind but owner-kill twice a simulated minute, and drops, duplicates and corrupt
// frames at 1 in 1000 peer messages.
func StandardWithFaults() Profile {
	p := Standard()
	for k := FaultCrash; k < FaultDrop; k++ {
		if k == FaultOwnerKill {
			continue // the scale profile's, at its deep queue's depth
		}
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
	p.Operator = nil // the swarm's random operator
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
		p.Queues = append(p.Queues, QueueDecl{Replicas: n, Policy: policy})
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
	for k := FaultCrash; k < FaultLeaderCrash; k++ {
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
	p.raisePrefetch()
	// The metadata leader's faults and kill (a process exit its peers
	// see), from a stream of their own (so that adding them left every
	// earlier draw of a seed as it was): each on in about half the seeds.
	rc := prng.New(prng.Derive(seed, "profile-ctrl"))
	for k := FaultLeaderCrash; k <= FaultKill; k++ {
		if rc.Chance(1, 2) {
			p.Faults.PerMin[k] = []Rate{PerMin(2), PerMin(6), PerMin(20)}[rc.Intn(3)]
		}
	}
	// Retention's limits, from a stream of their own too: in half the
	// seeds a follower silent for 0.5 to 5 s stops protecting its owner's
	// log (the default 60 s would outlast every run), and retentions come
	// in smaller steps.
	// The faults of lost copies and dying candidates, each from a stream
	// of its own (so that the rest of a seed's profile stays as it was):
	// each on in a quarter of the seeds (the drain in half, the stale
	// tail in every one: it strikes only a queue of a shape few seeds
	// have), at one of two rates. A lost or
	// emptied directory, and a data disk replaced as often; a broker gone
	// for good (the fault itself keeps to the budget and the brokers the
	// metadata group and the queues need); a recovery's candidate or a
	// proposed member dying mid-recovery; a broker drained by the
	// operator (and often restarted while it drains); a follower left
	// with an older epoch's longer tail.
	for _, f := range []struct {
		stream   string
		kind     FaultKind
		quarters int // of the seeds it is on in
		rates    [2]Rate
	}{
		{"profile-lostdir", FaultLostDir, 1, [2]Rate{PerMin(2), PerMin(6)}},
		{"profile-gone", FaultGone, 1, [2]Rate{PerMin(12), PerMin(30)}},
		{"profile-candidate", FaultCandidateDies, 1, [2]Rate{PerMin(6), PerMin(20)}},
		{"profile-disk", FaultDiskReplaced, 1, [2]Rate{PerMin(2), PerMin(6)}},
		{"profile-drain", FaultDrain, 2, [2]Rate{PerMin(6), PerMin(12)}},
		{"profile-tail", FaultStaleTail, 4, [2]Rate{PerMin(12), PerMin(30)}},
	} {
		if r := prng.New(prng.Derive(seed, f.stream)); r.Chance(f.quarters, 4) {
			p.Faults.PerMin[f.kind] = f.rates[r.Intn(2)]
		}
	}
	rr := prng.New(prng.Derive(seed, "profile-retain"))
	if rr.Chance(1, 2) {
		p.RetainSilentMs = []int64{500, 2000, 5000}[rr.Intn(3)]
		p.RetainRecordsMin = []int{64, 256, 1024}[rr.Intn(3)]
	}
	return p
}

// raisePrefetch raises the prefetch until one consumer's credit per round
// trip covers twice a queue's publish rate (at most 1024), so that the
// consumers can outpace the publishers.
func (p *Profile) raisePrefetch() {
	if p.ConsumersPerQueue > 0 {
		rttUs := 2*p.NetLatencyUsMax + p.AckDelayUsMax
		for p.Prefetch < 1024 && int64(p.Prefetch)*1e6/rttUs < int64(2*p.PublishesPerSec*p.PublishersPerQueue) {
			p.Prefetch *= 2
		}
	}
}

// String prints the profile as one stable line.
func (p Profile) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "brokers=%d queues=[", p.Brokers)
	for i, q := range p.Queues {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%s:reps=%d", QueueName(i), q.Policy, q.Replicas)
		if q.Policy == core.ISR {
			fmt.Fprintf(&b, ":min-insync=%d", q.minInSync())
		}
	}
	fmt.Fprintf(&b, "] pubs=%dx%d/s body=%d..%d inflight=%d consumers=%d prefetch=%d closs/min=%s net=%d..%dus sync=%d..%dus dur=%dms faults=[%s]",
		p.PublishersPerQueue, p.PublishesPerSec, p.BodyBytesMin, p.BodyBytesMax, p.InflightMax,
		p.ConsumersPerQueue, p.Prefetch, p.ConsumerLossPerMin,
		p.NetLatencyUsMin, p.NetLatencyUsMax, p.SyncUsMin, p.SyncUsMax, p.DurationMs, p.Faults)
	if p.Schedule != nil {
		fmt.Fprintf(&b, " schedule=%d", len(p.Schedule))
	}
	if p.ConsumersFromMs != 0 {
		fmt.Fprintf(&b, " consumers-from=%dms", p.ConsumersFromMs)
	}
	if p.RetainSilentMs != 0 || p.RetainRecordsMin != 0 {
		fmt.Fprintf(&b, " retain=%dms/%d", p.RetainSilentMs, p.RetainRecordsMin)
	}
	if p.Bugs != 0 {
		fmt.Fprintf(&b, " bugs=%s", p.Bugs)
	}
	return b.String()
}

// Bounds of a profile (Validate). DurationMsMax bounds the workload phase:
// the checkers keep state per publish and per record, so memory grows with
// the simulated time; 10 simulated minutes of the heaviest swarm profile is
// about a million publishes. It also keeps every instant (ms times 1e6) far
// from overflowing int64 nanoseconds.
const (
	BrokersMax       = 16
	QueuesMax        = 64
	ClientsMax       = 16 // publishers, and consumers, per queue
	DurationMsMax    = 600_000
	DrainMsMax       = 600_000
	LatencyUsMax     = 10_000_000 // network latency and sync time bounds
	RatePer1000Max   = 1000
	PublishesPerSMax = 100_000
)

// Validate reports a profile the world cannot run, naming the field as a
// scenario file spells it (snake_case), so that a bad option or a
// malformed scenario is refused before the run and never shows up as a
// failure of the system under test.
func (p Profile) Validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("profile: %s: %s", field, fmt.Sprintf(format, args...))
	}
	if p.Brokers < 1 || p.Brokers > BrokersMax {
		return bad("brokers", "%d, want 1..%d", p.Brokers, BrokersMax)
	}
	if _, err := parseOperator(p.Operator); err != nil {
		return bad("operator", "%v", err)
	}
	if len(p.Queues) > QueuesMax {
		return bad("queues", "%d queues, want at most %d", len(p.Queues), QueuesMax)
	}
	if steps, _ := parseOperator(p.Operator); len(steps) > 0 {
		for _, s := range steps {
			for i := range p.Queues {
				if s.cmd.Kind == metadata.DeclareQueue && s.cmd.Queue == QueueName(i) {
					return bad("operator", "declares %s, the name of the profile's queue %d", s.cmd.Queue, i)
				}
			}
		}
	}
	if len(p.Queues) == 0 && !declares(p.Operator) {
		return bad("queues", "none, and no operator step declares one: the run would have no queue")
	}
	for i, q := range p.Queues {
		field := fmt.Sprintf("queues[%d]", i)
		if q.Replicas < 1 || q.Replicas > min(p.Brokers, core.ReplicasMax) {
			return bad(field+".replicas", "%d, want 1..%d (brokers=%d)", q.Replicas, min(p.Brokers, core.ReplicasMax), p.Brokers)
		}
		if !q.Policy.Valid() {
			return bad(field+".policy", "unknown policy %d", q.Policy)
		}
		if q.MinInSync < 0 || q.MinInSync > q.Replicas {
			return bad(field+".min_insync", "%d, want 0..%d (the replica count)", q.MinInSync, q.Replicas)
		}
	}
	ints := []struct {
		field    string
		v, lo, h int64
	}{
		{"publishers_per_queue", int64(p.PublishersPerQueue), 0, ClientsMax},
		{"publishes_per_sec", int64(p.PublishesPerSec), 0, PublishesPerSMax},
		{"inflight_max", int64(p.InflightMax), 1, 1 << 16},
		{"consumers_per_queue", int64(p.ConsumersPerQueue), 0, ClientsMax},
		{"consumers_from_ms", p.ConsumersFromMs, 0, DurationMsMax},
		{"prefetch", int64(p.Prefetch), 1, 1 << 16},
		{"ack_delay_us_max", p.AckDelayUsMax, 0, LatencyUsMax},
		{"net_latency_us_min", p.NetLatencyUsMin, 0, LatencyUsMax},
		{"net_latency_us_max", p.NetLatencyUsMax, p.NetLatencyUsMin, LatencyUsMax},
		{"sync_us_min", p.SyncUsMin, 0, LatencyUsMax},
		{"sync_us_max", p.SyncUsMax, p.SyncUsMin, LatencyUsMax},
		{"duration_ms", p.DurationMs, 1, DurationMsMax},
		{"drain_ms", p.DrainMs, 1, DrainMsMax},
		{"faults.drop_per_1000", int64(p.Faults.DropPer1000), 0, RatePer1000Max},
		{"faults.dup_per_1000", int64(p.Faults.DupPer1000), 0, RatePer1000Max},
		{"faults.corrupt_msg_per_1000", int64(p.Faults.CorruptPer1000), 0, RatePer1000Max},
		{"retain_silent_ms", p.RetainSilentMs, 0, 3_600_000},
		{"retain_records_min", int64(p.RetainRecordsMin), 0, 1 << 20},
	}
	for _, c := range ints {
		if c.v < c.lo || c.v > c.h {
			return bad(c.field, "%d, want %d..%d", c.v, c.lo, c.h)
		}
	}
	if p.BodyBytesMin < 8 || p.BodyBytesMax < p.BodyBytesMin || p.BodyBytesMax > 1<<20 {
		return bad("body_bytes_min, body_bytes_max", "%d..%d, want 8 <= min <= max <= 1 MiB", p.BodyBytesMin, p.BodyBytesMax)
	}
	for k, r := range p.Faults.PerMin {
		if r.On() && (k == 0 || FaultKind(k) >= FaultDrop) {
			return bad("faults.per_min", "fault kind %d is not a scheduled kind", k)
		}
	}
	for i, f := range p.Schedule {
		if err := f.validate(p.Brokers, p.DurationMs*1e6); err != nil {
			return bad(fmt.Sprintf("schedule[%d]", i), "%q: %v", f.String(), err)
		}
	}
	return nil
}
