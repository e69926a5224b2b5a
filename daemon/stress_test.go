package daemon

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestFrontDoorStress: many short amqp091-go connections at once against
// one broker, each of which declares a few queues (accepted and refused
// declarations mixed), consumes from and cancels on the accepted ones, and
// closes. Every call must be answered: an accepted declaration with
// declare-ok, a refused one with its channel closed with the expected
// code, a consume with consume-ok, a cancel with cancel-ok, a close with
// close-ok. A call that has no answer within stressCallBound fails the
// test, naming the call (its socket is then closed to free the worker).
//
// Sizes and seed come from the environment, so that the short form runs
// in `go test ./...` and CI, and the long one is a recipe (`just
// stress-front`, docs/daemon.md):
//
//	SLUICE_STRESS_CONNS     concurrent connections (default 8)
//	SLUICE_STRESS_DECLARES  declarations in all (default 400)
//	SLUICE_STRESS_SEED      the workers' draws (default 1; never the clock)
//
// The figures printed (declarations, accepted, refused by code, consumes,
// connections, the run's rate) are the broker's behaviour under load, not
// a test of its speed: nothing here is timed but the hang bound.
func TestFrontDoorStress(t *testing.T) {
	conns := stressEnv(t, "SLUICE_STRESS_CONNS", 8)
	total := stressEnv(t, "SLUICE_STRESS_DECLARES", 400)
	seed := stressEnv(t, "SLUICE_STRESS_SEED", 1)
	t.Logf("stress: %d connections at once, %d declarations, seed %d (SLUICE_STRESS_SEED)", conns, total, seed)
	s := startServer(t, t.TempDir())
	defer stopServer(t, s)

	st := &stressRun{t: t, url: "amqp://guest:guest@" + s.Addr().String() + "/", total: int64(total)}
	st.workers = make([]stressWorker, conns)
	stop := make(chan struct{})
	monitorDone := make(chan struct{})
	go st.monitor(stop, monitorDone)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range st.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.work(&st.workers[i], rand.New(rand.NewPCG(uint64(seed), uint64(i))))
		}()
	}
	wg.Wait()
	close(stop)
	<-monitorDone
	took := time.Since(start)
	t.Logf("stress: %d declarations answered (%d accepted, %d refused 406, %d refused 404), %d consumes and cancels, %d connections, in %v (%.0f declarations/s)",
		st.declared.Load(), st.accepted.Load(), st.refused406.Load(), st.refused404.Load(), st.consumed.Load(), st.sessions.Load(),
		took.Round(time.Millisecond), float64(st.declared.Load())/took.Seconds())
	if st.failed.Load() {
		t.Fatal("some calls were not answered as they must be (above)")
	}
	if st.declared.Load() < int64(total) || st.accepted.Load() == 0 || st.refused406.Load() == 0 || st.consumed.Load() == 0 {
		t.Fatalf("the mix did not run: %d declarations, %d accepted, %d refused, %d consumes", st.declared.Load(), st.accepted.Load(), st.refused406.Load(), st.consumed.Load())
	}
}

// stressCallBound: a call without an answer for this long is a hang. It
// is a liveness bound, far above any answer's time, not a speed target.
const stressCallBound = 30 * time.Second

func stressEnv(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

type stressRun struct {
	t       *testing.T
	url     string
	total   int64
	workers []stressWorker

	next                                                 atomic.Int64 // declarations handed out
	declared, accepted, refused406, refused404, consumed atomic.Int64
	sessions                                             atomic.Int64
	failed                                               atomic.Bool
}

// stressWorker is one goroutine's current call, for the monitor.
type stressWorker struct {
	mu      sync.Mutex
	call    string    // "" between calls
	since   time.Time // when the call began
	sock    net.Conn  // the connection's socket, closed by the monitor on a hang
	flagged bool
}

func (w *stressWorker) begin(call string) {
	w.mu.Lock()
	w.call, w.since = call, time.Now()
	w.mu.Unlock()
}

func (w *stressWorker) end() {
	w.mu.Lock()
	w.call = ""
	w.mu.Unlock()
}

// monitor reports a call older than stressCallBound and closes its socket.
func (st *stressRun) monitor(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for i := range st.workers {
			w := &st.workers[i]
			w.mu.Lock()
			if w.call != "" && !w.flagged && time.Since(w.since) > stressCallBound {
				w.flagged = true
				st.failed.Store(true)
				st.t.Errorf("worker %d: %s has had no answer for %v", i, w.call, time.Since(w.since).Round(time.Millisecond))
				if w.sock != nil {
					w.sock.Close()
				}
			}
			w.mu.Unlock()
		}
	}
}

