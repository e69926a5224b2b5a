package bad

import (
	"fmt"
	"reflect"
)

// ReflectKeys lists a map's keys through reflection, in random order.
func ReflectKeys(m any) []string {
	var out []string
	for _, k := range reflect.ValueOf(m).MapKeys() { // want reflect-map
		out = append(out, fmt.Sprint(k))
	}
	return out
}

// ReflectRange walks a map through a MapIter, in random order.
func ReflectRange(m any) int {
	n := 0
	it := reflect.ValueOf(m).MapRange() // want reflect-map
	for it.Next() {
		n = n*31 + int(it.Value().Int())
	}
	var again reflect.MapIter
	again.Reset(reflect.ValueOf(m)) // want reflect-map
	for again.Next() {
		n = n*31 + int(again.Value().Int())
	}
	return n
}

// ReflectSeq ranges over the iterators of a reflect.Value, which yield a
// map in random order.
func ReflectSeq(m any) int {
	n := 0
	v := reflect.ValueOf(m)
	for k := range v.Seq() { // want reflect-map
		n += k.Len()
	}
	for k, e := range v.Seq2() { // want reflect-map
		n += k.Len() + int(e.Int())
	}
	return n
}

// Wrapped embeds reflect.Value, so its promoted methods are reflect's.
type Wrapped struct{ reflect.Value }

// Indirect reaches MapKeys through a promoted method, a method value and
// a method expression.
func Indirect(w Wrapped) int {
	keys := w.MapKeys // want reflect-map
	n := len(keys())
	n += len(reflect.Value.MapKeys(w.Value)) // want reflect-map
	return n
}

// ReflectMarkerFar has its marker two lines above, which is too far.
func ReflectMarkerFar(m any) int {
	//detguard:order-independent counts the keys // want marker
	v := reflect.ValueOf(m)
	return len(v.MapKeys()) // want reflect-map
}
