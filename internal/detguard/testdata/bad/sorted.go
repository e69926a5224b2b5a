package bad

import (
	"iter"
	"maps"
	"slices"
)

// sortedKeys is named like a sorting helper but never sorts: a name earns
// no exemption, so its range is reported.
func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m { // want map-range
		out = append(out, k)
	}
	return out
}

// SortedView returns the map itself; ranging over its result is ranging
// over the map, whatever the function is called.
func SortedView(m map[string]int) map[string]int { return m }

// UseSortedView ranges over a map returned by a sorted* function.
func UseSortedView(m map[string]int) string {
	s := ""
	for k := range SortedView(m) { // want map-range
		s += k
	}
	return s + sortedKeys(m)[0]
}

// sortedSeq is a project function, not slices.Sorted: passing a maps
// iterator to it earns no exemption.
func sortedSeq(seq iter.Seq[string]) []string { return slices.Collect(seq) }

// Lister has a method named Sorted, which is not the standard library's.
type Lister struct{}

// Sorted collects seq without sorting it.
func (Lister) Sorted(seq iter.Seq[string]) []string { return slices.Collect(seq) }

// Impostors hand maps iterators to functions that only look like
// slices.Sorted.
func Impostors(m map[string]int) [][]string {
	Sorted := func(seq iter.Seq[string]) []string { return slices.Collect(seq) }
	return [][]string{
		sortedSeq(maps.Keys(m)),       // want map-range
		Lister{}.Sorted(maps.Keys(m)), // want map-range
		Sorted(maps.Keys(m)),          // want map-range
		slices.Collect(maps.Keys(m)),  // want map-range
	}
}

// SortLater sorts, but not directly: the iterator passes through a
// variable first, so the call that makes it is reported.
func SortLater(m map[string]int) []string {
	keys := maps.Keys(m) // want map-range
	return slices.Sorted(keys)
}

// Callbacks hands functions to maps helpers that call them in map order.
func Callbacks(a, b map[string]int) []string {
	var seen []string
	maps.DeleteFunc(a, func(k string, v int) bool { // want map-range
		seen = append(seen, k)
		return v < 0
	})
	_ = maps.EqualFunc(a, b, func(x, y int) bool { // want map-range
		seen = append(seen, "eq")
		return x == y
	})
	return seen
}
