package metadata

import (
	"fmt"
	"strconv"
)

// SettingSpec is one runtime setting: its key, default and range. Settings
// live in the metadata, are set by a committed command, and are read by
// whoever needs them on every tick.
type SettingSpec struct {
	Key      string
	Default  int64
	Min, Max int64
	Doc      string
}

// Setting indexes, in Settings order.
const (
	LivenessExpiryMs = iota
	ReplicaLagTimeMaxMs
	FollowerLossHoldMs
	RecoveryWorkersPerBroker
	RecoveryInspectPagesMax
	RecoveryInspectRecordsMax
	RecoveryInspectBytesMax
	RecoveryStageRecordsMax
	RecoveryStageBytesMax
	settingsCount
)

// Settings lists every runtime setting. The liveness default: a broker
// whose heartbeats (one per second) stop for 9 s leaves the live set, as
// Kafka's broker.session.timeout.ms; an exited process is removed sooner
// (eager failover).
var Settings = [settingsCount]SettingSpec{
	LivenessExpiryMs:         {"liveness.expiry_ms", 9_000, 500, 600_000, "a broker whose heartbeats stop this long leaves the live set"},
	ReplicaLagTimeMaxMs:      {"replica.lag_time_max_ms", 30_000, 100, 3_600_000, "a follower that has not held its owner's whole log for this long leaves the in-sync set"},
	FollowerLossHoldMs:       {"replication.follower_loss_hold_ms", 300_000, 0, 86_400_000, "how long a queue that lost only followers keeps its assignment before recovery (0: recover at once)"},
	RecoveryWorkersPerBroker: {"recovery.workers_per_broker", 1, 1, 16, "how many queue recoveries a broker drives at once"},
	// A recovery's sealed reads of the logs it verifies, over all of them
	// (docs/design/recovery.md, "Budgets and limits"); a queue whose
	// history exceeds one stays
	// fenced, saying which, until an operator raises it.
	RecoveryInspectPagesMax:   {"recovery.inspect_pages_max", 1024, 1, 1_000_000, "pages of sealed reads one recovery's inspection may take of each log"},
	RecoveryInspectRecordsMax: {"recovery.inspect_records_max", 1_000_000, 1, 1_000_000_000, "records one recovery's inspection may read of each log"},
	RecoveryInspectBytesMax:   {"recovery.inspect_bytes_max", 1 << 30, 1 << 20, 1 << 40, "bytes (bodies and 18 a record) one recovery's inspection may read of each log"},
	// One installation's stage, the copy of the source's history a
	// proposed member builds apart from its live log (separate from the
	// inspection's: docs/design/recovery.md, "Budgets and limits"): a history over one
	// keeps the queue fenced, saying which, until an operator raises it.
	RecoveryStageRecordsMax: {"recovery.stage_records_max", 1_000_000, 1, 1_000_000_000, "records one installation's stage may hold"},
	RecoveryStageBytesMax:   {"recovery.stage_bytes_max", 1 << 30, 1 << 20, 1 << 42, "bytes (bodies and 18 a record) one installation's stage may hold"},
}

// settingIndex returns the index of key, or -1.
func settingIndex(key string) int {
	for i := range Settings {
		if Settings[i].Key == key {
			return i
		}
	}
	return -1
}

// ParseSetting validates a setting as an operator writes it: a known key
// and a decimal value within its range.
func ParseSetting(key, value string) (int64, error) {
	i := settingIndex(key)
	if i < 0 {
		return 0, fmt.Errorf("unknown setting %q (known: %s)", key, settingKeys())
	}
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("setting %s: %q is not a whole number", key, value)
	}
	return v, checkSetting(i, v)
}

func checkSetting(i int, v int64) error {
	s := &Settings[i]
	if v < s.Min || v > s.Max {
		return fmt.Errorf("setting %s: %d is out of range [%d, %d]", s.Key, v, s.Min, s.Max)
	}
	return nil
}

func settingKeys() string {
	s := ""
	for i := range Settings {
		if i > 0 {
			s += ", "
		}
		s += Settings[i].Key
	}
	return s
}
