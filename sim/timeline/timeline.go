// Package timeline draws one simulated run as a self-contained HTML page:
// per broker, a lane over simulated time with its process lifetimes,
// power losses, exits and pauses, and the faults that were armed and that
// struck; per queue, its owner and epoch over time; confirms per second;
// coverage marks and the checkers' failures. Hovering an event shows its
// trace line.
//
// It is built from the run's trace lines alone (every line carries its
// instant; the world notes faults, process starts and stops, marks), so it
// needs no hook into the world: a Builder is an io.Writer that the trace
// is written to. The page embeds its data, style and script; it fetches
// nothing, and opens from disk.
package timeline

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"html/template"
	"io"
	"slices"
	"strconv"
)

//go:embed page.html
var pageFS embed.FS

var page = template.Must(template.ParseFS(pageFS, "page.html"))

// Limits: every list the builder keeps is bounded, so a long run makes a
// page of bounded size (what is dropped is counted and said on the page).
const (
	EventsMax     = 20_000  // events (faults, stops, marks, ...) drawn
	SegmentsMax   = 20_000  // process, pause and epoch segments
	lineBytesMax  = 1 << 20 // a trace line; longer ones are skipped
	subscribesMax = 4096    // subscribe requests remembered (their replies are not confirms)
	SecondsMax    = 1300    // confirms-per-second buckets (DurationMsMax + DrainMsMax, in s)
)

// Meta describes the run: what the page's header says and the lanes it
// draws.
type Meta struct {
	Title      string
	Seed       uint64
	Profile    string // the profile's one-line form
	Brokers    int
	Queues     []Queue
	WorkloadNs int64 // when the drain began (faults off)
	Reproduce  string
}

// Queue is one queue's lane of owners and epochs. Render adds a lane for
// every queue whose appends the trace shows (the controller places queues
// while the run goes, so their ids are known only from the trace).
type Queue struct {
	ID uint64
}

// Result is the run's outcome, known at its end.
type Result struct {
	Verdict  string // "ok" or "FAIL(n)"
	Hash     string
	EndNs    int64
	Failures []Failure
}

// Failure is one checker failure, drawn at its instant.
type Failure struct {
	Checker string
	AtNs    int64
	Line    uint64
	Detail  string
}

// Event is one instant on a lane. Lane is a broker number, 0 for the
// cluster lane (cluster-wide faults, marks, the drain).
type Event struct {
	AtNs  int64  `json:"t"`
	Lane  int    `json:"lane"`
	Kind  string `json:"kind"`  // fault kind, "stop", "struck", "mark", "drain", "refused", ...
	Class string `json:"class"` // how it is drawn: fault, struck, stop, mark, drain, note
	DurNs int64  `json:"dur,omitempty"`
	Line  uint64 `json:"line"`
	Text  string `json:"text"` // the trace line
}

// Segment is a stretch of time on a lane: a process's life, a pause, or a
// queue's epoch under one owner.
type Segment struct {
	Lane     int    `json:"lane"`  // broker, or queue id for epochs
	Class    string `json:"class"` // process, pause, epoch
	FromNs   int64  `json:"from"`
	ToNs     int64  `json:"to"` // -1: open until the end
	Label    string `json:"label"`
	Line     uint64 `json:"line"` // the trace line that began it
	Text     string `json:"text"`
	Epoch    uint64 `json:"epoch,omitempty"`
	Owner    int    `json:"owner,omitempty"`
	open     bool
	procInc  string
	queueKey uint64
}

// Builder collects a run's trace lines; Render draws them.
type Builder struct {
	meta     Meta
	partial  []byte
	line     uint64
	events   []Event
	segs     []Segment
	dropped  uint64
	confirms []uint32 // per simulated second
	// subscribes: (node, client, request id) of subscribe requests,
	// whose confirmed replies are not publish confirms.
	subscribes [][3]uint64
	lastNs     int64
}

// New returns a builder for a run described by m.
func New(m Meta) *Builder {
	return &Builder{meta: m}
}

// Write takes trace text, in any chunks; lines are counted from 1, so the
// builder must see the trace from its first line, unfiltered.
func (b *Builder) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(b.partial)+len(p) <= lineBytesMax {
				b.partial = append(b.partial, p...)
			} else {
				b.partial = append(b.partial[:0], "-"...) // too long: skipped, still counted
			}
			break
		}
		line := p[:i]
		if len(b.partial) > 0 {
			if len(b.partial)+len(line) <= lineBytesMax {
				line = append(b.partial, line...)
			} else {
				line = nil
			}
			b.partial = b.partial[:0]
		}
		b.line++
		b.take(line)
		p = p[i+1:]
	}
	return n, nil
}

func (b *Builder) addEvent(e Event) {
	if len(b.events) >= EventsMax {
		b.dropped++
		return
	}
	b.events = append(b.events, e)
}

