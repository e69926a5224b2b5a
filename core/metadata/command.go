package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicemq/sluice/core/seam"
)

// Kind names a command.
type Kind uint8

// The commands.
const (
	// SetSetting sets runtime setting Key to Value.
	SetSetting Kind = 1
	// RegisterBroker records broker Node live with its exact process and
	// storage instances (a new process, a new data directory, or a broker
	// back after it left the live set).
	RegisterBroker Kind = 2
	// BrokerDown removes broker Node from the live set, if its committed
	// process instance is still Process (a stale report of an older
	// process changes nothing).
	BrokerDown Kind = 3
	// Drain marks broker Node draining (Draining) or not: placement puts
	// nothing new on a draining broker.
	Drain Kind = 4
	// DeclareQueue declares queue Name with its replica count, policy and
	// minimum in-sync count; its incarnation id is the entry's index.
	DeclareQueue Kind = 5
	// DeleteQueue deletes queue Name if its incarnation is still
	// Incarnation.
	DeleteQueue Kind = 6
	kindEnd
)

var kindNames = [...]string{SetSetting: "set", RegisterBroker: "register", BrokerDown: "down",
	Drain: "drain", DeclareQueue: "declare", DeleteQueue: "delete"}

func (k Kind) String() string {
	if k > 0 && k < kindEnd {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// Limits.
const (
	BrokersMax        = 1024
	QueuesMax         = 1 << 16
	QueueNameBytesMax = 255 // AMQP's shortstr
	// CommandBytesMax bounds an encoded command.
	CommandBytesMax = 512
)

// version is the codec's version byte.
const version = 1

// Command is one metadata command. Only the fields of its Kind are
// encoded; the others must be zero.
type Command struct {
	Kind Kind
	// SetSetting
	Key   string
	Value int64
	// RegisterBroker, BrokerDown (Process), Drain
	Node     seam.NodeID
	Process  uint64
	Storage  uint64
	Draining bool
	// DeclareQueue, DeleteQueue (Queue, Incarnation)
	Queue       string
	Replicas    int
	Policy      seam.Policy
	MinInsync   int
	Incarnation uint64
}

// Set returns the command that sets key to value, validated.
func Set(key, value string) (Command, error) {
	v, err := ParseSetting(key, value)
	if err != nil {
		return Command{}, err
	}
	return Command{Kind: SetSetting, Key: key, Value: v}, nil
}

// Validate reports a command no replica would apply whatever the state.
func (c *Command) Validate() error {
	switch c.Kind {
	case SetSetting:
		i := settingIndex(c.Key)
		if i < 0 {
			return fmt.Errorf("unknown setting %q (known: %s)", c.Key, settingKeys())
		}
		return checkSetting(i, c.Value)
	case RegisterBroker, BrokerDown, Drain:
		if c.Node == 0 {
			return errors.New("broker id 0")
		}
		if c.Kind != Drain && c.Process == 0 {
			return errors.New("process instance 0")
		}
		if c.Kind == RegisterBroker && c.Storage == 0 {
			return errors.New("storage instance 0")
		}
		return nil
	case DeclareQueue, DeleteQueue:
		if err := checkQueueName(c.Queue); err != nil {
			return err
		}
		if c.Kind == DeleteQueue {
			if c.Incarnation == 0 {
				return errors.New("delete: no incarnation observed")
			}
			return nil
		}
		if c.Replicas < 1 || c.Replicas > seam.ReplicasMax {
			return fmt.Errorf("declare %s: %d replicas, want 1 to %d", c.Queue, c.Replicas, seam.ReplicasMax)
		}
		if c.Policy < seam.LeaderDurable || c.Policy > seam.AllDurable {
			return fmt.Errorf("declare %s: unknown policy %d", c.Queue, c.Policy)
		}
		if c.MinInsync < 1 || c.MinInsync > c.Replicas {
			return fmt.Errorf("declare %s: min in-sync %d, want 1 to the replica count %d", c.Queue, c.MinInsync, c.Replicas)
		}
		return nil
	}
	return fmt.Errorf("unknown command kind %d", c.Kind)
}

func checkQueueName(name string) error {
	if name == "" || len(name) > QueueNameBytesMax {
		return fmt.Errorf("queue name of %d bytes, want 1 to %d", len(name), QueueNameBytesMax)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("queue name %q: byte %d is not printable ASCII", name, i)
		}
	}
	return nil
}

// Encode appends the command's encoding: the version, the kind, then the
// kind's fields as uvarints and length-prefixed strings.
func (c *Command) Encode(dst []byte) []byte {
	dst = append(dst, version, byte(c.Kind))
	switch c.Kind {
	case SetSetting:
		dst = appendStr(dst, c.Key)
		dst = binary.AppendVarint(dst, c.Value)
	case RegisterBroker:
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = binary.AppendUvarint(dst, c.Process)
		dst = binary.AppendUvarint(dst, c.Storage)
	case BrokerDown:
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = binary.AppendUvarint(dst, c.Process)
	case Drain:
		dst = binary.AppendUvarint(dst, uint64(c.Node))
		dst = appendBool(dst, c.Draining)
	case DeclareQueue:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, uint64(c.Replicas))
		dst = append(dst, byte(c.Policy))
		dst = binary.AppendUvarint(dst, uint64(c.MinInsync))
	case DeleteQueue:
		dst = appendStr(dst, c.Queue)
		dst = binary.AppendUvarint(dst, c.Incarnation)
	default:
		panic(fmt.Sprintf("metadata: encode of command kind %d", c.Kind))
	}
	return dst
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// ErrDecode is wrapped by every decoding error.
var ErrDecode = errors.New("metadata: command does not decode")

// Decode reads one command: exactly, and valid (Validate).
func Decode(b []byte) (Command, error) {
	if len(b) > CommandBytesMax {
		return Command{}, fmt.Errorf("%w: %d bytes, over %d", ErrDecode, len(b), CommandBytesMax)
	}
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != version {
		return Command{}, fmt.Errorf("%w: version %d, want %d", ErrDecode, v, version)
	}
	c := Command{Kind: Kind(r.byte())}
	switch c.Kind {
	case SetSetting:
		c.Key = r.str(64)
		c.Value = r.varint()
	case RegisterBroker:
		c.Node = r.node()
		c.Process = r.uvarint()
		c.Storage = r.uvarint()
	case BrokerDown:
		c.Node = r.node()
		c.Process = r.uvarint()
	case Drain:
		c.Node = r.node()
		c.Draining = r.bool()
	case DeclareQueue:
		c.Queue = r.str(QueueNameBytesMax)
		c.Replicas = r.small()
		c.Policy = seam.Policy(r.byte())
		c.MinInsync = r.small()
	case DeleteQueue:
		c.Queue = r.str(QueueNameBytesMax)
		c.Incarnation = r.uvarint()
	default:
		if r.err == nil {
			r.err = fmt.Errorf("unknown kind %d", c.Kind)
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrDecode, r.err)
	}
	if err := c.Validate(); err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return c, nil
}

// reader reads fields, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New(what)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		// One encoding per value: a padded varint is refused.
		r.fail("truncated, overlong or padded varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		r.fail("truncated, overlong or padded varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) small() int {
	v := r.uvarint()
	if v > 1<<20 {
		r.fail("count out of range")
		return 0
	}
	return int(v)
}

func (r *reader) node() seam.NodeID {
	v := r.uvarint()
	if v > 1<<32-1 {
		r.fail("broker id out of range")
		return 0
	}
	return seam.NodeID(v)
}

func (r *reader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail("bool not 0 or 1")
	return false
}

func (r *reader) str(max int) string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(max) || n > uint64(len(r.b)) {
		r.fail("string length out of range")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// String is the command's stable one-line text form.
func (c *Command) String() string {
	switch c.Kind {
	case SetSetting:
		return fmt.Sprintf("set %s=%d", c.Key, c.Value)
	case RegisterBroker:
		return fmt.Sprintf("register n%d process=%d storage=%d", c.Node, c.Process, c.Storage)
	case BrokerDown:
		return fmt.Sprintf("down n%d process=%d", c.Node, c.Process)
	case Drain:
		return fmt.Sprintf("drain n%d %t", c.Node, c.Draining)
	case DeclareQueue:
		return fmt.Sprintf("declare %q replicas=%d policy=%s min-insync=%d", c.Queue, c.Replicas, c.Policy, c.MinInsync)
	case DeleteQueue:
		return fmt.Sprintf("delete %q incarnation=%d", c.Queue, c.Incarnation)
	}
	return fmt.Sprintf("command kind=%d", c.Kind)
}
