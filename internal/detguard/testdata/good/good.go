// Package good uses every sanctioned way of iterating a map; the guard
// must report nothing here.
package good

import (
	"maps"
	"slices"
	"sort"
)

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	//detguard:order-independent collects the keys, which are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Join visits the keys in sorted order through a sorted helper.
func Join(m map[string]int) string {
	s := ""
	for _, k := range sortedKeys(m) {
		s += k
	}
	return s
}

// Sum needs no order: addition is commutative.
func Sum(m map[string]int) int {
	n := 0
	for _, v := range m { //detguard:order-independent addition is commutative
		n += v
	}
	return n
}

// Keys uses the standard library's sorted iterator.
func Keys(m map[string]int) []string {
	out := []string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k)
	}
	return out
}

// Clone copies a map; iteration order cannot show.
func Clone(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	//detguard:order-independent copies into another map
	for k, v := range maps.All(m) {
		c[k] = v
	}
	return c
}

// Slice ranges over a slice and an int; neither is a map.
func Slice(s []int) int {
	n := 0
	for i := range s {
		n += s[i]
	}
	for i := range 3 {
		n += i
	}
	return n
}
