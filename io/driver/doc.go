// Package driver is the host of a node: the one implementation of the
// driver contract of core/doc.go, shared by the simulator and the daemon.
// A world gives a Host a narrow Env (send bytes to a peer, reach a client,
// let a storage operation start, set a timer, end the process) and keeps
// only what is its own: the simulator its event loop, network, disks,
// clients and faults; the daemon its sockets, files and clock.
//
// The host feeds the core one input at a time; traces every input and
// effect as one stable line; runs each log's storage effects strictly in
// order on the segment log (Exec), returning their completions in that
// order and running nothing queued behind a failed one; ends the process
// after a failure (the failure policy); keeps one timer for the core's
// latest deadline; and builds the start input from the logs it recovers
// (OpenLog). The node's metadata store (MetaStore, io/meta) is one more
// queue of storage effects: a persist's batch is written as it starts and
// reported durable only when its sync completes (point 10), so the
// metadata group's messages never leave ahead of its votes and entries.
// A placed queue's log is opened while the process runs (OpOpen, point
// 11), where Options.PlacedLog says, and joins the host's queues; a
// recovery's stage (point 12) opens beside it as a queue of its own, and
// its publish swaps it in as the group's log 0 (indices of open logs
// never change; a published stage's is reused).
// Observer lets the simulator's checkers see every storage operation as
// the core issues it and as it runs, and every metadata entry the node
// applies.
//
// Memory: a read's records are the log's, lent until its next read
// (seglog.ReadLent: the core keeps nothing of a completion past its
// step), and with Options.LogBuffers the logs' buffers come from, and
// go back to, one seglog.Buffers: Release hands a gone process's to the
// next (the simulator keeps one per broker).
package driver
