package driver

import (
	"errors"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/io/meta"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/io/vfs"
)

// OpenLog opens the log of group g in dir and reports what it recovered in
// the core's terms.
func OpenLog(fs vfs.FS, dir string, g core.GroupID, opts seglog.Options) (*seglog.Log, core.LogState, error) {
	l, rec, err := seglog.Open(fs, dir, opts)
	if err != nil {
		return nil, core.LogState{}, err
	}
	return l, logState(g, &rec), nil
}

// OpenStage opens the stage for generation gen of the log of group g in
// dir (seglog's generations) and reports what it recovered.
func OpenStage(fs vfs.FS, dir string, g core.GroupID, gen uint64, opts seglog.Options) (*seglog.Log, core.LogState, error) {
	l, rec, err := seglog.OpenStage(fs, dir, gen, opts)
	if err != nil {
		return nil, core.LogState{}, err
	}
	st := logState(g, &rec)
	st.Log = core.LogStage
	return l, st, nil
}

// logState is what a log recovered, in the core's terms.
func logState(g core.GroupID, rec *seglog.Recovery) core.LogState {
	st := core.LogState{Group: g, Start: rec.Start, End: rec.End, Epochs: rec.Epochs, Seal: rec.Seal, SealDamage: rec.SealDamage,
		Binding: rec.Binding, BindingDamage: rec.BindingDamage, BoundBefore: rec.BoundBefore, Generation: rec.Generation}
	st.Unrepaired = rec.Unrepaired || rec.Damage != nil
	if d := rec.Damage; d != nil {
		st.Damage = d.Reason + " in " + d.Segment + " at byte " + strconv.FormatInt(d.Pos, 10)
		st.DamageDurable = d.Durable
	}
	return st
}

// Exec performs storage effect e on log l and returns its completion. A nil
// log stands for a log that could not be opened: every operation fails.
func Exec(l *seglog.Log, e *core.Effect) core.StorageDone {
	d := core.StorageDone{Op: e.Op, Group: e.Group, Log: e.Log, Offset: e.Offset, Tag: e.Tag}
	if l == nil {
		d.Err = "log unavailable"
		return d
	}
	var err error
	switch e.Op {
	case core.OpAppend:
		err = l.Append(e.Records)
	case core.OpSync:
		err = l.Sync()
	case core.OpVerify:
		var n int
		n, err = l.Verify(e.Offset, e.Count, readBytesMax)
		d.Offset = e.Offset + uint64(n)
	case core.OpRead:
		// In the log's lent memory: the completion is the core's for the
		// one step that takes it (core/doc.go point 3), and the log's
		// next read runs after that step.
		d.Records, err = l.ReadLent(e.Offset, e.Count, readBytesMax)
	case core.OpTruncate:
		err = l.TruncateFrom(e.Offset)
	case core.OpDiscard:
		err = l.DiscardDamage()
	case core.OpRepaired:
		err = l.MarkRepaired()
	case core.OpSeal:
		err = l.WriteSeal(e.Body)
	case core.OpBind:
		err = l.WriteBinding(e.Body)
	case core.OpPublish:
		err = l.Publish()
	case core.OpRetain:
		d.Offset, err = l.Retain(e.Offset)
	case core.OpReseed:
		err = l.Reset(e.Offset, e.Epochs)
	default:
		panic("driver: unknown storage op")
	}
	if err != nil {
		d.Err = errKind(err)
	}
	return d
}

// execWrite starts persist e on the metadata store: the batch is validated
// and written, not yet durable. A failure is the persist's completion.
func execWrite(ms MetaStore, e *core.Effect) core.StorageDone {
	d := core.StorageDone{Op: e.Op, Group: e.Group, Log: e.Log, Tag: e.Tag}
	if e.Op != core.OpPersist {
		panic("driver: " + e.Op.String() + " on the metadata store")
	}
	if err := ms.Write(e.Batch); err != nil {
		d.Err = metaErrKind(err)
	}
	return d
}

// execSync completes persist e: every batch written so far becomes
// durable.
func execSync(ms MetaStore, e *core.Effect) core.StorageDone {
	d := core.StorageDone{Op: e.Op, Group: e.Group, Log: e.Log, Tag: e.Tag}
	if err := ms.Sync(); err != nil {
		d.Err = metaErrKind(err)
	}
	return d
}

// metaErrKind turns a metadata store's error into stable text.
func metaErrKind(err error) string {
	switch {
	case errors.Is(err, meta.ErrRefused):
		// The core built a batch the port refuses: a bug, reported as
		// one (the process exits; the batch changed nothing).
		return "refused: " + err.Error()
	case errors.Is(err, meta.ErrCorrupt):
		return "corrupt"
	case errors.Is(err, meta.ErrFailed):
		return "metadata store failed"
	}
	return err.Error()
}

// readBytesMax bounds the bodies one read returns.
const readBytesMax = 4 << 20

// errKind turns a storage error into stable text for the trace.
func errKind(err error) string {
	switch {
	case errors.Is(err, vfs.ErrNoSpace):
		return "no space"
	case errors.Is(err, vfs.ErrIO):
		return "i/o error"
	case errors.Is(err, seglog.ErrFailed):
		return "log failed"
	}
	return err.Error()
}
