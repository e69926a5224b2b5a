package world

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		milli int64
		err   bool
	}{
		{in: "0", milli: 0},
		{in: "2", milli: 2000},
		{in: "20", milli: 20000},
		{in: "2.0", milli: 2000},
		{in: "0.5", milli: 500},
		{in: "0.001", milli: 1},
		{in: "0.0010", milli: 1},
		{in: "1e-3", milli: 1},
		{in: "2E1", milli: 20000},
		{in: "2.5e+1", milli: 25000},
		{in: "100e-5", milli: 1},
		{in: "0.000", milli: 0},
		{in: "0e-9999", milli: 0},
		{in: "007", milli: 7000},
		{in: "60000000000", milli: maxRateMilli},
		{in: "60000000000.001", err: true},
		{in: "1e11", err: true},
		{in: "1e9999", err: true},
		{in: "0.0001", err: true},
		{in: "1.0005", err: true},
		{in: "-1", err: true},
		{in: "-0", err: true},
		{in: "", err: true},
		{in: ".5", err: true},
		{in: "5.", err: true},
		{in: "1e", err: true},
		{in: "1e+", err: true},
		{in: "1/3", err: true},
		{in: "0x10", err: true},
		{in: "NaN", err: true},
		{in: "Inf", err: true},
		{in: `"2"`, err: true},
		{in: "2 ", err: true},
	} {
		r, err := ParseRate(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("ParseRate(%q) = %d thousandths, want an error", tc.in, r.Milli())
			}
			continue
		}
		if err != nil || r.Milli() != tc.milli {
			t.Errorf("ParseRate(%q) = %d thousandths, %v; want %d", tc.in, r.Milli(), err, tc.milli)
		}
	}
}

func TestRateStringRoundTrips(t *testing.T) {
	for milli, want := range map[int64]string{
		0: "0", 1: "0.001", 10: "0.01", 500: "0.5", 1500: "1.5", 2000: "2", 2250: "2.25",
		30000: "30", 1001: "1.001", maxRateMilli: "60000000000",
	} {
		r := MilliPerMin(milli)
		if got := r.String(); got != want {
			t.Errorf("MilliPerMin(%d).String() = %q, want %q", milli, got, want)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", r.String(), back, err, r)
		}
	}
}

func TestRateMeanGap(t *testing.T) {
	for _, tc := range []struct {
		r    Rate
		want int64
	}{
		{PerMin(2), 30_000_000_000},
		{PerMin(3), 20_000_000_000},
		{PerMin(30), 2_000_000_000},
		{MilliPerMin(500), 120_000_000_000},
		{MilliPerMin(1), 60_000_000_000_000},
		{MilliPerMin(7), 8_571_428_571_428}, // truncated
		{MilliPerMin(maxRateMilli), 1},
	} {
		if got := tc.r.MeanGapNs(); got != tc.want {
			t.Errorf("%v/min: MeanGapNs = %d, want %d", tc.r, got, tc.want)
		}
	}
	for _, f := range []func(){
		func() { Rate{}.MeanGapNs() },
		func() { PerMin(-1) },
		func() { PerMin(maxRateMilli/1000 + 1) },
		func() { MilliPerMin(maxRateMilli + 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on a rate out of range")
				}
			}()
			f()
		}()
	}
}

// TestRatesJSON reads rates in the form saved scenarios have always had
// (JSON numbers of events a minute, written when rates were float64) and
// writes them back the same.
func TestRatesJSON(t *testing.T) {
	in := `{"per_min":{"clog":20,"crash":2,"pause":0.5,"slow-sync":6},"drop_per_1000":10}`
	var r FaultRates
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	want := FaultRates{DropPer1000: 10}
	want.PerMin[FaultClog] = PerMin(20)
	want.PerMin[FaultCrash] = PerMin(2)
	want.PerMin[FaultPause] = MilliPerMin(500)
	want.PerMin[FaultSlowSync] = PerMin(6)
	if r != want {
		t.Fatalf("read %v, want %v", r, want)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("wrote %s, want %s", out, in)
	}

	var p struct{ ConsumerLossPerMin Rate }
	for src, want := range map[string]Rate{`{"ConsumerLossPerMin":3}`: PerMin(3), `{"ConsumerLossPerMin":0}`: {}, `{"ConsumerLossPerMin":null}`: {}} {
		p.ConsumerLossPerMin = Rate{}
		if err := json.Unmarshal([]byte(src), &p); err != nil || p.ConsumerLossPerMin != want {
			t.Errorf("%s: read %v, %v; want %v", src, p.ConsumerLossPerMin, err, want)
		}
	}
	for _, src := range []string{`{"per_min":{"crash":0.0001}}`, `{"per_min":{"crash":-2}}`, `{"per_min":{"crash":"2"}}`} {
		if err := json.Unmarshal([]byte(src), &r); err == nil {
			t.Errorf("%s: read without an error", src)
		}
	}
	// Of several bad kinds, the first by name is reported, whatever the
	// map's order.
	for range 20 {
		err := json.Unmarshal([]byte(`{"per_min":{"zz":1,"drop":1,"bogus":1,"crash":2}}`), &r)
		if err == nil || err.Error() != `fault rates: "bogus" is not a scheduled fault kind` {
			t.Fatalf("got %v, want the error for \"bogus\"", err)
		}
	}
}

// TestSavedScenarioRatesRoundTrip reads the profile of every saved
// regression and writes it back: the rates must come out as the very
// numbers the file holds.
func TestSavedScenarioRatesRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "regressions", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved regressions found: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Profile struct {
				ConsumerLossPerMin json.RawMessage `json:"consumer_loss_per_min"`
				Faults             struct {
					PerMin map[string]json.RawMessage `json:"per_min"`
				} `json:"faults"`
			} `json:"profile"`
		}
		// The scenario file's keys (sim/shrink's scenarioJSON) for the
		// rates read here.
		var typed struct {
			Profile struct {
				ConsumerLossPerMin Rate       `json:"consumer_loss_per_min"`
				Faults             FaultRates `json:"faults"`
			} `json:"profile"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := json.Unmarshal(b, &typed); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, _ := json.Marshal(typed.Profile.ConsumerLossPerMin)
		if !bytes.Equal(got, raw.Profile.ConsumerLossPerMin) {
			t.Errorf("%s: ConsumerLossPerMin %s wrote back as %s", f, raw.Profile.ConsumerLossPerMin, got)
		}
		for name, v := range raw.Profile.Faults.PerMin {
			k, err := ParseFaultKind(name)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			got, _ := json.Marshal(typed.Profile.Faults.PerMin[k])
			if !bytes.Equal(got, v) {
				t.Errorf("%s: %s rate %s wrote back as %s", f, name, v, got)
			}
		}
	}
}
