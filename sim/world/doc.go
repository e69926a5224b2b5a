// Package world runs one simulated Sluice cluster from one 64-bit seed: a
// single goroutine, a simulated clock that jumps to the next event, an event
// heap ordered by (time, sequence), a fake network with seeded latency (so
// messages reorder naturally), one in-memory disk (sim/memfs) per broker
// under the real segment log, and simulated publishers and consumers that
// record a history for the checkers in sim/check.
//
// A run has two phases. Workload: clients publish and consume while the
// profile's faults (process crashes with power loss, consumer loss) strike.
// Drain: faults stop, every broker is brought back, publishers stop, and the
// cluster gets a bounded simulated time to confirm what is in flight and let
// consumers drain every confirmed record. Then the checkers judge the run.
//
// Everything that varies comes from the seed through sim/prng, one derived
// stream per component, so adding draws to one component never shifts
// another's. Nothing here reads the clock, the OS, or Go map order.
package world
