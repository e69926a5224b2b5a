package shrink

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/sim/world"
)

// Scenario is a saved run: a seed and the exact profile (schedule included)
// that reproduce it. Expect says what replaying it must give: "pass" for a
// regression whose bug is fixed, "fail:<checker>" for a planted bug that the
// checkers must keep catching (the canary's). Mark names the coverage mark
// (world.Mark) that its bug's path hits: once messages or timing change, a
// seed and fault times may no longer lead there, and a regression that
// passes without reaching its mark proves nothing, so replay fails then.
//
// A scenario file is JSON with snake_case keys throughout (scenarioJSON
// below); Parse refuses unknown keys, keys in another style, and anything
// after the object, naming the file's line and column.
type Scenario struct {
	Name   string
	Note   string
	Seed   uint64
	Expect string
	Mark   string
	// Bug, for a fixed bug's scenario, names the planted bug (core/bugs)
	// that brings it back: replay then also runs with it planted and
	// demands a failure, proving the scenario still reaches the bug.
	Bug     string
	Profile world.Profile
}

// scenarioJSON is a scenario file's form.
type scenarioJSON struct {
	Name    string      `json:"name"`
	Note    string      `json:"note,omitempty"`
	Seed    uint64      `json:"seed"`
	Expect  string      `json:"expect"`
	Mark    string      `json:"mark"`
	Bug     string      `json:"bug,omitempty"`
	Profile profileJSON `json:"profile"`
}

// profileJSON is world.Profile's form in a scenario file, field for field
// (TestProfileJSONCoversEveryField keeps it so).
type profileJSON struct {
	Brokers            int         `json:"brokers"`
	Queues             []queueJSON `json:"queues"`
	PublishersPerQueue int         `json:"publishers_per_queue"`
	PublishesPerSec    int         `json:"publishes_per_sec"`
	BodyBytesMin       int         `json:"body_bytes_min"`
	BodyBytesMax       int         `json:"body_bytes_max"`
	InflightMax        int         `json:"inflight_max"`
	ConsumersPerQueue  int         `json:"consumers_per_queue"`
	// ConsumersFromMs: 0 (absent), the consumers connect as the run starts
	ConsumersFromMs    int64            `json:"consumers_from_ms,omitempty"`
	Prefetch           int              `json:"prefetch"`
	AckDelayUsMax      int64            `json:"ack_delay_us_max"`
	ConsumerLossPerMin world.Rate       `json:"consumer_loss_per_min"`
	Faults             world.FaultRates `json:"faults"`
	// Schedule: null draws the schedule from the seed; a list (even an
	// empty one) replaces it.
	Schedule        []world.Fault `json:"schedule"`
	Bugs            bugs.Set      `json:"bugs"`
	NetLatencyUsMin int64         `json:"net_latency_us_min"`
	NetLatencyUsMax int64         `json:"net_latency_us_max"`
	SyncUsMin       int64         `json:"sync_us_min"`
	SyncUsMax       int64         `json:"sync_us_max"`
	DurationMs      int64         `json:"duration_ms"`
	DrainMs         int64         `json:"drain_ms"`
	Operator        []string      `json:"operator,omitempty"`
	// RetainSilentMs, RetainRecordsMin: 0 (absent) is the default
	RetainSilentMs   int64 `json:"retain_silent_ms,omitempty"`
	RetainRecordsMin int   `json:"retain_records_min,omitempty"`
}

// queueJSON is one of the profile's queues, as the operator declares it
// (the controller places it).
type queueJSON struct {
	Replicas  int         `json:"replicas"`
	Policy    core.Policy `json:"policy"`
	MinInSync int         `json:"min_insync,omitempty"`
}

// faultsKeys lists the keys of world.FaultRates' JSON form, whose own
// decoder ignores unknown ones: checkKeys holds "faults" to these.
type faultsKeys struct {
	PerMin         json.RawMessage `json:"per_min"`
	DropPer1000    int             `json:"drop_per_1000"`
	DupPer1000     int             `json:"dup_per_1000"`
	CorruptPer1000 int             `json:"corrupt_msg_per_1000"`
}

