package good

import (
	"math"
	"math/cmplx"
	"strconv"
)

// Exact uses the math functions whose results IEEE 754 or their
// definition fixes exactly, so every platform computes the same bits.
func Exact(x, y float64) float64 {
	a := math.Sqrt(x) + math.Mod(x, y) + math.Remainder(x, y)
	b := math.FMA(x, y, a)
	c := math.Floor(x) + math.Ceil(y) + math.Trunc(x) + math.Round(y) + math.RoundToEven(x)
	fr, e := math.Frexp(x)
	d := math.Ldexp(fr, e) + math.Logb(x) + float64(math.Ilogb(y))
	i, f := math.Modf(x)
	g := math.Copysign(math.Abs(x), y) + math.Max(x, y) + math.Min(x, y) + math.Dim(x, y)
	h := math.Nextafter(x, math.Inf(1)) + math.Float64frombits(math.Float64bits(y))
	if math.IsNaN(x) || math.IsInf(y, 0) || math.Signbit(x) {
		return math.NaN()
	}
	return a + b + c + d + i + f + g + h
}

// ExactComplex uses the math/cmplx functions that compute nothing.
func ExactComplex(z complex128) complex128 {
	if cmplx.IsNaN(z) || cmplx.IsInf(z) {
		return cmplx.NaN() + cmplx.Inf()
	}
	return cmplx.Conj(z)
}

// Parse converts decimal text, which strconv rounds correctly.
func Parse(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// Log is a project function that shares a name with math.Log.
func Log(n uint64) int {
	k := 0
	for ; n > 1; n >>= 1 {
		k++
	}
	return k
}

// Curve has a method named like a math function.
type Curve struct{}

// Exp is not math.Exp.
func (Curve) Exp(n int) int { return n * n }

// UseLog calls the project's Log, not math's.
func UseLog() int { return Log(1024) + Curve{}.Exp(2) }
