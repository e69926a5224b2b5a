package route

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testSeed is the seed of the randomised tests: ROUTE_SEED if set, else
// 1 (never the clock, so that a failure reruns as it failed).
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(1)
	if v := os.Getenv("ROUTE_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ROUTE_SEED=%q: want an unsigned integer", v)
		}
		seed = s
	}
	t.Logf("seed %d (rerun: ROUTE_SEED=%d go test -count=1 -run '^%s$' ./core/route/)", seed, seed, t.Name())
	return seed
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

func TestKind(t *testing.T) {
	for k, name := range map[Kind]string{Direct: "direct", Fanout: "fanout", Topic: "topic", Headers: "headers"} {
		if !k.Valid() || k.String() != name {
			t.Errorf("Kind %d: Valid %t String %q, want true %q", k, k.Valid(), k.String(), name)
		}
		if got, ok := ParseKind(name); !ok || got != k {
			t.Errorf("ParseKind(%q) = %d %t, want %d", name, got, ok, k)
		}
	}
	if Direct != 1 || Fanout != 2 || Topic != 3 || Headers != 4 {
		t.Errorf("kind numbers changed: they are stored in commands")
	}
	for _, k := range []Kind{0, 5, 255} {
		if k.Valid() || k.String() != "kind"+strconv.Itoa(int(k)) {
			t.Errorf("Kind %d: Valid %t String %q", k, k.Valid(), k.String())
		}
	}
	for _, s := range []string{"", "Direct", "TOPIC", "x-consistent-hash", "kind1", "direct "} {
		if k, ok := ParseKind(s); ok {
			t.Errorf("ParseKind(%q) = %d, want none", s, k)
		}
	}
}

// topicCases are TopicMatch's table: RabbitMQ's tutorial bindings
// ("*.orange.*", "*.*.rabbit", "lazy.#") with its messages, then the
// edges: "#" alone and doubled, "#" inside, empty words, the empty key.
var topicCases = []struct {
	pattern, key string
	want         bool
}{
	{"*.orange.*", "quick.orange.rabbit", true},
	{"*.orange.*", "lazy.orange.elephant", true},
	{"*.orange.*", "quick.orange.fox", true},
	{"*.orange.*", "lazy.brown.fox", false},
	{"*.orange.*", "quick.brown.fox", false},
	{"*.orange.*", "orange", false},
	{"*.orange.*", "quick.orange.new.rabbit", false},
	{"*.orange.*", "lazy.orange.new.rabbit", false},
	{"*.*.rabbit", "quick.orange.rabbit", true},
	{"*.*.rabbit", "lazy.pink.rabbit", true},
	{"*.*.rabbit", "lazy.orange.elephant", false},
	{"*.*.rabbit", "quick.orange.new.rabbit", false},
	{"*.*.rabbit", "rabbit", false},
	{"lazy.#", "lazy.orange.elephant", true},
	{"lazy.#", "lazy.brown.fox", true},
	{"lazy.#", "lazy.pink.rabbit", true},
	{"lazy.#", "lazy.orange.new.rabbit", true},
	{"lazy.#", "lazy", true},
	{"lazy.#", "lazy.", true},
	{"lazy.#", "quick.orange.rabbit", false},
	{"lazy.#", "lazyx", false},
	{"lazy.#", "a.lazy", false},
	{"#", "", true},
	{"#", "a", true},
	{"#", "a.b.c", true},
	{"#", ".", true},
	{"#", "..", true},
	{"#.#", "", true},
	{"#.#", "a", true},
	{"#.#", "a.b.c", true},
	{"a.#.b", "a.b", true},
	{"a.#.b", "a.x.b", true},
	{"a.#.b", "a.x.y.b", true},
	{"a.#.b", "a.b.b", true},
	{"a.#.b", "a..b", true},
	{"a.#.b", "a", false},
	{"a.#.b", "b", false},
	{"a.#.b", "a.b.c", false},
	{"a.#.b", "b.a.b", false},
	{"#.a", "a", true},
	{"#.a", "b.a", true},
	{"#.a", "a.b", false},
	{"#.a.#", "b.a.c", true},
	{"#.a.#", "b.c", false},
	{"#.*", "", false},
	{"#.*", "a.b", true},
	{"*.#", "", false},
	{"#.*.#", "", false},
	{"#.*.*", "", false},
	{"#.*.*", ".", true},
	// Empty words are words, but "" is no words (RabbitMQ's split).
	{"", "", true},
	{"", "a", false},
	{"", ".", false},
	{"a", "", false},
	{"*", "", false},
	{".", "", false},
	{"", "#", false},
	{"*", "a", true},
	{"*", "a.b", false},
	{"*", ".", false},
	{"*.*", ".", true},
	{"a..b", "a..b", true},
	{"a..b", "a.b", false},
	{"a.*.b", "a..b", true},
	{"a.*.b", "a.b", false},
	{"a.", "a.", true},
	{"a.", "a", false},
	{".a", ".a", true},
	{".a", "a", false},
	{"a.*", "a.", true},
	{"#.", "", false},
	{"#.", ".", true},
	{"#.", "a.", true},
	{"#.", "a", false},
	{".#", "", false},
	// Wildcards are whole words only; the key's "*" and "#" are literal.
	{"a*", "ab", false},
	{"a*", "a*", true},
	{"#a", "xa", false},
	{"a#", "a.b", false},
	{"a", "*", false},
	{"a", "#", false},
	{"*", "#", true},
	{"a.b.c", "a.b.c", true},
	{"a.b.c", "a.b", false},
	{"a.b", "a.b.c", false},
	{"A", "a", false},
	// Many "#" and no way to match: polynomial here, exponential for a
	// naive recursion (the test would not end).
	{"#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b", strings.Repeat("a.", 127) + "a", false},
	{"#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a", strings.Repeat("a.", 127) + "a", true},
	{strings.Repeat("#.", 100) + "x", strings.Repeat(".", 254), false},
}

