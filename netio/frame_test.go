package netio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// testSeed is the seed of every randomized test body: fixed by default,
// NETIO_SEED=n to vary it. Tests that use it print it.
func testSeed(t testing.TB) uint64 {
	seed := uint64(13)
	if s := os.Getenv("NETIO_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("NETIO_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun: NETIO_SEED=%d go test -run '^%s$' ./netio/)", seed, seed, t.Name())
	return seed
}

// sampleBody returns a body valid for op: the exact size for a handshake
// opcode, else n random bytes.
func sampleBody(rng *rand.Rand, op Opcode, n int) []byte {
	switch op {
	case OpHello:
		n = HelloBytes
	case OpChallenge:
		n = ChallengeBytes
	case OpProof:
		n = ProofBytes
	case OpWelcome:
		n = WelcomeBytes
	case OpGroupMessage:
		n = max(n, GroupIDBytes)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestOpcodeTable(t *testing.T) {
	want := map[Opcode]Class{
		OpHello: ClassControl, OpChallenge: ClassControl, OpProof: ClassControl, OpWelcome: ClassControl,
		OpGroupMessage: ClassData,
		OpSeal:         ClassControl, OpSealReply: ClassControl, OpRead: ClassControl,
		OpReadReply: ClassData, OpInstall: ClassData, OpInstallReply: ClassData,
		OpClientRequest: ClassData, OpClientEffect: ClassData, OpClientGone: ClassControl,
	}
	got := Opcodes()
	if len(got) != len(want) {
		t.Fatalf("Opcodes() = %v, want %d opcodes", got, len(want))
	}
	for _, op := range got {
		if op.Class() != want[op] {
			t.Errorf("%s: class %d, want %d", op, op.Class(), want[op])
		}
		if op.Handshake() != (op <= OpWelcome) {
			t.Errorf("%s: handshake %v", op, op.Handshake())
		}
	}
	if Opcode(0).Known() || Opcode(255).Known() || Opcode(0).BodyBytesMax() != 0 {
		t.Error("opcodes 0 and 255 are known")
	}
}

func TestRoundTripEveryOpcode(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	for _, op := range Opcodes() {
		for _, n := range []int{0, 1, 100, 4096} {
			body := sampleBody(rng, op, n)
			enc := AppendFrame(nil, op, body)
			if len(enc) != HeaderBytes+len(body) {
				t.Fatalf("%s: %d bytes encoded", op, len(enc))
			}
			f, err := DecodeFrame(enc)
			if err != nil || f.Op != op || !bytes.Equal(f.Body, body) {
				t.Fatalf("%s: DecodeFrame = %v, %v", op, f.Op, err)
			}
			// A stream of two frames reads back as two frames, then io.EOF.
			stream := AppendFrame(enc, op, body)
			r := bytes.NewReader(stream)
			for i := range 2 {
				f, err := ReadFrame(r, nil)
				if err != nil || f.Op != op || !bytes.Equal(f.Body, body) {
					t.Fatalf("%s: ReadFrame #%d = %v, %v", op, i, f.Op, err)
				}
			}
			if _, err := ReadFrame(r, nil); err != io.EOF {
				t.Fatalf("%s: after the last frame: %v, want io.EOF", op, err)
			}
		}
	}
}

func TestReadFrameIntoBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	enc := AppendFrame(nil, OpSeal, []byte("abc"))
	f, err := ReadFrame(bytes.NewReader(enc), buf)
	if err != nil || &f.Body[0] != &buf[:1][0] {
		t.Fatalf("body not read into the caller's buffer: %v", err)
	}
}

func TestAppendFrameNoAlloc(t *testing.T) {
	body := make([]byte, 1000)
	dst := make([]byte, 0, HeaderBytes+len(body))
	allocs := testing.AllocsPerRun(100, func() { dst = AppendFrame(dst[:0], OpGroupMessage, body) })
	if allocs != 0 {
		t.Fatalf("AppendFrame into a buffer with room allocates %v times", allocs)
	}
}

// TestEveryBitFlipRefused flips each bit of an encoded frame of every opcode
// and expects the slice decoder and the stream reader to refuse it, with the
// error of the field the bit belongs to.
func TestEveryBitFlipRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 2))
	for _, op := range Opcodes() {
		enc := AppendFrame(nil, op, sampleBody(rng, op, 40))
		for i := range len(enc) * 8 {
			bad := bytes.Clone(enc)
			bad[i/8] ^= 1 << (i % 8)
			_, err := DecodeFrame(bad)
			_, rerr := ReadFrame(bytes.NewReader(bad), nil)
			if err == nil || rerr == nil {
				t.Fatalf("%s: bit %d flipped accepted (slice %v, stream %v)", op, i, err, rerr)
			}
			var want []error
			switch byteAt := i / 8; {
			case byteAt < 2:
				want = []error{ErrMagic}
			case byteAt == 2:
				want = []error{ErrVersion}
			case byteAt == 3: // another opcode: unknown, or known and caught by the sum
				want = []error{ErrOpcode, ErrChecksum, ErrTooLarge}
			case byteAt < 8:
				want = []error{ErrTooLarge, ErrTruncatedBody, ErrTrailing, ErrChecksum}
			default:
				want = []error{ErrChecksum}
			}
			if !isAny(err, want) {
				t.Fatalf("%s: bit %d: %v, want one of %v", op, i, err, want)
			}
		}
	}
}

