package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicemq/sluice/amqp/front"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/seam"
)

// The HTTP side: /metrics (Prometheus), /healthz and /readyz. Handlers run
// on the HTTP server's goroutines; what they report comes from the loop,
// which answers a snapshot request between two events (the machines are
// never read from another goroutine).

// snapshot is what the loop reports.
type snapshot struct {
	front     front.Stats
	term      uint64
	lead      uint64
	leader    bool
	draining  bool
	syncing   int
	processID uint64
	// Queues of the catalogue: all, and those in trouble (describe's
	// filters).
	queues, underReplicated, underMinInSync, unavailable int
	// The peer transport (cluster mode only).
	cluster                             bool
	peersConnected                      int
	peerSent, peerReceived, peerDropped uint64
	peerLostReports                     uint64
	// Recovery stages this broker saw reached, by stage.
	stages [seam.StageMax + 1]uint64
	// setAsides: the attempts this broker's workers set aside, by reason;
	// fencedAside: the fenced queues whose latest attempt here at their
	// pending transition was set aside, by its reason.
	setAsides   [seam.AsideMax + 1]uint64
	fencedAside [seam.AsideMax + 1]int
	// The follower-loss hold, as this broker's metadata group counts it
	// (while it leads).
	holds ctrl.HoldStats
}

// query asks the loop for a snapshot; ok is false when the loop does not
// answer in time (stopped, or stuck).
func (s *Server) query(ctx context.Context) (snapshot, bool) {
	reply := make(chan snapshot, 1)
	select {
	case s.events <- event{kind: evQuery, reply: reply}:
	case <-s.done:
		return snapshot{}, false
	case <-ctx.Done():
		return snapshot{}, false
	}
	select {
	case sn := <-reply:
		return sn, true
	case <-s.done:
		return snapshot{}, false
	case <-ctx.Done():
		return snapshot{}, false
	}
}

// snapshot is the loop's answer.
func (s *Server) snapshot() snapshot {
	sn := snapshot{front: s.front.Stats(), draining: s.draining, syncing: s.syncing, processID: s.process}
	sn.term, sn.lead, sn.leader, _ = s.host.Node().CtrlStatus()
	sn.holds, _ = s.host.Node().Holds()
	sn.stages = s.obs.stages
	sn.setAsides = s.obs.history.setAsides
	if cl := s.cluster; cl != nil {
		sn.cluster = true
		sn.peersConnected = cl.peersConnected()
		sn.peerSent, sn.peerReceived, sn.peerDropped = cl.sent.Load(), cl.received.Load(), cl.dropped.Load()
		sn.peerLostReports = cl.lostReports.Load()
	}
	if md := s.host.Node().Metadata(); md != nil {
		qs := md.Queues()
		sn.queues = len(qs)
		for i := range qs {
			q, a := &qs[i], &qs[i].Assignment
			if !q.Assigned || a.Fenced {
				sn.unavailable++
			}
			if q.Assigned && a.Fenced {
				if at, ok := s.obs.history.lastSetAside(q.ID, a.Pending.Epoch); ok {
					if r, ok := seam.ParseAsideReason(at.Aside); ok {
						sn.fencedAside[r]++
					}
				}
			}
			if q.UnderReplicated() {
				sn.underReplicated++
			}
			if q.UnderMinInSync() {
				sn.underMinInSync++
			}
		}
	}
	return sn
}

// startHTTP serves /metrics, /healthz and /readyz on addr.
func (s *Server) startHTTP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{s: s})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/settings", s.handleSettings)
	mux.HandleFunc("/describe", s.handleDescribe)
	mux.HandleFunc("/recovery/history", s.handleHistory)
	mux.HandleFunc("/recovery/retry", s.handleRetry)
	mux.HandleFunc("/drain", s.handleDrain)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, ok := s.query(ctx); !ok {
			http.Error(w, "the broker's loop does not answer", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		sn, ok := s.query(ctx)
		switch {
		case !ok:
			http.Error(w, "the broker's loop does not answer", http.StatusServiceUnavailable)
		case sn.draining:
			http.Error(w, "draining", http.StatusServiceUnavailable)
		case sn.lead == 0:
			http.Error(w, "the metadata group has no leader yet", http.StatusServiceUnavailable)
		default:
			fmt.Fprintf(w, "ready: metadata leader n%d, term %d\n", sn.lead, sn.term)
		}
	})
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.httpLn = ln
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http", "err", err)
		}
	}()
	return nil
}

// collector turns a loop snapshot into metrics at each scrape.
type collector struct{ s *Server }