func TestTopicMatch(t *testing.T) {
	for _, c := range topicCases {
		if got := TopicMatch(c.pattern, c.key); got != c.want {
			t.Errorf("TopicMatch(%q, %q) = %t, want %t", c.pattern, c.key, got, c.want)
		}
		if len(c.pattern) < 40 && len(c.key) < 40 {
			if ref := refTopicMatch(c.pattern, c.key); ref != c.want {
				t.Errorf("reference(%q, %q) = %t, want %t: the table or the reference is wrong", c.pattern, c.key, ref, c.want)
			}
		}
	}
}

// refTopicMatch is the brute-force reference: split, then recurse, a "#"
// trying every number of words.
func refTopicMatch(pattern, key string) bool {
	return refWords(refSplit(pattern), refSplit(key))
}

// refSplit is RabbitMQ's split of a topic into words: "" is none.
func refSplit(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

func refWords(p, k []string) bool {
	if len(p) == 0 {
		return len(k) == 0
	}
	switch p[0] {
	case "#":
		for n := 0; n <= len(k); n++ {
			if refWords(p[1:], k[n:]) {
				return true
			}
		}
		return false
	case "*":
		return len(k) > 0 && refWords(p[1:], k[1:])
	}
	return len(k) > 0 && k[0] == p[0] && refWords(p[1:], k[1:])
}

// randomTopic draws a pattern or key of up to maxWords words from a small
// alphabet, so that equal words, wildcards and empty words are frequent.
func randomTopic(r *rand.Rand, maxWords int, words []string) string {
	n := r.IntN(maxWords + 1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[r.IntN(len(words))]
	}
	return strings.Join(ws, ".") // n == 0 and n == 1 with "" both give ""
}

func TestTopicMatchReference(t *testing.T) {
	r := newRand(testSeed(t))
	patternWords := []string{"#", "#", "*", "*", "a", "b", "", "ab"}
	keyWords := []string{"a", "b", "", "ab", "*", "#"}
	matched := 0
	const cases = 50000
	for range cases {
		p := randomTopic(r, 7, patternWords)
		k := randomTopic(r, 8, keyWords)
		got, want := TopicMatch(p, k), refTopicMatch(p, k)
		if got != want {
			t.Fatalf("TopicMatch(%q, %q) = %t, reference %t", p, k, got, want)
		}
		if got {
			matched++
		}
	}
	// A draw that never (or always) matches would test little.
	if matched < cases/20 || matched > cases-cases/20 {
		t.Fatalf("%d of %d cases matched: the draw is lopsided", matched, cases)
	}
	t.Logf("%d of %d cases matched", matched, cases)
}

func TestTopicMatchAllocates(t *testing.T) {
	key := "quick.orange.new.rabbit.a.b.c"
	n := testing.AllocsPerRun(100, func() {
		TopicMatch("#.*.new.#.c", key)
		TopicMatch("lazy.#", key)
	})
	if n != 0 {
		t.Fatalf("TopicMatch allocates %.1f times per call pair, want 0", n)
	}
}

// Field builders for the tables.
func fs(k, v string) Field { return Field{Key: k, Class: ClassString, Value: v} }
func fn(k, v string) Field { return Field{Key: k, Class: ClassNumber, Value: v} }
func fv(k string) Field    { return Field{Key: k, Class: ClassVoid} }
func fo(k, v string) Field { return Field{Key: k, Class: ClassOther, Value: v} }
func fb(k string, v bool) Field {
	if v {
		return Field{Key: k, Class: ClassBool, Value: "t"}
	}
	return Field{Key: k, Class: ClassBool, Value: "f"}
}

// table sorts a literal field list, refusing duplicate keys.
func table(t *testing.T, f ...Field) []Field {
	t.Helper()
	out := slices.Clone(f)
	slices.SortFunc(out, func(a, b Field) int { return strings.Compare(a.Key, b.Key) })
	if err := Sorted(out); err != nil {
		t.Fatalf("table %s: %v", FieldsText(out), err)
	}
	return out
}

func f64(f float64) string { return FloatValue(math.Float64bits(f), 64) }
func f32(f float32) string { return FloatValue(uint64(math.Float32bits(f)), 32) }

func TestHeadersMatch(t *testing.T) {
	xm := func(mode string) Field { return fs(XMatch, mode) }
	nan := f64(math.NaN())
	cases := []struct {
		name             string
		binding, headers []Field
		want             bool
	}{
		// all, explicit and by default.
		{"all default", table(t, fs("a", "x"), fn("b", "1")), table(t, fs("a", "x"), fn("b", "1"), fs("c", "z")), true},
		{"all explicit", table(t, xm("all"), fs("a", "x"), fn("b", "1")), table(t, fs("a", "x"), fn("b", "1")), true},
		{"all missing one", table(t, fs("a", "x"), fn("b", "1")), table(t, fs("a", "x")), false},
		{"all missing the first", table(t, fs("a", "x"), fn("b", "1")), table(t, fn("b", "1")), false},
		{"all one differs", table(t, fs("a", "x"), fn("b", "1")), table(t, fs("a", "x"), fn("b", "2")), false},
		{"all no headers", table(t, fs("a", "x")), nil, false},
		{"all interleaved", table(t, fn("b", "1"), fn("d", "2")), table(t, fs("a", ""), fn("b", "1"), fs("c", ""), fn("d", "2"), fs("e", "")), true},
		{"all interleaved, last missing", table(t, fn("b", "1"), fn("d", "2")), table(t, fs("a", ""), fn("b", "1"), fs("c", ""), fs("e", "")), false},
		{"all nothing to match", nil, nil, true},
		{"all nothing to match, headers", nil, table(t, fs("a", "x")), true},
		{"all only x-match", table(t, xm("all")), nil, true},
		// any.
		{"any one of two", table(t, xm("any"), fs("a", "x"), fs("b", "y")), table(t, fs("b", "y")), true},
		{"any first of two", table(t, xm("any"), fs("a", "x"), fs("b", "y")), table(t, fs("a", "x"), fs("b", "n")), true},
		{"any none", table(t, xm("any"), fs("a", "x"), fs("b", "y")), table(t, fs("a", "n"), fs("b", "n")), false},
		{"any no headers", table(t, xm("any"), fs("a", "x")), nil, false},
		{"any nothing to match", table(t, xm("any")), table(t, fs("a", "x")), false},
		// x- arguments.
		{"all skips x-", table(t, xm("all"), fs("x-foo", "1"), fs("a", "1")), table(t, fs("a", "1")), true},
		{"all default skips x-", table(t, fs("x-foo", "1"), fs("a", "1")), table(t, fs("a", "1"), fs("x-foo", "2")), true},
		{"all only x-", table(t, fs("x-foo", "1")), nil, true},
		{"any skips x-", table(t, xm("any"), fs("x-foo", "1")), table(t, fs("x-foo", "1")), false},
		{"any skips x-, other matches", table(t, xm("any"), fs("x-foo", "1"), fs("a", "1")), table(t, fs("a", "1")), true},
		{"x- is case-sensitive", table(t, fs("X-foo", "1")), nil, false},
		{"x without dash is matched", table(t, fs("xfoo", "1")), nil, false},
		{"bare x- skipped", table(t, fs("x-", "1")), nil, true},
		{"all-with-x match", table(t, xm("all-with-x"), fs("x-foo", "1")), table(t, fs("x-foo", "1")), true},
		{"all-with-x missing", table(t, xm("all-with-x"), fs("x-foo", "1")), nil, false},
		{"all-with-x differs", table(t, xm("all-with-x"), fs("x-foo", "1"), fs("a", "1")), table(t, fs("a", "1"), fs("x-foo", "2")), false},
		{"all-with-x nothing", table(t, xm("all-with-x")), nil, true},
		{"any-with-x x- matches", table(t, xm("any-with-x"), fs("x-foo", "1"), fs("a", "2")), table(t, fs("x-foo", "1")), true},
		{"any-with-x none", table(t, xm("any-with-x"), fs("x-foo", "1"), fs("a", "2")), table(t, fs("a", "3"), fs("x-foo", "2")), false},
		{"any-with-x nothing", table(t, xm("any-with-x")), table(t, fs("x-match", "any-with-x")), false},
		{"x-match is never matched", table(t, xm("all-with-x"), fs("a", "1")), table(t, fs("a", "1"), fs("x-match", "other")), true},
		// x-match values RabbitMQ reads as all.
		{"unknown mode is all", table(t, xm("foo"), fs("a", "1")), table(t, fs("a", "1")), true},
		{"unknown mode is all, missing", table(t, xm("foo"), fs("a", "1"), fs("b", "1")), table(t, fs("a", "1")), false},
		{"mode case-sensitive", table(t, xm("ANY"), fs("a", "1"), fs("b", "1")), table(t, fs("a", "1")), false},
		{"mode not a string", table(t, Field{Key: XMatch, Class: ClassOther, Value: "any"}, fs("a", "1"), fs("b", "1")), table(t, fs("a", "1")), false},
		{"mode void", table(t, fv(XMatch), fs("a", "1")), table(t, fs("a", "1")), true},
		// Void: presence.
		{"void present", table(t, fv("a")), table(t, fs("a", "anything")), true},
		{"void present as number", table(t, fv("a")), table(t, fn("a", "5")), true},
		{"void present as void", table(t, fv("a")), table(t, fv("a")), true},
		{"void present as nan", table(t, fv("a")), table(t, fn("a", nan)), true},
		{"void absent", table(t, fv("a")), table(t, fv("b")), false},
		{"void in any", table(t, xm("any"), fv("a"), fs("b", "1")), table(t, fn("a", "5")), true},
		{"void header, string binding", table(t, fs("a", "")), table(t, fv("a")), false},
		// Classes.
		{"string vs number", table(t, fs("a", "1")), table(t, fn("a", "1")), false},
		{"number vs string", table(t, fn("a", "1")), table(t, fs("a", "1")), false},
		{"bool vs string", table(t, fb("a", true)), table(t, fs("a", "t")), false},
		{"bool equal", table(t, fb("a", true)), table(t, fb("a", true)), true},
		{"bool differs", table(t, fb("a", true)), table(t, fb("a", false)), false},
		{"other vs string", table(t, fo("a", "x")), table(t, fs("a", "x")), false},
		{"other equal", table(t, fo("a", "\x01\x02")), table(t, fo("a", "\x01\x02")), true},
		{"other differs", table(t, fo("a", "\x01\x02")), table(t, fo("a", "\x01\x03")), false},
		{"string bytes", table(t, fs("a", "caf\xc3\xa9")), table(t, fs("a", "café")), true},
		{"string case", table(t, fs("a", "X")), table(t, fs("a", "x")), false},
		{"invalid class never", table(t, Field{Key: "a", Class: 0, Value: "1"}), table(t, Field{Key: "a", Class: 0, Value: "1"}), false},
		// Numbers by value.
		{"int vs float", table(t, fn("a", IntValue(1))), table(t, fn("a", f32(1))), true},
		{"int vs double", table(t, fn("a", IntValue(1))), table(t, fn("a", f64(1))), true},
		{"int vs decimal", table(t, fn("a", IntValue(1))), table(t, fn("a", DecimalValue(1, 10))), true},
		{"decimal scales", table(t, fn("a", DecimalValue(2, 150))), table(t, fn("a", DecimalValue(1, 15))), true},
		{"double vs decimal", table(t, fn("a", f64(-0.5))), table(t, fn("a", DecimalValue(1, -5))), true},
		{"int vs double 1.5", table(t, fn("a", IntValue(1))), table(t, fn("a", f64(1.5))), false},
		{"double 0.1 is not decimal 0.1", table(t, fn("a", f64(0.1))), table(t, fn("a", DecimalValue(1, 1))), false},
		{"float 0.1 is not double 0.1", table(t, fn("a", f32(0.1))), table(t, fn("a", f64(0.1))), false},
		{"-0 is 0", table(t, fn("a", IntValue(0))), table(t, fn("a", f64(math.Copysign(0, -1)))), true},
		{"2^60", table(t, fn("a", IntValue(1<<60))), table(t, fn("a", f64(1<<60))), true},
		{"NaN never", table(t, fn("a", nan)), table(t, fn("a", nan)), false},
		{"NaN never, any", table(t, xm("any"), fn("a", nan)), table(t, fn("a", nan)), false},
		{"NaN never, other matches", table(t, xm("any"), fn("a", nan), fs("b", "1")), table(t, fn("a", nan), fs("b", "1")), true},
		{"inf equals inf", table(t, fn("a", f64(math.Inf(1)))), table(t, fn("a", f32(float32(math.Inf(1))))), true},
		{"inf is not -inf", table(t, fn("a", f64(math.Inf(1)))), table(t, fn("a", f64(math.Inf(-1)))), false},
	}
	for _, c := range cases {
		if got := HeadersMatch(c.binding, c.headers); got != c.want {
			t.Errorf("%s: HeadersMatch(%s, %s) = %t, want %t", c.name, FieldsText(c.binding), FieldsText(c.headers), got, c.want)
		}
		if got := refHeadersMatch(c.binding, c.headers); got != c.want {
			t.Errorf("%s: reference(%s, %s) = %t, want %t: the table or the reference is wrong", c.name, FieldsText(c.binding), FieldsText(c.headers), got, c.want)
		}
		// The routing key plays no part.
		if got := Match(Headers, "k", c.binding, "other", c.headers); got != c.want {
			t.Errorf("%s: Match(Headers) = %t, want %t", c.name, got, c.want)
		}
	}
}

// refHeadersMatch is RabbitMQ's headers_match/5 transcribed clause by
// clause (rabbit_exchange_type_headers), the value comparison aside: an
// independent reference for the merge, the modes and the x- rule.
func refHeadersMatch(args, data []Field) bool {
	mode := "all"
	for _, a := range args {
		if a.Key == XMatch && a.Class == ClassString {
			switch a.Value {
			case "any", "all-with-x", "any-with-x":
				mode = a.Value
			}
		}
	}
	return refHeaders(args, data, true, false, mode)
}

func refHeaders(p, d []Field, allMatch, anyMatch bool, mode string) bool {
	all := mode == "all" || mode == "all-with-x"
	switch {
	case !allMatch && all:
		return false
	case anyMatch && !all:
		return true
	case len(p) == 0 && all:
		return allMatch
	case len(p) == 0:
		return anyMatch
	case p[0].Key == XMatch:
		return refHeaders(p[1:], d, allMatch, anyMatch, mode)
	case strings.HasPrefix(p[0].Key, "x-") && mode != "all-with-x" && mode != "any-with-x":
		return refHeaders(p[1:], d, allMatch, anyMatch, mode)
	case len(d) == 0:
		return refHeaders(nil, nil, false, anyMatch, mode)
	case p[0].Key > d[0].Key:
		return refHeaders(p, d[1:], allMatch, anyMatch, mode)
	case p[0].Key < d[0].Key:
		return refHeaders(p[1:], d, false, anyMatch, mode)
	case p[0].Class == ClassVoid:
		return refHeaders(p[1:], d[1:], allMatch, true, mode)
	case p[0].Class == d[0].Class && p[0].Class.Valid() && p[0].Value == d[0].Value &&
		!(p[0].Class == ClassNumber && p[0].Value == "nan"):
		return refHeaders(p[1:], d[1:], allMatch, true, mode)
	}
	return refHeaders(p[1:], d[1:], false, anyMatch, mode)
}

func TestHeadersMatchReference(t *testing.T) {
	r := newRand(testSeed(t))
	keys := []string{"a", "b", "c", "x-a", "x-b", XMatch}
	modes := []string{"all", "any", "all-with-x", "any-with-x", "none", "bogus"}
	values := []Field{fs("", "1"), fs("", "2"), fn("", "1"), fn("", "nan"), fv(""), fb("", true)}
	draw := func(n int) []Field {
		var out []Field
		for _, i := range r.Perm(len(keys))[:r.IntN(n+1)] {
			f := values[r.IntN(len(values))]
			f.Key = keys[i]
			out = append(out, f)
		}
		return SortFields(out)
	}
	counts := [2]int{}
	for range 50000 {
		b, h := draw(5), draw(6)
		// Half the bindings get a mode of their own.
		b = slices.DeleteFunc(b, func(f Field) bool { return f.Key == XMatch })
		if m := modes[r.IntN(len(modes))]; m != "none" {
			b = SortFields(append(b, fs(XMatch, m)))
		}
		got, want := HeadersMatch(b, h), refHeadersMatch(b, h)
		if got != want {
			t.Fatalf("HeadersMatch(%s, %s) = %t, reference %t", FieldsText(b), FieldsText(h), got, want)
		}
		counts[btoi(got)]++
	}
	if counts[0] < 1000 || counts[1] < 1000 {
		t.Fatalf("%d misses, %d matches: the draw is lopsided", counts[0], counts[1])
	}
	t.Logf("%d misses, %d matches", counts[0], counts[1])
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestHeadersMatchAllocates(t *testing.T) {
	b := table(t, fs(XMatch, "any"), fs("a", "1"), fn("b", "2"), fv("c"))
	h := table(t, fs("a", "0"), fn("b", "3"), fs("d", "1"))
	if n := testing.AllocsPerRun(100, func() { HeadersMatch(b, h) }); n != 0 {
		t.Fatalf("HeadersMatch allocates %.1f times per call, want 0", n)
	}
}

func TestCheckHeadersArgs(t *testing.T) {
	for _, mode := range []string{"all", "any", "all-with-x", "any-with-x"} {
		if err := CheckHeadersArgs(table(t, fs(XMatch, mode), fs("a", "1"))); err != nil {
			t.Errorf("x-match %q: %v", mode, err)
		}
	}
	if err := CheckHeadersArgs(table(t, fs("a", "1"))); err != nil {
		t.Errorf("no x-match: %v", err)
	}
	for _, bad := range []Field{fs(XMatch, "ALL"), fs(XMatch, ""), fs(XMatch, "anything"), fv(XMatch), fo(XMatch, "all"), fb(XMatch, true)} {
		if err := CheckHeadersArgs(table(t, bad)); err == nil {
			t.Errorf("CheckHeadersArgs(%s) = nil, want a refusal", FieldsText([]Field{bad}))
		}
	}
}

func TestMatch(t *testing.T) {
	args := table(t, fs("a", "1"))
	cases := []struct {
		kind            Kind
		bindingKey, key string
		headers         []Field
		want            bool
	}{
		{Direct, "a.b", "a.b", nil, true},
		{Direct, "a.b", "a.B", nil, false},
		{Direct, "*", "a", nil, false}, // no wildcards in direct
		{Direct, "#", "a", nil, false},
		{Direct, "", "", nil, true},
		{Fanout, "x", "y", nil, true},
		{Fanout, "", "", nil, true},
		{Topic, "*.b", "a.b", nil, true},
		{Topic, "*.b", "a.c", nil, false},
		{Headers, "x", "y", table(t, fs("a", "1")), true},
		{Headers, "x", "x", table(t, fs("a", "2")), false},
		{0, "a", "a", table(t, fs("a", "1")), false},
		{5, "a", "a", table(t, fs("a", "1")), false},
	}
	for _, c := range cases {
		if got := Match(c.kind, c.bindingKey, args, c.key, c.headers); got != c.want {
			t.Errorf("Match(%s, %q, %s, %q, %s) = %t, want %t", c.kind, c.bindingKey, FieldsText(args), c.key, FieldsText(c.headers), got, c.want)
		}
	}
}

func TestIntAndDecimalValue(t *testing.T) {
	cases := []struct{ got, want string }{
		{IntValue(0), "0"},
		{IntValue(1), "1"},
		{IntValue(-1), "-1"},
		{IntValue(100), "100"},
		{IntValue(math.MaxInt64), "9223372036854775807"},
		{IntValue(math.MinInt64), "-9223372036854775808"},
		{DecimalValue(0, 0), "0"},
		{DecimalValue(200, 0), "0"},
		{DecimalValue(0, 7), "7"},
		{DecimalValue(1, 10), "1"},
		{DecimalValue(2, 100), "1"},
		{DecimalValue(1, -5), "-0.5"},
		{DecimalValue(2, 12345), "123.45"},
		{DecimalValue(2, 12340), "123.4"},
		{DecimalValue(3, 1), "0.001"},
		{DecimalValue(5, 10), "0.0001"},
		{DecimalValue(0, math.MinInt64), "-9223372036854775808"},
		{DecimalValue(1, math.MinInt64), "-922337203685477580.8"},
		{DecimalValue(19, math.MaxInt64), "0.9223372036854775807"},
		// The plain form up to FieldBytesMax bytes, then DeK.
		{DecimalValue(253, 1), "0." + strings.Repeat("0", 252) + "1"},
		{DecimalValue(254, 1), "1e-254"},
		{DecimalValue(253, -1), "-1e-253"},
		{DecimalValue(255, 1200), "0." + strings.Repeat("0", 251) + "12"},
		{DecimalValue(255, 1230), "123e-254"},
		{DecimalValue(255, math.MinInt64), "-9223372036854775808e-255"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: %q, want %q", i, c.got, c.want)
		}
		if len(c.got) > FieldBytesMax || !validNumber(c.got) {
			t.Errorf("case %d: %q is not a valid canonical number", i, c.got)
		}
	}
	if n := len(DecimalValue(253, 1)); n != FieldBytesMax {
		t.Errorf("DecimalValue(253, 1) has %d bytes, want the limit %d", n, FieldBytesMax)
	}
}

func TestFloatValue(t *testing.T) {
	cases := []struct{ got, want string }{
		{f64(1), "1"},
		{f32(1), "1"},
		{f64(-0.5), "-0.5"},
		{f32(-0.5), "-0.5"},
		{f64(0), "0"},
		{f64(math.Copysign(0, -1)), "0"},
		{f32(float32(math.Copysign(0, -1))), "0"},
		{f64(0.1), "0.1000000000000000055511151231257827021181583404541015625"},
		{f32(0.1), "0.100000001490116119384765625"},
		{f64(1e23), "99999999999999991611392"},
		{f64(1 << 60), "1152921504606846976"},
		{f64(-1234.5), "-1234.5"},
		{f64(math.Inf(1)), "inf"},
		{f64(math.Inf(-1)), "-inf"},
		{f32(float32(math.Inf(-1))), "-inf"},
		{f64(math.NaN()), "nan"},
		{FloatValue(0x7ff0000000000001, 64), "nan"},
		{FloatValue(0xfff8000000000000, 64), "nan"},
		{FloatValue(0x7fc00000, 32), "nan"},
		{FloatValue(0xffffffff, 32), "nan"},
		{FloatValue(0xdeadbeef_3f800000, 32), "1"}, // the low 32 bits
		{f64(math.Ldexp(1, -100)), "0.0000000000000000000000000000007888609052210118054117285652827862296732064351090230047702789306640625"},
		// Past the plain form's limit: DeK, then the binary form.
		{f64(math.Ldexp(1, 900)), "0x1p+900"},
		{f64(math.MaxFloat64), "0x1.fffffffffffffp+1023"},
		{f64(math.SmallestNonzeroFloat64), "0x1p-1074"},
		{f64(-3 * math.SmallestNonzeroFloat64), "-0x1.8p-1073"},
		{f32(math.SmallestNonzeroFloat32), refNumber(exactDecimal(float64(math.SmallestNonzeroFloat32)))},
		{f32(math.MaxFloat32), "340282346638528859811704183484516925440"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: %q, want %q", i, c.got, c.want)
		}
		if !validNumber(c.got) {
			t.Errorf("case %d: %q is not a valid canonical number", i, c.got)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("FloatValue of width 16 did not panic")
		}
	}()
	FloatValue(0, 16)
}

// exactDecimal is f's exact value as ±digits × 10^exp10, digits without
// leading or trailing zeros, computed by math/big: the reference.
func exactDecimal(f float64) (neg bool, digits string, exp10 int) {
	r := new(big.Rat).SetFloat64(f)
	neg = r.Sign() < 0
	s := new(big.Rat).Abs(r).FloatString(1074)
	whole, frac, _ := strings.Cut(s, ".")
	digits = strings.TrimLeft(whole+frac, "0")
	exp10 = -len(frac)
	trimmed := strings.TrimRight(digits, "0")
	return neg, trimmed, exp10 + len(digits) - len(trimmed)
}

// refNumber is the canonical number of ±digits × 10^exp10 (digits
// without leading or trailing zeros), built the slow way: the plain form,
// else DeK, else "" (the binary form).
func refNumber(neg bool, digits string, exp10 int) string {
	sign := ""
	if neg {
		sign = "-"
	}
	var plain string
	switch {
	case exp10 >= 0:
		plain = digits + strings.Repeat("0", exp10)
	case len(digits) > -exp10:
		plain = digits[:len(digits)+exp10] + "." + digits[len(digits)+exp10:]
	default:
		plain = "0." + strings.Repeat("0", -exp10-len(digits)) + digits
	}
	if len(sign+plain) <= FieldBytesMax {
		return sign + plain
	}
	if dek := sign + digits + "e" + strconv.Itoa(exp10); len(dek) <= FieldBytesMax {
		return dek
	}
	return ""
}

// randomFloat draws a double's bits: any bits, often a short mantissa, an
// exponent near 0, or an integer, so that every form is reached.
func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return math.Float64frombits(r.Uint64())
	case 1:
		return math.Ldexp(float64(r.Int64N(1<<20)-1<<19), r.IntN(80)-60)
	case 2:
		return float64(r.Int64N(1<<62) - 1<<61)
	}
	return math.Float64frombits(uint64(r.IntN(2))<<63 | uint64(r.IntN(2047))<<52 | r.Uint64N(1<<52))
}

