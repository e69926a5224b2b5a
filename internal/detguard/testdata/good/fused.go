package good

// Rounded rounds every float product explicitly before it can meet an
// addition, which the Go spec says prevents fusion.
func Rounded(x, y, z float64) float64 {
	r := float64(x*y) + z
	t := float64(x * y)
	r += t
	f := float32(float32(x)*float32(y)) + 1
	n := int64(x * y) // an integer conversion ends the product too
	return r + float64(f) + float64(n)
}

// Constants are multiplied exactly at compile time.
const scale = 60e9 * 1000 / 2.5

// Divide divides and adds, which never fuse.
func Divide(x, y float64) float64 { return x/y + scale }

// Ints multiplies integers, which are exact.
func Ints(a, b, c int64) int64 { return a*b + c }

// Number is any float type.
type Number interface{ ~float32 | ~float64 }

// GenericRounded rounds through the type parameter.
func GenericRounded[T Number](a, b, c T) T { return T(a*b) + c }