var (
	descPublishes = prometheus.NewDesc("sluice_publishes_total",
		"Publishes answered to AMQP clients, by outcome (confirmed: basic.ack once durable; failed: basic.nack; unknown: the connection was closed with 320; unroutable: acked, no queue; refused: the channel was closed).",
		[]string{"outcome"}, nil)
	descRetries = prometheus.NewDesc("sluice_publish_retries_total",
		"Publishes sent to the core again after a refusal that stored nothing (epoch not ready, owner at its limit).", nil, nil)
	descLatency = prometheus.NewDesc("sluice_confirm_latency_seconds",
		"Time from a publish's first request to the core to its confirm.", nil, nil)
	descConns     = prometheus.NewDesc("sluice_amqp_connections", "Open AMQP connections.", nil, nil)
	descTerm      = prometheus.NewDesc("sluice_raft_term", "The metadata group's raft term on this broker.", nil, nil)
	descLead      = prometheus.NewDesc("sluice_raft_leader_node", "The node id of the metadata group's leader this broker knows (0: none).", nil, nil)
	descIsLd      = prometheus.NewDesc("sluice_raft_is_leader", "1 if this broker leads the metadata group.", nil, nil)
	descSync      = prometheus.NewDesc("sluice_log_syncs_in_flight", "Queue log syncs (fdatasync) running.", nil, nil)
	descProc      = prometheus.NewDesc("sluice_process_instance", "This start's process instance (one more than the last start's).", nil, nil)
	descPeerConns = prometheus.NewDesc("sluice_peers_connected", "Peers this broker's outgoing connection reaches now (cluster mode).", nil, nil)
	descPeerMsgs  = prometheus.NewDesc("sluice_peer_messages_total",
		"The core's peer messages (cluster mode), by what happened: sent (written to a peer), received (read from one), dropped (its peer's queue was full or the peer unreachable; the core resends what matters).",
		[]string{"what"}, nil)
	descPeerLost = prometheus.NewDesc("sluice_peer_lost_reports_total",
		"Eager failover reports passed to the core: a peer's connection closed from its side and a reconnect was refused (repeated while it stays down).", nil, nil)
	descForwarded = prometheus.NewDesc("sluice_requests_forwarded_total",
		"Client requests carried to the broker that owns their queue (cluster mode).", nil, nil)
	descRerouted = prometheus.NewDesc("sluice_publishes_rerouted_total",
		"Publishes an owner refused without storing them because it no longer served the queue, held until a serving owner was known (cluster mode).", nil, nil)
	descCancelled = prometheus.NewDesc("sluice_subscriptions_cancelled_total",
		"Subscriptions the broker ended itself (its queue's group fenced, replaced or retired by a recovery or a deletion), each sent basic.cancel.", nil, nil)
	descNodeLost = prometheus.NewDesc("sluice_connections_closed_broker_lost_total",
		"AMQP connections closed (320) because a broker they had requests or subscriptions at was lost.", nil, nil)
	descStages = prometheus.NewDesc("sluice_recovery_stages_total",
		"Stages of queue recoveries this broker took part in (detect, seal, select, install, activate), as its core reported them.", []string{"stage"}, nil)
	descSetAside = prometheus.NewDesc("sluice_recovery_set_aside_total",
		"Recovery attempts this broker's workers set aside (the queue stays fenced, tried again after a backoff), by reason: inspect-pages, inspect-records, inspect-bytes (an inspection budget spent: raise its setting), contradictory-seals, contradictory-history, seal-mismatch, epochs-max, lost-copies (blocked), seals-missing, seal-refused, reads-missing, install-refused, installs-missing, activation-waiting (what the attempt still waited for at its deadline), stage-budget (an installation's staging budget spent: raise its setting).",
		[]string{"reason"}, nil)
	descFencedAside = prometheus.NewDesc("sluice_queues_fenced_set_aside",
		"Fenced queues whose latest recovery attempt at their pending transition this broker's worker set aside, by that attempt's reason (as sluice_recovery_set_aside_total).",
		[]string{"reason"}, nil)
	descHeld     = prometheus.NewDesc("sluice_queues_held", "Queues the follower-loss hold keeps on their assignment (only followers lost, W still met), as this broker's placement holds them while it leads the metadata group.", nil, nil)
	descHolds    = prometheus.NewDesc("sluice_holds_total", "Follower-loss holds this broker's placement began (entered) and ended in a recovery because they outlasted replication.follower_loss_hold_ms (expired), while it led the metadata group.", []string{"event"}, nil)
	descLearners = prometheus.NewDesc("sluice_learners", "Queue assignments with a learner catching up (a follower's broker back with a new process on its storage), by the metadata this broker applied.", nil, nil)
	descAdmitted = prometheus.NewDesc("sluice_learners_admitted_total", "Learners this broker saw admitted as their queue's member (AdmitLearner applied).", nil, nil)
	descQueue    = prometheus.NewDesc("sluice_queues", "Queues of the catalogue this broker applied, by state: all; under_replicated (in-sync set smaller than the declared replica count: a copy lost, or not yet put back); under_min_insync (in-sync set below the queue's min in-sync); unavailable (not placed, or fenced until recovery).", []string{"state"}, nil)
)

