// Package world runs one simulated Sluice cluster from one 64-bit seed: a
// single goroutine, a simulated clock that jumps to the next event, an event
// heap ordered by (time, sequence), a fake network that carries the real
// codec's bytes with seeded latency (so messages reorder naturally), one
// in-memory disk (sim/memfs) per broker under the real segment log, and
// simulated publishers and consumers that record a history for the checkers
// in sim/check and sim/linear.
//
// A run has two phases. Workload (safety): clients publish and consume while
// the profile's faults strike, per a schedule drawn from the seed up front
// (or given by a scenario): power-loss crashes, pauses, slow and failed
// syncs, read errors, corruption within the W-1 budget, full disks,
// partitions, clogged links, delay spikes, and per-message drops, duplicates
// and corrupt frames. Drain (liveness): faults stop, the network heals,
// every broker runs, each publisher needs one probe publish confirmed, and
// the cluster gets a bounded simulated time to resolve every publish, let
// consumers drain every confirmed record and bring every replica to its
// owner's log. Then the checkers judge the run.
//
// Everything that varies comes from the seed through sim/prng, one derived
// stream per component, so adding draws to one component never shifts
// another's. Nothing here reads the clock, the OS, or Go map order.
// docs/simulator.md describes the faults, the checkers and the trace.
package world
