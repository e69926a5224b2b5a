// Package metatest is the behavioural suite of the io/meta port: every
// implementation of meta.Store runs it (Run) and must pass it whole.
//
// Each case gets a fresh Harness (new, empty storage) and returns an error
// instead of failing the test itself, so that a package can also run the
// cases against a deliberately broken store and assert that they fail: a
// checker that cannot fail proves nothing.
//
// The cases cover append, overwrite and truncation with raft's semantics,
// the hard state, snapshot installation, compaction, the applied record,
// reopening, large batches at the limits, one refusal case per validation
// rule (the refused batch must change nothing and leave the store usable),
// and a randomized run against a simple model. An implementation that
// offers a Crasher also runs the power-loss cases: after a power loss every
// acknowledged batch is present, and a batch in flight is all or nothing.
//
// # Seeds
//
// The randomized cases use fixed seeds (1, 2, 3) and name the seed in their
// case name and in any failure. The environment variable SLUICE_META_SEED
// (a decimal uint64) replaces them with the one seed given, to try a fresh
// one or replay a failure:
//
//	SLUICE_META_SEED=12345 go test ./sim/metamem ./fsio/metapebble -run Suite
//
// Nothing draws a seed from the clock.
package metatest
