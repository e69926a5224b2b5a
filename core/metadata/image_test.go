package metadata

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/core/route"
	"github.com/sluicemq/sluice/core/seam"
)

// imageState is a State with every kind of entry: settings, brokers live,
// down and draining, queues declared, placed, in-sync changed and fenced.
func imageState(t testing.TB) State {
	t.Helper()
	var s State
	var ms Members
	index := uint64(0)
	do := func(c Command) {
		index++
		if _, err := s.Apply(index, &c); err != nil {
			t.Fatalf("%s: %v", c.String(), err)
		}
	}
	do(Command{Kind: SetSetting, Key: "replica.lag_time_max_ms", Value: 1500})
	for n := seam.NodeID(1); n <= 4; n++ {
		do(Command{Kind: RegisterBroker, Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)})
		if n <= 3 {
			ms.M[ms.N] = Member{Node: n, Process: 10 + uint64(n), Storage: 20 + uint64(n)}
			ms.N++
		}
	}
	do(Command{Kind: Drain, Node: 4, Draining: true})
	do(Command{Kind: DeclareQueue, Queue: "orders", Replicas: 3, Policy: seam.ISR, MinInsync: 2})
	orders := index
	do(Command{Kind: DeclareQueue, Queue: "clicks", Replicas: 3, Policy: seam.MajorityDurable, MinInsync: 1})
	clicks := index
	do(Command{Kind: DeclareQueue, Queue: "idle", Replicas: 1, Policy: seam.LeaderDurable, MinInsync: 1})
	do(Command{Kind: Assign, Queue: "orders", Incarnation: orders, Epoch: 1, Owner: 1, Members: ms})
	do(Command{Kind: Assign, Queue: "clicks", Incarnation: clicks, Epoch: 1, Owner: 2, Members: ms})
	var set Nodes
	set.N = copy(set.ID[:], []seam.NodeID{1, 2})
	do(Command{Kind: SetInSync, Queue: "orders", Incarnation: orders, Epoch: 1, InSync: set})
	do(Command{Kind: BrokerDown, Node: 3, Process: 13})
	q, _ := s.Queue("clicks")
	proposed := set
	do(Command{Kind: Transition, Queue: "clicks", Incarnation: clicks, Epoch: 1, Proposed: proposed, Digest: TransitionDigest(&q, &proposed)})
	do(Command{Kind: RetryRecovery, Queue: "clicks", Incarnation: clicks, Epoch: 2})
	if q, _ := s.Queue("clicks"); q.Assignment.Pending.Retries != 1 {
		t.Fatalf("the image's state holds %d retries, want 1", q.Assignment.Pending.Retries)
	}
	return s
}

// An image decodes to the State it was made of, and that State's image is
// the same bytes.
func TestImageRoundTrip(t *testing.T) {
	for _, s := range []State{{}, imageState(t)} {
		img := s.AppendImage(nil)
		back, err := DecodeImage(img)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.queues) > 0 && !reflect.DeepEqual(back, s) { // (the empty state's nil slices decode empty)
			t.Fatalf("image decodes to\n%+v\nwant\n%+v", back, s)
		}
		if again := back.AppendImage(nil); !bytes.Equal(again, img) {
			t.Fatal("the decoded state's image differs")
		}
	}
}

// Damaged images are refused, whatever was cut, added or flipped.
func TestImageRefusesDamage(t *testing.T) {
	s := imageState(t)
	img := s.AppendImage(nil)
	for cut := range len(img) {
		if _, err := DecodeImage(img[:cut]); err == nil {
			t.Fatalf("an image cut at %d of %d bytes decoded", cut, len(img))
		}
	}
	if _, err := DecodeImage(append(img[:len(img):len(img)], 0)); err == nil {
		t.Fatal("an image with a trailing byte decoded")
	}
	bad := append([]byte(nil), img...)
	bad[0] = imageVersion + 1
	if _, err := DecodeImage(bad); err == nil {
		t.Fatal("an image of another version decoded")
	}
	// Queues out of order: swap the names' order by renaming one.
	s2 := imageState(t)
	s2.queues[0].Name = "zzz"
	if _, err := DecodeImage(s2.AppendImage(nil)); err == nil {
		t.Fatal("an image with queues out of order decoded")
	}
}

func FuzzDecodeImage(f *testing.F) {
	var s State
	f.Add(s.AppendImage(nil))
	rich := imageState(f)
	f.Add(rich.AppendImage(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeImage(b)
		if err != nil {
			return
		}
		if again := st.AppendImage(nil); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to a state whose image is %x", b, again)
		}
	})
}

