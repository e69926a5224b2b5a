// Package check holds the simulator's safety checkers. They judge a run from
// outside the core: from the history the simulated clients record and from
// the simulator's own ground truth of what each fake disk holds durably.
// None of them trusts the core's own bookkeeping.
//
// Checkers, by name (the name appears in failure reports and summaries):
//
//   - confirm-durable: a publish is confirmed only while W replicas, the
//     owner among them, hold its record durably (checked at the instant the
//     confirm leaves the broker).
//   - deliver-confirmed: a consumer is handed only records that are durable
//     on W replicas (confirmed), whose publish was not reported failed, and
//     whose body is the one confirmed at that offset.
//   - deliver-order: per queue, records reach consumers for the first time in
//     increasing offset order.
//   - confirmed-lost: at the end, every confirmed publish is in the owner's
//     log at its offset with its body.
//   - replicas-agree: at the end, every replica holding a confirmed offset
//     holds the same record there.
//   - at-least-once: at the end, after the drain, every confirmed publish was
//     delivered at least once.
//   - failed-delivered: a publish reported as definitely failed never reaches
//     a consumer.
//
// Every checker is shown to fail by a unit test that feeds it a violating
// history.
package check
