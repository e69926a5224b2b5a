package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/sluicemq/sluice/amqp/front"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/sim/memfs"
)

const exportAbout = `Reads one queue's log from a broker's data directory and writes the
messages its intact prefix holds, one JSON object a line: the records up to
the first damaged one (a torn or corrupt frame, or the end). It is how an
operator reads a queue that stays fenced because its log lost confirmed
records: the broker never serves a cut log, and this command never repairs
one. The log's files are copied into memory first and the copy is opened,
so the data directory is only read. Run it on a stopped broker, or on a
running one for a fenced queue (whose log nothing writes); QUEUE-ID is the
id sluice describe prints.

Each line: offset, epoch, settled (an ack record in the prefix settles it),
exchange, routing_key, the common properties, header (the AMQP content
header as the broker stores it, base64, with every property) and body
(base64). The summary on stderr gives the log's range, what was exported,
the damage where the scan stopped, and whether the log was already marked
as having lost records.

Example:
  sluice export --data-dir ./sluice-data --queue-id 1048576 > q.jsonl
`

// exportBytesMax bounds the files of one log the command copies into
// memory.
const exportBytesMax = 64 << 30

// exported is one message of the intact prefix, as a JSON line.
type exported struct {
	Offset        uint64 `json:"offset"`
	Epoch         uint64 `json:"epoch"`
	Settled       bool   `json:"settled"`
	Exchange      string `json:"exchange"`
	RoutingKey    string `json:"routing_key"`
	ContentType   string `json:"content_type,omitempty"`
	DeliveryMode  uint8  `json:"delivery_mode,omitempty"`
	MessageID     string `json:"message_id,omitempty"`
	CorrelationID string `json:"correlation_id,omitempty"`
	Header        string `json:"header"`
	Body          string `json:"body"`
}

func runExport(args []string, e env) int {
	c := newCommand("sluice export", "sluice export --data-dir DIR --queue-id ID [--out FILE]", exportAbout)
	dataDir := c.fs.String("data-dir", "./sluice-data", "the broker's data directory (sluice serve --data-dir)")
	queueID := c.fs.Uint64("queue-id", 0, "the queue's id (sluice describe prints it)")
	out := c.fs.String("out", "", "write the lines to FILE (default: standard output)")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 0 || *queueID == 0 {
		return c.fail(e, "want --queue-id ID and no arguments")
	}
	name := "q" + strconv.FormatUint(*queueID, 10)
	src := filepath.Join(*dataDir, "queues", name)
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		fmt.Fprintf(e.stderr, "sluice export: %s: no log of queue %d here (%v)\n", src, *queueID, err)
		return 2
	}
	mem := memfs.New()
	if err := copyIntoMem(mem, src, name); err != nil {
		fmt.Fprintf(e.stderr, "sluice export: copying %s: %v\n", src, err)
		return 1
	}
	l, rec, err := seglog.Open(mem, name, seglog.Options{})
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice export: %s does not open: %v\n", src, err)
		return 1
	}
	w := e.stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(e.stderr, "sluice export: %v\n", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	defer l.Close()
	n, settled, err := exportLog(w, l, rec)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice export: %v\n", err)
		return 1
	}
	damage := "none: the scan reached the log's end cleanly"
	if rec.Damage != nil {
		damage = rec.Damage.String()
	}
	fmt.Fprintf(e.stderr, "sluice export: queue %d: records [%d,%d) intact, %d messages exported (%d settled, %d not); damage: %s; marked as having lost records before: %v\n",
		*queueID, rec.Start, rec.End, n, settled, n-settled, damage, rec.Unrepaired)
	return 0
}

// copyIntoMem copies the directory tree src into mem under dir.
func copyIntoMem(mem *memfs.FS, src, dir string) error {
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := path.Join(dir, filepath.ToSlash(rel))
		if d.IsDir() {
			return mem.MkdirAll(to)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if total += int64(len(b)); total > exportBytesMax {
			return fmt.Errorf("the log's files exceed %d bytes", int64(exportBytesMax))
		}
		f, err := mem.Create(to)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(b, 0); err != nil {
			return err
		}
		return f.Sync()
	})
}

// exportLog writes every publish of l's intact prefix [rec.Start, rec.End)
// as a JSON line: a first pass finds the settled offsets, a second writes.
func exportLog(w io.Writer, l *seglog.Log, rec seglog.Recovery) (n, settledN int, err error) {
	const recordsAtOnce, bytesAtOnce = 4096, 16 << 20
	settled := map[uint64]bool{}
	for from := rec.Start; from < rec.End; {
		recs, err := l.Read(from, recordsAtOnce, bytesAtOnce)
		if err != nil || len(recs) == 0 {
			return 0, 0, fmt.Errorf("reading at %d: %v", from, err)
		}
		for i := range recs {
			if recs[i].Kind == record.KindAck {
				if o, ok := record.AckedOffset(recs[i].Body); ok {
					settled[o] = true
				}
			}
		}
		from = recs[len(recs)-1].Offset + 1
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for from := rec.Start; from < rec.End; {
		recs, err := l.Read(from, recordsAtOnce, bytesAtOnce)
		if err != nil || len(recs) == 0 {
			return n, settledN, fmt.Errorf("reading at %d: %v", from, err)
		}
		for i := range recs {
			r := &recs[i]
			if r.Kind != record.KindPublish {
				continue
			}
			exchange, key, c, err := front.DecodeRecordBody(r.Body)
			if err != nil {
				return n, settledN, fmt.Errorf("the publish at %d: %v", r.Offset, err)
			}
			h := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(c.Body)), Properties: c.Properties}
			header, err := wire.AppendContentHeader(nil, &h)
			if err != nil {
				return n, settledN, fmt.Errorf("the publish at %d: %v", r.Offset, err)
			}
			p := &c.Properties
			x := exported{Offset: r.Offset, Epoch: r.Epoch, Settled: settled[r.Offset], Exchange: exchange, RoutingKey: key,
				ContentType: p.ContentType, DeliveryMode: p.DeliveryMode, MessageID: p.MessageID, CorrelationID: p.CorrelationID,
				Header: base64.StdEncoding.EncodeToString(header), Body: base64.StdEncoding.EncodeToString(c.Body)}
			if err := enc.Encode(&x); err != nil {
				return n, settledN, err
			}
			n++
			if x.Settled {
				settledN++
			}
		}
		from = recs[len(recs)-1].Offset + 1
	}
	return n, settledN, bw.Flush()
}
