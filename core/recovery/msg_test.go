package recovery

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

func sampleSeal() Seal {
	return Seal{Queue: 7, Incarnation: 1 << 40, Epoch: 9, Transition: Digest{1, 2, 3}, Node: 2, Process: 300, Storage: 4000,
		Start: 0, End: 1201, LastEpoch: 8, Identity: Digest{9, 8, 7}, Damaged: true}
}

// encodings returns one encoding of every message kind.
func encodings() [][]byte {
	s := sampleSeal()
	return [][]byte{
		AppendSealRequest(nil, &SealRequest{Queue: 7, Incarnation: 1 << 40, Epoch: 9, Transition: Digest{1, 2, 3}}),
		AppendSeal(nil, &s),
		AppendSealRefused(nil, &SealRefused{Queue: 7, Transition: Digest{1}, Code: RefusedBusy, Reason: "another seal runs"}),
		AppendSealRefused(nil, &SealRefused{Queue: 7, Transition: Digest{1}, Reason: "not sealed", Read: true}),
		AppendReadRequest(nil, &ReadRequest{Queue: 7, Incarnation: 40, Epoch: 9, Transition: Digest{5}, From: 300, Count: 4096}),
		AppendReadPage(nil, &ReadPage{Queue: 7, Transition: Digest{5}, Node: 3, From: 300, Records: []record.Record{
			{Epoch: 2, Offset: 300, Kind: record.KindEpoch, Body: []byte{}},
			{Epoch: 2, Offset: 301, Kind: record.KindPublish, Body: []byte("hello")},
		}}),
		AppendReadPage(nil, &ReadPage{Queue: 7, Transition: Digest{5}, Node: 3, From: 300}),
		AppendInstallRequest(nil, &InstallRequest{Queue: 7, Incarnation: 40, Epoch: 9, Transition: Digest{5}, Source: 2, Start: 0, End: 900,
			Identity: Digest{6}, Epochs: []seam.EpochStart{{Epoch: 1 << 32, Offset: 0}, {Epoch: 1<<32 + 1, Offset: 400}}}),
		AppendInstalled(nil, &Installed{Queue: 7, Transition: Digest{5}, Node: 3, Process: 8, Storage: 9, End: 900, Identity: Digest{6}}),
		AppendSealRefused(nil, &SealRefused{Queue: 7, Transition: Digest{1}, Reason: "not proposed", Install: true}),
		AppendSealRefused(nil, &SealRefused{Queue: 7, Transition: Digest{1}, Code: RefusedStageBudget, Reason: "over budget", Install: true}),
	}
}

// A refusal's code round-trips, and one past the last known is refused
// from its byte.
func TestRefusalCodes(t *testing.T) {
	for c := RefusedFor; c <= refusalMax; c++ {
		b := AppendSealRefused(nil, &SealRefused{Queue: 3, Code: c, Reason: "why", Install: true})
		r, err := DecodeSealRefused(b)
		if err != nil || r.Code != c || !r.Install {
			t.Fatalf("code %s: decoded %+v, %v", c, r, err)
		}
		if c.String() == "refusal?" {
			t.Fatalf("code %d has no name", c)
		}
	}
	b := AppendSealRefused(nil, &SealRefused{Queue: 3, Code: refusalMax + 1, Reason: "why"})
	if _, err := DecodeSealRefused(b); !errors.Is(err, ErrDecode) {
		t.Fatalf("code %d decoded: %v", refusalMax+1, err)
	}
}

// decodeAny decodes b by its marker and re-encodes what it decoded.
func decodeAny(b []byte) ([]byte, error) {
	k, err := KindOf(b)
	if err != nil {
		return nil, err
	}
	switch k {
	case KindSealRequest:
		r, err := DecodeSealRequest(b)
		return AppendSealRequest(nil, &r), err
	case KindSeal:
		s, err := DecodeSeal(b)
		return AppendSeal(nil, &s), err
	case KindInstall:
		r, err := DecodeInstallRequest(b)
		return AppendInstallRequest(nil, &r), err
	case KindInstalled:
		r, err := DecodeInstalled(b)
		return AppendInstalled(nil, &r), err
	case KindReadRequest:
		r, err := DecodeReadRequest(b)
		return AppendReadRequest(nil, &r), err
	case KindReadPage:
		p, err := DecodeReadPage(b)
		return AppendReadPage(nil, &p), err
	default:
		r, err := DecodeSealRefused(b)
		return AppendSealRefused(nil, &r), err
	}
}

