// Package driver is the one loop that executes a core.Broker's effects, in
// both worlds. The simulator and the daemon each supply an Env (how to send,
// how to reach a client, how to start a storage operation, how to set a
// timer); the driver feeds inputs to the core, traces every input and effect
// as one stable line, and hands each effect to the Env in order.
//
// It also holds the storage code both worlds run: OpenLog turns a recovered
// io/seglog log into the core's LogState, and Exec performs one storage
// effect on a log and returns its completion. The simulator calls Exec when
// its simulated disk latency has passed; the daemon calls it from the log's
// own worker. Either way the storage effects of one log run strictly in
// order, as core's driver contract demands.
package driver
