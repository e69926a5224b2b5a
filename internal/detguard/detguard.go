package detguard

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/build/constraint"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Rule names, as they appear in reports.
const (
	RuleImport     = "import"
	RuleGo         = "go"
	RuleSelect     = "select"
	RuleChan       = "chan"
	RuleSend       = "send"
	RuleRecv       = "recv"
	RuleMapRange   = "map-range"
	RuleReflectMap = "reflect-map"
	RuleFloatTrans = "float-transcendental"
	RuleFloatFused = "float-fused"
	RuleMarker     = "marker"
)

// MarkerDirective is the reviewed-marker comment that excuses a map
// iteration (a map-range or reflect-map violation) on its own line or the
// line below. It must be followed by a reason.
const MarkerDirective = "//detguard:order-independent"

const directivePrefix = "//detguard:"

// reflectMapMethods are the reflect methods that start an iteration over a
// map, in the map's random order: Value.Seq and Value.Seq2 do so when the
// value is a map, which only the run time knows, so every call counts.
var reflectMapMethods = map[string]bool{
	"Value.MapKeys":  true,
	"Value.MapRange": true,
	"Value.Seq":      true,
	"Value.Seq2":     true,
	"MapIter.Reset":  true,
}

// approxMathFuncs are the functions of package math whose results are
// approximations that differ between platforms: assembly on some
// architectures, pure Go elsewhere, where the compiler may also fuse
// their multiply-adds into FMA instructions. doc.go gives the reason for
// each function that is allowed.
var approxMathFuncs = map[string]bool{
	"Exp": true, "Exp2": true, "Expm1": true, "Log": true, "Log2": true, "Log10": true, "Log1p": true,
	"Pow": true, "Pow10": true, "Cbrt": true, "Hypot": true,
	"Sin": true, "Cos": true, "Tan": true, "Sincos": true, "Asin": true, "Acos": true, "Atan": true, "Atan2": true,
	"Sinh": true, "Cosh": true, "Tanh": true, "Asinh": true, "Acosh": true, "Atanh": true,
	"Gamma": true, "Lgamma": true, "Erf": true, "Erfc": true, "Erfinv": true, "Erfcinv": true,
	"J0": true, "J1": true, "Jn": true, "Y0": true, "Y1": true, "Yn": true,
}

// exactCmplxFuncs are the only functions of math/cmplx that compute
// nothing approximate; the rest are built on approxMathFuncs.
var exactCmplxFuncs = map[string]bool{"Conj": true, "Inf": true, "IsInf": true, "IsNaN": true, "NaN": true}

// forbiddenImports are rejected exactly; forbiddenTrees also reject every
// package below them.
var (
	forbiddenImports = map[string]string{
		"os":           "process and file-system state; use io/vfs",
		"os/exec":      "subprocesses",
		"os/signal":    "signals",
		"time":         "wall clock; use the simulator clock",
		"math/rand":    "unseeded randomness; use sim/prng",
		"math/rand/v2": "unseeded randomness; use sim/prng",
		"crypto/rand":  "entropy; use sim/prng",
		"sync":         "concurrency",
		"sync/atomic":  "concurrency",
		"log":          "global output",
		"log/slog":     "global output",
		"syscall":      "operating system",
		"unsafe":       "memory layout",
		"io/ioutil":    "file system; use io/vfs",
		"hash/maphash": "seeds are random per process, so hashes differ between runs",
		"weak":         "a weak pointer turns nil whenever the garbage collector runs",
	}
	forbiddenTrees = map[string]string{
		"net":     "network; use the simulated transport",
		"runtime": "scheduler and platform state",
	}
)

// Violation is one rule broken at one place.
type Violation struct {
	File   string // path of the file, as given to the parser
	Line   int
	Col    int
	Rule   string
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", v.File, v.Line, v.Rule, v.Detail)
}

// Sort orders violations by file, line, column and rule.
func Sort(vs []Violation) {
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Detail < b.Detail
	})
}

// FindModuleRoot walks up from dir to the nearest directory holding go.mod.
func FindModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("detguard: no go.mod found above the working directory")
		}
		dir = parent
	}
}

// modulePath reads the module line of root/go.mod.
func modulePath(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("detguard: no module line in %s", filepath.Join(root, "go.mod"))
}

