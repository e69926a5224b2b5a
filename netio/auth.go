package netio

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/sluicemq/sluice/core/seam"
)

// Sizes of the handshake.
const (
	NonceBytes     = 32
	MACBytes       = sha256.Size
	SecretBytesMin = 32

	HelloBytes     = 4 + 8 + NonceBytes            // node id, process instance, nonce_c
	ChallengeBytes = 4 + 8 + NonceBytes + MACBytes // node id, process instance, nonce_s, MAC_s
	ProofBytes     = MACBytes                      // MAC_c
	WelcomeBytes   = 0
)

// The MAC labels: one per direction, so that a MAC one side computed is
// never accepted from the other (a reflected MAC fails). Equal lengths, and
// the fields after them are fixed-size, so the concatenation is unambiguous.
const (
	labelServer = "sluice-peer-v1 server"
	labelClient = "sluice-peer-v1 client"
)

// Errors of the handshake and the configuration, each wrapped with detail.
var (
	ErrConfig           = errors.New("netio: bad configuration")
	ErrAuth             = errors.New("netio: authentication failed")
	ErrUnauthenticated  = errors.New("netio: peer operation before authentication")
	ErrHandshake        = errors.New("netio: handshake protocol violation")
	ErrHandshakeTimeout = errors.New("netio: handshake did not finish in time")
	ErrRefused          = errors.New("netio: listener closed the connection during the handshake")
)

// Hello is the dialer's first frame: its node id, its process instance
// and its fresh nonce.
type Hello struct {
	Node    seam.NodeID
	Process uint64
	Nonce   [NonceBytes]byte
}

// Challenge is the listener's answer: its id, its process instance, its
// fresh nonce and MAC_s.
type Challenge struct {
	Node    seam.NodeID
	Process uint64
	Nonce   [NonceBytes]byte
	MAC     [MACBytes]byte
}

// Proof is the dialer's MAC_c.
type Proof struct {
	MAC [MACBytes]byte
}

// AppendHello appends the body of m.
func AppendHello(dst []byte, m Hello) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(m.Node))
	dst = binary.LittleEndian.AppendUint64(dst, m.Process)
	return append(dst, m.Nonce[:]...)
}

// AppendChallenge appends the body of m.
func AppendChallenge(dst []byte, m Challenge) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(m.Node))
	dst = binary.LittleEndian.AppendUint64(dst, m.Process)
	dst = append(dst, m.Nonce[:]...)
	return append(dst, m.MAC[:]...)
}

// AppendProof appends the body of m.
func AppendProof(dst []byte, m Proof) []byte { return append(dst, m.MAC[:]...) }

func exactBody(op Opcode, body []byte, want int) error {
	switch {
	case len(body) < want:
		return fmt.Errorf("%w: %s body of %d bytes, want %d (truncated)", ErrMalformed, op, len(body), want)
	case len(body) > want:
		return fmt.Errorf("%w: %s body of %d bytes, want %d (%d trailing)", ErrMalformed, op, len(body), want, len(body)-want)
	}
	return nil
}

// DecodeHello decodes a Hello body; it must be exactly HelloBytes long.
func DecodeHello(body []byte) (Hello, error) {
	var m Hello
	if err := exactBody(OpHello, body, HelloBytes); err != nil {
		return m, err
	}
	m.Node = seam.NodeID(binary.LittleEndian.Uint32(body))
	m.Process = binary.LittleEndian.Uint64(body[4:])
	copy(m.Nonce[:], body[12:])
	return m, nil
}

// DecodeChallenge decodes a Challenge body; it must be exactly
// ChallengeBytes long.
func DecodeChallenge(body []byte) (Challenge, error) {
	var m Challenge
	if err := exactBody(OpChallenge, body, ChallengeBytes); err != nil {
		return m, err
	}
	m.Node = seam.NodeID(binary.LittleEndian.Uint32(body))
	m.Process = binary.LittleEndian.Uint64(body[4:])
	copy(m.Nonce[:], body[12:])
	copy(m.MAC[:], body[12+NonceBytes:])
	return m, nil
}