func TestFloatValueExact(t *testing.T) {
	r := newRand(testSeed(t))
	forms := map[string]int{}
	for i := range 8000 {
		var f float64
		var s string
		if i%4 == 3 {
			f32 := math.Float32frombits(r.Uint32())
			f, s = float64(f32), FloatValue(uint64(math.Float32bits(f32)), 32)
		} else {
			f = randomFloat(r)
			s = FloatValue(math.Float64bits(f), 64)
		}
		if f != f || math.IsInf(f, 0) {
			continue
		}
		if !validNumber(s) || len(s) > FieldBytesMax {
			t.Fatalf("FloatValue(%b) = %q: not a valid canonical number", f, s)
		}
		if f == 0 {
			if s != "0" {
				t.Fatalf("FloatValue(%b) = %q, want 0", f, s)
			}
			continue
		}
		want := refNumber(exactDecimal(f))
		switch {
		case want == "":
			// The binary form: it must read back as f exactly.
			g, err := strconv.ParseFloat(s, 64)
			if !strings.Contains(s, "0x") || err != nil || g != f {
				t.Fatalf("FloatValue(%b) = %q, want the binary form", f, s)
			}
			forms["binary"]++
		case s != want:
			t.Fatalf("FloatValue(%b) = %q, want %q", f, s, want)
		case strings.Contains(s, "e"):
			forms["DeK"]++
		default:
			forms["plain"]++
		}
		// The integers among them are IntValue's, and the short decimals
		// DecimalValue's: one string per value.
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			if iv := IntValue(int64(f)); iv != s {
				t.Fatalf("FloatValue(%b) = %q but IntValue = %q", f, s, iv)
			}
		}
		if neg, digits, exp10 := exactDecimal(f); len(digits) <= 18 && exp10 <= 0 && exp10 >= -255 {
			u, _ := strconv.ParseInt(digits, 10, 64)
			if neg {
				u = -u
			}
			if dv := DecimalValue(uint8(-exp10), u); dv != s {
				t.Fatalf("FloatValue(%b) = %q but DecimalValue(%d, %d) = %q", f, s, -exp10, u, dv)
			}
		}
	}
	if forms["plain"] == 0 || forms["DeK"] == 0 || forms["binary"] == 0 {
		t.Fatalf("forms drawn %v: want every form", forms)
	}
	t.Logf("forms drawn: %v", forms)
}

