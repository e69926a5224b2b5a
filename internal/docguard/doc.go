// Package docguard is the history guard for comments and documentation:
// a static check, run as an ordinary test inside `go test ./...`, that
// keeps work-ticket numbers, specification-document numbers and
// work-session history out of what a reader of the code meets.
//
// The project's rule is that comments and docs say what holds now and
// why. A reader has neither the work tickets nor the specification
// documents the project was started from, so a reference to one tells
// them nothing; the design notes under docs/design/ say by subject what
// holds and why, and a comment cites them by file and section instead.
//
// # Scope
//
//   - every .go file of the module: the text of its comments only (parsed
//     with go/parser; string literals, identifiers and test names are
//     code, not prose, and are never judged);
//   - every Markdown (.md) file of the module, its whole text, except those
//     under scenarios/ (scenario material). History belongs in commit
//     messages.
//
// Directories named testdata, vendor, or starting with "." or "_" are
// skipped.
//
// # Rules
//
// Each finding is reported as "file:line: rule: text". A reference may
// wrap across comment lines or Markdown lines: the text is matched with
// its line breaks and comment markers taken as spaces.
//
//   - ticket: the word "issue" (or "issues") followed by a number, with or
//     without a "#".
//   - spec: the word "seed" followed by a number that starts with "00" (the
//     numbering of the specification documents; a simulator seed such as
//     "seed 627" is a run, not a document, and passes).
//   - session: the word "session" after an ordinal from "second" on (or
//     "2nd", "3rd", ...) or after "this", or before a number: the history
//     of the work, not what holds. The word alone is legitimate (an AMQP
//     client's session, an authenticated session) and passes.
//
// The check is case-insensitive. TODO notes stay allowed; they say what
// is left in words, without a ticket number.
package docguard
