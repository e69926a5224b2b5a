package metadata

import (
	"reflect"
	"testing"

	"github.com/sluicemq/sluice/core/seam"
)

func lifeCmd(name string, l Lifetime) Command {
	c := queueCmd(name)
	c.Kind, c.Life = DeclareLifetime, l
	return c
}

// Lifetimes: a server-named queue is named by its entry's index; an
// exclusive queue is its connection's (another's declaration is locked);
// the attributes are part of a declaration's equivalence; exclusive queues
// end with their process (down, or a new one registered) and non-durable
// ones with their owner's restart; the image keeps them.
func TestQueueLifetimes(t *testing.T) {
	c := &catalogue{t: t}
	c.do(Command{Kind: RegisterBroker, Node: 1, Process: 10, Storage: 100})
	c.do(Command{Kind: RegisterBroker, Node: 2, Process: 20, Storage: 200})
	owner := Lifetime{Exclusive: true, OwnerNode: 1, OwnerProcess: 10, OwnerConn: 7, Home: 1}
	named := lifeCmd("", owner)
	named.ServerNamed = true
	c.do(named)
	gen := ServerName(c.index)
	if q, ok := c.s.Queue(gen); !ok || q.Life != owner || q.Incarnation != c.index {
		t.Fatalf("server-named queue %q: %+v %t", gen, q, ok)
	}
	other := owner
	other.OwnerConn = 8
	c.refused(lifeCmd(gen, other), seam.RefusalLocked)
	c.do(lifeCmd(gen, owner)) // its own connection again: kept
	c.do(lifeCmd("auto", Lifetime{AutoDelete: true}))
	c.refused(queueCmd("auto"), seam.RefusalConflict)
	c.do(lifeCmd("tmp", Lifetime{Transient: true}))
	tmp, _ := c.s.Queue("tmp")
	var ms Members
	ms.N, ms.M[0] = 1, Member{Node: 2, Process: 20, Storage: 200}
	c.do(Command{Kind: Assign, Queue: "tmp", Incarnation: tmp.Incarnation, Epoch: 1, Owner: 2, Members: ms})
	c.do(lifeCmd("mine2", Lifetime{Exclusive: true, OwnerNode: 2, OwnerProcess: 20, OwnerConn: 1}))

	img := c.s.AppendImage(nil)
	back, err := DecodeImage(img)
	if err != nil || !reflect.DeepEqual(back, c.s) {
		t.Fatalf("image with lifetimes: %v\n%+v\nwant\n%+v", err, back, c.s)
	}

	// n1's process goes: its exclusive queue with it.
	c.do(Command{Kind: BrokerDown, Node: 1, Process: 10})
	if _, ok := c.s.Queue(gen); ok {
		t.Fatal("an exclusive queue outlived its process")
	}
	// n2 restarts without being seen down: its exclusive queue and the
	// non-durable queue it owns end; the auto-delete one stays.
	c.do(Command{Kind: RegisterBroker, Node: 2, Process: 21, Storage: 200})
	for _, name := range []string{"tmp", "mine2"} {
		if _, ok := c.s.Queue(name); ok {
			t.Fatalf("%s outlived its broker's restart", name)
		}
	}
	if _, ok := c.s.Queue("auto"); !ok {
		t.Fatal("an auto-delete queue went with a restart")
	}
}

// A lifetime's encoding is refused unless it is one a command gives: an
// owner without exclusive, exclusive without an owner.
func TestLifetimeRefused(t *testing.T) {
	for _, l := range []Lifetime{{Exclusive: true}, {OwnerConn: 3}, {Exclusive: true, OwnerNode: 1, OwnerProcess: 2}} {
		c := lifeCmd("q", l)
		if err := c.Validate(); err == nil {
			t.Fatalf("lifetime %+v validated", l)
		}
	}
	c := queueCmd("q")
	c.Kind, c.ServerNamed = DeclareLifetime, true
	if err := c.Validate(); err == nil {
		t.Fatal("a server-named declaration with a name validated")
	}
	c = queueCmd("q")
	c.Kind = DeclareLifetime
	if err := c.Validate(); err == nil {
		t.Fatal("a lifetime declaration without a lifetime validated")
	}
	c = lifeCmd("q", Lifetime{AutoDelete: true})
	c.Kind = DeclareQueue
	if err := c.Validate(); err == nil {
		t.Fatal("a plain declaration with a lifetime validated")
	}
}
