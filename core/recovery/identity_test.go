package recovery

import (
	"encoding/binary"
	"testing"

	"lukechampine.com/blake3"

	"github.com/sluicemq/sluice/core/record"
)

// The identity is BLAKE3 of its encoding, byte for byte, however the
// records' sizes fall against the buffer that gathers them: the domain,
// the queue and the bounds as varints, then each record's offset, epoch,
// kind, body length and body.
func TestIdentityIsBLAKE3OfItsEncoding(t *testing.T) {
	var rs []record.Record
	for i, n := range []int{0, 5, 100, 8 << 10, 3, 8<<10 - 20, 20 << 10, 1, 4000, 4100, 7, 0, 9000} {
		body := make([]byte, n)
		for k := range body {
			body[k] = byte(i*31 + k)
		}
		rs = append(rs, record.Record{Epoch: uint64(1 + i/4), Offset: uint64(10 + i), Kind: record.KindPublish, Body: body})
	}
	for cut := 0; cut <= len(rs); cut++ {
		enc := []byte(identityDomain)
		enc = binary.AppendUvarint(enc, 7)
		enc = binary.AppendUvarint(enc, 10)
		enc = binary.AppendUvarint(enc, uint64(10+cut))
		for _, r := range rs[:cut] {
			enc = binary.AppendUvarint(enc, r.Offset)
			enc = binary.AppendUvarint(enc, r.Epoch)
			enc = append(enc, byte(r.Kind))
			enc = binary.AppendUvarint(enc, uint64(len(r.Body)))
			enc = append(enc, r.Body...)
		}
		got, err := IdentityOf(7, 10, uint64(10+cut), rs[:cut])
		if err != nil {
			t.Fatal(err)
		}
		if want := blake3.Sum256(enc); got != Digest(want) {
			t.Fatalf("%d records: identity %x, BLAKE3 of the encoding %x", cut, got[:6], want[:6])
		}
	}
}

func sampleRecords() []record.Record {
	return []record.Record{
		{Epoch: 1, Offset: 3, Kind: record.KindEpoch},
		{Epoch: 1, Offset: 4, Kind: record.KindPublish, Body: []byte("hello")},
		{Epoch: 2, Offset: 5, Kind: record.KindEpoch},
		{Epoch: 2, Offset: 6, Kind: record.KindAck, Body: []byte{4, 0, 0, 0, 0, 0, 0, 0}},
	}
}

// The identity depends on the queue, the bounds and every field of every
// record that the queue's history holds, and on nothing else.
func TestIdentityCoversEveryField(t *testing.T) {
	base, err := IdentityOf(7, 3, 7, sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := IdentityOf(7, 3, 7, sampleRecords()); again != base {
		t.Fatal("the same records gave two identities")
	}
	changes := map[string]func(rs []record.Record) ([]record.Record, uint64){
		"an epoch": func(rs []record.Record) ([]record.Record, uint64) { rs[1].Epoch = 2; return rs, 7 },
		"a kind":   func(rs []record.Record) ([]record.Record, uint64) { rs[3].Kind = record.KindPublish; return rs, 7 },
		"a body":   func(rs []record.Record) ([]record.Record, uint64) { rs[1].Body = []byte("hellp"); return rs, 7 },
		"a body moved between records": func(rs []record.Record) ([]record.Record, uint64) {
			rs[1].Body, rs[3].Body = []byte("hell"), append([]byte("o"), rs[3].Body...)
			return rs, 7
		},
		"the last record dropped": func(rs []record.Record) ([]record.Record, uint64) { return rs[:3], 6 },
	}
	for what, change := range changes {
		rs, end := change(sampleRecords())
		got, err := IdentityOf(7, 3, end, rs)
		if err != nil || got == base {
			t.Fatalf("%s: identity unchanged (%v)", what, err)
		}
	}
	if other, _ := IdentityOf(8, 3, 7, sampleRecords()); other == base {
		t.Fatal("another queue's identical records gave the same identity")
	}
	shifted := sampleRecords()
	for i := range shifted {
		shifted[i].Offset++
	}
	if got, _ := IdentityOf(7, 4, 8, shifted); got == base {
		t.Fatal("the records at other offsets gave the same identity")
	}
}

// Records must come in offset order, within the bounds, all of them.
func TestIdentityRefusesGaps(t *testing.T) {
	rs := sampleRecords()
	if _, err := IdentityOf(7, 3, 7, []record.Record{rs[0], rs[2], rs[3]}); err == nil {
		t.Fatal("a gap was hashed")
	}
	if _, err := IdentityOf(7, 3, 6, rs); err == nil {
		t.Fatal("a record past the end was hashed")
	}
	if _, err := IdentityOf(7, 3, 8, rs); err == nil {
		t.Fatal("an identity fed short of its end was returned")
	}
	if _, err := NewIdentity(7, 5, 4); err == nil {
		t.Fatal("bounds [5, 4) were accepted")
	}
	if empty, err := IdentityOf(7, 9, 9, nil); err != nil || empty == (Digest{}) {
		t.Fatalf("an empty log: %x, %v", empty, err)
	}
}
