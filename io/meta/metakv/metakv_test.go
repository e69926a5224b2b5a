package metakv

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/io/meta"
)

// records returns the keys and values of a small state, in key order.
func records() (keys, values [][]byte, want meta.State) {
	want = meta.State{
		HardState: meta.HardState{Term: 3, Vote: 2, Commit: 6},
		Snapshot:  meta.Snapshot{Index: 4, Term: 2, Data: []byte("snap")},
		Compacted: meta.EntryID{Index: 4, Term: 2},
		Entries: []meta.Entry{
			{Index: 5, Term: 2, Kind: meta.EntryConfChange, Data: []byte("cc")},
			{Index: 6, Term: 3, Data: []byte("six")},
			{Index: 7, Term: 3},
		},
		Applied: meta.Applied{Index: 5, Data: []byte("img")},
	}
	keys = [][]byte{KeyHardState, KeyCompacted, KeySnapshot, KeyApplied}
	values = [][]byte{EncodeHardState(want.HardState), EncodeCompacted(want.Compacted), EncodeSnapshot(&want.Snapshot), EncodeApplied(&want.Applied)}
	for i := range want.Entries {
		k, v := EncodeEntry(&want.Entries[i])
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, want
}

func load(keys, values [][]byte) (meta.State, error) {
	var l Loader
	for i := range keys {
		if err := l.Add(keys[i], values[i]); err != nil {
			return meta.State{}, err
		}
	}
	return l.Finish()
}

func TestRoundTrip(t *testing.T) {
	keys, values, want := records()
	got, err := load(keys, values)
	if err != nil {
		t.Fatal(err)
	}
	if got.HardState != want.HardState || got.Compacted != want.Compacted || got.Snapshot.Index != 4 ||
		string(got.Snapshot.Data) != "snap" || string(got.Applied.Data) != "img" || len(got.Entries) != 3 ||
		got.Entries[0].Kind != meta.EntryConfChange || string(got.Entries[1].Data) != "six" || got.Entries[2].Data != nil {
		t.Fatalf("round trip: got %+v, want %+v", got, want)
	}
	if st, err := load(nil, nil); err != nil || st.LastIndex() != 0 {
		t.Fatalf("no keys: %+v, %v; want the zero state", st, err)
	}
}

// TestEveryBitFlipIsReported flips every bit of every value (and of the
// entry keys) and requires a *meta.CorruptError each time.
func TestEveryBitFlipIsReported(t *testing.T) {
	keys, values, _ := records()
	for r := range keys {
		for bit := range 8 * len(values[r]) {
			vs := append([][]byte(nil), values...)
			vs[r] = append([]byte(nil), values[r]...)
			vs[r][bit/8] ^= 1 << (bit % 8)
			if _, err := load(keys, vs); !errors.Is(err, meta.ErrCorrupt) {
				t.Fatalf("record %d bit %d flipped: %v, want ErrCorrupt", r, bit, err)
			}
		}
	}
	// An entry's value under another entry's key.
	vs := append([][]byte(nil), values...)
	vs[5], vs[6] = values[6], values[5]
	if _, err := load(keys, vs); !errors.Is(err, meta.ErrCorrupt) {
		t.Fatalf("swapped entry values: %v, want ErrCorrupt", err)
	}
}

func TestMalformedRecords(t *testing.T) {
	keys, values, _ := records()
	for _, tc := range []struct {
		name   string
		mutate func(keys, values [][]byte) ([][]byte, [][]byte)
		want   string
	}{
		{"short value", func(k, v [][]byte) ([][]byte, [][]byte) { v[0] = v[0][:3]; return k, v }, "shorter than its frame"},
		{"unknown key", func(k, v [][]byte) ([][]byte, [][]byte) {
			return append(k[:4:4], append([][]byte{{0x05}}, k[4:]...)...), append(v[:4:4], append([][]byte{v[0]}, v[4:]...)...)
		}, "not a key of the layout"},
		{"unknown version", func(k, v [][]byte) ([][]byte, [][]byte) {
			p, _ := open("hard state", KeyHardState, v[0])
			body := append([]byte{2}, p...)
			c := crc32.Update(crc32.Checksum(KeyHardState, castagnoli), castagnoli, body)
			v[0] = binary.LittleEndian.AppendUint32(body, c)
			return k, v
		}, "unsupported value version 2"},
		{"missing entry", func(k, v [][]byte) ([][]byte, [][]byte) {
			return append(k[:5:5], k[6:]...), append(v[:5:5], v[6:]...)
		}, "entries must be contiguous"},
		{"commit beyond the log", func(k, v [][]byte) ([][]byte, [][]byte) {
			return k[:5], v[:5]
		}, "commit index 6 beyond the last index 5"},
	} {
		k := append([][]byte(nil), keys...)
		v := append([][]byte(nil), values...)
		k, v = tc.mutate(k, v)
		_, err := load(k, v)
		if !errors.Is(err, meta.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a corruption saying %q", tc.name, err, tc.want)
		}
	}
}