func (st *stressRun) fail(format string, args ...any) {
	st.failed.Store(true)
	st.t.Errorf(format, args...)
}

// work runs sessions until every declaration is handed out.
func (st *stressRun) work(w *stressWorker, rng *rand.Rand) {
	for st.next.Load() < st.total && !st.failed.Load() {
		st.session(w, rng)
	}
}

// refusal is a declaration the broker must refuse, with its code.
type refusal struct {
	name                  string
	exclusive, autoDelete bool
	passive               bool
	args                  amqp.Table
	code                  int
}

func stressRefusal(rng *rand.Rand) refusal {
	switch rng.IntN(6) {
	case 0:
		return refusal{name: "stress-bad", args: amqp.Table{"x-max-length": int32(10)}, code: amqp.PreconditionFailed}
	case 1:
		// RabbitMQ's quorum queues refuse exclusive and auto-delete.
		return refusal{name: "stress-bad", exclusive: true, args: amqp.Table{"x-queue-type": "quorum"}, code: amqp.PreconditionFailed}
	case 2:
		return refusal{name: "stress-bad", autoDelete: true, args: amqp.Table{"x-queue-type": "quorum"}, code: amqp.PreconditionFailed}
	case 3:
		return refusal{name: "stress-bad", args: amqp.Table{"x-message-ttl": int32(1000)}, code: amqp.PreconditionFailed}
	case 4:
		return refusal{name: "stress-bad", args: amqp.Table{"x-queue-type": "stream"}, code: amqp.PreconditionFailed}
	default:
		return refusal{name: fmt.Sprintf("stress-missing-%d", rng.IntN(1000)), passive: true, code: amqp.NotFound}
	}
}

// session is one connection: a few declarations, consumes on the
// accepted ones, and the close.
func (st *stressRun) session(w *stressWorker, rng *rand.Rand) {
	st.sessions.Add(1)
	w.begin("dial and handshake")
	c, err := amqp.DialConfig(st.url, amqp.Config{Dial: func(network, addr string) (net.Conn, error) {
		k, err := net.DialTimeout(network, addr, 10*time.Second)
		if err == nil {
			w.mu.Lock()
			w.sock = k
			w.mu.Unlock()
		}
		return k, err
	}})
	w.end()
	if err != nil {
		st.fail("dial: %v", err)
		return
	}
	defer func() {
		w.begin("connection.close")
		c.Close()
		w.end()
	}()
	var ch *amqp.Channel
	open := func() bool {
		w.begin("channel.open")
		ch, err = c.Channel()
		w.end()
		if err != nil {
			st.fail("channel.open: %v", err)
			return false
		}
		return true
	}
	if !open() {
		return
	}
	for k := 1 + rng.IntN(8); k > 0; k-- {
		if st.next.Add(1) > st.total {
			return
		}
		if rng.IntN(10) < 6 {
			q := fmt.Sprintf("stress-%d", rng.IntN(64))
			w.begin("queue.declare " + q)
			_, err := ch.QueueDeclare(q, true, false, false, false, nil)
			w.end()
			st.declared.Add(1)
			if err != nil {
				st.fail("declare %s: %v", q, err)
				return
			}
			st.accepted.Add(1)
			if rng.IntN(2) == 0 {
				tag := fmt.Sprintf("c%d", rng.Uint64())
				w.begin("basic.consume " + q)
				_, err := ch.Consume(q, tag, false, false, false, false, nil)
				w.end()
				if err != nil {
					st.fail("consume %s: %v", q, err)
					return
				}
				w.begin("basic.cancel " + q)
				err = ch.Cancel(tag, false)
				w.end()
				if err != nil {
					st.fail("cancel %s: %v", q, err)
					return
				}
				st.consumed.Add(1)
			}
			continue
		}
		r := stressRefusal(rng)
		w.begin(fmt.Sprintf("queue.declare %q (refused %d)", r.name, r.code))
		if r.passive {
			_, err = ch.QueueDeclarePassive(r.name, true, false, false, false, nil)
		} else {
			_, err = ch.QueueDeclare(r.name, true, r.autoDelete, r.exclusive, false, r.args)
		}
		w.end()
		st.declared.Add(1)
		var ae *amqp.Error
		if !errors.As(err, &ae) || ae.Code != r.code {
			st.fail("declare %q: %v, want refused with %d", r.name, err, r.code)
			return
		}
		if r.code == amqp.NotFound {
			st.refused404.Add(1)
		} else {
			st.refused406.Add(1)
		}
		// The refusal closed the channel; go on on a new one.
		if !open() {
			return
		}
	}
	w.begin("channel.close")
	err = ch.Close()
	w.end()
	if err != nil {
		st.fail("channel.close: %v", err)
	}
}
