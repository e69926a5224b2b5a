package good

import (
	"fmt"
	"reflect"
	"slices"
)

// ReflectKeys collects a map's keys through reflection, then sorts them.
func ReflectKeys(m any) []string {
	var out []string
	//detguard:order-independent collected, then sorted below
	for _, k := range reflect.ValueOf(m).MapKeys() {
		out = append(out, fmt.Sprint(k))
	}
	slices.Sort(out)
	return out
}

// ReflectLen uses reflect's map operations that involve no iteration.
func ReflectLen(m any, key string) (int, bool) {
	v := reflect.ValueOf(m)
	e := v.MapIndex(reflect.ValueOf(key))
	return v.Len(), e.IsValid()
}

// ReflectSliceSeq ranges over a slice through reflection; the marker says
// why that is ordered.
func ReflectSliceSeq(s []int) int {
	n := 0
	v := reflect.ValueOf(s)
	for i, e := range v.Seq2() { //detguard:order-independent v is a slice, which Seq2 yields in index order
		n += int(i.Int()) * int(e.Int())
	}
	return n
}

// Print formats a map with fmt, which sorts map keys (since Go 1.12), so
// the text is the same in every run.
func Print(m map[string]int) string { return fmt.Sprint(m) }
