package daemon

import (
	"log/slog"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/io/seglog"
)

// observer is the daemon's io/driver.Observer: it logs what an operator
// needs to follow a cluster (the metadata commands the broker applied that
// change brokers or queues, and every stage of a queue's recovery) and
// counts recoveries by stage for the metrics. It runs on the loop, inside
// host steps, and only reads the effects it is given.
type observer struct {
	s      *Server
	stages [seam.StageMax + 1]uint64 // recoveries' stages reached, by stage
	// setAside: per fenced queue, why this broker's worker last set its
	// recovery aside (lookup only; describe prints it in the catalogue's
	// order). An entry goes when its queue's recovery activates; at most
	// one a queue.
	setAside map[seam.QueueID]setAside
}

// setAside is a recovery attempt set aside: the transition's epoch and why.
type setAside struct {
	epoch  uint64
	reason string
}

func (o *observer) Recovered(int, core.LogState)                               {}
func (o *observer) Issued(int, *core.Effect)                                   {}
func (o *observer) Executed(int, *core.Effect, *core.StorageDone, *seglog.Log) {}
func (o *observer) Watermark(*core.Effect)                                     {}

// Applied logs the committed commands that move brokers or queues (not
// settings, not raft's empty entries) at info level, the rest at debug.
func (o *observer) Applied(e *core.Effect) {
	if len(e.Body) == 0 {
		return
	}
	lv := slog.LevelDebug
	if c, err := metadata.Decode(e.Body); err == nil && c.Kind != metadata.SetSetting {
		lv = slog.LevelInfo
	}
	o.s.log.Log(o.s.doneCtx, lv, "metadata applied", "index", e.Offset, "entry", e.Reason)
}

// Recovery logs and counts a stage of a queue's recovery.
func (o *observer) Recovery(e *core.Effect) {
	if int(e.Stage) < len(o.stages) {
		o.stages[e.Stage]++
	}
	switch e.Stage {
	case seam.StageSetAside:
		// The queue stays fenced: say why, above info.
		if o.setAside == nil {
			o.setAside = map[seam.QueueID]setAside{}
		}
		o.setAside[e.Queue] = setAside{epoch: e.Offset, reason: e.Reason}
		o.s.log.Warn("recovery set aside; the queue stays fenced", "queue", uint64(e.Queue), "epoch", e.Offset, "reason", e.Reason)
		return
	case seam.StageActivate:
		delete(o.setAside, e.Queue)
	}
	o.s.log.Info("recovery", "queue", uint64(e.Queue), "stage", e.Stage.String(), "epoch", e.Offset, "detail", e.Reason)
}
