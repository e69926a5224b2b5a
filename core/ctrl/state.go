package ctrl

import (
	"fmt"
	"slices"
	"strings"
)

// The metadata state machine of this step: settings, a key/value map set by
// committed commands. Later steps add brokers, liveness, the catalogue,
// assignments and in-sync sets.
const (
	SettingsMax      = 256 // distinct keys
	SettingKeyMax    = 64  // bytes
	SettingValueMax  = 256 // bytes
	commandPrefixSet = "set "
)

// Setting is one key and its value.
type Setting struct{ Key, Value string }

// settings is kept sorted by key (no Go map, so no iteration order).
type settings []Setting

// SetCommand encodes the command that sets key to value.
func SetCommand(key, value string) []byte {
	return []byte(commandPrefixSet + key + " " + value)
}

// parseCommand validates a command: "set <key> <value>", key of
// [a-z0-9._], value printable without newlines.
func parseCommand(cmd []byte) (Setting, error) {
	s := string(cmd)
	rest, ok := strings.CutPrefix(s, commandPrefixSet)
	if !ok {
		return Setting{}, fmt.Errorf("unknown command (want %q)", "set <key> <value>")
	}
	key, value, ok := strings.Cut(rest, " ")
	if !ok {
		return Setting{}, fmt.Errorf("set: missing value")
	}
	if key == "" || len(key) > SettingKeyMax {
		return Setting{}, fmt.Errorf("set: key of %d bytes, want 1 to %d", len(key), SettingKeyMax)
	}
	for _, c := range []byte(key) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			return Setting{}, fmt.Errorf("set: key %q has a character outside [a-z0-9._]", key)
		}
	}
	if len(value) > SettingValueMax {
		return Setting{}, fmt.Errorf("set: value of %d bytes, over %d", len(value), SettingValueMax)
	}
	for _, c := range []byte(value) {
		if c < 0x20 || c == 0x7f {
			return Setting{}, fmt.Errorf("set: value has a control character")
		}
	}
	return Setting{Key: key, Value: value}, nil
}

// apply applies one committed command; a refused one changes nothing (every
// replica refuses it alike) and returns why.
func (ss *settings) apply(cmd []byte) error {
	st, err := parseCommand(cmd)
	if err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(*ss, st.Key, func(s Setting, k string) int { return strings.Compare(s.Key, k) })
	if found {
		(*ss)[i].Value = st.Value
		return nil
	}
	if len(*ss) >= SettingsMax {
		return fmt.Errorf("set: %d settings already, the limit", SettingsMax)
	}
	*ss = slices.Insert(*ss, i, st)
	return nil
}

func (ss settings) get(key string) (string, bool) {
	i, found := slices.BinarySearchFunc(ss, key, func(s Setting, k string) int { return strings.Compare(s.Key, k) })
	if !found {
		return "", false
	}
	return ss[i].Value, true
}
