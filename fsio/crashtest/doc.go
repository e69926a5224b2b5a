// Package crashtest holds the SIGKILL crash tests of the segment log
// (io/seglog) on real files (fsio). It has no exported API: everything is in
// its tests.
//
// The test binary re-executes itself as a child process (SLUICE_CRASH_CHILD
// names the log directory). The child opens the log, discards a damaged tail
// if the previous child left one, and appends deterministic records in
// batches, syncing now and then. After each Append returns it prints
// "appended <end>", after each Sync returns "synced <end>", on its stdout (a
// pipe to the parent, written with one write(2) each, so a line printed
// before a kill is never lost). The parent kills the child, either at a
// random moment (TestCrashRandomKill, in every `go test`) or through an fsio
// failpoint whose action is "kill" (TestCrashFailpointKill, only in a build
// rewritten by fsio/failpoint-test.sh), and then reopens the log and checks:
//
//   - Open succeeds and every record in [Start, End) is exactly the record
//     the child wrote at that offset (contents depend on the offset only);
//   - End is at least every "synced" end printed (no synced record lost) and
//     at least every "appended" end printed: a SIGKILL keeps the page cache,
//     so a record whose write completed is valid and must not be dropped;
//   - a torn tail is reported as Recovery.Damage at offset End, never
//     silently dropped; a kill in the middle of a write (the midWrite
//     failpoint) must produce one;
//   - the next child can discard the damage and go on appending.
//
// A process kill is not a power loss: the kernel still holds every write the
// process made. Power loss, where unsynced writes are lost or torn, is
// simulated by sim/memfs (Crash); see docs/storage.md.
package crashtest
