package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one Server's Prometheus collectors, on a registry of its own
// so several servers (tests) never collide.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec   // route, code
	latency    *prometheus.HistogramVec // route, code
	batchItems *prometheus.HistogramVec // kind
	batchToks  *prometheus.HistogramVec // kind
	queue      *prometheus.GaugeVec     // kind
	tokens     *prometheus.CounterVec   // kind
	inflight   prometheus.Gauge
	provider   *prometheus.GaugeVec // provider
}

func newMetrics(provider string) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hybrank_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hybrank_http_request_duration_seconds", Help: "HTTP request latency by route and status code.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route", "code"}),
		batchItems: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hybrank_batch_items", Help: "Items (pairs or texts) per model call.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}, []string{"kind"}),
		batchToks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hybrank_batch_tokens", Help: "Estimated tokens per model call.",
			Buckets: prometheus.ExponentialBuckets(16, 2, 14),
		}, []string{"kind"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hybrank_queue_items", Help: "Items waiting in a batcher's queue.",
		}, []string{"kind"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hybrank_tokens_total", Help: "Input tokens processed by the models.",
		}, []string{"kind"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hybrank_requests_in_flight", Help: "Inference and search requests being served.",
		}),
		provider: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hybrank_provider", Help: "Execution provider in use (value 1).",
		}, []string{"provider"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.batchItems, m.batchToks, m.queue, m.tokens, m.inflight, m.provider,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.provider.WithLabelValues(provider).Set(1)
	return m
}

func (m *metrics) observer(kind string) batchObserver {
	items, toks, q := m.batchItems.WithLabelValues(kind), m.batchToks.WithLabelValues(kind), m.queue.WithLabelValues(kind)
	return batchObserver{
		batch: func(n, t int) { items.Observe(float64(n)); toks.Observe(float64(t)) },
		queue: func(n int) { q.Set(float64(n)) },
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// statusRecorder captures the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// instrument counts and times every request of one route.
func (m *metrics) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		code := strconv.Itoa(rec.code)
		m.requests.WithLabelValues(route, code).Inc()
		m.latency.WithLabelValues(route, code).Observe(time.Since(start).Seconds())
	})
}
