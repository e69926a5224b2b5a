// Package prng is the simulator's pseudo-random generator: SplitMix64 for
// seeding and deriving sub-seeds, xoshiro256** for the streams. It is small,
// fast, allocation-free and identical on every platform, so one 64-bit seed
// reproduces a whole run. It never reads the clock or the OS.
package prng

import "math/bits"

// splitmix64 advances *x and returns the next SplitMix64 output.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Rand is a xoshiro256** stream. The zero value is not usable; use New.
type Rand struct{ s [4]uint64 }

// New returns a stream seeded from seed.
func New(seed uint64) *Rand {
	r := &Rand{}
	r.Seed(seed)
	return r
}

// Seed resets r to the stream of seed.
func (r *Rand) Seed(seed uint64) {
	x := seed
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
}

// Derive returns the sub-seed of seed for a named component, so that adding
// draws to one component never shifts another's stream.
func Derive(seed uint64, component string) uint64 {
	h := uint64(0xcbf29ce484222325) // FNV-1a over the name, then mixed
	for i := 0; i < len(component); i++ {
		h ^= uint64(component[i])
		h *= 0x100000001b3
	}
	x := seed ^ h
	return splitmix64(&x)
}

// Uint64 returns the next 64 random bits.
func (r *Rand) Uint64() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// Intn returns a uniform value in [0, n). n must be positive.
func (r *Rand) Intn(n int) int {
	if n <= 0 {
		panic("prng: Intn with n <= 0")
	}
	hi, _ := bits.Mul64(r.Uint64(), uint64(n))
	return int(hi)
}

// Int63n returns a uniform value in [0, n). n must be positive.
func (r *Rand) Int63n(n int64) int64 {
	if n <= 0 {
		panic("prng: Int63n with n <= 0")
	}
	hi, _ := bits.Mul64(r.Uint64(), uint64(n))
	return int64(hi)
}

// Range returns a uniform value in [lo, hi].
func (r *Rand) Range(lo, hi int64) int64 {
	if hi < lo {
		panic("prng: Range with hi < lo")
	}
	return lo + r.Int63n(hi-lo+1)
}

// Chance returns true with probability num/den.
func (r *Rand) Chance(num, den int) bool { return r.Intn(den) < num }

// Float64 returns a uniform value in [0, 1).
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }
