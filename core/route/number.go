package route

import (
	"math"
	"strconv"
	"strings"
)

// The canonical number (doc.go): the exact value as a string, one string
// per value, whatever type carried it. Exact, not the shortest string
// that reads back as the same float: that one names a different value
// than the float holds (double 0.1 would equal decimal 0.1, and double
// 2^60 would equal the integer 1152921504606847000 and not 2^60), and
// headers compare by value. The forms are tried in a fixed order, each
// only if it fits FieldBytesMax, so the choice depends on the value alone.

// IntValue is the canonical number of an integer.
func IntValue(v int64) string { return strconv.FormatInt(v, 10) }

// DecimalValue is the canonical number of an AMQP decimal: unscaled ×
// 10^-scale.
func DecimalValue(scale uint8, unscaled int64) string {
	mag := uint64(unscaled)
	if unscaled < 0 {
		mag = -mag // two's complement: right for math.MinInt64 too
	}
	if mag == 0 {
		return "0"
	}
	s, _ := decimalNumber(unscaled < 0, strconv.FormatUint(mag, 10), -int(scale))
	return s // an int64 has at most 19 digits: DeK always fits
}

// FloatValue is the canonical number of an IEEE 754 float whose bits are
// bits: a float (width 32, the low 32 bits) or a double (width 64). NaN
// is "nan", which matches nothing; the infinities "inf" and "-inf". It
// panics on another width.
func FloatValue(bits uint64, width int) string {
	var f float64
	switch width {
	case 32:
		f = float64(math.Float32frombits(uint32(bits))) // exact: every float is a double
	case 64:
		f = math.Float64frombits(bits)
	default:
		panic("route: FloatValue of width " + strconv.Itoa(width) + ", want 32 or 64")
	}
	switch {
	case f != f:
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		return "0" // -0 too: it equals 0
	}
	// Every double is a multiple of 2^-1074, so 1074 decimal places hold
	// it exactly, and strconv prints that many exactly.
	s := strconv.FormatFloat(f, 'f', 1074, 64)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	dot := strings.IndexByte(s, '.')
	digits := strings.TrimLeft(s[:dot]+s[dot+1:], "0")
	if n, ok := decimalNumber(neg, digits, -(len(s) - dot - 1)); ok {
		return n
	}
	// Over 250 significant digits: the float's exact binary form, which
	// strconv prints with as few hexadecimal digits as name it (exactly,
	// since a shorter mantissa is another double) and the mantissa
	// normalised to 1.x, also for subnormals.
	return strconv.FormatFloat(f, 'x', -1, 64)
}

// decimalNumber is the canonical number of ±digits × 10^exp10, for
// digits a non-empty string of decimal digits without leading zeros: the
// plain form if it fits FieldBytesMax, else DeK if that fits; ok is false
// if neither does.
func decimalNumber(neg bool, digits string, exp10 int) (string, bool) {
	trimmed := strings.TrimRight(digits, "0")
	exp10 += len(digits) - len(trimmed)
	digits = trimmed
	var b strings.Builder
	if plainBytes(neg, len(digits), exp10) <= FieldBytesMax {
		if neg {
			b.WriteByte('-')
		}
		switch {
		case exp10 >= 0:
			b.WriteString(digits)
			for range exp10 {
				b.WriteByte('0')
			}
		case len(digits) > -exp10:
			point := len(digits) + exp10
			b.WriteString(digits[:point])
			b.WriteByte('.')
			b.WriteString(digits[point:])
		default:
			b.WriteString("0.")
			for range -exp10 - len(digits) {
				b.WriteByte('0')
			}
			b.WriteString(digits)
		}
		return b.String(), true
	}
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(digits)
	b.WriteByte('e')
	b.WriteString(strconv.Itoa(exp10))
	if b.Len() > FieldBytesMax {
		return "", false
	}
	return b.String(), true
}

// plainBytes is the length of the plain form of ±D × 10^exp10, D an
// integer of n digits without trailing zeros.
func plainBytes(neg bool, n, exp10 int) int {
	sign := 0
	if neg {
		sign = 1
	}
	switch {
	case exp10 >= 0:
		return sign + n + exp10
	case n > -exp10:
		return sign + n + 1
	default:
		return sign + 2 + -exp10
	}
}

// exp10DigitsMax bounds the digits of a DeK exponent validNumber reads:
// the helpers' exponents are within ±1100, and the bound keeps plainBytes
// far from overflow.
const exp10DigitsMax = 5

// validNumber reports whether s is a canonical number: what IntValue,
// DecimalValue or FloatValue gives for its value, or the same form for a
// value none of them reaches (more digits than an int64 and a double
// have).
func validNumber(s string) bool {
	switch s {
	case "":
		return false
	case "0", "nan", "inf", "-inf":
		return true
	}
	if len(s) > FieldBytesMax {
		return false
	}
	neg := s[0] == '-'
	body := s
	if neg {
		body = s[1:]
	}
	if strings.HasPrefix(body, "0x") {
		f, err := strconv.ParseFloat(s, 64)
		return err == nil && FloatValue(math.Float64bits(f), 64) == s
	}
	if e := strings.IndexByte(body, 'e'); e >= 0 {
		digits, exp := body[:e], body[e+1:]
		if !isDigits(digits) || digits[0] == '0' || digits[len(digits)-1] == '0' {
			return false
		}
		expDigits := strings.TrimPrefix(exp, "-")
		if !isDigits(expDigits) || expDigits[0] == '0' || len(expDigits) > exp10DigitsMax {
			return false
		}
		exp10, _ := strconv.Atoi(exp)
		return plainBytes(neg, len(digits), exp10) > FieldBytesMax // else the plain form is the canonical one
	}
	whole, frac, hasPoint := strings.Cut(body, ".")
	switch {
	case !isDigits(whole), whole[0] == '0' && len(whole) > 1:
		return false
	case hasPoint:
		return isDigits(frac) && frac[len(frac)-1] != '0'
	default:
		return whole != "0" // "-0": zero is "0"
	}
}

// isDigits reports whether s is one or more decimal digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
