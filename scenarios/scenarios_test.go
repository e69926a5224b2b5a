package scenarios

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sluicemq/sluice/sim/shrink"
)

func TestReplayRegressions(t *testing.T) { replayAll(t, "regressions") }

// TestNamedScenarios replays the named scenarios: situations worth running
// by name (the controller's: its leader lost under load, its
// leader isolated, declarations and deletions racing).
func TestNamedScenarios(t *testing.T) { replayAll(t, "named") }

func replayAll(t *testing.T, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no scenarios under scenarios/%s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := shrink.Parse(b)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if ok, detail := s.Verdict(); !ok {
				t.Fatalf("%s (%s): %s\n  replay: go run ./cmd/sluice sim replay %s", s.Name, s.Note, detail, f)
			}
		})
	}
}
