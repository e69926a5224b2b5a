// Package world runs one simulated Sluice cluster from one 64-bit seed: a
// single goroutine, a simulated clock that jumps to the next event, an event
// heap ordered by (time, sequence), a fake network that carries the real
// codec's bytes with seeded latency (so messages reorder naturally), one
// in-memory disk (sim/memfs) per broker under the real segment log, and
// simulated publishers and consumers that record a history for the checkers
// in sim/check and sim/linear. Every queue is declared through the
// metadata group and placed by the controller, as in a real cluster: the
// profile's queues are the operator's first declarations, and their clients
// know them by name only (they ask any broker where a queue lives, and ask
// again when their broker no longer serves it).
//
// A run has two phases. Workload (safety): clients publish and consume while
// the profile's faults strike, per a schedule drawn from the seed up front
// (or given by a scenario): power losses (one broker, or every broker at
// once), pauses, slow syncs, failed syncs that drop dirty pages, read
// errors, lost writes, unreadable sectors, torn sectors, corruption met at a
// restart or by live reads, full disks, partitions, clogged links, delay
// spikes, and per-message drops, duplicates (some late) and corrupt frames;
// disk damage strikes the placed logs of a queue's current members and
// stays within the fault budget (see damageAllowed). Drain
// (liveness): faults stop, the network heals, every broker runs, each
// publisher needs one probe publish confirmed, and the cluster gets a
// bounded simulated time to resolve every publish, let consumers receive
// every confirmed record and bring every replica to its owner's log; running
// out of it is a failure. Then the checkers judge the run from the disks'
// durable bytes and what live consumers received.
//
// A run also counts the protocol states it reached (Mark, Coverage), judged
// from outside the core, and a sweep tabulates them.
//
// Everything that varies comes from the seed through sim/prng, one derived
// stream per component, so adding draws to one component never shifts
// another's. Nothing here reads the clock, the OS, or Go map order.
// docs/simulator.md describes the faults, the checkers and the trace.
package world
