package netio

import (
	"bytes"
	"testing"
)

// Every decoder has a fuzz target. Each must never panic, and whatever it
// accepts must re-encode to exactly the bytes it was given (so nothing is
// silently ignored: no trailing byte, no unread field). The seed corpora are
// valid encodings plus a few near misses; `go test` runs only them.

func seedFrames(f *testing.F) {
	for _, op := range Opcodes() {
		body := make([]byte, 0, ChallengeBytes)
		switch op {
		case OpHello:
			body = AppendHello(body, Hello{Node: 3})
		case OpChallenge:
			body = AppendChallenge(body, Challenge{Node: 3})
		case OpProof:
			body = AppendProof(body, Proof{})
		case OpWelcome:
		case OpGroupMessage:
			body = AppendGroupMessage(body, 5, []byte("message"))
		default:
			body = append(body, op.String()...)
		}
		enc := AppendFrame(nil, op, body)
		f.Add(enc)
		f.Add(enc[:len(enc)-1])
		f.Add(append(bytes.Clone(enc), 0))
	}
	f.Add(header(OpGroupMessage, DataBodyBytesMax+1))
}

func FuzzDecodeHeader(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			return
		}
		if !h.Op.Known() || h.BodyBytes > h.Op.BodyBytesMax() || h.BodyBytes < 0 {
			t.Fatalf("accepted %+v", h)
		}
	})
}

func FuzzDecodeFrame(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		// The stream reader agrees with the slice decoder on whole input.
		r := bytes.NewReader(b)
		sfr, serr := ReadFrame(r, nil)
		if err == nil {
			if !bytes.Equal(AppendFrame(nil, fr.Op, fr.Body), b) {
				t.Fatalf("accepted %x, re-encodes differently", b)
			}
			if serr != nil || sfr.Op != fr.Op || !bytes.Equal(sfr.Body, fr.Body) || r.Len() != 0 {
				t.Fatalf("stream reader disagrees: %v", serr)
			}
		} else if serr == nil && r.Len() == 0 {
			t.Fatalf("stream reader accepted what DecodeFrame refused (%v)", err)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for range 4 {
			off := len(b) - r.Len()
			fr, err := ReadFrame(r, nil)
			if err != nil {
				return
			}
			n := len(b) - r.Len()
			if !bytes.Equal(AppendFrame(nil, fr.Op, fr.Body), b[off:n]) {
				t.Fatalf("frame at %d re-encodes differently", off)
			}
		}
	})
}

func FuzzDecodeHello(f *testing.F) {
	f.Add(AppendHello(nil, Hello{Node: 1, Nonce: [NonceBytes]byte{1, 2, 3}}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeHello(b)
		if err == nil && !bytes.Equal(AppendHello(nil, m), b) {
			t.Fatalf("accepted %x, re-encodes differently", b)
		}
	})
}

func FuzzDecodeChallenge(f *testing.F) {
	f.Add(AppendChallenge(nil, Challenge{Node: 1, Nonce: [NonceBytes]byte{1}, MAC: [MACBytes]byte{2}}))
	f.Add(make([]byte, ChallengeBytes+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeChallenge(b)
		if err == nil && !bytes.Equal(AppendChallenge(nil, m), b) {
			t.Fatalf("accepted %x, re-encodes differently", b)
		}
	})
}

func FuzzDecodeProof(f *testing.F) {
	f.Add(AppendProof(nil, Proof{MAC: [MACBytes]byte{9}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProof(b)
		if err == nil && !bytes.Equal(AppendProof(nil, m), b) {
			t.Fatalf("accepted %x, re-encodes differently", b)
		}
	})
}

func FuzzDecodeWelcome(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := DecodeWelcome(b); (err == nil) != (len(b) == 0) {
			t.Fatalf("Welcome %x: %v", b, err)
		}
	})
}

func FuzzDecodeGroupMessage(f *testing.F) {
	f.Add(AppendGroupMessage(nil, 1, []byte("m")))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, msg, err := DecodeGroupMessage(b)
		if err == nil && !bytes.Equal(AppendGroupMessage(nil, g, msg), b) {
			t.Fatalf("accepted %x, re-encodes differently", b)
		}
	})
}
