// Package detguard is the determinism guard: a static check, run as an
// ordinary test inside `go test ./...`, that keeps nondeterminism out of
// the code the simulator drives.
//
// # Scope
//
// The guarded set is discovered by walking the module tree, so new
// packages are covered without editing this package:
//
//   - every package under core/ (recursively),
//   - io/vfs, io/seglog, io/driver, io/meta and io/meta/metakv (those
//     directories only; concrete operating-system back ends belong in
//     sibling packages, and io/meta/metatest is a test suite),
//   - every package under sim/ (recursively) except sim/sweep and its
//     subtree, the parallel sweep runner, which is deliberately outside.
//
// testdata directories, directories whose name starts with "." or "_",
// and _test.go files are skipped: tests may use whatever they like.
//
// # Rules
//
// Each violation is reported as "file:line: rule: detail".
//
//   - import: no import of os, os/exec, os/signal, net and net/...,
//     time, math/rand, math/rand/v2, crypto/rand, sync, sync/atomic,
//     runtime and runtime/..., log, log/slog, syscall, unsafe, io/ioutil,
//     hash/maphash, weak. Time, randomness, concurrency and the outside
//     world reach guarded code only through the simulator's own
//     interfaces. hash/maphash is randomness in disguise: its only seeds
//     come from MakeSeed, which is random per process, so a key hashes
//     differently in every run; use a fixed-seed hash such as hash/fnv or
//     hash/crc32. weak pointers turn nil when the garbage collector
//     runs, which no seed controls.
//   - go: no go statement.
//   - select: no select statement.
//   - chan: no channel type anywhere (declarations, parameters, make).
//   - send: no send statement.
//   - recv: no receive expression (unary <-), and no range over a channel.
//   - map-range: no range over a map (a value whose type's underlying
//     type is a map, or a type parameter whose constraint admits a map),
//     and no call of maps.Keys, maps.Values or maps.All, because Go's map
//     iteration order is randomised. maps.DeleteFunc and maps.EqualFunc
//     count too: they call their function once per entry in that order,
//     which shows if the function has effects (EqualFunc also stops at
//     the first mismatch). maps.Clone, Copy and Equal walk the map too,
//     but their results do not depend on the order. See "Reviewed map
//     ranges" below for the two exemptions.
//   - reflect-map: no use (call, method value or method expression) of
//     reflect.Value.MapKeys, reflect.Value.MapRange,
//     reflect.(*MapIter).Reset, reflect.Value.Seq or reflect.Value.Seq2,
//     including through a type that embeds reflect.Value. These iterate a
//     map in Go's random order, invisibly to the map-range rule. Seq and
//     Seq2 are deterministic on slices, arrays, strings and integers, but
//     whether the value is a map is known only at run time, so every use
//     counts; the reviewed marker excuses one whose value is known not to
//     be a map. MapIter.Reset is listed because a zero MapIter plus Reset
//     iterates a map without MapRange. Printing a map with fmt (and
//     encoding/json's Marshal) is not a violation: fmt sorts map keys
//     since Go 1.12 and encoding/json sorts object keys, so their output
//     does not depend on the iteration order.
//   - float-transcendental: no use (call or function value) of the
//     approximate functions of package math: Exp, Exp2, Expm1, Log, Log2,
//     Log10, Log1p, Pow, Pow10, Cbrt, Hypot, Sin, Cos, Tan, Sincos, Asin,
//     Acos, Atan, Atan2, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh, Gamma,
//     Lgamma, Erf, Erfc, Erfinv, Erfcinv, J0, J1, Jn, Y0, Y1, Yn; and of
//     every math/cmplx function except Conj, Inf, IsInf, IsNaN and NaN
//     (the others are built on the math approximations: Abs and Sqrt on
//     Hypot, Phase on Atan2, and so on). IEEE 754 does not fix their
//     results, and Go computes them differently per platform: Exp, Log and
//     Hypot are assembly on amd64 (Exp also on arm64 and loong64, Hypot on
//     386, most of them on s390x) and pure Go elsewhere, and pure Go code may have its
//     x*y+z fused into one FMA instruction on arm64, ppc64le, s390x,
//     riscv64, loong64 and amd64 built with GOAMD64=v3. So one seed could
//     draw other values on another machine. Draw in integers instead (the
//     simulator's exponential gaps come from sim/prng.ExpNs). The marker
//     does not excuse this rule. Pow10 is a table lookup and one
//     multiplication, deterministic by itself, but it is banned all the
//     same: inlined, that product may fuse with the caller's addition,
//     and a constant or an integer power serves every deterministic use.
//     Allowed, because their results are exactly determined on every
//     platform: Sqrt (IEEE 754 requires it correctly rounded, and Go's
//     software fallback is), FMA (specified as x*y+z with a single
//     rounding), Mod and Remainder (the remainder is exactly
//     representable and computed exactly), Floor, Ceil, Trunc, Round,
//     RoundToEven, Modf, Frexp, Ldexp, Logb, Ilogb, Abs, Copysign, Dim,
//     Max, Min, Nextafter, Signbit, the bit conversions and the Inf/NaN
//     helpers. strconv's float parsing and formatting is correctly rounded
//     and allowed too.
//   - float-fused: no float multiplication (x*y, and x *= y) unless its
//     product is the direct operand of an explicit conversion to a float
//     type, float64(x*y), or to an integer type, and no complex
//     multiplication at all. The Go spec lets the compiler fuse x*y+z
//     into one FMA instruction, rounding once instead of twice, "possibly
//     across statements" (t := x*y; r = t + z), and gc does so on arm64,
//     ppc64le, s390x, riscv64, loong64 and amd64 built with GOAMD64=v3, so
//     the same source computes other bits on other machines. An explicit
//     float conversion rounds the product and the spec forbids fusing
//     past it; an integer conversion leaves no float product for an
//     addition to consume. A complex product is itself a pair of
//     multiply-adds (fused on arm64), which no conversion can reach.
//     Constant expressions are exact and exempt. The rule does not reason
//     about operands (x*0.5 is reported too) and the marker does not
//     excuse it.
//   - marker: a //detguard: comment that is malformed, lacks a reason,
//     names an unknown directive, or excuses nothing (no map iteration of
//     the map-range or reflect-map rules on its own line or the next).
//     Stale markers are reported so that they do not silently excuse code
//     added later.
//   - dependency: every package a guarded package links, directly or
//     through others (go list's Deps, tests excluded), is in the standard
//     library, is itself guarded, or is on the reviewed list ReviewedDeps
//     in modules.go with the reason a reviewer accepted it. The rules
//     above are not run on reviewed packages (their source is not ours), so
//     the reason must say why whatever they do (porcupine's and blake3's
//     goroutines, cpuid's look at the CPU) cannot reach an effect or the
//     trace. A package of this module outside the guarded set is a
//     violation too: it would carry the outside world in unguarded. An
//     entry that no guarded package reaches any more, or that has no
//     reason, is reported: a stale entry would excuse a later import
//     without a review. Raft, which core/ctrl imports, is on this list
//     with its review.
//
// # Reviewed map ranges
//
// A map range (or call of one of the maps functions above) is accepted
// when
//
//   - the maps iterator is passed directly, as the sequence argument, to
//     the standard library's slices.Sorted, slices.SortedFunc or
//     slices.SortedStableFunc (slices.Sorted(maps.Keys(m))), which
//     collect it and sort. The callee is resolved with go/types, so a
//     project function or method merely named sorted*/Sorted* earns no
//     exemption, and neither does ranging over the result of one: a name
//     promises an order that only a review can confirm. A comparator
//     passed to SortedFunc or SortedStableFunc must be a total order on
//     the elements, since the random order survives among elements it
//     calls equal; or
//   - the line of the for statement (or of the call), or the line just
//     above it, carries the reviewed marker with a non-empty reason.
//
// A reflect-map use is accepted only with the marker, on its line or the
// line above.
//
// The marker is
//
//	//detguard:order-independent <reason>
//
// and the reason must say why the order cannot matter, for example
// "//detguard:order-independent sums the counts; integer addition is
// commutative" (a float sum is not a valid excuse: float addition is not
// associative, so its result depends on the order).
// A helper that collects a map's keys and sorts them carries the marker on
// its range ("collected, then sorted below"); better still, it is written
// as slices.Sorted(maps.Keys(m)), which needs none.
//
// Rules import, go, select, chan, send and recv are syntactic and apply to
// every non-test .go file in a guarded directory, including files excluded
// by GOOS/GOARCH build constraints (but not files tagged "ignore"). The
// map-range, reflect-map, float-transcendental and float-fused rules need
// types: each package is type-checked with go/types and the source
// importer, and a package that fails to type-check is an error, never a
// silent pass.
package detguard