// DecodeProof decodes a Proof body; it must be exactly ProofBytes long.
func DecodeProof(body []byte) (Proof, error) {
	var m Proof
	if err := exactBody(OpProof, body, ProofBytes); err != nil {
		return m, err
	}
	copy(m.MAC[:], body)
	return m, nil
}

// DecodeWelcome checks a Welcome body, which is empty.
func DecodeWelcome(body []byte) error { return exactBody(OpWelcome, body, WelcomeBytes) }

// mac is HMAC-SHA256(secret, label || client id || server id || client
// process || server process || nonce_c || nonce_s). Both ids bind the
// session to who claims to be talking to whom; the process instances are
// bound too, because eager failover reports the instance a connection
// reached (InPeerLost), and an altered one could fence a live process;
// both nonces make it fresh for each side.
func mac(secret []byte, label string, client, server seam.NodeID, procC, procS uint64, nonceC, nonceS *[NonceBytes]byte) [MACBytes]byte {
	h := hmac.New(sha256.New, secret)
	var ids [24]byte
	binary.LittleEndian.PutUint32(ids[0:], uint32(client))
	binary.LittleEndian.PutUint32(ids[4:], uint32(server))
	binary.LittleEndian.PutUint64(ids[8:], procC)
	binary.LittleEndian.PutUint64(ids[16:], procS)
	h.Write([]byte(label))
	h.Write(ids[:])
	h.Write(nonceC[:])
	h.Write(nonceS[:])
	var out [MACBytes]byte
	h.Sum(out[:0])
	return out
}

// handshakeIO reads and writes the handshake's frames on one connection.
// The caller sets the connection's deadline for the whole handshake.
type handshakeIO struct {
	nc   net.Conn
	head [HeaderBytes]byte
	buf  [HeaderBytes + ChallengeBytes]byte // the largest handshake frame
}

func (h *handshakeIO) write(op Opcode, body []byte) error {
	if _, err := h.nc.Write(AppendFrame(h.buf[:0], op, body)); err != nil {
		return fmt.Errorf("netio: writing %s: %w", op, err)
	}
	return nil
}

// read reads the next frame, which must be want with exactly n body bytes.
// Both are checked from the header, so a wrong or oversized frame is refused
// before its body is read. A non-handshake opcode is ErrUnauthenticated;
// with skipGate (a test-only bug) such a frame is read whole and returned
// with ok false instead.
func (h *handshakeIO) read(want Opcode, n int, skipGate bool) (f Frame, ok bool, err error) {
	hd, err := readHeader(h.nc, &h.head)
	if err != nil {
		if err == io.EOF {
			err = fmt.Errorf("netio: connection closed while waiting for %s: %w", want, io.ErrUnexpectedEOF)
		}
		return Frame{}, false, err
	}
	if hd.Op != want {
		if !hd.Op.Handshake() {
			if skipGate {
				f, err := readBody(h.nc, &h.head, hd, nil)
				return f, false, err
			}
			return Frame{}, false, fmt.Errorf("%w: %s (%d bytes) while waiting for %s", ErrUnauthenticated, hd.Op, hd.BodyBytes, want)
		}
		return Frame{}, false, fmt.Errorf("%w: got %s, want %s", ErrHandshake, hd.Op, want)
	}
	if hd.BodyBytes != n {
		return Frame{}, false, fmt.Errorf("%w: %s announces %d bytes, want %d", ErrHandshake, want, hd.BodyBytes, n)
	}
	f, err = readBody(h.nc, &h.head, hd, h.buf[:0])
	return f, err == nil, err
}

// timeoutErr turns a deadline hit into ErrHandshakeTimeout.
func timeoutErr(err error, timeoutMs int64) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w (%d ms): %w", ErrHandshakeTimeout, timeoutMs, err)
	}
	return err
}

func nonce(r io.Reader) ([NonceBytes]byte, error) {
	var n [NonceBytes]byte
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return n, fmt.Errorf("netio: drawing a nonce: %w", err)
	}
	return n, nil
}

