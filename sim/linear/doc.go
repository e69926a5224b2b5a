// Package linear checks one queue's client history for linearizability
// against a log, with porcupine (github.com/anishathalye/porcupine).
//
// # Contract
//
// Check(ops) takes every operation the clients of one queue made, each with
// its call and return instants in simulated nanoseconds:
//
//   - Append(key) -> offset: Confirmed (the client learned the offset),
//     Failed (it never took effect) or Unknown (it may take effect at any
//     instant after its call, or never; its ReturnNs is ignored). Keys must
//     be unique per append: a key names its append.
//   - Read(offset) -> key: the key at that offset, which must already have
//     been appended when the read takes effect.
//
// The sequential specification is a log: a sequence of keys, where an
// append places its key at the next offset and returns that offset, and a
// read of an offset returns the key there. Check reports whether some total
// order of the ops that took effect, consistent with real time (intervals
// are closed: ops touching at an instant are concurrent), satisfies it; when
// not, it gives a one-line explanation naming the ops involved (by index in
// ops, client and instants). Same history, same verdict and explanation.
//
// # How
//
//  1. Direct checks, with their own messages: malformed input (a return
//     before its call, a key appended twice, unknown kind or outcome); two
//     confirmed appends with one offset; a read returning a key nobody
//     appended, the key of a Failed append, a key a confirmed append placed
//     at another offset, or another key than the confirmed append at that
//     offset; one offset read as two keys, or one key read at two offsets;
//     a read that returned before its append was called; an offset named
//     (confirmed or read) that more appends than the history holds would be
//     needed to reach.
//  2. Pinning: every append that matters gets its offset. Confirmed appends
//     have theirs; an Unknown append some read observed is pinned at the
//     offset read, its window ending when the earliest op that must follow
//     it returned; an offset nobody names below a named one can only hold an
//     Unknown append nobody observed, and gets a placeholder whose earliest
//     instant is the j-th earliest call among those appends for the j-th such
//     gap; other unobserved Unknown appends are dropped. This is exact (see
//     pin): the pinned history is linearizable iff the original is. With
//     offsets pinned, the log's content is fixed, so a model state is just
//     the log's length, which porcupine compares and hashes for free, and
//     Unknown appends never leave porcupine with open-ended operations.
//  3. Ordering, decided twice: an O(n) sweep over offsets (appends take
//     effect in offset order, each as early as possible) that yields the
//     explanation, and porcupine with the log model, split into partitions
//     at offsets no earlier append's call can delay, each handed to
//     porcupine as a history of its own (built in buffers reused from one
//     to the next: porcupine's input costs the widest partition, not the
//     history). The two must agree; a disagreement is reported as a
//     checker bug, not as a verdict.
//
// # Cost and limits
//
// Pinning and the sweep are O(n log n); porcupine is O(n * partition) with
// partitions of a few hundred operations where the history allows (a long
// stretch in which every offset's append was called before some lower
// offset's cannot be cut, and costs quadratically in its length). A
// 20,000-operation history of five clients with a quarter of the appends
// Unknown checks in tens of milliseconds.
//
// The package runs inside the simulator and follows the determinism rules:
// porcupine's internal goroutines are its own, and no timeout is used (so no
// time import); histories are expected to be bounded by the run.
package linear