// InScope reports whether the package directory rel (slash-separated,
// relative to the module root) is guarded.
func InScope(rel string) bool {
	rel = filepath.ToSlash(filepath.Clean(rel))
	under := func(p string) bool { return rel == p || strings.HasPrefix(rel, p+"/") }
	switch {
	case under("core"):
		return true
	case rel == "io/vfs", rel == "io/seglog", rel == "io/driver", rel == "io/meta", rel == "io/meta/metakv":
		return true
	case under("sim"):
		return !under("sim/sweep")
	case rel == "amqp/wire", rel == "amqp/conn", rel == "amqp/front", rel == "amqp/replycheck":
		// The front door's codec, per-connection state machine, its
		// bridge to the core and the checker of its replies: pure, so
		// that one connection's transcript replays exactly and the
		// simulator can run the checker.
		return true
	}
	return false
}

// Packages returns the guarded package directories under the module root,
// as absolute paths in lexical order. A directory counts as a package when
// it holds at least one non-test .go file.
func Packages(root string) ([]string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || name == "vendor" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != root {
			// A nested module is not part of this one.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if !InScope(rel) {
			return nil
		}
		files, err := goFiles(path)
		if err != nil {
			return err
		}
		if len(files) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	return dirs, nil
}

// goFiles lists the non-test .go files of dir.
func goFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") &&
			!strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Checker type-checks and inspects packages. One Checker shares a file set
// and an importer cache across packages; it is not safe for concurrent use.
type Checker struct {
	fset *token.FileSet
	imp  types.Importer
}

// NewChecker returns a Checker using the go/types source importer, which
// works offline for the standard library and for packages of this module.
func NewChecker() *Checker {
	fset := token.NewFileSet()
	return &Checker{fset: fset, imp: importer.ForCompiler(fset, "source", nil)}
}

// Check runs all rules on the package in dir with a fresh Checker.
func Check(dir string) ([]Violation, error) {
	return NewChecker().Check(dir)
}

// CheckTree finds the guarded packages under the module root and checks
// each of them. The violations are sorted; files are reported relative to
// root.
func CheckTree(root string) (pkgs []string, vs []Violation, err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, nil, err
	}
	dirs, err := Packages(root)
	if err != nil {
		return nil, nil, err
	}
	c := NewChecker()
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		pkgs = append(pkgs, filepath.ToSlash(rel))
		pv, err := c.Check(dir)
		if err != nil {
			return pkgs, nil, err
		}
		for _, v := range pv {
			if r, err := filepath.Rel(root, v.File); err == nil {
				v.File = filepath.ToSlash(r)
			}
			vs = append(vs, v)
		}
	}
	Sort(vs)
	return pkgs, vs, nil
}

// Check runs all rules on the package in dir. It returns an error if the
// package cannot be read, parsed or type-checked; the violations are
// sorted.
func (c *Checker) Check(dir string) ([]Violation, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := FindModuleRoot(dir)
	if err != nil {
		return nil, err
	}
	modPath, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	pkgPath := modPath
	if rel != "." {
		pkgPath += "/" + filepath.ToSlash(rel)
	}

	// The files the compiler would build here, for type checking.
	ctxt := build.Default
	bp, err := ctxt.ImportDir(dir, 0)
	var noGo *build.NoGoError
	if err != nil && !errors.As(err, &noGo) {
		return nil, fmt.Errorf("detguard: %s: %w", dir, err)
	}
	built := map[string]bool{}
	if bp != nil {
		for _, n := range bp.GoFiles {
			built[n] = true
		}
		for _, n := range bp.CgoFiles {
			built[n] = true
		}
	}

	names, err := goFiles(dir)
	if err != nil {
		return nil, err
	}
	var all, typed []*ast.File
	for _, n := range names {
		path := filepath.Join(dir, n)
		f, err := parser.ParseFile(c.fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("detguard: %w", err)
		}
		if built[n] {
			typed = append(typed, f)
		} else if taggedIgnore(f) {
			continue
		}
		all = append(all, f)
	}

	var info *types.Info
	if len(typed) > 0 {
		info = &types.Info{
			Types: map[ast.Expr]types.TypeAndValue{},
			Uses:  map[*ast.Ident]types.Object{},
		}
		var typeErrs []error
		conf := types.Config{
			Importer:    c.imp,
			FakeImportC: true,
			Error:       func(err error) { typeErrs = append(typeErrs, err) },
		}
		conf.Check(pkgPath, c.fset, typed, info) //nolint:errcheck // errors collected above
		if len(typeErrs) > 0 {
			return nil, fmt.Errorf("detguard: type-checking %s failed: %w", pkgPath, errors.Join(typeErrs...))
		}
	}

	var vs []Violation
	for _, f := range all {
		fi := info
		if !built[filepath.Base(c.fset.Position(f.Pos()).Filename)] {
			fi = nil // not type-checked: syntactic rules only
		}
		vs = append(vs, c.checkFile(f, fi)...)
	}
	Sort(vs)
	return vs, nil
}