// clientHandshake runs the dialer's side and returns the listener's
// authenticated node id and process instance.
func clientHandshake(nc net.Conn, cfg *Config) (seam.NodeID, uint64, error) {
	h := &handshakeIO{nc: nc}
	nonceC, err := nonce(cfg.rand)
	if err != nil {
		return 0, 0, err
	}
	if err := h.write(OpHello, AppendHello(nil, Hello{Node: cfg.NodeID, Process: cfg.Process, Nonce: nonceC})); err != nil {
		return 0, 0, err
	}
	f, _, err := h.read(OpChallenge, ChallengeBytes, false)
	if err != nil {
		return 0, 0, err
	}
	ch, err := DecodeChallenge(f.Body)
	if err != nil {
		return 0, 0, err
	}
	want := mac(cfg.Secret, labelServer, cfg.NodeID, ch.Node, cfg.Process, ch.Process, &nonceC, &ch.Nonce)
	if !hmac.Equal(want[:], ch.MAC[:]) {
		return 0, 0, fmt.Errorf("%w: listener (claims node %d) has a MAC that does not verify: a different cluster secret, or not a sluice peer", ErrAuth, ch.Node)
	}
	proof := mac(cfg.Secret, labelClient, cfg.NodeID, ch.Node, cfg.Process, ch.Process, &nonceC, &ch.Nonce)
	if err := h.write(OpProof, AppendProof(nil, Proof{MAC: proof})); err != nil {
		return 0, 0, err
	}
	f, _, err = h.read(OpWelcome, WelcomeBytes, false)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
			// A refusal arrives as an end of stream, or as a reset when
			// the listener closed with our Proof unread.
			return 0, 0, fmt.Errorf("%w: no Welcome after our Proof (the listener refused it): %w", ErrRefused, err)
		}
		return 0, 0, err
	}
	if err := DecodeWelcome(f.Body); err != nil {
		return 0, 0, err
	}
	return ch.Node, ch.Process, nil
}

// serverHandshake runs the listener's side and returns the dialer's
// authenticated node id and process instance. Only with cfg.skipGate (a
// planted bug for tests) can it return a frame that arrived before
// authentication, as pending.
func serverHandshake(nc net.Conn, cfg *Config) (peer seam.NodeID, process uint64, pending *Frame, err error) {
	h := &handshakeIO{nc: nc}
	f, ok, err := h.read(OpHello, HelloBytes, cfg.skipGate)
	if err != nil {
		return 0, 0, nil, err
	}
	if !ok {
		return 0, 0, &f, nil // skipGate only: the bug the gate tests must catch
	}
	hello, err := DecodeHello(f.Body)
	if err != nil {
		return 0, 0, nil, err
	}
	nonceS, err := nonce(cfg.rand)
	if err != nil {
		return 0, 0, nil, err
	}
	ch := Challenge{Node: cfg.NodeID, Process: cfg.Process, Nonce: nonceS}
	ch.MAC = mac(cfg.Secret, labelServer, hello.Node, cfg.NodeID, hello.Process, cfg.Process, &hello.Nonce, &nonceS)
	if err := h.write(OpChallenge, AppendChallenge(nil, ch)); err != nil {
		return 0, 0, nil, err
	}
	f, ok, err = h.read(OpProof, ProofBytes, cfg.skipGate)
	if err != nil {
		return 0, 0, nil, err
	}
	if !ok {
		return 0, 0, &f, nil
	}
	proof, err := DecodeProof(f.Body)
	if err != nil {
		return 0, 0, nil, err
	}
	want := mac(cfg.Secret, labelClient, hello.Node, cfg.NodeID, hello.Process, cfg.Process, &hello.Nonce, &nonceS)
	if !hmac.Equal(want[:], proof.MAC[:]) {
		return 0, 0, nil, fmt.Errorf("%w: dialer claiming node %d sent a Proof that does not verify: a different cluster secret, a replayed or reflected MAC", ErrAuth, hello.Node)
	}
	if err := h.write(OpWelcome, nil); err != nil {
		return 0, 0, nil, err
	}
	return hello.Node, hello.Process, nil, nil
}
