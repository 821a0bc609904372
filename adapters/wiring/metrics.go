package wiring

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// Metrics registers what /metrics shows besides the HTTP, webhook and
// Redis families: the build, the database pool, the browsers of this
// instance, and the sessions launched and stopped.
var Metrics = fx.Options(
	fx.Provide(newSessionMetrics),
	fx.Invoke(registerServiceMetrics),
)

// sessionMetrics count the launches, and the stops by reason, as the
// profiles module commits them.
type sessionMetrics struct {
	launches prometheus.Counter
	stops    *prometheus.CounterVec
	placed   prometheus.Counter
	refused  prometheus.Counter
}

// Launched counts a launch.
func (m *sessionMetrics) Launched() { m.launches.Inc() }

// Stopped counts a stop for reason.
func (m *sessionMetrics) Stopped(reason string) { m.stops.WithLabelValues(reason).Inc() }

// PlacedElsewhere counts a launch this instance placed on another.
func (m *sessionMetrics) PlacedElsewhere() { m.placed.Inc() }

// FleetFull counts a launch refused because no instance had room.
func (m *sessionMetrics) FleetFull() { m.refused.Inc() }

func newSessionMetrics(reg *prometheus.Registry) *sessionMetrics {
	m := &sessionMetrics{
		launches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "profilesvc_session_launches_total",
			Help: "Sessions launched through this instance (profile.launched committed).",
		}),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesvc_session_stops_total",
			Help: "Sessions ended (profile.stopped committed) by this instance, by reason: released, expired, failed, closed, crashed, shutdown.",
		}, []string{"reason"}),
		placed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "profilesvc_launches_placed_elsewhere_total",
			Help: "Launches received by this instance, which had no room, and started on another instance of the fleet.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "profilesvc_launches_refused_total",
			Help: "Launches received by this instance and refused with 503 because no instance of the fleet had room.",
		}),
	}
	reg.MustRegister(m.launches, m.stops, m.placed, m.refused)
	return m
}

// sessionsRunning is profilesvc_sessions_running, counted in the database
// at each scrape, so every instance reports the whole service's count. A
// count that fails or takes longer than sessionsCountTimeout leaves the
// family out of that scrape rather than failing it.
type sessionsRunning struct {
	svc *profiles.Service
	log *zap.Logger
}

const sessionsCountTimeout = 2 * time.Second

var sessionsRunningDesc = prometheus.NewDesc("profilesvc_sessions_running",
	"Sessions not expired on the whole service (every team, every instance), counted in the database at each scrape.", nil, nil)

func (c *sessionsRunning) Describe(ch chan<- *prometheus.Desc) { ch <- sessionsRunningDesc }

func (c *sessionsRunning) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), sessionsCountTimeout)
	defer cancel()
	n, err := c.svc.SessionsRunning(ctx)
	if err != nil {
		c.log.Warn("counting the running sessions for /metrics failed", zap.Error(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(sessionsRunningDesc, prometheus.GaugeValue, float64(n))
}

func registerServiceMetrics(reg *prometheus.Registry, b Build, store storage.Store, svc *profiles.Service, log *zap.Logger) {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "profilesvc_build_info",
		Help:        "Always 1; the labels name the running build.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit},
	})
	info.Set(1)
	reg.MustRegister(info, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "profilesvc_browsers_running",
		Help: "Browsers this instance runs, one per session it serves.",
	}, func() float64 { return float64(svc.BrowsersRunning()) }), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "profilesvc_browsers_capacity",
		Help: "Browsers this instance may run at once (BROWSERS_MAX; 0 for a runtime that runs none).",
	}, func() float64 { return float64(svc.BrowsersCapacity()) }), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "profilesvc_draining",
		Help: "1 while this instance drains: it starts no more browsers, and the fleet places its launches elsewhere.",
	}, func() float64 {
		if svc.Draining() {
			return 1
		}
		return 0
	}), &sessionsRunning{svc: svc, log: log})
	s, ok := store.(*bunstore.Store)
	if !ok {
		return
	}
	gauge := func(name, help string, read func(bunstore.PoolStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "profilesvc_db_pool_" + name, Help: help},
			func() float64 { return read(s.PoolStats()) })
	}
	reg.MustRegister(
		gauge("max_connections", "Most connections the database pool opens (0: no bound).", func(p bunstore.PoolStats) float64 { return float64(p.Max) }),
		gauge("open_connections", "Connections the database pool holds.", func(p bunstore.PoolStats) float64 { return float64(p.Open) }),
		gauge("in_use_connections", "Connections in use.", func(p bunstore.PoolStats) float64 { return float64(p.InUse) }),
		gauge("idle_connections", "Connections idle in the pool.", func(p bunstore.PoolStats) float64 { return float64(p.Idle) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "profilesvc_db_pool_waits_total", Help: "Times a caller waited for a connection."},
			func() float64 { return float64(s.PoolStats().Waits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "profilesvc_db_pool_wait_seconds_total", Help: "Time callers waited for a connection."},
			func() float64 { return s.PoolStats().Waited.Seconds() }),
	)
}
