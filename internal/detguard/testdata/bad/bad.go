// Package bad plants one of every violation the guard must report. Each
// expected violation is declared by a trailing want comment naming the
// rules reported on that line (or, with want@+1, on the next line).
package bad

import (
	"maps"
	"net/http" // want import
	"os"       // want import
	"sync"     // want import
	"time"     // want import
)

var (
	mu      sync.Mutex
	_       = http.MethodGet
	_       = os.Getpid
	started = time.Now()
)

// Spawn uses goroutines, channels and select.
func Spawn() int {
	ch := make(chan int)    // want chan
	go func() { ch <- 1 }() // want go send
	select {                // want select
	case v := <-ch: // want recv
		return v
	default:
	}
	for v := range ch { // want recv
		return v
	}
	return 0
}

// Results takes a channel parameter.
func Results(out chan<- int) {} // want chan

// Sum ranges over a map with no marker.
func Sum(m map[string]int) int {
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, v := range m { // want map-range
		n += v
	}
	return n
}

// Set is a named map type.
type Set map[string]struct{}

// First ranges over a named map type.
func First(s Set) string {
	for k := range s { // want map-range
		return k
	}
	return ""
}

// Generic ranges over a type parameter constrained to maps.
func Generic[M ~map[K]V, K comparable, V any](m M) int {
	n := 0
	for range m { // want map-range
		n++
	}
	return n
}

// Iter uses the maps iterators without sorting.
func Iter(m map[string]int) []string {
	var out []string
	for k := range maps.Keys(m) { // want map-range
		out = append(out, k)
	}
	vals := maps.Values(m) // want map-range
	_ = vals
	return out
}

// NoReason carries a marker without a reason, which excuses nothing.
func NoReason(m map[string]int) int {
	n := 0 // want@+1 marker
	//detguard:order-independent
	for _, v := range m { // want map-range
		n += v
	}
	return n
}

// Far has a marker two lines above the range, which is too far.
func Far(m map[string]int) int {
	n := 0
	//detguard:order-independent the sum is commutative // want marker
	_ = n
	for _, v := range m { // want map-range
		n += v
	}
	return n
}

// Typo misspells the directive.
func Typo(m map[string]int) int {
	n := 0
	//detguard:order-indepndent typo // want marker
	for _, v := range m { // want map-range
		n += v
	}
	return n
}

// Stale carries a marker with no map range to excuse.
func Stale(s []int) int {
	n := 0
	//detguard:order-independent nothing to excuse here // want marker
	for _, v := range s {
		n += v
	}
	return n
}