// taggedIgnore reports whether f carries a build constraint naming the tag
// "ignore" (the convention for generators and other non-package files).
func taggedIgnore(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, cm := range cg.List {
			if !constraint.IsGoBuild(cm.Text) && !constraint.IsPlusBuild(cm.Text) {
				continue
			}
			expr, err := constraint.Parse(cm.Text)
			if err != nil {
				continue
			}
			found := false
			expr.Eval(func(tag string) bool {
				if tag == "ignore" {
					found = true
				}
				return false
			})
			if found {
				return true
			}
		}
	}
	return false
}

type marker struct {
	pos    token.Position
	reason string
	used   bool
}

// checkFile applies the rules to one file. info is nil when the file was
// not type-checked; the map-range rule is then skipped.
func (c *Checker) checkFile(f *ast.File, info *types.Info) []Violation {
	var vs []Violation
	report := func(pos token.Pos, rule, format string, args ...any) {
		p := c.fset.Position(pos)
		vs = append(vs, Violation{File: p.Filename, Line: p.Line, Col: p.Column, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}

	// Rule 1: imports.
	for _, is := range f.Imports {
		path := strings.Trim(is.Path.Value, "`\"")
		if why, ok := forbiddenImports[path]; ok {
			report(is.Pos(), RuleImport, "%q is forbidden in deterministic code (%s)", path, why)
			continue
		}
		for tree, why := range forbiddenTrees {
			if path == tree || strings.HasPrefix(path, tree+"/") {
				report(is.Pos(), RuleImport, "%q is forbidden in deterministic code (%s)", path, why)
			}
		}
	}

	// Markers, by line.
	markers := map[int]*marker{}
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			if !strings.HasPrefix(cm.Text, directivePrefix) {
				continue
			}
			p := c.fset.Position(cm.Pos())
			rest, ok := strings.CutPrefix(cm.Text, MarkerDirective)
			if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
				report(cm.Pos(), RuleMarker, "unknown directive %q; the only one is %s <reason>", strings.Fields(cm.Text)[0], MarkerDirective)
				continue
			}
			reason := strings.TrimSpace(rest)
			if reason == "" {
				report(cm.Pos(), RuleMarker, "%s needs a reason saying why the order cannot matter", MarkerDirective)
				continue
			}
			markers[p.Line] = &marker{pos: p, reason: reason}
		}
	}
	excused := func(pos token.Pos) bool {
		line := c.fset.Position(pos).Line
		for _, l := range []int{line, line - 1} {
			if m := markers[l]; m != nil {
				m.used = true
				return true
			}
		}
		return false
	}

	// Sequences passed directly to the standard library's slices.Sorted,
	// SortedFunc or SortedStableFunc, which collect them and sort.
	sortedArgs := map[ast.Expr]bool{}
	if info != nil {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 && isStdSortedCall(call, info) {
				sortedArgs[ast.Unparen(call.Args[0])] = true
			}
			return true
		})
	}

	// Float products that are the operand of an explicit conversion to a
	// float type (which rounds them, so the compiler may not fuse them
	// with a later addition) or to an integer type (no addition can
	// consume them).
	rounded := map[ast.Expr]bool{}
	if info != nil {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			if tv, ok := info.Types[call.Fun]; ok && tv.IsType() && underlyingIs(tv.Type, isFloatOrIntBasic) {
				rounded[ast.Unparen(call.Args[0])] = true
			}
			return true
		})
	}

	// The other rules.
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), RuleGo, "go statement: goroutines are scheduled nondeterministically")
		case *ast.SelectStmt:
			report(n.Pos(), RuleSelect, "select statement: case choice is random")
		case *ast.ChanType:
			report(n.Pos(), RuleChan, "channel type: channels imply concurrency")
		case *ast.SendStmt:
			report(n.Arrow, RuleSend, "channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				report(n.OpPos, RuleRecv, "channel receive")
			}
		case *ast.RangeStmt:
			if info == nil {
				break
			}
			t := info.TypeOf(n.X)
			if t == nil {
				break
			}
			if isChan(t) {
				report(n.For, RuleRecv, "range over a channel")
				break
			}
			if !isMap(t) || excused(n.For) {
				break
			}
			report(n.For, RuleMapRange, "range over %s: iteration order is random; range over slices.Sorted(maps.Keys(m)) or add %s <reason>", types.TypeString(t, qualifier), MarkerDirective)
		case *ast.BinaryExpr:
			if info == nil || n.Op != token.MUL {
				break
			}
			tv, ok := info.Types[n]
			if !ok || tv.Value != nil {
				break // constant: computed exactly at compile time
			}
			switch {
			case underlyingIs(tv.Type, isComplexBasic):
				report(n.OpPos, RuleFloatFused, "complex multiplication: its multiply-adds may be fused into FMA on some platforms; keep complex arithmetic out of deterministic code")
			case underlyingIs(tv.Type, isFloatBasic) && !rounded[n]:
				report(n.OpPos, RuleFloatFused, "float multiplication may be fused with an addition into FMA on some platforms; round it explicitly, as float64(x*y), or compute in integers")
			}
		case *ast.AssignStmt:
			if info == nil || n.Tok != token.MUL_ASSIGN || len(n.Lhs) != 1 {
				break
			}
			if t := info.TypeOf(n.Lhs[0]); t != nil && underlyingIs(t, func(u types.Type) bool { return isFloatBasic(u) || isComplexBasic(u) }) {
				report(n.TokPos, RuleFloatFused, "*= on a float may be fused with a later addition into FMA on some platforms; write x = float64(x * y)")
			}
		case *ast.Ident:
			if info == nil {
				break
			}
			if name, ok := approxFloatFunc(n, info); ok {
				report(n.Pos(), RuleFloatTrans, "%s is an approximation whose result differs between platforms; compute in integers (see sim/prng.ExpNs)", name)
			}
		case *ast.SelectorExpr:
			if info == nil {
				break
			}
			name, ok := reflectMapMethod(n, info)
			if !ok || excused(n.Sel.Pos()) {
				break
			}
			report(n.Sel.Pos(), RuleReflectMap, "reflect.%s iterates a map in random order; sort the keys or add %s <reason>", name, MarkerDirective)
		case *ast.CallExpr:
			if info == nil {
				break
			}
			name, ok := mapsIterCall(n, info)
			if !ok || sortedArgs[n] || excused(n.Pos()) {
				break
			}
			if name == "DeleteFunc" || name == "EqualFunc" {
				report(n.Pos(), RuleMapRange, "maps.%s calls its function in random map order; add %s <reason> if the function has no effects", name, MarkerDirective)
				break
			}
			report(n.Pos(), RuleMapRange, "maps.%s yields in random order; pass it directly to slices.Sorted, SortedFunc or SortedStableFunc or add %s <reason>", name, MarkerDirective)
		}
		return true
	})

	// Stale markers. Only meaningful where types were available.
	if info != nil {
		for _, m := range markers {
			if !m.used {
				vs = append(vs, Violation{File: m.pos.Filename, Line: m.pos.Line, Col: m.pos.Column, Rule: RuleMarker,
					Detail: "marker excuses nothing: no map iteration on this line or the next"})
			}
		}
	}
	return vs
}

