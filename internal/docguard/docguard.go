package docguard

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Finding is one history reference: where it is and what it says.
type Finding struct {
	File string // slash-separated, relative to the scanned root
	Line int
	Rule string // ticket, spec or session
	Text string // the matched words, line breaks as spaces
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %q", f.File, f.Line, f.Rule, f.Text)
}

// rule is one pattern. Whitespace in the patterns is \s+, so that a
// reference wrapped across lines still matches once line breaks and
// comment markers are spaces.
type rule struct {
	name string
	re   *regexp.Regexp
}

const ordinals = `second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|` +
	`eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|` +
	`eighteenth|nineteenth|twentieth|\d+(?:st|nd|rd|th)`

var rules = []rule{
	{"ticket", regexp.MustCompile(`(?i)\bissues?\s+#?\d+`)},
	{"spec", regexp.MustCompile(`(?i)\bseeds?\s+00\d\b`)},
	{"session", regexp.MustCompile(`(?i)\b(?:(?:` + ordinals + `)\s+sessions?|this\s+session|sessions?\s+#?\d+)\b`)},
}

// span is one source line's part of a joined text: the text from
// offset at on comes from line.
type span struct {
	at, line int
}

// joined is prose with its line breaks (and comment markers) made
// spaces, and where each line begins in it.
type joined struct {
	text  strings.Builder
	spans []span
}

func (j *joined) add(line int, s string) {
	if j.text.Len() > 0 {
		j.text.WriteByte(' ')
	}
	j.spans = append(j.spans, span{j.text.Len(), line})
	j.text.WriteString(s)
}

// lineAt returns the source line of offset off of the joined text.
func (j *joined) lineAt(off int) int {
	i := sort.Search(len(j.spans), func(i int) bool { return j.spans[i].at > off }) - 1
	if i < 0 {
		i = 0
	}
	return j.spans[i].line
}

func (j *joined) find(file string) []Finding {
	var out []Finding
	s := j.text.String()
	for _, r := range rules {
		for _, m := range r.re.FindAllStringIndex(s, -1) {
			text := strings.Join(strings.Fields(s[m[0]:m[1]]), " ")
			out = append(out, Finding{File: file, Line: j.lineAt(m[0]), Rule: r.name, Text: text})
		}
	}
	return out
}

// CheckGo returns the history references in the comments of Go source
// src, named file in the findings. Code (string literals, identifiers)
// is never judged.
func CheckGo(file string, src []byte) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, cg := range f.Comments {
		var j joined
		for _, c := range cg.List {
			line := fset.Position(c.Pos()).Line
			t := c.Text
			if strings.HasPrefix(t, "//") {
				j.add(line, t[2:])
				continue
			}
			// A block comment: each of its lines in turn.
			t = strings.TrimSuffix(strings.TrimPrefix(t, "/*"), "*/")
			for i, l := range strings.Split(t, "\n") {
				j.add(line+i, strings.TrimLeft(l, " \t*"))
			}
		}
		out = append(out, j.find(file)...)
	}
	sortFindings(out)
	return out, nil
}

// CheckMarkdown returns the history references in Markdown text src,
// named file in the findings.
func CheckMarkdown(file string, src []byte) []Finding {
	var j joined
	for i, l := range strings.Split(string(src), "\n") {
		j.add(i+1, l)
	}
	out := j.find(file)
	sortFindings(out)
	return out
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(a, b int) bool { return fs[a].Line < fs[b].Line })
}

// skipDir reports whether a directory of the walk is left out: testdata,
// vendor, and names starting with "." or "_".
func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// markdownExempt reports whether Markdown file rel (slash-separated) is
// outside the rule: scenario material under scenarios/.
func markdownExempt(rel string) bool {
	return strings.HasPrefix(rel, "scenarios/")
}

// Scan walks the tree at root and returns every history reference in its
// Go comments and Markdown files.
func Scan(root string) ([]Finding, error) {
	var out []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(rel, ".go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fs, err := CheckGo(rel, src)
			if err != nil {
				return err
			}
			out = append(out, fs...)
		case strings.HasSuffix(rel, ".md") && !markdownExempt(rel):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, CheckMarkdown(rel, src)...)
		}
		return nil
	})
	return out, err
}