// The largest metadata the limits allow has an image within ImageBytesMax:
// BrokersMax brokers and QueuesMax queues with the longest names, every
// integer at its widest varint, every queue placed on ReplicasMax members
// and fenced by a transition. (The controller sends an image as one raft
// snapshot message, and core/ctrl sizes MsgBytesMax from ImageBytesMax.)
func TestImageLargestFits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the largest metadata (65,536 queues)")
	}
	var s State
	index := uint64(1) << 63 // every incarnation a 10-byte varint
	do := func(c *Command) {
		index++
		if _, err := s.Apply(index, c); err != nil {
			t.Fatalf("%s: %v", c.String(), err)
		}
	}
	wide := ^uint64(0)
	var ms Members
	for n := seam.NodeID(1); n <= BrokersMax; n++ {
		process, storage := wide-uint64(n), wide-2*uint64(n)
		do(&Command{Kind: RegisterBroker, Node: n, Process: process, Storage: storage})
		if int(n) > BrokersMax-seam.ReplicasMax {
			ms.M[ms.N] = Member{Node: n, Process: process, Storage: storage}
			ms.N++
		}
	}
	var proposed Nodes
	proposed.N = copy(proposed.ID[:], []seam.NodeID{BrokersMax - 4, BrokersMax - 3, BrokersMax - 2, BrokersMax - 1})
	name := make([]byte, QueueNameBytesMax)
	for i := range name {
		name[i] = 'q'
	}
	epoch := wide - 1
	for i := range QueuesMax {
		// Ascending names, so every declaration appends.
		for j, k := QueueNameBytesMax-1, i; j >= QueueNameBytesMax-5; j, k = j-1, k/16 {
			name[j] = "0123456789abcdef"[k%16]
		}
		do(&Command{Kind: DeclareQueue, Queue: string(name), Replicas: seam.ReplicasMax, Policy: seam.ISR, MinInsync: seam.ReplicasMax})
		incarnation := index
		do(&Command{Kind: Assign, Queue: string(name), Incarnation: incarnation, Epoch: epoch, Owner: ms.M[0].Node, Members: ms})
		q := &s.queues[len(s.queues)-1]
		q.Assignment.InSyncVersion = wide // as if changed that often
		digest := TransitionDigest(q, &proposed)
		do(&Command{Kind: Transition, Queue: string(name), Incarnation: incarnation, Epoch: epoch, Proposed: proposed, Digest: digest})
	}
	if len(s.queues) != QueuesMax || len(s.brokers) != BrokersMax {
		t.Fatalf("%d queues and %d brokers, want the limits", len(s.queues), len(s.brokers))
	}
	// ExchangesMax exchanges with the longest names and alternates, and
	// bindings with the longest names, keys and arguments up to
	// BindingsBytesMax (in their order, so that each appends).
	xname := make([]byte, ExchangeNameBytesMax)
	for i := range xname {
		xname[i] = 'x'
	}
	exchanges := make([]string, 0, ExchangesMax)
	for i := range ExchangesMax {
		for j, k := ExchangeNameBytesMax-1, i; j >= ExchangeNameBytesMax-4; j, k = j-1, k/16 {
			xname[j] = "0123456789abcdef"[k%16]
		}
		exchanges = append(exchanges, string(xname))
		do(&Command{Kind: DeclareExchange, Exchange: string(xname), ExchangeKind: route.Headers, Durable: true, AutoDelete: true,
			Internal: true, Alternate: string(xname)})
	}
	longKey := strings.Repeat("k", RoutingKeyBytesMax)
	args := BindingArgs([]route.Field{{Key: strings.Repeat("a", 240), Class: route.ClassString, Value: strings.Repeat("v", 250)}})
	if len(args) > BindingArgsBytesMax {
		t.Fatalf("the test's arguments are %d bytes, over %d", len(args), BindingArgsBytesMax)
	}
	for i := 0; ; i++ {
		b := Binding{Source: exchanges[i/len(s.queues)], Queue: s.queues[i%len(s.queues)].Name, Key: longKey, Args: args}
		if s.bindingsBytes+bindingBytes(&b) > BindingsBytesMax {
			break
		}
		do(&Command{Kind: Bind, Exchange: b.Source, Queue: b.Queue, RoutingKey: b.Key, Args: b.Args})
	}
	t.Logf("%d bindings of %d bytes", len(s.bindings), s.bindingsBytes)
	img := s.AppendImage(nil)
	t.Logf("the largest image: %d bytes (%.1f MiB), limit %d", len(img), float64(len(img))/(1<<20), ImageBytesMax)
	if len(img) > ImageBytesMax {
		t.Fatalf("the largest metadata's image is %d bytes, over ImageBytesMax %d", len(img), ImageBytesMax)
	}
	if _, err := DecodeImage(img); err != nil {
		t.Fatalf("the largest image does not decode: %v", err)
	}
}
