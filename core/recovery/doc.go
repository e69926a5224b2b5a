// Package recovery holds the pure parts of sealed recovery
// (docs/design/recovery.md): the peer messages that ask a replica to seal its log for one
// pending transition and carry its answer, the retained content identity a
// seal reports, and the collection of witnesses that decides when a
// recovery has enough evidence and which witness is its source.
//
// Contract:
//
//   - Messages are versioned by a four-byte marker per kind ("RSL1" a
//     seal request, "RSO1" a seal answer, "RSN1" a refusal) and decoded
//     strictly: an unknown marker, truncated or trailing bytes, a padded
//     varint or a value out of range is an error, never a guess. Every
//     decoder has a fuzz target.
//   - The content identity is BLAKE3-256 over the queue id, the retained
//     bounds [start, end) and every retained record's offset, epoch, kind
//     and body, in offset order; nothing replica-local (no process, no
//     timestamps, no file layout) enters it, so two replicas holding the
//     same records have the same identity. Feeding records out of order or
//     past the bounds is an error.
//   - A Collection admits at most one report per replica of the previous
//     assignment (the same node and storage instance: a restarted process
//     of that data directory still witnesses); an identical retry counts
//     once; a different report from the same replica blocks the whole
//     collection (contradictory evidence needs an operator), except that
//     a replica which met damage in its log since it sealed (a restart's
//     recovery reported it) is recorded as damaged from then on; a
//     replica whose log has detected damage is not a complete witness.
//   - A Verifier reads the source's sealed log and every other complete
//     witness's, in bounded pages, two logs at once (a witness of another
//     identity than the source's after the source), and accepts the source only if each
//     log hashes to its seal's identity and no witness contradicts the
//     source (verify.go; a witness of another identity is compared with
//     the source's records as read, up to SourceHeldBytesMax of bodies
//     held, by digest past it). It is complete with R = E − W + 1 complete witnesses (E and
//     W of the previous assignment, fixed for the transition), or, for an
//     isr queue, with one complete witness from the last committed in-sync
//     set (Kafka's clean election: every member of that set holds every
//     confirmed record). The source is the complete witness (for isr,
//     among the in-sync members) with the highest (last epoch, end), ties
//     to the lowest node id.
//
// Nothing here does I/O or keeps time: the node feeds it what arrived.
package recovery
