// Package transcript runs data-driven transcript tests, in the manner of
// etcd-raft's datadriven: a text file of commands, each followed by the
// output it must produce, that a test replays against the code and that a
// flag rewrites with what the code does now. The caller owns the command
// vocabulary and the world the commands drive; this package owns the
// files, the blocks, the comparison, the rewrite and the words of a
// command.
//
// # The file format
//
//	# a comment: kept as it is
//	<command>
//	----
//	<expected output, one line each>
//
//	<command>
//	----
//
// A line that is empty or starts with # is kept as it is and does nothing.
// Any other line is a command; the line after it must be ----, and the
// lines after that, up to the next blank line or the end of the file, are
// the output it must produce (none is fine: the block is then empty). A
// command without its ---- line fails the test at the command's line.
//
// # The words of a command
//
// A command is split into words at spaces outside "double quotes" and
// [brackets]. Its first word is its name (Cmd.Name); the rest are its
// arguments (Cmd.Args), in order:
//
//	key=value       a keyed value; the key ends at the first = outside quotes and brackets
//	key="a b"       a quoted value, unquoted as a Go string literal ("\x00", "\"")
//	recs=[a b c]    a bracketed value, kept whole, brackets and all
//	flag            a bare word: a flag, or a positional word
//	"a b"           a bare word, quoted
//
// An unterminated quote, an unbalanced bracket or a quoted value that is
// not a Go string literal fails the test at the command's line. Lookups by
// key (Has, Str, Int, Uint) take the first word with that key; a command
// that repeats a key on purpose walks Args itself. Numbers are decimal, or
// hexadecimal with 0x; one that does not parse fails the test at the
// command's line.
//
// # Running
//
// Runner.Run replays one file; RunDir replays every file a glob matches,
// each as a subtest named by its file name without the extension, each
// with a fresh Runner, so no state leaks from one file to the next.
//
// For each command the runner calls Step, which returns the command's
// output lines (nil for none). Each line must be non-empty and hold no
// newline: a blank line would end the block, so the file would not read
// back as written. After each step the runner calls the optional After
// hook, the place for invariants that must hold after every command;
// after the last command, the optional End hook, the place for checks of
// a whole file (End gets a Cmd that stands for the end of the file: no
// name, no arguments, and the position "file:end").
//
// # Failures
//
// Every failure names the file and line of the command, as file:line, and
// the command itself:
//
//   - output that differs from the expected block is an error (the test
//     goes on, so one run reports every mismatch of the file);
//   - Cmd.Fatalf, a panic in Step or After, or an error After returns stop
//     the file's test there (a panic is reported with its stack).
//
// # Rewriting
//
// With the test flag -rewrite (one flag for every test binary that imports
// this package), the runner compares nothing: once the whole file has run
// without a fatal failure, it writes the file back with every expected
// block replaced by what Step returned. Comments, blank lines and commands
// are written back as they were, and the file ends in a newline. A
// rewrite of a file that passes leaves it byte for byte unchanged, so the
// diff after a rewrite is exactly the change in behaviour: review it
// before committing it.
//
// -rewrite is defined only in the test binaries of packages that import
// this one, so name those packages on the go test command line: a pattern
// such as ./... hands the flag to test binaries that do not know it.
package transcript