// Every message decodes to what was encoded; every cut, every trailing
// byte and every padded varint is refused.
func TestMessagesStrict(t *testing.T) {
	for _, b := range encodings() {
		again, err := decodeAny(b)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%q: decoded (%v) and encoded again as %q", b, err, again)
		}
		for cut := range len(b) {
			if _, err := decodeAny(b[:cut]); !errors.Is(err, ErrDecode) {
				t.Fatalf("%q cut at %d of %d decoded (%v)", b[:4], cut, len(b), err)
			}
		}
		if _, err := decodeAny(append(bytes.Clone(b), 0)); !errors.Is(err, ErrDecode) {
			t.Fatalf("%q with a trailing byte decoded (%v)", b[:4], err)
		}
		// The queue id 7 right after the marker, padded to two bytes.
		padded := append(append(bytes.Clone(b[:4]), 0x87, 0x00), b[5:]...)
		if _, err := decodeAny(padded); !errors.Is(err, ErrDecode) {
			t.Fatalf("%q with a padded varint decoded (%v)", b[:4], err)
		}
	}
	if _, err := decodeAny([]byte("RSX1")); err == nil {
		t.Fatal("an unknown marker decoded")
	}
	s := sampleSeal()
	s.Start, s.End = 5, 4
	if _, err := DecodeSeal(AppendSeal(nil, &s)); err == nil {
		t.Fatal("a seal with its start above its end decoded")
	}
	b := AppendSeal(nil, &s)
	b[len(b)-1] = 2
	if _, err := DecodeSeal(b); err == nil {
		t.Fatal("a bool of 2 decoded")
	}
}

// FuzzDecode: no input panics a decoder, and whatever decodes encodes back
// to the same bytes (one value, one encoding).
func FuzzDecode(f *testing.F) {
	for _, b := range encodings() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		again, err := decodeAny(b)
		if err == nil && !bytes.Equal(again, b) {
			t.Fatalf("%x decoded, and encodes back as %x", b, again)
		}
	})
}

// A page refuses a count over its bound, an unknown record kind and a
// record count its bytes do not hold.
func TestReadPageBounds(t *testing.T) {
	p := ReadPage{Queue: 7, Node: 3, From: 0, Records: []record.Record{{Kind: 9, Body: []byte("x")}}}
	if _, err := DecodeReadPage(AppendReadPage(nil, &p)); err == nil {
		t.Fatal("a record of kind 9 decoded")
	}
	r := ReadRequest{Queue: 7, Count: PageRecordsMax + 1}
	if _, err := DecodeReadRequest(AppendReadRequest(nil, &r)); err == nil {
		t.Fatal("a read of more than PageRecordsMax records decoded")
	}
}

// A binding decodes to what it binds, and nothing else decodes: a cut,
// a byte more, a zero field, another marker.
func TestBindingCodec(t *testing.T) {
	b := AppendBinding(nil, 7, 12, 99)
	if !Binds(b, 7, 12, 99) || Binds(b, 7, 13, 99) || Binds(b, 8, 12, 99) || Binds(b, 7, 12, 98) {
		t.Fatal("Binds does not tell the queue, incarnation and storage")
	}
	for i := range len(b) {
		if _, _, _, err := DecodeBinding(b[:i]); err == nil {
			t.Fatalf("a binding cut to %d bytes decoded", i)
		}
	}
	if _, _, _, err := DecodeBinding(append(b, 0)); err == nil {
		t.Fatal("a trailing byte decoded")
	}
	if _, _, _, err := DecodeBinding(AppendBinding(nil, 7, 0, 99)); err == nil {
		t.Fatal("a zero incarnation decoded")
	}
	if Binds([]byte("SB2\x07\x0c\x63"), 7, 12, 99) {
		t.Fatal("another marker decoded")
	}
}