func isAny(err error, targets []error) bool {
	for _, e := range targets {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func TestEveryTruncationRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for _, op := range Opcodes() {
		enc := AppendFrame(nil, op, sampleBody(rng, op, 50))
		for n := range len(enc) {
			_, err := DecodeFrame(enc[:n])
			want := ErrTruncatedBody
			if n < HeaderBytes {
				want = ErrTruncatedHeader
			}
			if !errors.Is(err, want) {
				t.Fatalf("%s cut to %d bytes: %v, want %v", op, n, err, want)
			}
			_, err = ReadFrame(bytes.NewReader(enc[:n]), nil)
			if n == 0 {
				want = io.EOF // nothing at all is a clean end, not a frame
			}
			if !errors.Is(err, want) {
				t.Fatalf("%s cut to %d bytes, streamed: %v, want %v", op, n, err, want)
			}
			if n > 0 && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s cut to %d bytes: %v does not wrap io.ErrUnexpectedEOF", op, n, err)
			}
		}
	}
}

func TestTrailingRefused(t *testing.T) {
	for _, op := range Opcodes() {
		enc := AppendFrame(nil, op, sampleBody(rand.New(rand.NewPCG(1, 1)), op, 8))
		for _, extra := range [][]byte{{0}, enc} {
			if _, err := DecodeFrame(append(bytes.Clone(enc), extra...)); !errors.Is(err, ErrTrailing) {
				t.Fatalf("%s with %d trailing bytes: %v", op, len(extra), err)
			}
		}
	}
}

// headerOnly is a reader that serves a header followed by an endless body,
// and fails the test if anything past the header is read.
type headerOnly struct {
	t    *testing.T
	head []byte
	off  int
}

func (r *headerOnly) Read(p []byte) (int, error) {
	if r.off >= len(r.head) {
		r.t.Errorf("read past the header (%d bytes asked)", len(p))
		return 0, errors.New("read past the header")
	}
	n := copy(p, r.head[r.off:])
	r.off += n
	return n, nil
}

func header(op Opcode, n uint32) []byte {
	h := []byte{Magic[0], Magic[1], Version, byte(op), 0, 0, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(h[4:], n)
	return h
}

func TestOversizeRefusedFromHeader(t *testing.T) {
	for _, op := range Opcodes() {
		lim := uint32(op.BodyBytesMax())
		for _, n := range []uint32{lim + 1, 1 << 31, ^uint32(0)} {
			r := &headerOnly{t: t, head: header(op, n)}
			_, err := ReadFrame(r, nil)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s announcing %d bytes: %v, want ErrTooLarge", op, n, err)
			}
			if r.off != HeaderBytes {
				t.Fatalf("%s: read %d bytes", op, r.off)
			}
		}
		// At the limit the header passes.
		if h, err := DecodeHeader(header(op, lim)); err != nil || h.BodyBytes != int(lim) {
			t.Fatalf("%s at its limit: %v", op, err)
		}
	}
}

