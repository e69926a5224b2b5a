package daemon

import (
	"log/slog"
	"time"

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
	// history: per queue, the last attempts at its recovery this broker
	// saw a stage of (describe, /recovery/history, the set-aside metrics)
	history history
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
	o.history.record(e, o.s.start.Add(time.Duration(o.s.lastNow)).UnixMilli())
	if e.Stage == seam.StageSetAside {
		// The queue stays fenced: say why, above info.
		o.s.log.Warn("recovery set aside; the queue stays fenced", "queue", uint64(e.Queue), "epoch", e.Offset, "aside", e.Aside.String(), "reason", e.Reason)
		return
	}
	o.s.log.Info("recovery", "queue", uint64(e.Queue), "stage", e.Stage.String(), "epoch", e.Offset, "detail", e.Reason)
}
