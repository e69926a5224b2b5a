// Package scenarios holds named simulator scenarios and the saved
// regressions: each file under regressions/ is a JSON shrink.Scenario (seed,
// exact profile with its fault schedule, and the expected verdict), written by
// `sluice sim shrink`. The test in this package replays every one of them, so
// `go test ./...` keeps every fixed bug fixed and keeps the canary caught.
// Files under named/ are situations worth replaying by name, in the same
// format, written by hand: each must pass and reach its mark.
package scenarios
