package shrink

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/sim/world"
)

func validScenario() Scenario {
	p := world.Standard()
	p.DurationMs = 500
	p.Schedule = []world.Fault{{AtNs: 100e6, Kind: world.FaultCrash, Node: 2, DurNs: 50e6}}
	return Scenario{Name: "x", Seed: 3, Expect: "pass", Mark: "process-down", Profile: p}
}

// Every field of world.Profile has its snake_case key in a scenario file:
// a field added to the profile and forgotten here would be dropped from
// saved scenarios without a word.
func TestProfileJSONCoversEveryField(t *testing.T) {
	pt, jt := reflect.TypeFor[world.Profile](), reflect.TypeFor[profileJSON]()
	if pt.NumField() != jt.NumField() {
		t.Fatalf("world.Profile has %d fields, its scenario form %d", pt.NumField(), jt.NumField())
	}
	for i := 0; i < pt.NumField(); i++ {
		if pt.Field(i).Name != jt.Field(i).Name {
			t.Fatalf("field %d: world.Profile.%s, scenario form %s", i, pt.Field(i).Name, jt.Field(i).Name)
		}
	}
	p := world.Draw(77)
	p.Schedule = []world.Fault{}
	p.ConsumerLossPerMin = world.PerMin(3)
	p.AckDelayUsMax = 1234
	s := Scenario{Name: "all", Note: "n", Seed: 77, Expect: "pass", Mark: "process-down", Profile: p}
	back, err := Parse(s.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Profile, p) {
		t.Fatalf("round trip changed the profile:\n%+v\n%+v", back.Profile, p)
	}
}

// Bad scenario files are refused with the file's name, the line and column
// and what is wrong; none of them reaches a run.
func TestParseFileRefusesBadScenarios(t *testing.T) {
	v := validScenario()
	good := string(v.Marshal())
	for _, c := range []struct {
		name, text, want string
	}{
		{"unknown key", strings.Replace(good, `"brokers"`, `"Brokerz"`, 1), `x.json:7:5: unknown key "Brokerz" in scenario.profile (its keys: brokers, queues,`},
		{"old key style", strings.Replace(good, `"brokers"`, `"Brokers"`, 1), `x.json:7:5: unknown key "Brokers" in scenario.profile: keys are snake_case, did you mean "brokers"?`},
		{"unknown key in faults", strings.Replace(good, `"faults": {`, `"faults": {"drop": 3,`, 1), `unknown key "drop" in scenario.profile.faults`},
		{"unknown top key", strings.Replace(good, `"seed"`, `"sed"`, 1), `x.json:3:3: unknown key "sed" in scenario (its keys: name,`},
		{"truncated", good[:len(good)/2], `x.json:`},
		{"trailing data", good + "{}", `data after the scenario's JSON object`},
		{"wrong type", strings.Replace(good, `"brokers": 3`, `"brokers": "3"`, 1), `x.json:7:19: profile.brokers: want int, got a JSON string`},
		{"more replicas than brokers", strings.Replace(good, `"replicas": 3`, `"replicas": 4`, 1), `x.json: profile: queues[0].replicas: 4, want 1..3 (brokers=3)`},
		{"an old static queue", strings.Replace(good, `"replicas": 3`, `"queue": 1, "replicas": 3`, 1), `unknown key "queue" in scenario.profile.queues[0] (its keys: replicas, policy, min_insync)`},
		{"fault on a broker that does not exist", strings.Replace(good, `crash n2`, `crash n7`, 1), `x.json: profile: schedule[0]: "at=100000000 crash n7 dur=50000000": broker n7 does not exist (brokers=3)`},
		{"fault after the workload", strings.Replace(good, `at=100000000`, `at=900000000`, 1), `outside the workload phase`},
		{"duration too long", strings.Replace(good, `"duration_ms": 500`, `"duration_ms": 9000000000000000`, 1), `profile: duration_ms: 9000000000000000, want 1..600000`},
		{"bad fault line", strings.Replace(good, `crash n2`, `crush n2`, 1), `unknown fault kind "crush"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.text == good {
				t.Fatal("the case changed nothing")
			}
			_, err := ParseFile("x.json", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.json") {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := ParseFile("x.json", []byte(good)); err != nil {
		t.Fatalf("the good scenario: %v", err)
	}
}
