package bad

// Fused computes float products the compiler may fuse with an addition
// into one FMA instruction on some platforms (the Go spec allows it, even
// across statements), rounding once where other platforms round twice.
func Fused(x, y, z float64) float64 {
	r := x*y + z    // want float-fused
	t := x * y      // want float-fused
	r += t + z      // fusible with t's product across statements
	r = z - (x * y) // want float-fused
	var p *float64 = &r
	*p = x * y                     // want float-fused
	r *= y                         // want float-fused
	f := float32(x)*float32(y) + 1 // want float-fused
	return r + *p + float64(f)
}

// Number is any float type.
type Number interface{ ~float32 | ~float64 }

// GenericFused multiplies values of a type parameter that may be a float.
func GenericFused[T Number](a, b, c T) T {
	return a*b + c // want float-fused
}

// ComplexMul multiplies complex numbers, which is itself a pair of
// multiply-adds; no conversion can round their insides.
func ComplexMul(a, b complex128) complex128 {
	return complex128(a * b) // want float-fused
}

// Boxed converts a product to an interface, which does not round it.
func Boxed(x, y, z float64) float64 {
	v := any(x * y) // want float-fused
	return v.(float64) + z
}

// Half does not round its product: halving is exact, but the rule does
// not reason about operands.
func Half(x float64) float64 { return x * 0.5 } // want float-fused