// Describe sends the static descriptions (registering must not ask the
// loop, which may not run yet).
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPublishes, descRetries, descLatency, descConns, descTerm, descLead, descIsLd, descSync, descProc, descQueue,
		descPeerConns, descPeerMsgs, descPeerLost, descForwarded, descRerouted, descCancelled, descNodeLost, descStages, descSetAside, descFencedAside, descHeld, descHolds, descLearners, descAdmitted} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sn, ok := c.s.query(ctx)
	if !ok {
		return
	}
	st := &sn.front
	for _, o := range []struct {
		name string
		n    uint64
	}{{"confirmed", st.Confirmed}, {"failed", st.Failed}, {"unknown", st.Unknown}, {"unroutable", st.Unroutable}, {"refused", st.Refused}} {
		ch <- prometheus.MustNewConstMetric(descPublishes, prometheus.CounterValue, float64(o.n), o.name)
	}
	ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(st.Retried))
	buckets := make(map[float64]uint64, len(front.LatencyBoundsNs))
	var cum uint64
	for i, b := range front.LatencyBoundsNs {
		cum += st.LatencyCounts[i]
		buckets[float64(b)/1e9] = cum
	}
	total := cum + st.LatencyCounts[len(front.LatencyBoundsNs)]
	ch <- prometheus.MustNewConstHistogram(descLatency, total, float64(st.LatencySumNs)/1e9, buckets)
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(st.Connections))
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(sn.term))
	ch <- prometheus.MustNewConstMetric(descLead, prometheus.GaugeValue, float64(sn.lead))
	isLeader := 0.0
	if sn.leader {
		isLeader = 1
	}
	ch <- prometheus.MustNewConstMetric(descIsLd, prometheus.GaugeValue, isLeader)
	ch <- prometheus.MustNewConstMetric(descSync, prometheus.GaugeValue, float64(sn.syncing))
	ch <- prometheus.MustNewConstMetric(descProc, prometheus.GaugeValue, float64(sn.processID))
	for _, q := range []struct {
		state string
		n     int
	}{{"all", sn.queues}, {"under_replicated", sn.underReplicated}, {"under_min_insync", sn.underMinInSync}, {"unavailable", sn.unavailable}} {
		ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(q.n), q.state)
	}
	ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(sn.holds.Held))
	ch <- prometheus.MustNewConstMetric(descHolds, prometheus.CounterValue, float64(sn.holds.Entered), "entered")
	ch <- prometheus.MustNewConstMetric(descHolds, prometheus.CounterValue, float64(sn.holds.Expired), "expired")
	ch <- prometheus.MustNewConstMetric(descLearners, prometheus.GaugeValue, float64(sn.holds.Learners))
	ch <- prometheus.MustNewConstMetric(descAdmitted, prometheus.CounterValue, float64(sn.holds.Admitted))
	for stage := seam.StageDetect; stage <= seam.StageMax; stage++ {
		ch <- prometheus.MustNewConstMetric(descStages, prometheus.CounterValue, float64(sn.stages[stage]), stage.String())
	}
	for r := seam.AsideReason(1); r <= seam.AsideMax; r++ {
		ch <- prometheus.MustNewConstMetric(descSetAside, prometheus.CounterValue, float64(sn.setAsides[r]), r.String())
		ch <- prometheus.MustNewConstMetric(descFencedAside, prometheus.GaugeValue, float64(sn.fencedAside[r]), r.String())
	}
	ch <- prometheus.MustNewConstMetric(descForwarded, prometheus.CounterValue, float64(st.Forwarded))
	ch <- prometheus.MustNewConstMetric(descRerouted, prometheus.CounterValue, float64(st.Rerouted))
	ch <- prometheus.MustNewConstMetric(descCancelled, prometheus.CounterValue, float64(st.Cancelled))
	ch <- prometheus.MustNewConstMetric(descNodeLost, prometheus.CounterValue, float64(st.NodesLost))
	if sn.cluster {
		ch <- prometheus.MustNewConstMetric(descPeerConns, prometheus.GaugeValue, float64(sn.peersConnected))
		for _, m := range []struct {
			what string
			n    uint64
		}{{"sent", sn.peerSent}, {"received", sn.peerReceived}, {"dropped", sn.peerDropped}} {
			ch <- prometheus.MustNewConstMetric(descPeerMsgs, prometheus.CounterValue, float64(m.n), m.what)
		}
		ch <- prometheus.MustNewConstMetric(descPeerLost, prometheus.CounterValue, float64(sn.peerLostReports))
	}
}
