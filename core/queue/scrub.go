package queue

import (
	"math"

	"github.com/sluicemq/sluice/core/seam"
)

// scrubState walks the durable log, one read of ReadRecordsMax records per
// ScrubIntervalMs, round and round, so that damage no other read meets (bit
// rot, a lost write, an unreadable sector) is found while the other copies
// still exist: a damaged record fails the read, and with it the log.
type scrubState struct {
	next    uint64 // the next offset to read
	reading bool
	atNs    int64 // when the next read may go
}

// tick issues the next read when it is due.
func (s *scrubState) tick(r *Replica) {
	if r.failed || s.reading || r.x.NowNs < s.atNs {
		return
	}
	if s.next < r.log.start || s.next >= r.log.syncedEnd {
		s.next = r.log.start
	}
	if s.next >= r.log.syncedEnd {
		s.atNs = r.x.NowNs + r.x.Lim.ScrubIntervalMs*1e6
		return // nothing durable to read yet
	}
	s.reading = true
	r.storage(seam.Effect{Op: seam.OpVerify, Offset: s.next, Count: r.x.Lim.ReadRecordsMax})
}

// onVerified takes a scrub's completion: the records up to d.Offset read
// back whole.
func (s *scrubState) onVerified(r *Replica, d *seam.StorageDone) {
	s.reading = false
	done := d.Offset <= s.next
	s.next = d.Offset
	if s.next >= r.log.syncedEnd || done {
		s.next = r.log.start
	}
	s.atNs = r.x.NowNs + r.x.Lim.ScrubIntervalMs*1e6
}

func (s *scrubState) deadlineNs() int64 {
	if s.reading {
		return math.MaxInt64
	}
	return s.atNs
}
