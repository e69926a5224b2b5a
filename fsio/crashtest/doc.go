// Package crashtest holds the SIGKILL crash tests of the segment log
// (io/seglog) on real files (fsio). It has no exported API: everything is in
// its tests.
//
// The test binary re-executes itself as a child process (SLUICE_CRASH_CHILD
// names the log directory). The child opens the log, discards a damaged tail
// if the previous child left one, and appends deterministic records in
// batches, syncing now and then. After each Append returns it prints
// "appended <end>", after each Sync returns "synced <end>", and around the
// one write of meta.tmp (an atomic replace of a small file) "meta writing
// <end>" and "meta written <end>", on its stdout (a pipe to the parent,
// written with one write(2) each, so a line printed before a kill is never
// lost). The parent kills the child, either at a random moment
// (TestCrashRandomKill, in every `go test`) or through an fsio failpoint
// whose action is "kill" (TestCrashFailpointKill, only in a build rewritten
// by fsio/failpoint-test.sh), and then reopens the log and checks:
//
//   - Open succeeds and every record in [Start, End) is exactly the record
//     the child wrote at that offset (contents depend on the offset only);
//   - End is at least every "synced" end printed (lowered only by an
//     announced truncation): no synced record lost;
//   - End is exactly where an independent reader of the files finds the
//     last valid frame: a SIGKILL keeps the page cache, so a record whose
//     write completed is valid and must not be dropped, and nothing is
//     invented;
//   - a torn tail is reported as Recovery.Damage at offset End, never
//     silently dropped; a kill in the middle of a segment write (the
//     midWrite failpoint, 5 bytes or half the buffer) must produce one, and
//     a kill in the middle of the meta.tmp write must leave meta.tmp torn,
//     meta whole and the log without damage (the failpoint counts every
//     write of the process, so the announcement says which file was torn);
//   - the next child can discard the damage and go on appending.
//
// Seeds never come from the clock: both tests run the fixed seedBases by
// default; SLUICE_CRASH_SEED_BASE=<n> runs base n, and
// SLUICE_CRASH_SEED_BASE=random a fresh base, printed. Every failure message
// ends with its base and the command that reruns it.
//
// A process kill is not a power loss: the kernel still holds every write the
// process made, so these tests cannot tell whether a sync was real (fsio's
// sync-count test checks the calls themselves). Power loss, where unsynced
// writes are lost or torn, is simulated by sim/memfs (Crash); see
// docs/storage.md.
package crashtest
