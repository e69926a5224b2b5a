package daemon

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/fsio/metapebble"
	"github.com/sluicemq/sluice/io/meta"
)

// env is the daemon's side of the host (io/driver.Env). Every method runs
// on the loop, inside a host call: what must not re-enter the host or the
// front is queued as work.
type env struct{ s *Server }

// Send: a message to this broker itself (the metadata group's heartbeats
// to a leader that is this broker) is the loop's next work; one to a peer
// goes on its bounded queue (cluster.go), or is dropped without peers.
func (e *env) Send(to core.NodeID, g core.GroupID, msg []byte) {
	s := e.s
	if to != s.node {
		if s.cluster == nil {
			s.log.Warn("a message for a peer, and this broker has none: dropped", "to", to, "group", uint64(g))
			return
		}
		s.cluster.send(s, to, g, msg)
		return
	}
	m := slices.Clone(msg)
	s.work.push(func() { s.host.Message(s.now(), s.node, g, m) })
}

// Client hands a reply or delivery to whom it is for: an operator's
// request, a client forwarded here by another broker, or the front.
func (e *env) Client(ef *core.Effect) {
	s := e.s
	if s.cluster != nil && isRemote(ef.Client) {
		s.cluster.fwd.effect(ef)
		return
	}
	s.toClient(ef)
}

// toClient hands a reply or delivery of this broker's core, or of the one
// a request was forwarded to, to the operator or to the front after the
// step: every one emitted before the front takes them goes in one batch.
func (s *Server) toClient(ef *core.Effect) {
	if ef.Client == adminClient {
		if ef.Kind == core.EfReply {
			s.adminAnswer(ef) // answers a waiting handler, or queues work
		}
		return
	}
	c := *ef
	c.Body = slices.Clone(ef.Body)
	c.Records = nil
	if len(s.toFront) == 0 {
		s.work.push(func() {
			batch := s.toFront
			s.toFront = nil
			s.frontEffects(s.front.CoreBatch(s.now(), batch))
		})
	}
	s.toFront = append(s.toFront, c)
}

// StartStorage runs writes into the page cache inline. A queue log's sync
// starts on a goroutine of its own, which flushes and fdatasyncs the log
// while the loop goes on taking publishes (the host runs nothing else on
// that log until the sync's completion: its later appends wait in the
// host's queue, and the next sync covers them all: group commit); the
// completion is then the host's Run, whose own sync finds nothing left
// to write. Reads, verifies and persists are the loop's next work.
func (e *env) StartStorage(l int, op *core.Effect) bool {
	s := e.s
	s.logsSeen = max(s.logsSeen, l+1)
	switch op.Op {
	case core.OpAppend, core.OpTruncate, core.OpDiscard, core.OpRepaired, core.OpReseed, core.OpBind:
		return true // (a reseed's syncs are rare: a copy left behind; a binding's, one per copy made)
	case core.OpSync:
		if lg := s.host.Log(l); lg != nil {
			s.syncing++
			go func() {
				lg.Sync() // a failure fails the log: Run's sync reports it
				select {
				case s.events <- event{kind: evSynced, log: l}:
				case <-s.done:
				}
			}()
			return false
		}
	}
	s.work.push(func() { s.host.Run(s.now(), l) })
	return false
}

func (e *env) RunLater(l int) {
	s := e.s
	s.logsSeen = max(s.logsSeen, l+1)
	s.work.push(func() { s.host.Run(s.now(), l) })
}

// Timer arms the host's one timer.
func (e *env) Timer(at int64) {
	s := e.s
	s.hostAt = at
	s.hostTimer.Reset(time.Duration(max(at-s.now(), 0)))
}

// Exit: a storage operation failed; the process ends (the failure policy)
// and its supervisor restarts it.
func (e *env) Exit(d *core.StorageDone) {
	s := e.s
	s.exitErr = errors.New("storage failed: " + d.Op.String() + " on group " + itoa(uint64(d.Group)) + ": " + d.Err)
}

// Draw is 64 random bits from crypto/rand.
func (e *env) Draw() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("daemon: crypto/rand: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// metaStore is the pebble store as the host drives it: a synced pebble
// batch is durable when Write returns, so Sync has nothing left to do.
type metaStore struct{ st *metapebble.Store }

func (m metaStore) Load() (meta.State, error) { return m.st.Load() }
func (m metaStore) Write(b *meta.Batch) error { return m.st.Apply(b) }
func (m metaStore) Sync() error               { return nil }