func toJSON(p world.Profile) profileJSON {
	j := profileJSON{Brokers: p.Brokers, PublishersPerQueue: p.PublishersPerQueue, PublishesPerSec: p.PublishesPerSec,
		BodyBytesMin: p.BodyBytesMin, BodyBytesMax: p.BodyBytesMax, InflightMax: p.InflightMax,
		ConsumersPerQueue: p.ConsumersPerQueue, Prefetch: p.Prefetch, AckDelayUsMax: p.AckDelayUsMax,
		ConsumerLossPerMin: p.ConsumerLossPerMin, Faults: p.Faults, Schedule: p.Schedule, Bugs: p.Bugs,
		NetLatencyUsMin: p.NetLatencyUsMin, NetLatencyUsMax: p.NetLatencyUsMax, SyncUsMin: p.SyncUsMin,
		SyncUsMax: p.SyncUsMax, DurationMs: p.DurationMs, DrainMs: p.DrainMs, Operator: p.Operator,
		RetainSilentMs: p.RetainSilentMs, RetainRecordsMin: p.RetainRecordsMin, ConsumersFromMs: p.ConsumersFromMs}
	for _, q := range p.Queues {
		j.Queues = append(j.Queues, queueJSON{Replicas: q.Replicas, Policy: q.Policy, MinInSync: q.MinInSync})
	}
	return j
}

func (j profileJSON) profile() world.Profile {
	p := world.Profile{Brokers: j.Brokers, PublishersPerQueue: j.PublishersPerQueue, PublishesPerSec: j.PublishesPerSec,
		BodyBytesMin: j.BodyBytesMin, BodyBytesMax: j.BodyBytesMax, InflightMax: j.InflightMax,
		ConsumersPerQueue: j.ConsumersPerQueue, Prefetch: j.Prefetch, AckDelayUsMax: j.AckDelayUsMax,
		ConsumerLossPerMin: j.ConsumerLossPerMin, Faults: j.Faults, Schedule: j.Schedule, Bugs: j.Bugs,
		NetLatencyUsMin: j.NetLatencyUsMin, NetLatencyUsMax: j.NetLatencyUsMax, SyncUsMin: j.SyncUsMin,
		SyncUsMax: j.SyncUsMax, DurationMs: j.DurationMs, DrainMs: j.DrainMs, Operator: j.Operator,
		RetainSilentMs: j.RetainSilentMs, RetainRecordsMin: j.RetainRecordsMin, ConsumersFromMs: j.ConsumersFromMs}
	for _, q := range j.Queues {
		p.Queues = append(p.Queues, world.QueueDecl{Replicas: q.Replicas, Policy: q.Policy, MinInSync: q.MinInSync})
	}
	return p
}