func qualifier(p *types.Package) string { return p.Name() }

// stdSortedFuncs are the standard library functions that collect a
// sequence into a slice and sort it. Only these earn a maps iterator its
// exemption: the callee is resolved with go/types, so a project function
// that merely has a sorting name gets none.
var stdSortedFuncs = map[string]bool{"Sorted": true, "SortedFunc": true, "SortedStableFunc": true}

// isStdSortedCall reports whether call invokes slices.Sorted,
// slices.SortedFunc or slices.SortedStableFunc of the standard library.
func isStdSortedCall(call *ast.CallExpr, info *types.Info) bool {
	fn := calleeFunc(call, info)
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "slices" &&
		fn.Signature().Recv() == nil && stdSortedFuncs[fn.Name()]
}

// mapsIterCall reports whether call is one of the standard library's
// maps functions that walk a map in its random order where the order can
// show: the iterators Keys, Values and All, and DeleteFunc and EqualFunc,
// which call a function per entry (EqualFunc stops at the first
// mismatch). Clone, Copy and Equal also walk the map, but their results do
// not depend on the order.
func mapsIterCall(call *ast.CallExpr, info *types.Info) (string, bool) {
	fn := calleeFunc(call, info)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "maps" {
		return "", false
	}
	switch fn.Name() {
	case "Keys", "Values", "All", "DeleteFunc", "EqualFunc":
		return fn.Name(), true
	}
	return "", false
}

