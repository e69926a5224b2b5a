package sweep

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/sim/world"
)

// Coverage is a sweep's coverage table: for each mark, how many seeds
// reached it; and for each fault kind, how many seeds it struck in.
type Coverage struct {
	Seeds  uint64
	Marks  world.Coverage // seeds that reached each mark
	Struck [64]uint64     // seeds in which each fault kind struck
}

// Add counts one seed's result.
func (c *Coverage) Add(r world.Result) {
	c.Seeds++
	for m := range r.Stats.Coverage {
		if r.Stats.Coverage[m] > 0 {
			c.Marks[m]++
		}
	}
	for k := range r.Stats.Struck {
		if r.Stats.Struck[k] > 0 {
			c.Struck[k]++
		}
	}
}

// Row returns the seeds that reached the named row: a mark's name, or
// "struck:KIND" for a fault kind.
func (c *Coverage) Row(name string) (uint64, bool) {
	if kind, ok := strings.CutPrefix(name, "struck:"); ok {
		k, err := world.ParseFaultKind(kind)
		if err != nil {
			return 0, false
		}
		return c.Struck[k], true
	}
	m, err := world.ParseMark(name)
	if err != nil {
		return 0, false
	}
	return c.Marks[m], true
}

// Table prints the coverage table, one row per mark and per fault kind.
func (c *Coverage) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "coverage   (seeds of %d that reached each protocol state)\n", c.Seeds)
	for _, m := range world.Marks() {
		fmt.Fprintf(&b, "  %-24s %6d  %5.1f%%\n", m, c.Marks[m], pct(c.Marks[m], c.Seeds))
	}
	for _, k := range world.FaultKinds() {
		name := "struck:" + k.String()
		fmt.Fprintf(&b, "  %-24s %6d  %5.1f%%\n", name, c.Struck[k], pct(c.Struck[k], c.Seeds))
	}
	return b.String()
}

func pct(n, d uint64) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}

// Below returns the rows whose count is under its minimum, as text.
func (c *Coverage) Below(minimums map[string]uint64) []string {
	var out []string
	for _, m := range world.Marks() {
		if want, ok := minimums[m.String()]; ok && c.Marks[m] < want {
			out = append(out, fmt.Sprintf("%s reached in %d seeds, minimum %d", m, c.Marks[m], want))
		}
	}
	for _, k := range world.FaultKinds() {
		name := "struck:" + k.String()
		if want, ok := minimums[name]; ok && c.Struck[k] < want {
			out = append(out, fmt.Sprintf("%s in %d seeds, minimum %d", name, c.Struck[k], want))
		}
	}
	return out
}

// ParseMinimums reads "row=N,row=N" or "@FILE" (one row=N per line, #
// comments). Every row must name a mark or struck:KIND, and N must be at
// least 1: a minimum of 0 is not a minimum.
func ParseMinimums(s string) (map[string]uint64, error) {
	text := s
	sep := ","
	if path, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text, sep = string(b), "\n"
	}
	var probe Coverage
	out := map[string]uint64{}
	for i, line := range strings.Split(text, sep) {
		line = strings.TrimSpace(line)
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = strings.TrimSpace(line[:j])
		}
		if line == "" {
			continue
		}
		name, num, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("coverage minimum %d: %q is not row=N", i+1, line)
		}
		name = strings.TrimSpace(name)
		if _, known := probe.Row(name); !known {
			return nil, fmt.Errorf("coverage minimum %d: unknown row %q", i+1, name)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("coverage minimum %d: %q: want a count of at least 1", i+1, line)
		}
		out[name] = n
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("coverage minimums %q name no row", s)
	}
	return out, nil
}
