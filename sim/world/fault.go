package world

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/sluicemq/sluice/sim/prng"
)

// FaultKind names one kind of injected fault.
type FaultKind uint8

const (
	// FaultCrash: a broker loses power and restarts after Dur; each unsynced
	// write is lost, kept or torn per 4 KiB sector.
	FaultCrash FaultKind = iota + 1
	// FaultPause: a broker stops for Dur (a long GC pause) and continues
	// with its old state and a clock that jumped.
	FaultPause
	// FaultSlowSync: a broker's syncs take SlowSyncFactor times longer for Dur.
	FaultSlowSync
	// FaultSyncFail: a broker's next sync fails as Linux reports it: the
	// file's dirty pages are dropped (each sector of an unsynced write kept,
	// lost or torn, as on the media), the error is reported once (a later
	// sync of the file succeeds), the broker treats the log as failed, exits
	// and is restarted by its supervisor without a power loss.
	FaultSyncFail
	// FaultReadError: a broker's next log read fails.
	FaultReadError
	// FaultCorrupt: a bit flips in a durable byte of a broker's log, then the
	// broker loses power; within the fault budget only.
	FaultCorrupt
	// FaultDiskFull: a broker's disk accepts no more bytes for Dur.
	FaultDiskFull
	// FaultIsolate: a broker is cut off from every other broker for Dur.
	FaultIsolate
	// FaultOneWay: messages from Node to Peer are lost for Dur.
	FaultOneWay
	// FaultClog: messages from Node to Peer take ClogDelay longer for Dur.
	FaultClog
	// FaultSpike: every peer message takes SpikeFactor times longer for Dur.
	FaultSpike
	// FaultLostWrite: a write of a broker's log that the device acknowledged
	// (synced) never reached the media: it reads back as zeros or as the old
	// contents, in the page cache too. Within the fault budget.
	FaultLostWrite
	// FaultUnreadable: a sector of a broker's log becomes unreadable: every
	// read of it fails until it is rewritten. Within the fault budget.
	FaultUnreadable
	// FaultTornSector: a broker loses power (and restarts after Dur) while a
	// write shares a 4 KiB sector with synced bytes; the torn sector's synced
	// bytes read back as garbage. Within the fault budget (else a plain
	// power loss).
	FaultTornSector
	// FaultCorruptLive: a bit flips in a durable byte of a running broker's
	// log; its live reads (scrub, delivery, catch-up) meet it. Within the
	// fault budget.
	FaultCorruptLive
	// FaultPowerCycle: every broker loses power at once; each restarts
	// within Dur.
	FaultPowerCycle
	// FaultLeaderCrash, FaultLeaderIsolate, FaultLeaderPause: the broker
	// leading the metadata group as the fault strikes (the one whose
	// group says it leads, in the highest term) loses power and restarts
	// after Dur, is cut off from every other broker for Dur, or stops for
	// Dur. Skipped when no broker leads.
	FaultLeaderCrash
	FaultLeaderIsolate
	FaultLeaderPause
	// FaultKill: a broker's process is killed (kill -9: its memory is
	// gone, its disk and page cache stay, and its peers' connections see
	// the exit, as TCP reports it) and restarts after Dur: eager failover
	// in the swarm (its exits otherwise come only from the failure policy),
	// and the in-sync timeline's restarted follower. Its first swarm run found a false
	// at-least-once failure (regression stale-delivery-after-ack).
	FaultKill
	// FaultLostDir: a broker loses power and, before it restarts after
	// Dur, the live directory of one of its queues' logs is emptied (an
	// operator's slip, a lost mount), durably: every file of that
	// generation gone, its storage binding with them. Within the fault
	// budget.
	FaultLostDir
	// FaultGone: a broker's process is killed (kill -9, its peers see the
	// exit) and the broker never returns, not even in the drain: a
	// permanent loss of every copy it holds. It strikes
	// only within the fault budget (each queue it is a member of may lose
	// one more copy), while every placed queue could still serve at its
	// replicas' W on the brokers left, and while the metadata group keeps
	// a majority of its voters (goneMax).
	FaultGone
	// FaultCandidateDies: armed at its instant, it strikes the next
	// recovery stage that a candidate reports taking up a transition
	// (detect), or in two draws of three choosing its source (select):
	// after a short delay the candidate's process, or that of a proposed
	// member about to install, is killed (as FaultKill). The candidate
	// restarts after Dur; the proposed member is gone for good when the
	// gone fault's rules allow it (its recovery must activate without it),
	// else restarts after Dur too.
	FaultCandidateDies
	// FaultDiskReplaced: a broker loses power and restarts after Dur on a
	// new, empty data disk for its queue logs: a new storage instance,
	// every log's directory, binding and the markers beside them gone.
	// The metadata store, on a device of its own, survives (a voter that
	// forgot its raft log is another fault, unsafe by design). Within the
	// fault budget for every queue with a log on the old disk.
	FaultDiskReplaced
	// FaultDrain: the operator asks the metadata group to drain a broker
	// (the Drain command `sluice drain` sends: placement puts nothing new
	// on it, a lost follower on it is replaced, not held, a recovery whose
	// candidate it is is handed on) and to undrain it after Dur, or at
	// the heal; in two draws of three the broker's process is killed 1 to
	// 300 ms after its drain applies (a maintenance restart: it restarts
	// 1 ms to 3 s later, still draining). Each request is retried until
	// it commits; the draws come from a stream of their own.
	FaultDrain
	// FaultStaleTail: a follower takes its owner's last appends alone and
	// then hears nothing across an epoch change: for 0.3 to 1 s the owner
	// of a queue with W >= 3 reaches only its highest follower, so its
	// appends are confirmed nowhere; then the owner is killed (back once
	// the recovery activated) and nothing reaches that follower, which heartbeats
	// on and stays a member of the recovered epoch. Soon after the
	// recovery activates, the new owner is killed too, and enough of the
	// others are cut off that the next recovery needs the follower's
	// seal: its longer log, of the older epoch, among the witnesses. No
	// damage; the draws come from a stream of their own.
	FaultStaleTail
	// FaultOwnerKill: the process of the broker owning the profile's
	// first queue (q1, by the world's follow of the committed metadata)
	// is killed (as FaultKill) and restarts after Dur: an owner loss at a
	// chosen instant, such as when the scale profile's deep queue holds a
	// million records. Skipped while q1 is not placed or its owner down.
	FaultOwnerKill
	// Per-message network faults, counted when they strike.
	FaultDrop
	FaultDuplicate
	FaultCorruptMsg
	faultKinds
)

