package metakv

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/sluicemq/sluice/io/meta"
)

// Key prefixes.
const (
	prefixHardState byte = 0x01
	prefixCompacted byte = 0x02
	prefixSnapshot  byte = 0x03
	prefixApplied   byte = 0x04
	prefixEntry     byte = 0x10
)

// Version is the value format version this build writes and reads.
const Version byte = 1

const (
	entryKeyBytes = 9
	crcBytes      = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Keys of the singleton records.
var (
	KeyHardState = []byte{prefixHardState}
	KeyCompacted = []byte{prefixCompacted}
	KeySnapshot  = []byte{prefixSnapshot}
	KeyApplied   = []byte{prefixApplied}
)

// EntryKey is the key of the entry at index.
func EntryKey(index uint64) []byte {
	k := make([]byte, entryKeyBytes)
	k[0] = prefixEntry
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

// EntryIndex decodes an entry key; ok is false for any other key.
func EntryIndex(key []byte) (index uint64, ok bool) {
	if len(key) != entryKeyBytes || key[0] != prefixEntry {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[1:]), true
}

// seal frames a payload: version | payload | CRC32C(key | version | payload).
func seal(key, payload []byte) []byte {
	v := make([]byte, 0, 1+len(payload)+crcBytes)
	v = append(v, Version)
	v = append(v, payload...)
	c := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, v)
	return binary.LittleEndian.AppendUint32(v, c)
}

// open checks a value's frame and returns its payload.
func open(record string, key, value []byte) ([]byte, error) {
	if len(value) < 1+crcBytes {
		return nil, meta.Corrupt(record, "value of %d bytes, shorter than its frame", len(value))
	}
	body := value[:len(value)-crcBytes]
	want := binary.LittleEndian.Uint32(value[len(value)-crcBytes:])
	if got := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body); got != want {
		return nil, meta.Corrupt(record, "crc mismatch (stored %08x, computed %08x)", want, got)
	}
	if body[0] != Version {
		return nil, meta.Corrupt(record, "unsupported value version %d (this build reads version %d)", body[0], Version)
	}
	return body[1:], nil
}

// EncodeEntry returns the key and value of e.
func EncodeEntry(e *meta.Entry) (key, value []byte) {
	key = EntryKey(e.Index)
	p := make([]byte, 0, 9+len(e.Data))
	p = binary.LittleEndian.AppendUint64(p, e.Term)
	p = append(p, byte(e.Kind))
	p = append(p, e.Data...)
	return key, seal(key, p)
}

// EncodeHardState returns the value of the hard state record.
func EncodeHardState(h meta.HardState) []byte {
	p := make([]byte, 0, 24)
	p = binary.LittleEndian.AppendUint64(p, h.Term)
	p = binary.LittleEndian.AppendUint64(p, h.Vote)
	p = binary.LittleEndian.AppendUint64(p, h.Commit)
	return seal(KeyHardState, p)
}

// EncodeCompacted returns the value of the compaction point record.
func EncodeCompacted(c meta.EntryID) []byte {
	p := make([]byte, 0, 16)
	p = binary.LittleEndian.AppendUint64(p, c.Index)
	p = binary.LittleEndian.AppendUint64(p, c.Term)
	return seal(KeyCompacted, p)
}

// EncodeSnapshot returns the value of the snapshot record.
func EncodeSnapshot(s *meta.Snapshot) []byte {
	p := make([]byte, 0, 16+len(s.Data))
	p = binary.LittleEndian.AppendUint64(p, s.Index)
	p = binary.LittleEndian.AppendUint64(p, s.Term)
	p = append(p, s.Data...)
	return seal(KeySnapshot, p)
}

// EncodeApplied returns the value of the applied record.
func EncodeApplied(a *meta.Applied) []byte {
	p := make([]byte, 0, 8+len(a.Data))
	p = binary.LittleEndian.AppendUint64(p, a.Index)
	p = append(p, a.Data...)
	return seal(KeyApplied, p)
}

// Op is one write of a planned batch: a put of Value under Key, or, when
// End is not nil, the deletion of every key in [Key, End).
type Op struct {
	Key, Value, End []byte
}

// IsDelete reports whether op is a range deletion.
func (op *Op) IsDelete() bool { return op.End != nil }