func (b *Builder) addSegment(s Segment) {
	if len(b.segs) >= SegmentsMax {
		b.dropped++
		return
	}
	b.segs = append(b.segs, s)
}

// closeSegments ends the open segments of class on lane at ns.
func (b *Builder) closeSegments(class string, lane int, ns int64) {
	for i := range b.segs {
		s := &b.segs[i]
		if s.open && s.Class == class && s.Lane == lane {
			s.ToNs, s.open = ns, false
		}
	}
}

// take reads one trace line.
func (b *Builder) take(line []byte) {
	ns, rest, ok := instant(line)
	if !ok {
		return
	}
	b.lastNs = ns
	text := string(line)
	if note, isNote := bytes.CutPrefix(rest, []byte("* ")); isNote {
		b.note(ns, note, text)
		return
	}
	// "nX < input" or "nX > effect"
	f := bytes.Fields(rest)
	if len(f) < 3 {
		return
	}
	node, ok := nodeNum(f[0])
	if !ok {
		return
	}
	dir, words := string(f[1]), f[2:]
	switch {
	case dir == "<" && string(words[0]) == "client" && len(words) >= 3 && string(words[2]) == "subscribe":
		if len(b.subscribes) < subscribesMax {
			b.subscribes = append(b.subscribes, [3]uint64{uint64(node), kv(words, "c"), kv(words, "id")})
		}
	case dir == ">" && string(words[0]) == "reply" && len(words) >= 4 && string(words[3]) == "confirmed":
		key := [3]uint64{uint64(node), kv(words, "c"), kv(words, "id")}
		for _, s := range b.subscribes {
			if s == key {
				return
			}
		}
		if sec := ns / 1e9; sec >= 0 && sec < SecondsMax {
			for int64(len(b.confirms)) <= sec {
				b.confirms = append(b.confirms, 0)
			}
			b.confirms[sec]++
		}
	case dir == ">" && string(words[0]) == "send" && len(words) >= 3 && string(words[2]) == "append":
		// The sender of appends owns the queue in that epoch.
		q, e := kv(words, "q"), kv(words, "e")
		for i := len(b.segs) - 1; i >= 0; i-- {
			s := &b.segs[i]
			if s.Class == "epoch" && s.queueKey == q && s.open {
				if s.Owner == node && s.Epoch == e {
					return
				}
				s.ToNs, s.open = ns, false
				break
			}
		}
		b.addSegment(Segment{Lane: int(q), Class: "epoch", FromNs: ns, ToNs: -1, open: true, queueKey: q,
			Label: "n" + strconv.Itoa(node) + " e=" + strconv.FormatUint(e, 10), Line: b.line, Text: text, Epoch: e, Owner: node})
	}
}

// note reads a world note.
func (b *Builder) note(ns int64, note []byte, text string) {
	f := bytes.Fields(note)
	if len(f) == 0 {
		return
	}
	switch string(f[0]) {
	case "start":
		// "start nX inc=K"
		if n, ok := nodeNum(f1(f)); ok {
			b.addSegment(Segment{Lane: n, Class: "process", FromNs: ns, ToNs: -1, open: true,
				Label: "n" + strconv.Itoa(n) + " " + string(f2(f)), Line: b.line, Text: text})
		}
	case "stop":
		// "stop nX inc=K power-loss|exit"
		if n, ok := nodeNum(f1(f)); ok {
			b.closeSegments("process", n, ns)
			b.closeSegments("pause", n, ns)
			kind := "stop"
			if len(f) >= 4 {
				kind = string(f[3])
			}
			b.addEvent(Event{AtNs: ns, Lane: n, Kind: kind, Class: "stop", Line: b.line, Text: text})
			for i := range b.segs {
				if s := &b.segs[i]; s.open && s.Class == "epoch" && s.Owner == n {
					s.ToNs, s.open = ns, false
				}
			}
		}
	case "resume":
		if n, ok := nodeNum(f1(f)); ok {
			b.closeSegments("pause", n, ns)
		}
	case "fault":
		// "fault at=NS KIND nX[->nY] [dur=D][: detail]"
		if len(f) < 3 {
			return
		}
		kind := string(f[2])
		lane := 0
		if len(f) >= 4 {
			w := bytes.TrimSuffix(f[3], []byte(":"))
			if i := bytes.Index(w, []byte("->")); i >= 0 {
				w = w[:i]
			}
			if n, ok := nodeNum(w); ok {
				lane = n
			}
		}
		var dur int64
		for _, w := range f[3:] {
			if v, ok := bytes.CutPrefix(bytes.TrimSuffix(w, []byte(":")), []byte("dur=")); ok {
				dur, _ = strconv.ParseInt(string(v), 10, 64)
			}
		}
		b.addEvent(Event{AtNs: ns, Lane: lane, Kind: kind, Class: "fault", DurNs: dur, Line: b.line, Text: text})
		if kind == "pause" && lane > 0 {
			b.addSegment(Segment{Lane: lane, Class: "pause", FromNs: ns, ToNs: -1, open: true, Label: "paused", Line: b.line, Text: text})
		}
	case "struck":
		// "struck KIND nX ..."
		if len(f) >= 3 {
			n, _ := nodeNum(bytes.TrimSuffix(f[2], []byte(":")))
			b.addEvent(Event{AtNs: ns, Lane: n, Kind: string(f[1]), Class: "struck", Line: b.line, Text: text})
		}
	case "mark":
		if len(f) >= 2 {
			b.addEvent(Event{AtNs: ns, Lane: 0, Kind: string(f[1]), Class: "mark", Line: b.line, Text: text})
		}
	case "drain:":
		b.addEvent(Event{AtNs: ns, Lane: 0, Kind: "drain", Class: "drain", Line: b.line, Text: text})
	default:
		// "nX refuses a frame ...", "nX log of queue N failed ...", ...
		if n, ok := nodeNum(f[0]); ok {
			kind := "note"
			if len(f) >= 2 && string(f[1]) == "refuses" {
				kind = "refused-frame"
			} else if bytes.Contains(note, []byte("failed")) {
				kind = "log-failed"
			}
			b.addEvent(Event{AtNs: ns, Lane: n, Kind: kind, Class: "note", Line: b.line, Text: text})
		}
	}
}

