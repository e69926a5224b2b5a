package daemon

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/fsio"
	"github.com/sluicemq/sluice/io/seglog"
)

// The SIGKILL test re-executes this test binary as a child that runs a
// broker on a data directory and prints "ready ADDR". The parent publishes
// with confirms to a queue of its own per round and kills the child with
// SIGKILL after a fixed number of confirms (and a fixed pause, so the kill
// lands among later publishes and their syncs), then restarts it on the
// same directory. At the end it reads every queue log on disk with the
// segment log's reader: every confirmed message is there, and none twice.
// A process kill is not a power loss (the page cache survives it; power
// loss is the simulator's job, and fsio's own tests count the fdatasyncs
// behind every acknowledged sync); this checks that a confirm is never sent
// ahead of the log's write and that recovery of a killed process's logs
// and metadata loses nothing confirmed.
const childDirEnv = "SLUICE_DAEMON_CHILD_DIR"

func TestSIGKILLChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("the child of TestSIGKILL")
	}
	s, err := Start(Config{DataDir: dir, AMQPAddr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		fmt.Printf("start failed: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ready %s\n", s.Addr())
	<-s.Done()
	os.Exit(1)
}

func startChild(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLChild$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q %v", line, err)
	}
	return cmd, addr
}

func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	dir := t.TempDir()
	// Per round: confirms before the kill, and the pause after them.
	rounds := []struct {
		confirms int
		pause    time.Duration
	}{{50, 0}, {333, 3 * time.Millisecond}, {1200, 7 * time.Millisecond}}
	confirmed := map[string]bool{}
	for r, round := range rounds {
		cmd, addr := startChild(t, dir)
		c, err := amqp.Dial("amqp://guest:guest@" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := c.Channel()
		queue := fmt.Sprintf("round%d", r)
		if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
			t.Fatalf("round %d: declare: %v", r, err)
		}
		ch.Confirm(false)
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 4096))
		// A publisher goroutine keeps publishing until the connection dies.
		bodies := make(chan string, 1<<16)
		go func() {
			defer close(bodies)
			for i := 0; ; i++ {
				b := fmt.Sprintf("r%d-msg-%07d", r, i)
				bodies <- b
				if err := ch.Publish("", queue, false, false, amqp.Publishing{Body: []byte(b)}); err != nil {
					return
				}
			}
		}()
		var sent []string
		n := 0
		for n < round.confirms {
			cf := <-confirms
			if !cf.Ack {
				t.Fatalf("round %d: nack of %d", r, cf.DeliveryTag)
			}
			for uint64(len(sent)) < cf.DeliveryTag {
				sent = append(sent, <-bodies)
			}
			confirmed[sent[cf.DeliveryTag-1]] = true
			n++
		}
		time.Sleep(round.pause)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		// Confirms that arrived before the kill count too.
		for cf := range confirms {
			if cf.Ack {
				for uint64(len(sent)) < cf.DeliveryTag {
					sent = append(sent, <-bodies)
				}
				confirmed[sent[cf.DeliveryTag-1]] = true
			}
		}
		c.Close()
		for range bodies {
		}
		t.Logf("round %d: %d confirmed so far", r, len(confirmed))
	}
	// A last start recovers the last kill's state (and must start).
	cmd, _ := startChild(t, dir)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	seen := map[string]int{}
	qdir := filepath.Join(dir, "queues")
	ents, err := queueLogDirs(qdir)
	if err != nil || len(ents) != len(rounds) {
		t.Fatalf("queue logs %v: %v", ents, err)
	}
	fs, err := fsio.New(qdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		l, rec, err := seglog.Open(fs, e.Name(), seglog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for o := rec.Start; o < rec.End; {
			rs, err := l.Read(o, 256, 1<<20)
			if err != nil || len(rs) == 0 {
				t.Fatalf("%s: read at %d: %v", e.Name(), o, err)
			}
			for _, r := range rs {
				if r.Kind != record.KindPublish {
					continue
				}
				i := bytes.LastIndexByte(r.Body, 'r')
				seen[string(r.Body[i:])]++
			}
			o += uint64(len(rs))
		}
		l.Close()
	}
	for b := range confirmed {
		if seen[b] != 1 {
			t.Errorf("confirmed %s is %d times in the logs", b, seen[b])
		}
	}
	for b, k := range seen {
		if k != 1 {
			t.Errorf("%s is %d times in the logs", b, k)
		}
	}
	t.Logf("%d confirmed, %d in the logs", len(confirmed), len(seen))
}
