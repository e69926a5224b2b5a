package world

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Rate is a mean number of events per simulated minute (fault arrivals of
// one kind, consumer losses). It is held exactly, as an integer count of
// thousandths of an event per minute, so that the mean gap between events
// is one integer division and no floating-point arithmetic, whose results
// may differ between machines, reaches a draw. The zero Rate is off.
//
// Saved scenarios write a rate as a plain JSON number of events per
// minute ("crash": 2, "ConsumerLossPerMin": 0.5), the form they had when
// rates were float64, and it reads back exactly. A rate finer than 0.001
// an event a minute, negative, or above maxRateMilli is refused.
type Rate struct{ milli int64 }

// maxRateMilli keeps the mean gap at least 1 ns: 60e12 thousandths of an
// event a minute is one event a nanosecond.
const maxRateMilli = 60_000_000_000_000

// nsPerMinMilli is a minute in nanoseconds times 1000, so that
// nsPerMinMilli / milli is the mean gap of a rate of milli thousandths.
const nsPerMinMilli = 60_000_000_000 * 1000

// PerMin returns the rate of n events a minute.
func PerMin(n int64) Rate {
	if n < 0 || n > maxRateMilli/1000 {
		panic(fmt.Sprintf("world: rate of %d events a minute outside [0, %d]", n, int64(maxRateMilli/1000)))
	}
	return Rate{milli: n * 1000}
}

// MilliPerMin returns the rate of n thousandths of an event a minute.
func MilliPerMin(n int64) Rate {
	if n < 0 || n > maxRateMilli {
		panic(fmt.Sprintf("world: rate of %d thousandths an event a minute outside [0, %d]", n, int64(maxRateMilli)))
	}
	return Rate{milli: n}
}

// On reports whether events happen at all.
func (r Rate) On() bool { return r.milli > 0 }

// Milli returns the rate in thousandths of an event a minute.
func (r Rate) Milli() int64 { return r.milli }

// MeanGapNs returns the mean time between events in nanoseconds,
// truncated, at least 1. The rate must be on.
func (r Rate) MeanGapNs() int64 {
	if !r.On() {
		panic("world: mean gap of a rate that is off")
	}
	return max(1, nsPerMinMilli/r.milli)
}

// String prints the rate in events a minute as a decimal without trailing
// zeros ("2", "0.5", "0.001"), which is also its JSON form.
func (r Rate) String() string {
	s := strconv.FormatInt(r.milli/1000, 10)
	if frac := r.milli % 1000; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
	}
	return s
}

// ParseRate reads a rate in events a minute written as a JSON number
// (digits, an optional fraction, an optional exponent), exactly, without
// floating point.
func ParseRate(s string) (Rate, error) {
	bad := func(why string) (Rate, error) { return Rate{}, fmt.Errorf("rate %q: %s", s, why) }
	mant, exp, ok := splitNumber(s)
	if !ok {
		return bad("not a non-negative decimal number")
	}
	// The value is mant × 10^exp; in thousandths it is mant × 10^(exp+3).
	mant = strings.TrimLeft(mant, "0")
	exp += 3
	for exp < 0 && strings.HasSuffix(mant, "0") {
		mant, exp = mant[:len(mant)-1], exp+1
	}
	if mant == "" {
		return Rate{}, nil
	}
	if exp < 0 {
		return bad("finer than 0.001 an event a minute")
	}
	if len(mant)+exp > len(strconv.FormatInt(maxRateMilli, 10)) {
		return bad("too high")
	}
	milli, err := strconv.ParseInt(mant+strings.Repeat("0", exp), 10, 64)
	if err != nil || milli > maxRateMilli {
		return bad("too high")
	}
	return Rate{milli: milli}, nil
}

// splitNumber splits a non-negative JSON number into its significant
// digits (integer and fraction digits run together) and the power of ten
// they are scaled by.
func splitNumber(s string) (mant string, exp int, ok bool) {
	digits := func(s string) (string, string) {
		i := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return s[:i], s[i:]
	}
	intPart, rest := digits(s)
	if intPart == "" {
		return "", 0, false
	}
	var frac string
	if r, found := strings.CutPrefix(rest, "."); found {
		if frac, rest = digits(r); frac == "" {
			return "", 0, false
		}
	}
	if len(rest) > 0 && (rest[0] == 'e' || rest[0] == 'E') {
		rest = rest[1:]
		sign := 1
		if len(rest) > 0 && (rest[0] == '+' || rest[0] == '-') {
			if rest[0] == '-' {
				sign = -1
			}
			rest = rest[1:]
		}
		var e string
		e, rest = digits(rest)
		if e == "" || len(e) > 4 {
			return "", 0, false // no exponent, or one no rate needs
		}
		n, _ := strconv.Atoi(e)
		exp = sign * n
	}
	if rest != "" {
		return "", 0, false
	}
	return intPart + frac, exp - len(frac), true
}

// MarshalJSON writes the rate as a JSON number of events a minute.
func (r Rate) MarshalJSON() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalJSON reads a JSON number of events a minute; null leaves the
// rate unchanged, as for the other JSON types.
func (r *Rate) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