// TestHeaderOnlyDetectsBodyRead shows the check above can fail: a reader
// that reads the body before checking the length is caught by headerOnly.
func TestHeaderOnlyDetectsBodyRead(t *testing.T) {
	inner := &testing.T{}
	r := &headerOnly{t: inner, head: header(OpSeal, ControlBodyBytesMax+1)}
	var h [HeaderBytes]byte
	io.ReadFull(r, h[:])
	io.ReadFull(r, make([]byte, 1)) // the planted bug: read on before checking
	if !inner.Failed() {
		t.Fatal("headerOnly did not notice a read past the header")
	}
}

func TestDistinctErrors(t *testing.T) {
	good := AppendFrame(nil, OpSeal, []byte("seal"))
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	all := []error{ErrMagic, ErrVersion, ErrOpcode, ErrTooLarge, ErrChecksum, ErrTruncatedHeader, ErrTruncatedBody, ErrTrailing}
	cases := []struct {
		in   []byte
		want error
	}{
		{mod(func(b []byte) []byte { b[0] = 'A'; return b }), ErrMagic},
		{mod(func(b []byte) []byte { b[2] = 2; return b }), ErrVersion},
		{mod(func(b []byte) []byte { b[3] = 200; return b }), ErrOpcode},
		{header(OpSeal, ControlBodyBytesMax+1), ErrTooLarge},
		{mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrChecksum},
		{good[:5], ErrTruncatedHeader},
		{good[:HeaderBytes+1], ErrTruncatedBody},
		{append(bytes.Clone(good), 'x'), ErrTrailing},
	}
	for _, c := range cases {
		_, err := DecodeFrame(c.in)
		for _, e := range all {
			if errors.Is(err, e) != (e == c.want) {
				t.Errorf("%x: %v; want only %v", c.in, err, c.want)
			}
		}
		if err != nil {
			fmt.Fprintln(io.Discard, err.Error()) // messages must not panic
		}
	}
}

func TestGroupMessageBody(t *testing.T) {
	body := AppendGroupMessage(nil, 1<<40|7, []byte("hello"))
	g, msg, err := DecodeGroupMessage(body)
	if err != nil || g != 1<<40|7 || string(msg) != "hello" {
		t.Fatalf("DecodeGroupMessage = %d %q %v", g, msg, err)
	}
	for n := range GroupIDBytes {
		if _, _, err := DecodeGroupMessage(body[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%d-byte body: %v", n, err)
		}
	}
}

func TestEncodingPanicsOnProgrammerError(t *testing.T) {
	for _, f := range []func(){
		func() { AppendFrame(nil, Opcode(99), nil) },
		func() { AppendFrame(nil, OpSeal, make([]byte, ControlBodyBytesMax+1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

// TestBodyMemoryFollowsArrival: a frame announcing a large body and
// truncated after a few bytes allocates about bodyChunkBytes, not the
// announced length.
func TestBodyMemoryFollowsArrival(t *testing.T) {
	in := append(header(OpGroupMessage, DataBodyBytesMax), make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		ReadFrame(bytes.NewReader(in), nil)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 4*bodyChunkBytes {
		t.Fatalf("%d bytes allocated for a 100-byte truncated body", per)
	}
	// A whole large body still reads back.
	body := make([]byte, 3*bodyChunkBytes+5)
	body[len(body)-1] = 7
	f, err := ReadFrame(bytes.NewReader(AppendFrame(nil, OpReadReply, body)), nil)
	if err != nil || !bytes.Equal(f.Body, body) {
		t.Fatalf("large body: %v", err)
	}
}