// calleeFunc resolves the function a call invokes when it is named
// directly (plain, qualified or explicitly instantiated); it returns nil
// for calls of function values, conversions and builtins.
func calleeFunc(call *ast.CallExpr, info *types.Info) *types.Func {
	fun := ast.Unparen(call.Fun)
	switch x := fun.(type) {
	case *ast.IndexExpr:
		fun = ast.Unparen(x.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(x.X)
	}
	var id *ast.Ident
	switch x := fun.(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return nil
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok {
		return nil
	}
	return fn.Origin()
}

// approxFloatFunc reports whether id refers (in a call or as a function
// value) to one of approxMathFuncs or to a math/cmplx function other than
// exactCmplxFuncs. It returns the qualified name.
func approxFloatFunc(id *ast.Ident, info *types.Info) (string, bool) {
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Signature().Recv() != nil {
		return "", false
	}
	switch fn.Pkg().Path() {
	case "math":
		return "math." + fn.Name(), approxMathFuncs[fn.Name()]
	case "math/cmplx":
		return "cmplx." + fn.Name(), !exactCmplxFuncs[fn.Name()]
	}
	return "", false
}

// reflectMapMethod reports whether sel names (in a call, a method value or
// a method expression) one of reflectMapMethods, including through a
// struct that embeds reflect.Value. It returns "Type.Method".
func reflectMapMethod(sel *ast.SelectorExpr, info *types.Info) (string, bool) {
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "reflect" {
		return "", false
	}
	recv := fn.Signature().Recv()
	if recv == nil {
		return "", false
	}
	t := types.Unalias(recv.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	named, ok := t.(*types.Named)
	if !ok {
		return "", false
	}
	name := named.Obj().Name() + "." + fn.Name()
	return name, reflectMapMethods[name]
}

// isMap reports whether ranging over a value of type t iterates a map: its
// underlying type is a map, or it is a type parameter whose constraint
// admits a map.
func isMap(t types.Type) bool {
	return underlyingIs(t, func(u types.Type) bool { _, ok := u.(*types.Map); return ok })
}

func isFloatBasic(u types.Type) bool {
	b, ok := u.(*types.Basic)
	return ok && b.Info()&types.IsFloat != 0
}

func isFloatOrIntBasic(u types.Type) bool {
	b, ok := u.(*types.Basic)
	return ok && b.Info()&(types.IsFloat|types.IsInteger) != 0
}

func isComplexBasic(u types.Type) bool {
	b, ok := u.(*types.Basic)
	return ok && b.Info()&types.IsComplex != 0
}

func isChan(t types.Type) bool {
	return underlyingIs(t, func(u types.Type) bool { _, ok := u.(*types.Chan); return ok })
}

func underlyingIs(t types.Type, pred func(types.Type) bool) bool {
	if tp, ok := types.Unalias(t).(*types.TypeParam); ok {
		iface, ok := tp.Constraint().Underlying().(*types.Interface)
		if !ok {
			return false
		}
		for i := 0; i < iface.NumEmbeddeds(); i++ {
			e := iface.EmbeddedType(i)
			if u, ok := e.(*types.Union); ok {
				for j := 0; j < u.Len(); j++ {
					if pred(u.Term(j).Type().Underlying()) {
						return true
					}
				}
				continue
			}
			if underlyingIs(e, pred) {
				return true
			}
		}
		return false
	}
	return pred(t.Underlying())
}