func TestDecimalValueExact(t *testing.T) {
	r := newRand(testSeed(t))
	for range 20000 {
		scale := uint8(r.IntN(256))
		if r.IntN(2) == 0 {
			scale = uint8(r.IntN(25))
		}
		unscaled := int64(r.Uint64())
		if r.IntN(2) == 0 {
			unscaled = r.Int64N(20001) - 10000
		}
		s := DecimalValue(scale, unscaled)
		if !validNumber(s) || len(s) > FieldBytesMax {
			t.Fatalf("DecimalValue(%d, %d) = %q: not a valid canonical number", scale, unscaled, s)
		}
		want := new(big.Rat).SetFrac(big.NewInt(unscaled), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
		got, ok := new(big.Rat).SetString(s)
		if !ok || got.Cmp(want) != 0 {
			t.Fatalf("DecimalValue(%d, %d) = %q, not its value %s", scale, unscaled, s, want.FloatString(int(scale)))
		}
		if unscaled == 0 {
			continue
		}
		neg := unscaled < 0
		digits := strings.TrimPrefix(strconv.FormatInt(unscaled, 10), "-")
		trimmed := strings.TrimRight(digits, "0")
		if ref := refNumber(neg, trimmed, len(digits)-len(trimmed)-int(scale)); ref != s {
			t.Fatalf("DecimalValue(%d, %d) = %q, want %q", scale, unscaled, s, ref)
		}
	}
}

func TestValidNumber(t *testing.T) {
	long := "1" + strings.Repeat("0", 254) // 255 bytes: plain
	for _, s := range []string{"0", "1", "-1", "10", "0.5", "-0.5", "123.45", "nan", "inf", "-inf",
		long, "1e255", "-1e254", "1e-254", "-1e-253", "123e-254", "0x1p-1074", "-0x1.8p-1073", "0x1.fffffffffffffp+1023",
		"123456789012345678901234567890"} {
		if !validNumber(s) {
			t.Errorf("validNumber(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "-", "-0", "00", "01", "-01", "1.", "1.0", "1.50", ".5", "+1", " 1", "1 ", "1_000",
		"1e5", "1e0", "1e-0", "1e+5", "10e300", "1e-253", "12e-253", "1e01", "e5", "1e", "1.5e300", "0e300",
		"0x1p+0", "0x1p-1", "0x1p-1075", "0x1p+1024", "0X1p-1074", "0x1.0p-1074", "0x1p-01074", "0x_1p-1074",
		"NaN", "-nan", "Inf", "+inf", long + "0", "1" + strings.Repeat("0", 255), "1e" + strings.Repeat("1", 6)} {
		if validNumber(s) {
			t.Errorf("validNumber(%q) = true, want false", s)
		}
	}
}

func TestSortedAndSortFields(t *testing.T) {
	if err := Sorted(nil); err != nil {
		t.Errorf("Sorted(nil) = %v", err)
	}
	if err := Sorted([]Field{fs("", "1"), fs("a", "1"), fs("ab", "1"), fs("b", "1")}); err != nil {
		t.Errorf("Sorted(sorted) = %v", err)
	}
	if err := Sorted([]Field{fs("b", "1"), fs("a", "1")}); err == nil || !strings.Contains(err.Error(), "ascending") {
		t.Errorf("Sorted(unsorted) = %v, want not ascending", err)
	}
	if err := Sorted([]Field{fs("a", "1"), fs("a", "2")}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Sorted(duplicate) = %v, want twice", err)
	}
	// Bytewise: "Z" < "a" < "é".
	if err := Sorted([]Field{fs("Z", ""), fs("a", ""), fs("é", "")}); err != nil {
		t.Errorf("Sorted(bytewise) = %v", err)
	}
	got := SortFields([]Field{fs("b", "1"), fs("a", "first"), fs("c", "1"), fs("a", "second"), fs("b", "2")})
	want := []Field{fs("a", "first"), fs("b", "1"), fs("c", "1")}
	if !slices.Equal(got, want) {
		t.Errorf("SortFields = %s, want %s", FieldsText(got), FieldsText(want))
	}
}

func TestFieldsCodecRoundTrip(t *testing.T) {
	lists := [][]Field{
		nil,
		{fs("", "")},
		table(t, fs("a", "x"), fn("n", "1"), fv("v")),
		table(t, fs(XMatch, "any"), fb("t", true), fb("f", false), fo("o", "\x00\xff"), fn("d", DecimalValue(255, -7)), fn("z", f64(math.NaN())), fn("y", f64(math.SmallestNonzeroFloat64))),
	}
	// The largest list the limits allow is FieldsBytesMax exactly.
	var big []Field
	for i := range FieldsMax {
		big = append(big, fs(fmt.Sprintf("%03d", i)+strings.Repeat("k", FieldBytesMax-3), strings.Repeat("v", FieldBytesMax)))
	}
	lists = append(lists, big)
	for _, l := range lists {
		if err := CheckFields(l); err != nil {
			t.Fatalf("CheckFields(%s) = %v", FieldsText(l), err)
		}
		b := AppendFields([]byte("prefix"), l)
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("AppendFields lost dst")
		}
		b = b[len("prefix"):]
		got, err := DecodeFields(b)
		if err != nil {
			t.Fatalf("DecodeFields(AppendFields(%s)) = %v", FieldsText(l), err)
		}
		if !slices.Equal(got, l) {
			t.Fatalf("round trip %s gave %s", FieldsText(l), FieldsText(got))
		}
		// Every strict prefix is refused (of the largest list, a sample).
		step := 1
		if len(b) > 1000 {
			step = 97
		}
		for n := 0; n < len(b); n += step {
			if _, err := DecodeFields(b[:n]); !errors.Is(err, ErrDecode) {
				t.Fatalf("DecodeFields of %d of %d bytes = %v, want ErrDecode", n, len(b), err)
			}
		}
	}
	if b := AppendFields(nil, nil); !bytes.Equal(b, []byte{0}) {
		t.Errorf("empty list encodes as %x, want 00", b)
	}
	if b := AppendFields(nil, big); len(b) != FieldsBytesMax {
		t.Errorf("largest list encodes in %d bytes, want FieldsBytesMax %d", len(b), FieldsBytesMax)
	}
	want := []byte{1, 1, 'a', byte(ClassString), 1, 'x'}
	if b := AppendFields(nil, []Field{fs("a", "x")}); !bytes.Equal(b, want) {
		t.Errorf("encoding %x, want %x", b, want)
	}
}

func TestDecodeFieldsRefuses(t *testing.T) {
	enc := func(fs ...Field) []byte { return AppendFields(nil, fs) }
	var tooMany []Field
	for i := range FieldsMax + 1 {
		tooMany = append(tooMany, fs(fmt.Sprintf("%03d", i), ""))
	}
	cases := []struct {
		name string
		b    []byte
		why  string
	}{
		{"no bytes", nil, "truncated"},
		{"unsorted", enc(fs("b", "1"), fs("a", "1")), "ascending"},
		{"duplicate", enc(fs("a", "1"), fs("a", "2")), "twice"},
		{"padded count", []byte{0x80, 0x00}, "padded"},
		{"padded count of 1", []byte{0x81, 0x00, 1, 'a', byte(ClassString), 0}, "padded"},
		{"padded key length", []byte{1, 0x81, 0x00, 'a', byte(ClassString), 0}, "padded"},
		{"padded value length", []byte{1, 1, 'a', byte(ClassString), 0x80, 0x00}, "padded"},
		{"trailing byte", append(enc(fs("a", "1")), 0), "trailing"},
		{"trailing after empty", []byte{0, 0}, "trailing"},
		{"too many fields", enc(tooMany...), "length over"},
		{"key too long", enc(fs(strings.Repeat("k", FieldBytesMax+1), "")), "length over"},
		{"value too long", enc(fs("a", strings.Repeat("v", FieldBytesMax+1))), "length over"},
		{"class 0", enc(Field{Key: "a", Class: 0}), "unknown class"},
		{"class 6", enc(Field{Key: "a", Class: 6}), "unknown class"},
		{"void with value", enc(Field{Key: "a", Class: ClassVoid, Value: "x"}), "void"},
		{"bool not t or f", enc(Field{Key: "a", Class: ClassBool, Value: "true"}), "bool"},
		{"number not canonical", enc(fn("a", "1.0")), "canonical"},
		{"number empty", enc(fn("a", "")), "canonical"},
		{"truncated value", []byte{1, 1, 'a', byte(ClassString), 2, 'x'}, "truncated"},
		{"over FieldsBytesMax", make([]byte, FieldsBytesMax+1), "over"},
		{"zero padded with continuation bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x30}, "overlong"},
		{"one padded with continuation bytes", []byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, "overlong"},
		{"huge varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "length over"},
	}
	for _, c := range cases {
		_, err := DecodeFields(c.b)
		if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: DecodeFields(%x) = %v, want ErrDecode, %s", c.name, c.b, err, c.why)
		}
	}
	// CheckFields gives the same verdict before encoding.
	for _, l := range [][]Field{{fs("b", ""), fs("a", "")}, {fs("a", ""), fs("a", "")}, tooMany,
		{fs(strings.Repeat("k", FieldBytesMax+1), "")}, {fs("a", strings.Repeat("v", FieldBytesMax+1))},
		{{Key: "a"}}, {{Key: "a", Class: ClassVoid, Value: "x"}}, {{Key: "a", Class: ClassBool, Value: ""}}, {fn("a", "-0")}} {
		if err := CheckFields(l); err == nil {
			t.Errorf("CheckFields(%s) = nil, want a refusal", FieldsText(l))
		}
		if _, err := DecodeFields(AppendFields(nil, l)); err == nil {
			t.Errorf("DecodeFields(AppendFields(%s)) = nil, want a refusal", FieldsText(l))
		}
	}
}

func TestFieldsText(t *testing.T) {
	cases := []struct {
		fs   []Field
		want string
	}{
		{nil, "{}"},
		{table(t, fs("a", "x"), fn("n", "1"), fv("v")), `{a=s:"x" n=n:1 v=void}`},
		{table(t, fb("t", true), fb("f", false), fo("o", "\x00\xff"), fn("h", "-0.5")), `{f=b:f h=n:-0.5 o=o:00ff t=b:t}`},
		{[]Field{fs("", "q\"\n"), fs("a b", ""), fs("x=y", ""), fs("{", "")}, `{""=s:"q\"\n" "a b"=s:"" "x=y"=s:"" "{"=s:""}`},
		{[]Field{fn("a", "1 b=n:2"), {Key: "c", Class: ClassBool, Value: "x y"}, {Key: "d", Class: 9, Value: "z"}, {Key: "e", Class: ClassVoid, Value: "w"}},
			`{a=n:"1 b=n:2" c=b:"x y" d=class9:"z" e=void:"w"}`},
	}
	for _, c := range cases {
		if got := FieldsText(c.fs); got != c.want {
			t.Errorf("FieldsText = %s, want %s", got, c.want)
		}
	}
}

func TestClass(t *testing.T) {
	if ClassVoid != 1 || ClassNumber != 2 || ClassString != 3 || ClassBool != 4 || ClassOther != 5 {
		t.Errorf("class numbers changed: they are stored in encoded lists")
	}
	for c, name := range map[Class]string{ClassVoid: "void", ClassNumber: "number", ClassString: "string", ClassBool: "bool", ClassOther: "other", 0: "class0", 6: "class6"} {
		if c.String() != name || c.Valid() != (c >= 1 && c <= 5) {
			t.Errorf("Class %d: %q %t", c, c.String(), c.Valid())
		}
	}
}
