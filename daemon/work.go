package daemon

// workFIFO is the loop's work: what the host, the front and the
// forwarders ask the loop to do after the input at hand (a storage
// operation's run, a local message, a front effect), in the order asked.
// It runs in batches: a batch is what was queued before it began, and
// what a batch queues waits for the next one, so that the loop can take
// an input between two batches (Server.await) and a chain of work (a
// seal's reads, each completion asking for the next) never keeps it from
// its sockets and timers for the whole chain. Its length is bounded by what the inputs of
// one batch ask (each a few items), not by a limit of its own.
type workFIFO struct {
	work  []func()
	spare []func() // the other slice: a batch runs from one while the next fills the other
}

func (f *workFIFO) push(w func()) { f.work = append(f.work, w) }

// pending is the number of items queued.
func (f *workFIFO) pending() int { return len(f.work) }

// runBatch runs the work queued before it began, in order.
func (f *workFIFO) runBatch() {
	batch := f.work
	f.work = f.spare[:0]
	for i, w := range batch {
		batch[i] = nil
		w()
	}
	f.spare = batch[:0]
}
