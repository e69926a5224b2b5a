package seglog

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/sim/memfs"
	"github.com/sluicemq/sluice/sim/prng"
)

// logModel is the plain model of a log: its records and the length of the
// prefix that is durable.
type logModel struct {
	fs      *memfs.FS
	opts    Options
	log     *Log
	recs    []record.Record
	durable int
}

func (m *logModel) epochs() []EpochStart {
	var es []EpochStart
	for _, r := range m.recs {
		if len(es) == 0 || es[len(es)-1].Epoch != r.Epoch {
			es = append(es, EpochStart{Epoch: r.Epoch, Offset: r.Offset})
		}
	}
	return es
}

func (m *logModel) lastEpoch() uint64 {
	if len(m.recs) == 0 {
		return 1
	}
	return m.recs[len(m.recs)-1].Epoch
}

func (m *logModel) open(t *rapid.T) Recovery {
	l, r, err := Open(m.fs, "q/log", m.opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	m.log = l
	return r
}

// readLog reads the whole log through Read with small limits.
func readLog(t *rapid.T, l *Log) []record.Record {
	var out []record.Record
	for off := l.Start(); off < l.End(); {
		rs, err := l.Read(off, 5, 8000)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(rs) == 0 {
			t.Fatalf("Read(%d) empty below End %d", off, l.End())
		}
		out = append(out, rs...)
		off += uint64(len(rs))
	}
	return out
}

func equalRecord(a, b record.Record) bool {
	return a.Epoch == b.Epoch && a.Offset == b.Offset && a.Kind == b.Kind && bytes.Equal(a.Body, b.Body)
}

// recovered checks a reopened log after a crash: it must hold every durable
// record and then a prefix of the rest, never anything else; a damage report
// sits at its end. The model becomes what was recovered (DiscardDamage makes
// it durable).
func (m *logModel) recovered(t *rapid.T, r Recovery, exact bool) {
	got := readLog(t, m.log)
	n := len(got)
	if n < m.durable {
		t.Fatalf("lost durable records: recovered %d, durable %d (damage %v)", n, m.durable, r.Damage)
	}
	if n > len(m.recs) {
		t.Fatalf("recovered %d records, only %d appended", n, len(m.recs))
	}
	for i := range got {
		if !equalRecord(got[i], m.recs[i]) {
			t.Fatalf("record %d recovered as %v, appended %v", i, got[i], m.recs[i])
		}
	}
	if r.Start != 0 || r.End != uint64(n) {
		t.Fatalf("recovery bounds [%d, %d), read %d records", r.Start, r.End, n)
	}
	if exact && (n != m.durable || r.Damage != nil) {
		t.Fatalf("clean crash recovered %d records (durable %d), damage %v", n, m.durable, r.Damage)
	}
	if r.Damage != nil {
		if r.Damage.Offset != uint64(n) {
			t.Fatalf("damage at offset %d, valid end %d", r.Damage.Offset, n)
		}
		t.Logf("damage: %v", r.Damage)
		if err := m.log.DiscardDamage(); err != nil {
			t.Fatalf("DiscardDamage: %v", err)
		}
	}
	m.recs = m.recs[:n]
	m.durable = n
	if fmt.Sprint(r.Epochs) != fmt.Sprint(m.epochs()) {
		t.Fatalf("recovered epochs %v, model %v", r.Epochs, m.epochs())
	}
}

func TestLogModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &logModel{fs: memfs.New()}
		m.opts = Options{
			SegmentBytesMax:    rapid.SampledFrom([]int64{300, 4096, 20000, 1 << 20}).Draw(t, "segmentBytesMax"),
			WriteBufferBytes:   rapid.SampledFrom([]int{64, 5000, 1 << 16}).Draw(t, "writeBufferBytes"),
			IndexIntervalBytes: rapid.SampledFrom([]int64{1, 512, 4096}).Draw(t, "indexIntervalBytes"),
			SlotsPerSegment:    rapid.SampledFrom([]int{1, 3, 16, 4096}).Draw(t, "slotsPerSegment"),
		}
		if rapid.Bool().Draw(t, "preallocate") {
			m.opts.PreallocateBytes = m.opts.SegmentBytesMax + 1000
		}
		m.opts.ExtendBytes = rapid.SampledFrom([]int64{0, 100, 4096, 1 << 16}).Draw(t, "extendBytes")
		m.open(t)

		t.Repeat(map[string]func(*rapid.T){
			"append": func(t *rapid.T) {
				n := rapid.IntRange(1, 4).Draw(t, "n")
				epoch := m.lastEpoch()
				var recs []record.Record
				for i := 0; i < n; i++ {
					if rapid.IntRange(0, 9).Draw(t, "newEpoch") == 0 {
						epoch += uint64(rapid.IntRange(1, 3).Draw(t, "epochStep"))
					}
					size := rapid.OneOf(rapid.IntRange(0, 64), rapid.IntRange(0, 9*1024)).Draw(t, "bodyBytes")
					off := uint64(len(m.recs) + i)
					recs = append(recs, record.Record{
						Epoch:  epoch,
						Offset: off,
						Kind:   rapid.SampledFrom([]record.Kind{record.KindPublish, record.KindAck, record.KindEpoch}).Draw(t, "kind"),
						Body:   body(off^epoch<<32, size),
					})
				}
				if err := m.log.Append(recs); err != nil {
					t.Fatalf("Append: %v", err)
				}
				m.recs = append(m.recs, recs...)
			},
			"sync": func(t *rapid.T) {
				if err := m.log.Sync(); err != nil {
					t.Fatalf("Sync: %v", err)
				}
				m.durable = len(m.recs)
			},
			"truncate": func(t *rapid.T) {
				from := rapid.IntRange(0, len(m.recs)).Draw(t, "from")
				if err := m.log.TruncateFrom(uint64(from)); err != nil {
					t.Fatalf("TruncateFrom(%d): %v", from, err)
				}
				if from < len(m.recs) {
					m.durable = from // TruncateFrom syncs when it removes something (documented)
				}
				m.recs = m.recs[:from]
				if m.log.End() != uint64(from) {
					t.Fatalf("End %d after TruncateFrom(%d)", m.log.End(), from)
				}
			},
			"read": func(t *rapid.T) {
				from := rapid.IntRange(0, len(m.recs)).Draw(t, "from")
				recsMax := rapid.IntRange(0, 10).Draw(t, "recordsMax")
				bytesMax := rapid.IntRange(0, 20000).Draw(t, "bytesMax")
				rs, err := m.log.Read(uint64(from), recsMax, bytesMax)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if from < len(m.recs) && len(rs) == 0 {
					t.Fatalf("Read(%d) returned nothing", from)
				}
				if len(rs) > max(recsMax, 1) {
					t.Fatalf("Read returned %d records, max %d", len(rs), recsMax)
				}
				total := 0
				for i, r := range rs {
					if !equalRecord(r, m.recs[from+i]) {
						t.Fatalf("Read(%d)[%d] = %v, want %v", from, i, r, m.recs[from+i])
					}
					if i > 0 && total+len(r.Body) > bytesMax {
						t.Fatalf("Read exceeded bytesMax %d", bytesMax)
					}
					total += len(r.Body)
				}
			},
			"crash": func(t *rapid.T) {
				seed := rapid.Uint64().Draw(t, "crashSeed")
				m.fs.Crash(prng.New(seed))
				m.recovered(t, m.open(t), false)
			},
			"crashClean": func(t *rapid.T) {
				m.fs.CrashClean()
				m.recovered(t, m.open(t), true)
			},
			"reopen": func(t *rapid.T) {
				if err := m.log.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				r := m.open(t)
				m.durable = len(m.recs) // Open syncs what it recovered (documented)
				if r.Damage != nil {
					t.Fatalf("damage after a clean reopen: %v", r.Damage)
				}
				got := readLog(t, m.log)
				if len(got) != len(m.recs) {
					t.Fatalf("reopen: %d records, want %d", len(got), len(m.recs))
				}
				for i := range got {
					if !equalRecord(got[i], m.recs[i]) {
						t.Fatalf("reopen: record %d = %v, want %v", i, got[i], m.recs[i])
					}
				}
			},
			"": func(t *rapid.T) {
				if m.log.Start() != 0 || m.log.End() != uint64(len(m.recs)) {
					t.Fatalf("log [%d, %d), model %d records", m.log.Start(), m.log.End(), len(m.recs))
				}
				if fmt.Sprint(m.log.Epochs()) != fmt.Sprint(m.epochs()) {
					t.Fatalf("epochs %v, model %v", m.log.Epochs(), m.epochs())
				}
			},
		})
	})
}
