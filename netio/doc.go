// Package netio is the peer transport on TCP: how brokers exchange frames
// with each other in the daemon. (The simulator carries core/wire frames on
// its fake network and never uses this package.) It uses the standard
// library only.
//
// # Frame
//
// Every frame is a 12-byte header and a body, little-endian like core/wire:
//
//	offset  size  field
//	0       2     magic "SL"
//	2       1     version, 1
//	3       1     opcode
//	4       4     body length in bytes (u32)
//	8       4     CRC32C (Castagnoli) of bytes 0..8 and of the body
//	12      n     body
//
// The checksum covers the first 8 header bytes as well as the body, so a
// flipped opcode bit, which could turn one known opcode into another, is
// caught like any other flipped bit. (core/wire sums only its payload; its
// header is just the length.)
//
// # Opcodes and limits
//
// Each opcode has a class, and the class sets the body limit: control
// bodies at most 64 KiB (ControlBodyBytesMax), data bodies at most 64 MiB
// (DataBodyBytesMax), checked from the header before any of the body is
// read (docs/design/recovery.md, "Budgets and limits").
//
//	opcode  name          class    body
//	1       Hello         control  exactly 44 bytes: u32 node id, u64 process, nonce_c[32]
//	2       Challenge     control  exactly 76 bytes: u32 node id, u64 process, nonce_s[32], MAC_s[32]
//	3       Proof         control  exactly 32 bytes: MAC_c[32]
//	4       Welcome       control  empty
//	16      GroupMessage  data     u64 group id + the group's message (replication)
//	32      Seal          control  placeholder, opaque here
//	33      SealReply     control  placeholder (bounds and a fingerprint)
//	34      Read          control  placeholder (a read request)
//	35      ReadReply     data     placeholder (pages of records)
//	36      Install       data     placeholder (pages to install)
//	37      InstallReply  data     placeholder
//	48      ClientRequest data     a forwarded client request (daemon/forward.go)
//	49      ClientEffect  data     a reply, delivery or cancel for a forwarded client
//	50      ClientGone    control  a forwarded client is gone
//
// Opcode values are wire format: never renumbered, only added. The
// placeholders have no bodies of their own (sealed recovery's messages
// travel as GroupMessage frames of group seam.GroupRecovery); they are here
// so the authentication gate is tested against every kind of peer
// operation.
//
// # Refusals
//
// Untrusted bytes are refused with a clear error, never asserted on:
//
//   - From the header alone, before any of the body is read or allocated:
//     bad magic (ErrMagic), unknown version (ErrVersion), unknown opcode
//     (ErrOpcode), a length over the opcode's limit (ErrTooLarge). A
//     rejected header costs its 12 bytes and nothing more.
//   - After the body: checksum mismatch (ErrChecksum).
//   - A stream that ends inside a header or a body: ErrTruncatedHeader or
//     ErrTruncatedBody (wrapping io.ErrUnexpectedEOF); an end between
//     frames is io.EOF itself.
//   - DecodeFrame over a byte slice takes exactly one frame: anything after
//     it is ErrTrailing. The handshake decoders take exactly their size.
//
// A body read into a new slice grows as its bytes arrive (from 64 KiB,
// doubling), so an announced length costs memory only once it is sent.
// Encoding an unknown opcode or an over-limit body with AppendFrame is a
// programmer error and panics; Conn.WriteFrame refuses an over-limit body
// with ErrTooLarge before writing anything.
//
// # Authentication
//
// Before any other opcode both ends prove they hold the cluster secret (at
// least 32 bytes; shorter ones are refused at configuration, ErrConfig).
// Nonces are 32 bytes from crypto/rand, fresh on each side for each
// connection.
//
//  1. Dialer → Hello{client id, client process, nonce_c}.
//  2. Listener → Challenge{server id, server process, nonce_s, MAC_s},
//     where MAC_s = HMAC-SHA256(secret, "sluice-peer-v1 server" || client
//     id || server id || client process || server process || nonce_c ||
//     nonce_s).
//  3. The dialer checks MAC_s (hmac.Equal, constant time). It proves the
//     listener holds the secret now: nonce_c is the dialer's own and fresh,
//     so no recorded Challenge verifies. A wrong MAC ends the dial with
//     ErrAuth before the dialer reveals anything that depends on the secret.
//  4. Dialer → Proof{MAC_c}, where MAC_c = HMAC-SHA256(secret,
//     "sluice-peer-v1 client" || client id || server id || client process
//     || server process || nonce_c || nonce_s). The listener checks it in constant time; nonce_s is fresh,
//     so a Proof recorded from an earlier session does not verify (replay).
//  5. Listener → Welcome (empty). The dialer's Dial returns only after it.
//
// What each MAC covers, and why: the direction label separates the two
// MACs, so a listener's MAC_s sent back as a Proof fails (reflection); both
// node ids bind the session to who claims to talk to whom, so a MAC cannot
// be moved to a session between other nodes; the process instances
// (Conn.PeerProcess) are bound because eager failover reports the instance
// a connection reached as gone once it closes, and an altered one could
// have a live process fenced; both nonces make it fresh for each side.
// Every field after the label has a fixed size, so the concatenation is
// unambiguous.
//
// Each handshake frame must be the expected opcode with exactly its size,
// checked from the header. The whole handshake must end within
// HandshakeTimeoutMs on each side (ErrHandshakeTimeout); a dial also ends
// with its context. A listener that refuses closes the connection without
// a word, so the dialer sees ErrRefused after its Proof.
//
// # What an unauthenticated peer can do
//
// It can send a Hello and then a Proof (36 and 32 bytes), within
// HandshakeTimeoutMs, and it occupies one of HandshakesPendingMax
// slots meanwhile. Nothing else: any non-handshake opcode before the
// Welcome (replication, seal, read, install, any reply) closes the
// connection from its header (ErrUnauthenticated, counted in
// ListenerStats.RefusedBeforeAuth) and is never passed on. Only
// authenticated connections reach Listener.Accept, and every frame read
// from a Conn comes with the peer's authenticated node id (Conn.Peer, the
// Handler's argument), which the core's authority checks use instead of any
// id a body claims. A handshake opcode after authentication is refused too.
//
// The handshake authenticates the two ends, not the frames after it: they
// are not encrypted or MACed, so an attacker who can inject into or take
// over the TCP stream itself is not stopped. That needs TLS or a session
// key per frame, a later step.
//
// # Connections
//
// Dial and Listen/Accept return an authenticated *Conn. Reads are
// serialised, writes are serialised, and a reader and a writer may run at
// once. WriteFrame writes header and body in one writev (no copy of the
// body) within WriteTimeoutMs; ReadFrame waits at most ReadIdleMs when set.
// After any read or write error the Conn is closed: a stream that lost its
// place in the framing cannot be trusted again, and the caller redials.
//
// Every queue has a limit: HandshakesPendingMax connections between the
// kernel's accept and Accept (handshakes in progress plus authenticated
// connections waiting for room), AcceptQueueMax authenticated connections
// not yet accepted. At the limit the listener stops calling accept and the
// kernel's backlog holds the rest. There is no outgoing queue: WriteFrame
// writes synchronously, and its caller is the backpressure.
package netio
