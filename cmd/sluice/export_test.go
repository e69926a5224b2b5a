package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/front"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/io/seglog"
)

// TestExportIntactPrefix: a queue's log on real files, 2,000 publishes in
// ten synced rounds and an ack of every tenth, then 8 bytes flipped in the
// middle of its segment's frames. sluice export writes exactly the
// publishes before the damaged record, each with its exchange, key,
// properties and body, settled where an ack in the prefix says so, says
// where the scan stopped, and leaves the data directory's files as they
// were.
func TestExportIntactPrefix(t *testing.T) {
	dataDir := t.TempDir()
	const id, publishes = 1048576, 2000
	qname := fmt.Sprintf("q%d", id)
	if err := os.MkdirAll(filepath.Join(dataDir, "queues"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := fsio.New(filepath.Join(dataDir, "queues"))
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := seglog.Open(fs, qname, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := func(i int) string { return fmt.Sprintf("message %04d %s", i, strings.Repeat("x", i%50)) }
	offsetOf := map[uint64]int{} // publish offset -> message number
	acked := map[uint64]bool{}
	next := uint64(0)
	for round := range 10 {
		var recs []record.Record
		for i := round * publishes / 10; i < (round+1)*publishes/10; i++ {
			c := conn.Content{Properties: wire.Properties{Flags: wire.FlagContentType | wire.FlagMessageID, ContentType: "text/plain", MessageID: fmt.Sprint(i)}, Body: []byte(body(i))}
			b, err := front.EncodeRecordBody(nil, "", "orders", &c)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, record.Record{Epoch: 1, Offset: next, Kind: record.KindPublish, Body: b})
			offsetOf[next] = i
			next++
			if i%10 == 0 {
				recs = append(recs, record.Record{Epoch: 1, Offset: next, Kind: record.KindAck, Body: record.AckBody(next - 1)})
				acked[next-1] = true
				next++
			}
		}
		if err := l.Append(recs); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dataDir, "queues", qname, "00000000000000000000.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	slots := int64(binary.LittleEndian.Uint32(b[12:16]))
	framesAt, end := 32+32*slots, int64(len(b))
	for end > framesAt && b[end-1] == 0 {
		end--
	}
	mid := (framesAt + end) / 2
	for k := range int64(8) {
		b[mid+k] ^= 0xff
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, filepath.Join(dataDir, "queues"))

	var stdout, stderr bytes.Buffer
	if code := run([]string{"export", "--data-dir", dataDir, "--queue-id", fmt.Sprint(id)}, env{stdout: &stdout, stderr: &stderr}); code != 0 {
		t.Fatalf("export exited %d: %s", code, stderr.String())
	}
	var lines []exported
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var x exported
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, x)
	}
	if len(lines) == 0 || len(lines) >= publishes {
		t.Fatalf("%d messages exported, want some but fewer than the %d written (the damage is mid-log)\n%s", len(lines), publishes, stderr.String())
	}
	for k, x := range lines {
		i, ok := offsetOf[x.Offset]
		got, _ := base64.StdEncoding.DecodeString(x.Body)
		switch {
		case !ok || i != k:
			t.Fatalf("line %d: offset %d is message %d (%v), want message %d: the prefix in order, nothing skipped", k, x.Offset, i, ok, k)
		case string(got) != body(i) || x.RoutingKey != "orders" || x.ContentType != "text/plain" || x.MessageID != fmt.Sprint(i):
			t.Fatalf("line %d: %+v, body %q: want message %d as published", k, x, got, i)
		case x.Settled && !acked[x.Offset], !x.Settled && acked[x.Offset] && k < len(lines)-1:
			// (The last one's ack may lie past the damage.)
			t.Fatalf("line %d: settled=%v, the ack written says %v", k, x.Settled, acked[x.Offset])
		}
	}
	if s := stderr.String(); !strings.Contains(s, "damage: ") || strings.Contains(s, "damage: none") {
		t.Fatalf("summary %q: want the damage where the scan stopped", s)
	}
	if after := snapshotDir(t, filepath.Join(dataDir, "queues")); after != before {
		t.Fatalf("the data directory changed under export:\nbefore %s\nafter  %s", before, after)
	}
	t.Logf("%d of %d exported; %s", len(lines), publishes, strings.TrimSpace(stderr.String()))
}

// snapshotDir names every file under dir with its size and content hash.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(&b, "%s:%d:%x ", p, len(data), sumBytes(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func sumBytes(b []byte) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}