func f1(f [][]byte) []byte {
	if len(f) > 1 {
		return f[1]
	}
	return nil
}

func f2(f [][]byte) []byte {
	if len(f) > 2 {
		return f[2]
	}
	return nil
}

// instant reads "t=S.NNNNNNNNNs " at the start of a line and returns the
// instant and the rest.
func instant(line []byte) (int64, []byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("t="))
	sp := bytes.IndexByte(rest, ' ')
	if !ok || sp < 12 || rest[sp-1] != 's' || rest[sp-11] != '.' {
		return 0, nil, false
	}
	sec, err1 := strconv.ParseInt(string(rest[:sp-11]), 10, 64)
	frac, err2 := strconv.ParseInt(string(rest[sp-10:sp-1]), 10, 64)
	if err1 != nil || err2 != nil || sec < 0 || sec > 1<<32 {
		return 0, nil, false
	}
	return sec*1e9 + frac, rest[sp+1:], true
}

// nodeNum reads "n3".
func nodeNum(w []byte) (int, bool) {
	if len(w) < 2 || w[0] != 'n' {
		return 0, false
	}
	n, err := strconv.Atoi(string(w[1:]))
	return n, err == nil && n >= 1 && n <= 64
}

// kv returns the value of key=N among words, 0 if absent.
func kv(words [][]byte, key string) uint64 {
	for _, w := range words {
		if v, ok := bytes.CutPrefix(w, []byte(key+"=")); ok {
			n, _ := strconv.ParseUint(string(v), 10, 64)
			return n
		}
	}
	return 0
}

// pageData is what the page's script draws.
type pageData struct {
	Meta     Meta      `json:"meta"`
	Result   Result    `json:"result"`
	Events   []Event   `json:"events"`
	Segments []Segment `json:"segments"`
	Confirms []uint32  `json:"confirms"`
	Dropped  uint64    `json:"dropped"`
	Lines    uint64    `json:"lines"`
}

// Render writes the page for the lines seen, with the run's result.
func (b *Builder) Render(w io.Writer, r Result) error {
	if r.EndNs == 0 {
		r.EndNs = b.lastNs
	}
	if r.Failures == nil {
		r.Failures = []Failure{}
	}
	for i := range b.segs {
		if b.segs[i].open {
			b.segs[i].ToNs = r.EndNs
		}
	}
	d := pageData{Meta: b.meta, Result: r, Events: b.events, Segments: b.segs, Confirms: b.confirms, Dropped: b.dropped, Lines: b.line}
	if d.Events == nil {
		d.Events = []Event{}
	}
	if d.Segments == nil {
		d.Segments = []Segment{}
	}
	if d.Confirms == nil {
		d.Confirms = []uint32{}
	}
	d.Meta.Queues = slices.Clone(d.Meta.Queues)
	for _, s := range b.segs {
		if s.Class == "epoch" && !slices.ContainsFunc(d.Meta.Queues, func(q Queue) bool { return q.ID == s.queueKey }) {
			d.Meta.Queues = append(d.Meta.Queues, Queue{ID: s.queueKey})
		}
	}
	slices.SortFunc(d.Meta.Queues, func(a, b Queue) int { return cmp.Compare(a.ID, b.ID) })
	if d.Meta.Queues == nil {
		d.Meta.Queues = []Queue{}
	}
	js, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return page.Execute(w, struct {
		Title string
		Data  template.JS
	}{Title: b.meta.Title, Data: template.JS(js)})
}