// Marshal renders the scenario as indented JSON.
func (s *Scenario) Marshal() []byte {
	j := scenarioJSON{Name: s.Name, Note: s.Note, Seed: s.Seed, Expect: s.Expect, Mark: s.Mark, Bug: s.Bug, Profile: toJSON(s.Profile)}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// scenarioBytesMax bounds a scenario file: the largest saved ones are a few
// KiB, and a schedule of thousands of faults is still far below.
const scenarioBytesMax = 4 << 20

// Parse reads a scenario; errors name the scenario "scenario".
func Parse(b []byte) (Scenario, error) { return ParseFile("scenario", b) }

// ParseFile reads a scenario from the contents b of the file named name.
// Errors name the file and, for what is wrong in the JSON, the line and
// column ("x.json:3:5: unknown key ..."); a profile the world cannot run is
// refused with the field's name.
func ParseFile(name string, b []byte) (Scenario, error) {
	var s Scenario
	if len(b) > scenarioBytesMax {
		return s, fmt.Errorf("%s: %d bytes, over the %d a scenario may have", name, len(b), scenarioBytesMax)
	}
	if err := checkKeys(b, reflect.TypeFor[scenarioJSON]()); err != nil {
		return s, positioned(name, b, err)
	}
	var j scenarioJSON
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&j); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return s, fmt.Errorf("%s:%s: %s: want %s, got a JSON %s", name, lineCol(b, typ.Offset), typ.Field, typ.Type, typ.Value)
		}
		return s, fmt.Errorf("%s:%s: %v", name, lineCol(b, d.InputOffset()), err)
	}
	s = Scenario{Name: j.Name, Note: j.Note, Seed: j.Seed, Expect: j.Expect, Mark: j.Mark, Bug: j.Bug, Profile: j.Profile.profile()}
	if s.Expect != "pass" && (len(s.Expect) < 6 || s.Expect[:5] != "fail:") {
		return s, fmt.Errorf("%s: expect %q, want pass or fail:<checker>", name, s.Expect)
	}
	if s.Bug != "" {
		if _, err := bugs.Parse(s.Bug); err != nil || s.Expect != "pass" {
			return s, fmt.Errorf("%s: bug %q: want a planted bug's name on a scenario that expects pass (%v)", name, s.Bug, err)
		}
	}
	if _, err := world.ParseMark(s.Mark); err != nil {
		return s, fmt.Errorf("%s: mark: %w (every scenario names the coverage mark its bug's path hits)", name, err)
	}
	if err := s.Profile.Validate(); err != nil {
		return s, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// keyError is an object key that a scenario file may not have.
type keyError struct {
	offset int64
	path   string
	key    string
	known  []string
}

func (e *keyError) Error() string {
	for _, k := range e.known {
		if strings.EqualFold(strings.ReplaceAll(k, "_", ""), e.key) {
			return fmt.Sprintf("unknown key %q in %s: keys are snake_case, did you mean %q?", e.key, e.path, k)
		}
	}
	return fmt.Sprintf("unknown key %q in %s (its keys: %s)", e.key, e.path, strings.Join(e.known, ", "))
}

// posError is a JSON error at a byte offset.
type posError struct {
	offset int64
	err    error
}

func (e *posError) Error() string { return e.err.Error() }

// positioned turns an error of checkKeys into "name:line:col: ...".
func positioned(name string, b []byte, err error) error {
	var ke *keyError
	var pe *posError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ke):
		return fmt.Errorf("%s:%s: %v", name, lineCol(b, ke.offset), err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%s:%s: unexpected end of file: the JSON is cut short (truncated?)", name, lineCol(b, int64(len(b))))
	case errors.As(err, &se):
		return fmt.Errorf("%s:%s: %v", name, lineCol(b, se.Offset), err)
	case errors.As(err, &pe):
		return fmt.Errorf("%s:%s: %v", name, lineCol(b, pe.offset), err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// lineCol returns "line:col" (both from 1) of byte offset off in b.
func lineCol(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Sprintf("%d:%d", line, col)
}

// checkKeys walks the JSON in b against the type t it will decode into
// and refuses any object key that is not exactly (case included) one of
// the json tags of the struct there. encoding/json alone ignores unknown
// keys and matches keys case-insensitively; a typo must not pass.
func checkKeys(b []byte, t reflect.Type) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := walkKeys(d, b, t, "scenario", 0); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return &posError{d.InputOffset(), errors.New("data after the scenario's JSON object")}
	}
	return nil
}

// depthMax bounds the nesting checkKeys follows; a scenario nests 4 deep.
const depthMax = 16

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func walkKeys(d *json.Decoder, b []byte, t reflect.Type, path string, depth int) error {
	if depth > depthMax {
		return &posError{d.InputOffset(), errors.New("JSON nested too deep")}
	}
	if t == reflect.TypeFor[world.FaultRates]() {
		t = reflect.TypeFor[faultsKeys]() // its decoder does not refuse unknown keys
	} else if t != nil && (reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)) {
		t = nil // a value that reads itself: no keys to check
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		for d.More() {
			off := d.InputOffset()
			ktok, err := d.Token()
			if err != nil {
				return err
			}
			key, _ := ktok.(string)
			var ft reflect.Type
			if t != nil && t.Kind() == reflect.Struct {
				var known []string
				for i := 0; i < t.NumField(); i++ {
					f := t.Field(i)
					tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					known = append(known, tag)
					if tag == key {
						ft = f.Type
					}
				}
				if ft == nil {
					// The offset is where the previous token ended: the key
					// starts at the next quote.
					if i := bytes.IndexByte(b[off:], '"'); i >= 0 {
						off += int64(i)
					}
					return &keyError{offset: off, path: path, key: key, known: known}
				}
			}
			if err := walkKeys(d, b, ft, path+"."+key, depth+1); err != nil {
				return err
			}
		}
	case '[':
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; d.More(); i++ {
			if err := walkKeys(d, b, et, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	_, err = d.Token() // the closing delimiter
	return err
}
