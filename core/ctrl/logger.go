package ctrl

import "fmt"

// LogLinesMax bounds the raft log lines held between two steps; lines past
// it are counted, not kept, and the count is reported as one note.
const LogLinesMax = 64

// traceLogger is raft's Logger. It never writes anywhere: it keeps the
// lines of one step (bounded by max) for the group to turn into trace
// notes. Debug lines are dropped (raft's debug output is per message).
// Fatal and Panic panic, as raft's own logger does: raft calls them only
// on a broken invariant, a programmer error.
type traceLogger struct {
	lines   []string
	max     int
	dropped int
}

func (l *traceLogger) add(level string, s string) {
	if len(l.lines) >= l.max {
		l.dropped++
		return
	}
	l.lines = append(l.lines, "raft "+level+": "+s)
}

// take returns the lines held since the last take and forgets them.
func (l *traceLogger) take() []string {
	out := l.lines
	if l.dropped > 0 {
		out = append(out, fmt.Sprintf("raft: %d log lines dropped (LogLinesMax=%d)", l.dropped, l.max))
	}
	l.lines, l.dropped = nil, 0
	return out
}

func (l *traceLogger) Debug(v ...interface{})                 {}
func (l *traceLogger) Debugf(format string, v ...interface{}) {}
func (l *traceLogger) Info(v ...interface{})                  { l.add("info", fmt.Sprint(v...)) }
func (l *traceLogger) Infof(format string, v ...interface{}) {
	l.add("info", fmt.Sprintf(format, v...))
}
func (l *traceLogger) Warning(v ...interface{}) { l.add("warn", fmt.Sprint(v...)) }
func (l *traceLogger) Warningf(format string, v ...interface{}) {
	l.add("warn", fmt.Sprintf(format, v...))
}
func (l *traceLogger) Error(v ...interface{}) { l.add("error", fmt.Sprint(v...)) }
func (l *traceLogger) Errorf(format string, v ...interface{}) {
	l.add("error", fmt.Sprintf(format, v...))
}
func (l *traceLogger) Fatal(v ...interface{}) { panic("raft fatal: " + fmt.Sprint(v...)) }
func (l *traceLogger) Fatalf(format string, v ...interface{}) {
	panic("raft fatal: " + fmt.Sprintf(format, v...))
}
func (l *traceLogger) Panic(v ...interface{}) { panic("raft panic: " + fmt.Sprint(v...)) }
func (l *traceLogger) Panicf(format string, v ...interface{}) {
	panic("raft panic: " + fmt.Sprintf(format, v...))
}