// Plan turns a batch that meta.Validate accepted (cur is the summary
// before it, next the one Validate returned) into the writes that carry it
// out. The writes touch disjoint keys, so their order within the batch
// does not matter; they must all be applied atomically.
func Plan(cur, next meta.Summary, b *meta.Batch) []Op {
	ops := make([]Op, 0, len(b.Entries)+6)
	if b.Snapshot != nil {
		ops = append(ops, Op{Key: KeySnapshot, Value: EncodeSnapshot(b.Snapshot)})
	}
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.Index <= next.Compacted.Index {
			continue // compacted by the same batch
		}
		k, v := EncodeEntry(e)
		ops = append(ops, Op{Key: k, Value: v})
	}
	if b.HardState != nil {
		ops = append(ops, Op{Key: KeyHardState, Value: EncodeHardState(*b.HardState)})
	}
	if b.Applied != nil {
		ops = append(ops, Op{Key: KeyApplied, Value: EncodeApplied(b.Applied)})
	}
	if next.Compacted != cur.Compacted {
		ops = append(ops, Op{Key: KeyCompacted, Value: EncodeCompacted(next.Compacted)})
	}
	if next.Compacted.Index > cur.Compacted.Index {
		ops = append(ops, Op{Key: EntryKey(cur.Compacted.Index + 1), End: EntryKey(next.Compacted.Index + 1)})
	}
	if cur.LastIndex > next.LastIndex {
		ops = append(ops, Op{Key: EntryKey(next.LastIndex + 1), End: EntryKey(cur.LastIndex + 1)})
	}
	return ops
}

// Loader rebuilds a meta.State from the store's keys, fed in ascending
// key order.
type Loader struct {
	st      meta.State
	lastKey []byte
	err     error
}

// Add decodes one record. After the first error every later call returns
// it.
func (l *Loader) Add(key, value []byte) error {
	if l.err != nil {
		return l.err
	}
	l.err = l.add(key, value)
	return l.err
}

func (l *Loader) add(key, value []byte) error {
	if l.lastKey != nil && string(key) <= string(l.lastKey) {
		panic(fmt.Sprintf("metakv: keys out of order: %x after %x", key, l.lastKey))
	}
	l.lastKey = append(l.lastKey[:0], key...)
	if len(key) == 1 {
		switch key[0] {
		case prefixHardState:
			p, err := open("hard state", key, value)
			if err != nil {
				return err
			}
			if len(p) != 24 {
				return meta.Corrupt("hard state", "payload of %d bytes, want 24", len(p))
			}
			l.st.HardState = meta.HardState{
				Term:   binary.LittleEndian.Uint64(p),
				Vote:   binary.LittleEndian.Uint64(p[8:]),
				Commit: binary.LittleEndian.Uint64(p[16:]),
			}
			return nil
		case prefixCompacted:
			p, err := open("compaction point", key, value)
			if err != nil {
				return err
			}
			if len(p) != 16 {
				return meta.Corrupt("compaction point", "payload of %d bytes, want 16", len(p))
			}
			l.st.Compacted = meta.EntryID{Index: binary.LittleEndian.Uint64(p), Term: binary.LittleEndian.Uint64(p[8:])}
			return nil
		case prefixSnapshot:
			p, err := open("snapshot", key, value)
			if err != nil {
				return err
			}
			if len(p) < 16 {
				return meta.Corrupt("snapshot", "payload of %d bytes, shorter than 16", len(p))
			}
			l.st.Snapshot = meta.Snapshot{
				Index: binary.LittleEndian.Uint64(p),
				Term:  binary.LittleEndian.Uint64(p[8:]),
				Data:  append([]byte(nil), p[16:]...),
			}
			return nil
		case prefixApplied:
			p, err := open("applied", key, value)
			if err != nil {
				return err
			}
			if len(p) < 8 {
				return meta.Corrupt("applied", "payload of %d bytes, shorter than 8", len(p))
			}
			l.st.Applied = meta.Applied{Index: binary.LittleEndian.Uint64(p), Data: append([]byte(nil), p[8:]...)}
			return nil
		}
	}
	index, ok := EntryIndex(key)
	if !ok {
		return meta.Corrupt(fmt.Sprintf("key %x", key), "not a key of the layout")
	}
	rec := fmt.Sprintf("entry %d", index)
	p, err := open(rec, key, value)
	if err != nil {
		return err
	}
	if len(p) < 9 {
		return meta.Corrupt(rec, "payload of %d bytes, shorter than 9", len(p))
	}
	l.st.Entries = append(l.st.Entries, meta.Entry{
		Index: index,
		Term:  binary.LittleEndian.Uint64(p),
		Kind:  meta.EntryKind(p[8]),
		Data:  append([]byte(nil), p[9:]...),
	})
	return nil
}

// Finish returns the state after every key was added, checked with
// meta.CheckState.
func (l *Loader) Finish() (meta.State, error) {
	if l.err != nil {
		return meta.State{}, l.err
	}
	if err := meta.CheckState(&l.st); err != nil {
		return meta.State{}, err
	}
	return l.st, nil
}

// DecodeEntry decodes one entry record, checking its frame.
func DecodeEntry(key, value []byte) (meta.Entry, error) {
	var l Loader
	if _, ok := EntryIndex(key); !ok {
		return meta.Entry{}, meta.Corrupt(fmt.Sprintf("key %x", key), "not an entry key")
	}
	if err := l.Add(key, value); err != nil {
		return meta.Entry{}, err
	}
	return l.st.Entries[0], nil
}