var faultNames = [...]string{
	FaultCrash: "crash", FaultPause: "pause", FaultSlowSync: "slow-sync", FaultSyncFail: "sync-fail",
	FaultReadError: "read-error", FaultCorrupt: "corrupt", FaultDiskFull: "disk-full",
	FaultIsolate: "isolate", FaultOneWay: "one-way", FaultClog: "clog", FaultSpike: "delay-spike",
	FaultLostWrite: "lost-write", FaultUnreadable: "unreadable", FaultTornSector: "torn-sector",
	FaultCorruptLive: "corrupt-live", FaultPowerCycle: "power-cycle",
	FaultLeaderCrash: "leader-crash", FaultLeaderIsolate: "leader-isolate", FaultLeaderPause: "leader-pause",
	FaultKill: "kill", FaultLostDir: "lost-dir", FaultGone: "gone", FaultCandidateDies: "candidate-dies", FaultDiskReplaced: "disk-replaced", FaultDrain: "drain", FaultStaleTail: "stale-tail", FaultOwnerKill: "owner-kill", FaultDrop: "drop", FaultDuplicate: "duplicate", FaultCorruptMsg: "corrupt-msg",
}

func (k FaultKind) String() string {
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return "fault?"
}

// FaultKinds lists every kind, in order.
func FaultKinds() []FaultKind {
	out := make([]FaultKind, 0, faultKinds-1)
	for k := FaultCrash; k < faultKinds; k++ {
		out = append(out, k)
	}
	return out
}

