package bad

import (
	"math"
	. "math"
	"math/cmplx"
)

// ExpGap draws an exponential gap with a transcendental function.
func ExpGap(u, perMin float64) int64 {
	return int64(-math.Log(u) * 60e9 / perMin) // want float-transcendental float-fused
}

// Many uses several approximations on one line each.
func Many(x, y float64) float64 {
	a := math.Exp(x) + math.Pow(x, y)            // want float-transcendental float-transcendental
	b := math.Sin(x) * math.Atan2(y, x)          // want float-transcendental float-transcendental float-fused
	c := math.Hypot(x, y) + math.Cbrt(x)         // want float-transcendental float-transcendental
	d := math.Pow10(3) + math.Erfinv(x)          // want float-transcendental float-transcendental
	s, k := math.Sincos(x)                       // want float-transcendental
	return a + b + c + d + s + k + math.Jn(2, x) // want float-transcendental
}

// Value takes a transcendental function as a value.
func Value() func(float64) float64 {
	f := math.Log2 // want float-transcendental
	return f
}

// Dot reaches math through a dot import.
func Dot(x float64) float64 { return Tanh(x) } // want float-transcendental

// Complex uses math/cmplx, which is built on the same approximations.
func Complex(z complex128) float64 {
	return cmplx.Abs(cmplx.Exp(z)) // want float-transcendental float-transcendental
}

// NotExcused shows that the order marker does not excuse float math.
func NotExcused(x float64) float64 {
	//detguard:order-independent not a map at all // want marker
	return math.Log1p(x) // want float-transcendental
}
