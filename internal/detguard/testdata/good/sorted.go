package good

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// SortedForms uses every standard-library sorting function that earns a
// maps iterator its exemption, plain, instantiated and parenthesised.
func SortedForms(m map[string]int) [][]string {
	vals := slices.SortedStableFunc(maps.Values(m), cmp.Compare[int])
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = strings.Repeat("x", v)
	}
	return [][]string{
		slices.Sorted(maps.Keys(m)),
		slices.Sorted[string](maps.Keys(m)),
		(slices.Sorted[string])(maps.Keys(m)),
		slices.SortedFunc(maps.Keys(m), strings.Compare),
		s,
	}
}

// CollectThenSort is the hand-written form: the range collects, is
// marked, and the slice is sorted before anyone sees it.
func CollectThenSort(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m { //detguard:order-independent collected, then sorted below
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Prune deletes with a pure predicate, so the order of the calls cannot
// show; the copy and the comparison have order-free results.
func Prune(m map[string]int) (map[string]int, bool) {
	//detguard:order-independent the predicate has no effects
	maps.DeleteFunc(m, func(_ string, v int) bool { return v < 0 })
	c := maps.Clone(m)
	maps.Copy(c, m)
	return c, maps.Equal(c, m)
}