// ParseFaultKind reads a kind as String prints it.
func ParseFaultKind(s string) (FaultKind, error) {
	for _, k := range FaultKinds() {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown fault kind %q", s)
}

// Fault magnitudes.
const (
	// LateDuplicateNsMax bounds how late a duplicated message's late copy
	// (one duplicate in four) may arrive.
	LateDuplicateNsMax = 3e9
	SlowSyncFactor     = 50
	SpikeFactor        = 20
	ClogDelayNs        = 500e6
)

// Fault is one scheduled fault. Node and Peer are broker numbers (1-based).
type Fault struct {
	AtNs  int64
	Kind  FaultKind
	Node  int
	Peer  int // one-way, clog
	DurNs int64
}

// String prints the fault as one stable line; ParseFault reads it back.
func (f Fault) String() string {
	switch f.Kind {
	case FaultOneWay, FaultClog:
		return fmt.Sprintf("at=%d %s n%d->n%d dur=%d", f.AtNs, f.Kind, f.Node, f.Peer, f.DurNs)
	case FaultSpike, FaultPowerCycle, FaultLeaderCrash, FaultLeaderIsolate, FaultLeaderPause, FaultCandidateDies, FaultOwnerKill:
		return fmt.Sprintf("at=%d %s dur=%d", f.AtNs, f.Kind, f.DurNs)
	case FaultSyncFail, FaultReadError, FaultLostWrite, FaultUnreadable, FaultCorruptLive, FaultGone:
		return fmt.Sprintf("at=%d %s n%d", f.AtNs, f.Kind, f.Node)
	case FaultStaleTail:
		return fmt.Sprintf("at=%d %s", f.AtNs, f.Kind)
	}
	return fmt.Sprintf("at=%d %s n%d dur=%d", f.AtNs, f.Kind, f.Node, f.DurNs)
}

// ParseFault reads a fault in the form String prints.
func ParseFault(s string) (Fault, error) {
	var f Fault
	var kind string
	var err error
	var n int
	if n, err = fmt.Sscanf(s, "at=%d %s", &f.AtNs, &kind); n != 2 {
		return f, fmt.Errorf("fault %q: %v", s, err)
	}
	if f.Kind, err = ParseFaultKind(kind); err != nil {
		return f, err
	}
	rest := s[len(fmt.Sprintf("at=%d %s", f.AtNs, kind)):]
	switch f.Kind {
	case FaultOneWay, FaultClog:
		_, err = fmt.Sscanf(rest, " n%d->n%d dur=%d", &f.Node, &f.Peer, &f.DurNs)
	case FaultSpike, FaultPowerCycle, FaultLeaderCrash, FaultLeaderIsolate, FaultLeaderPause, FaultCandidateDies, FaultOwnerKill:
		_, err = fmt.Sscanf(rest, " dur=%d", &f.DurNs)
	case FaultSyncFail, FaultReadError, FaultLostWrite, FaultUnreadable, FaultCorruptLive, FaultGone:
		_, err = fmt.Sscanf(rest, " n%d", &f.Node)
	case FaultStaleTail:
		if rest != "" {
			err = fmt.Errorf("unexpected %q", rest)
		}
	default:
		_, err = fmt.Sscanf(rest, " n%d dur=%d", &f.Node, &f.DurNs)
	}
	if err != nil {
		return f, fmt.Errorf("fault %q: %v", s, err)
	}
	if f.String() != s {
		return f, fmt.Errorf("fault %q does not read back the same", s)
	}
	return f, nil
}

// validate reports a scheduled fault the world cannot apply in a run of
// brokers brokers whose workload phase lasts durationNs.
func (f Fault) validate(brokers int, durationNs int64) error {
	if f.Kind < FaultCrash || f.Kind >= FaultDrop {
		return fmt.Errorf("%s is not a scheduled fault kind", f.Kind)
	}
	if f.AtNs < 0 || f.AtNs >= durationNs {
		return fmt.Errorf("at=%d is outside the workload phase [0, %d) ns", f.AtNs, durationNs)
	}
	if f.DurNs < 0 || f.DurNs > int64(DurationMsMax)*1e6 {
		return fmt.Errorf("dur=%d, want 0..%d ns", f.DurNs, int64(DurationMsMax)*1e6)
	}
	switch f.Kind {
	case FaultSpike, FaultPowerCycle, FaultLeaderCrash, FaultLeaderIsolate, FaultLeaderPause, FaultCandidateDies, FaultStaleTail, FaultOwnerKill:
		return nil // every broker, or the ones it picks when it strikes
	}
	if f.Node < 1 || f.Node > brokers {
		return fmt.Errorf("broker n%d does not exist (brokers=%d)", f.Node, brokers)
	}
	switch f.Kind {
	case FaultOneWay, FaultClog:
		if f.Peer < 1 || f.Peer > brokers || f.Peer == f.Node {
			return fmt.Errorf("peer n%d: want another of the %d brokers", f.Peer, brokers)
		}
	}
	return nil
}

// FaultRates are the profile's fault knobs: scheduled kinds as mean events
// per simulated minute of the workload phase, message faults per 1000
// messages.
type FaultRates struct {
	PerMin         [faultKinds]Rate
	DropPer1000    int
	DupPer1000     int
	CorruptPer1000 int
}

func (r FaultRates) String() string {
	s := ""
	for k := FaultCrash; k < FaultDrop; k++ {
		if r.PerMin[k].On() {
			s += fmt.Sprintf(" %s/min=%s", k, r.PerMin[k])
		}
	}
	if r.DropPer1000 > 0 {
		s += fmt.Sprintf(" drop/1000=%d", r.DropPer1000)
	}
	if r.DupPer1000 > 0 {
		s += fmt.Sprintf(" dup/1000=%d", r.DupPer1000)
	}
	if r.CorruptPer1000 > 0 {
		s += fmt.Sprintf(" corrupt-msg/1000=%d", r.CorruptPer1000)
	}
	if s == "" {
		return "none"
	}
	return s[1:]
}

// drawSchedule draws the timed faults of a run from its rates: Poisson
// arrivals per kind over the workload phase (exponential gaps drawn in
// integer nanoseconds, see expGap), sorted by time.
func drawSchedule(r *prng.Rand, rates FaultRates, brokers int, durationNs int64) []Fault {
	var out []Fault
	for k := FaultCrash; k < FaultDrop; k++ {
		rate := rates.PerMin[k]
		if !rate.On() {
			continue
		}
		for at := expGap(r, rate); at < durationNs; at += expGap(r, rate) {
			f := Fault{AtNs: at, Kind: k, Node: 1 + r.Intn(brokers)}
			switch k {
			case FaultCrash, FaultKill:
				f.DurNs = r.Range(1e6, 3e9)
			case FaultPause:
				f.DurNs = r.Range(100e6, 5e9)
			case FaultSlowSync, FaultDiskFull:
				f.DurNs = r.Range(100e6, 3e9)
			case FaultCorrupt, FaultTornSector, FaultLostDir, FaultDiskReplaced:
				f.DurNs = r.Range(1e6, 2e9) // until the restart
			case FaultDrain:
				f.DurNs = r.Range(500e6, 8e9) // until the undrain
			case FaultStaleTail:
				f.Node = 0 // the queue and its brokers are picked as it strikes
			case FaultPowerCycle:
				f.DurNs = r.Range(1e6, 3e9)
				f.Node = 0
			case FaultIsolate:
				f.DurNs = r.Range(100e6, 5e9)
			case FaultOneWay, FaultClog:
				f.DurNs = r.Range(100e6, 5e9)
				if brokers < 2 {
					continue
				}
				f.Peer = 1 + r.Intn(brokers-1)
				if f.Peer >= f.Node {
					f.Peer++
				}
			case FaultSpike:
				f.DurNs = r.Range(50e6, 1e9)
				f.Node = 0
			case FaultLeaderCrash, FaultCandidateDies, FaultOwnerKill:
				f.DurNs = r.Range(1e6, 3e9)
				f.Node = 0
			case FaultLeaderIsolate, FaultLeaderPause:
				f.DurNs = r.Range(100e6, 5e9)
				f.Node = 0
			}
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AtNs < out[j].AtNs })
	return out
}

// MarshalText writes the fault as its stable line, so saved scenarios name
// fault kinds rather than numbers.
func (f Fault) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads a fault line.
func (f *Fault) UnmarshalText(b []byte) error {
	g, err := ParseFault(string(b))
	if err != nil {
		return err
	}
	*f = g
	return nil
}

type faultRatesJSON struct {
	PerMin         map[string]Rate `json:"per_min,omitempty"`
	DropPer1000    int             `json:"drop_per_1000,omitempty"`
	DupPer1000     int             `json:"dup_per_1000,omitempty"`
	CorruptPer1000 int             `json:"corrupt_msg_per_1000,omitempty"`
}

// MarshalJSON names each rate by its fault kind.
func (r FaultRates) MarshalJSON() ([]byte, error) {
	j := faultRatesJSON{PerMin: map[string]Rate{}, DropPer1000: r.DropPer1000, DupPer1000: r.DupPer1000, CorruptPer1000: r.CorruptPer1000}
	for k := FaultCrash; k < FaultDrop; k++ {
		if r.PerMin[k].On() {
			j.PerMin[k.String()] = r.PerMin[k]
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads rates named by fault kind.
func (r *FaultRates) UnmarshalJSON(b []byte) error {
	var j faultRatesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = FaultRates{DropPer1000: j.DropPer1000, DupPer1000: j.DupPer1000, CorruptPer1000: j.CorruptPer1000}
	// In name order, so that of several bad names the same one is reported
	// in every run.
	for _, name := range slices.Sorted(maps.Keys(j.PerMin)) {
		k, err := ParseFaultKind(name)
		if err != nil || k >= FaultDrop {
			return fmt.Errorf("fault rates: %q is not a scheduled fault kind", name)
		}
		r.PerMin[k] = j.PerMin[name]
	}
	return nil
}
