// Package quorum is the arithmetic of Sluice's replication, pure and alone:
// the write requirement W of a policy, the confirmed end from durable
// reports, and the recovery threshold R = E - W + 1 with the counting of
// distinct witnesses. It knows nothing of messages or storage, so its rules
// can be read, and tested, in one place.
package quorum

import "slices"

// ConfirmedEnd returns the highest end below which the owner and at least
// need followers hold the log durably: the owner's durable end ownerEnd
// bounds it, and so does the need-th highest of the followers' durable,
// matching ends. ok is false when fewer than need followers have reported.
// With need 0 the owner alone decides. scratch, if large enough, avoids an
// allocation; followers is not modified.
func ConfirmedEnd(ownerEnd uint64, followers []uint64, need int, scratch []uint64) (end uint64, ok bool) {
	if need <= 0 {
		return ownerEnd, true
	}
	if len(followers) < need {
		return 0, false
	}
	ds := append(scratch[:0], followers...)
	// insertion sort, descending: a queue has at most a handful of replicas
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j] > ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	return min(ownerEnd, ds[need-1]), true
}

// RecoveryThreshold returns R = E - W + 1: the distinct eligible witnesses a
// recovery needs, so that every confirm set (W of E) meets every witness set
// (R of E). It returns 0 for a malformed pair (W outside 1..E).
func RecoveryThreshold(eligible, w int) int {
	if w < 1 || w > eligible {
		return 0
	}
	return eligible - w + 1
}

// Intersect reports whether every set of w replicas out of e meets every
// set of r: the safety condition R + W > E.
func Intersect(e, w, r int) bool { return r+w > e && w >= 1 && r >= 1 && w <= e && r <= e }

// Witnesses counts distinct witnesses among reports, each naming the
// replica that made it; reports from replicas outside eligible, and repeats
// of a replica, do not count.
func Witnesses[ID comparable](eligible, reports []ID) int {
	var seen []ID
	for _, r := range reports {
		if slices.Contains(eligible, r) && !slices.Contains(seen, r) {
			seen = append(seen, r)
		}
	}
	return len(seen)
}
