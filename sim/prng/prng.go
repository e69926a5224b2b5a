// Package prng is the simulator's pseudo-random generator: SplitMix64 for
// seeding and deriving sub-seeds, xoshiro256** for the streams. It is small,
// fast, allocation-free and identical on every platform, so one 64-bit seed
// reproduces a whole run. It never reads the clock or the OS.
package prng

import (
	"math"
	"math/bits"
)

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

// ExpNs returns an exponentially distributed duration with mean meanNs,
// rounded to the nearest nanosecond and at least 1. meanNs must be
// positive. A result that would exceed math.MaxInt64 saturates there.
//
// It uses integer arithmetic only, so a seed draws the same durations on
// every platform: a float -math.Log(u) would not, because math.Log is
// assembly on some architectures and pure Go (which the compiler may fuse
// into FMA instructions) on others.
//
// The method is von Neumann's (1951; see Devroye, Non-Uniform Random
// Variate Generation, 1986, chapter IV): an Exp(1) variate is K + X, where K, its integer part, counts
// rejected trials and X, its fraction, is the first uniform U0 of the
// accepted trial. A trial draws uniforms U1, U2, ... while they keep
// descending (U0 > U1 > ... ) and accepts if the first one that breaks
// the run has an odd index. The run stays descending for n steps with
// probability U0^n/n!, so a trial accepts U0 = x with probability
// 1 - x + x²/2! - x³/3! + ... = e^-x: the accepted fraction has density
// proportional to e^-x on [0, 1), and a trial accepts at all with
// probability 1 - 1/e, so K is geometric with P(K = k) = e^-k (1 - 1/e).
// Those are exactly the integer part and fraction of an Exp(1) variate,
// and they are independent. Only comparisons of 64-bit uniforms are
// needed: the method is exact up to the 2^-64 granularity of the
// uniforms (a tie, probability 2^-64 per comparison, ends the run). It
// takes e/(1-1/e) ≈ 4.3 draws of Uint64 on average.
func (r *Rand) ExpNs(meanNs int64) int64 {
	if meanNs <= 0 {
		panic("prng: ExpNs with meanNs <= 0")
	}
	var k uint64 // rejected trials: the integer part
	var u0 uint64
	for {
		u0 = r.Uint64()
		prev, n := u0, 1
		for {
			u := r.Uint64()
			if u >= prev {
				break // U_n breaks the run
			}
			prev, n = u, n+1
		}
		if n%2 == 1 {
			break
		}
		k++
	}
	return scaleExp(k, u0, uint64(meanNs))
}

// scaleExp returns (k + u0/2^64)·mean rounded to the nearest integer (a
// half rounds up), at least 1 and at most math.MaxInt64, in 128-bit
// integer arithmetic.
func scaleExp(k, u0, mean uint64) int64 {
	fracHi, fracLo := bits.Mul64(u0, mean)
	frac := fracHi + fracLo>>63 // u0·mean/2^64 rounded; at most mean
	intHi, intLo := bits.Mul64(k, mean)
	sum, carry := bits.Add64(intLo, frac, 0)
	if intHi != 0 || carry != 0 || sum > math.MaxInt64 {
		return math.MaxInt64
	}
	if sum == 0 {
		return 1
	}
	return int64(sum)
}
