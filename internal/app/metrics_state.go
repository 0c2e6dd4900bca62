package app

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// stateCollector exports, at scrape time, what the alerts in
// deploy/components/monitoring need and no counter can say: readiness, the
// kill switch, traces stuck reconciling, unsettled intents, the purge's lag
// (read from Postgres: every replica reports the same values), each venue's
// errors, and the connection pools.
type stateCollector struct {
	ready  func(ctx context.Context) error
	pools  map[string]*pgxpool.Pool
	state  *pgxpool.Pool
	venues *exchange.Registry

	readyDesc, stateOK, killSwitch, reconciling, reconcilingAge, unsettled, unsettledAge, purgeOverdue *prometheus.Desc
	venueErrors, asyncReplication                                                                      *prometheus.Desc
	poolAcquired, poolIdle, poolTotal, poolMax, poolAcquires, poolEmptyAcquires, poolAcquireWait       *prometheus.Desc
}

// stateScrapeTimeout bounds one scrape's reads, under Prometheus's default
// scrape timeout (10 s).
const stateScrapeTimeout = 3 * time.Second

func newStateCollector(ready func(context.Context) error, pools *Pools, venues *exchange.Registry) *stateCollector {
	g := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	c := &stateCollector{ready: ready, venues: venues, pools: map[string]*pgxpool.Pool{}}
	if pools != nil {
		c.state = pools.Claims
		for name, p := range map[string]*pgxpool.Pool{"claims": pools.Claims, "markers": pools.Markers, "paper": pools.Paper} {
			if p != nil {
				c.pools[name] = p
			}
		}
	}
	c.readyDesc = g("hoox_ready", "1 when this replica is ready (database answers, schema current), as /readyz says; 0 otherwise.")
	c.stateOK = g("hoox_state_read_ok", "1 when this scrape could read hoox's state from Postgres; the state gauges are absent otherwise.")
	c.killSwitch = g("hoox_kill_switch_engaged", "1 while the kill switch halts every placement.")
	c.reconciling = g("hoox_reconciling_traces", "Traces whose venue answer was lost and is not yet resolved.")
	c.reconcilingAge = g("hoox_reconciling_oldest_seconds", "How long the oldest reconciling trace has been untouched (database clock); 0 when none.")
	c.unsettled = g("hoox_unsettled_intents", "Dispatch intents with no recorded outcome: attempts whose order may exist at the venue unrecorded.")
	c.unsettledAge = g("hoox_unsettled_intent_oldest_seconds", "Age of the oldest unsettled intent (database clock); 0 when none. The sweeper settles them within about two minutes.")
	c.purgeOverdue = g("hoox_purge_overdue_seconds", "How long the oldest purgeable trace has been past its expiry; 0 when none.")
	c.asyncReplication = g("hoox_db_async_replication", "1 when the database streams to standbys asynchronously (synchronous_standby_names empty): a failover can lose acknowledged signals.")
	c.venueErrors = g("hoox_venue_errors_total", "Errors a venue gave this process (placements, lookups, reconciles, sweeps), by venue.", "venue")
	c.poolAcquired = g("hoox_db_pool_acquired_conns", "Connections in use, by pool.", "pool")
	c.poolIdle = g("hoox_db_pool_idle_conns", "Idle connections, by pool.", "pool")
	c.poolTotal = g("hoox_db_pool_total_conns", "Open connections, by pool.", "pool")
	c.poolMax = g("hoox_db_pool_max_conns", "The pool's size, by pool.", "pool")
	c.poolAcquires = g("hoox_db_pool_acquires_total", "Connection acquisitions, by pool.", "pool")
	c.poolEmptyAcquires = g("hoox_db_pool_empty_acquires_total", "Acquisitions that had to wait for a connection, by pool.", "pool")
	c.poolAcquireWait = g("hoox_db_pool_acquire_wait_seconds_total", "Time spent waiting for a connection, by pool.", "pool")
	return c
}

// Describe sends every descriptor.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.readyDesc, c.stateOK, c.killSwitch, c.reconciling, c.reconcilingAge, c.unsettled,
		c.unsettledAge, c.purgeOverdue, c.venueErrors, c.asyncReplication, c.poolAcquired, c.poolIdle, c.poolTotal, c.poolMax, c.poolAcquires,
		c.poolEmptyAcquires, c.poolAcquireWait} {
		ch <- d
	}
}

// Collect reads readiness and the state; a failed read leaves the state
// gauges out (hoox_state_read_ok 0) rather than reporting stale zeros.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateScrapeTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	if c.ready != nil {
		gauge(c.readyDesc, boolFloat(c.ready(ctx) == nil))
	}
	if c.state != nil {
		s, err := db.ReadState(ctx, c.state)
		gauge(c.stateOK, boolFloat(err == nil))
		if err == nil {
			gauge(c.killSwitch, boolFloat(s.KillSwitchEngaged))
			gauge(c.reconciling, float64(s.ReconcilingTraces))
			gauge(c.reconcilingAge, s.OldestReconcilingSeconds)
			gauge(c.unsettled, float64(s.UnsettledIntents))
			gauge(c.unsettledAge, s.OldestUnsettledSeconds)
			gauge(c.purgeOverdue, s.PurgeOverdueSeconds)
		}
		if r, err := db.ReadReplication(ctx, c.state); err == nil {
			gauge(c.asyncReplication, boolFloat(r.Async()))
		}
	}
	if c.venues != nil {
		for venue, n := range c.venues.ErrorCounts() {
			counter(c.venueErrors, float64(n), venue)
		}
	}
	for name, p := range c.pools {
		st := p.Stat()
		gauge(c.poolAcquired, float64(st.AcquiredConns()), name)
		gauge(c.poolIdle, float64(st.IdleConns()), name)
		gauge(c.poolTotal, float64(st.TotalConns()), name)
		gauge(c.poolMax, float64(st.MaxConns()), name)
		counter(c.poolAcquires, float64(st.AcquireCount()), name)
		counter(c.poolEmptyAcquires, float64(st.EmptyAcquireCount()), name)
		counter(c.poolAcquireWait, st.EmptyAcquireWaitTime().Seconds(), name)
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
