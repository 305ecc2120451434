package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hybrank/hybrank/models/queue"
)

// metrics are one Server's Prometheus collectors, on a registry of its own
// so several servers (tests) never collide.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec   // route, code
	latency   *prometheus.HistogramVec // route, code
	tokens    *prometheus.CounterVec   // kind, model
	inflight  prometheus.Gauge
	bodyBytes prometheus.Gauge       // request body bytes reserved (MaxInflightBodyBytes)
	shed      *prometheus.CounterVec // reason: memory, body_bytes
	provider  *prometheus.GaugeVec   // provider
	// weaviateDegraded counts <Prefix>/rerank calls answered in the
	// order sent because the rerank budget ran out (model).
	weaviateDegraded *prometheus.CounterVec
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
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hybrank_tokens_total", Help: "Input tokens processed by the models.",
		}, []string{"kind", "model"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hybrank_requests_in_flight", Help: "Inference and search requests being served.",
		}),
		bodyBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hybrank_request_body_bytes_in_flight", Help: "Request body bytes reserved by requests being read or served (max_inflight_body_bytes).",
		}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hybrank_requests_shed_total", Help: "Requests refused before their body was read: near the memory limit (503) or over max_inflight_body_bytes (429).",
		}, []string{"reason"}),
		provider: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hybrank_provider", Help: "Execution provider in use (value 1).",
		}, []string{"provider"}),
		weaviateDegraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hybrank_weaviate_rerank_degraded_total", Help: "Weaviate rerank calls answered in the order sent, unscored, because weaviate.rerank_budget ran out.",
		}, []string{"model"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.tokens, m.inflight, m.bodyBytes, m.shed, m.provider, m.weaviateDegraded,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.provider.WithLabelValues(provider).Set(1)
	return m
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

// Unwrap lets http.ResponseController reach the connection (readBody's
// read deadline).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

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

// indexCollector exports an index's Stats at every scrape.
type indexCollector struct {
	src      IndexStats
	descs    map[string]*prometheus.Desc
	readOnly *prometheus.Desc // reason
}

// indexMetrics are the hybrank_index_* series: name → help. Counters end
// in _total.
var indexMetrics = map[string]string{
	"documents":                     "Stored documents.",
	"tenants":                       "Distinct tenants of the stored documents.",
	"vectors":                       "Documents with an embedding.",
	"dense_tombstones":              "Graph nodes of deleted or replaced vectors awaiting compaction.",
	"bm25_deleted_docs":             "BM25 postings of deleted documents awaiting a rebuild.",
	"bm25_avgdl_drift":              "Relative drift of the average document length since the BM25 norms were built.",
	"maintenance_rebuilds_total":    "BM25 norm rebuilds finished by background maintenance.",
	"maintenance_compactions_total": "Dense compactions finished by background maintenance.",
	"maintenance_steps_total":       "Bounded background maintenance steps run.",
	"maintenance_failing":           "1 when the last maintenance task failed.",
	"wal_bytes":                     "Bytes in the write-ahead log (the commits since the previous snapshot).",
	"wal_syncs_total":               "Write-ahead log fsyncs since open.",
	"wal_commits_total":             "Commits logged since open (commits / syncs is the group commit factor).",
	"snapshots_background_total":    "Snapshots the engine took by itself since open.",
	"snapshot_failing":              "1 when the last background snapshot failed.",
	"snapshot_generation":           "Generation of the newest snapshot loaded or written.",
	"recovery_replayed":             "Log records replayed at open.",
	"recovery_dropped_bytes":        "Bytes of torn or corrupt log tail cut off at open.",
	"recovery_fell_back":            "1 when open fell back to the previous snapshot generation because the newest failed its checksums.",
}

func newIndexCollector(src IndexStats) *indexCollector {
	c := &indexCollector{src: src, descs: map[string]*prometheus.Desc{},
		readOnly: prometheus.NewDesc("hybrank_index_read_only",
			"1 when the index refuses writes after a failed write-ahead log write or fsync (reason: the error; restart to recover), else 0.",
			[]string{"reason"}, nil)}
	for name, help := range indexMetrics {
		c.descs[name] = prometheus.NewDesc("hybrank_index_"+name, help, nil, nil)
	}
	return c
}

func (c *indexCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.readOnly
}

func (c *indexCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	flag := func(s string) float64 {
		if s != "" {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(c.readOnly, prometheus.GaugeValue, flag(st.Durability.ReadOnly), st.Durability.ReadOnly)
	for name, v := range map[string]float64{
		"documents":                     float64(st.Documents),
		"tenants":                       float64(st.Tenants),
		"vectors":                       float64(st.Vectors),
		"dense_tombstones":              float64(st.Dense.Tombstones),
		"bm25_deleted_docs":             float64(st.Postings.DeletedDocs),
		"bm25_avgdl_drift":              st.Postings.Drift,
		"maintenance_rebuilds_total":    float64(st.Maintenance.Rebuilds),
		"maintenance_compactions_total": float64(st.Maintenance.Compactions),
		"maintenance_steps_total":       float64(st.Maintenance.Steps),
		"maintenance_failing":           flag(st.Maintenance.LastError),
		"wal_bytes":                     float64(st.Durability.LogBytes),
		"wal_syncs_total":               float64(st.Durability.LogSyncs),
		"wal_commits_total":             float64(st.Durability.Commits),
		"snapshots_background_total":    float64(st.Durability.BackgroundSnapshots),
		"snapshot_failing":              flag(st.Durability.LastSnapshotError),
		"snapshot_generation":           float64(st.SnapshotGeneration),
		"recovery_replayed":             float64(st.Durability.Recovery.Replayed),
		"recovery_dropped_bytes":        float64(st.Durability.Recovery.DroppedBytes),
		"recovery_fell_back":            flag(st.Durability.Recovery.FellBack),
	} {
		kind := prometheus.GaugeValue
		if strings.HasSuffix(name, "_total") {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[name], kind, v)
	}
}

// cacheCollector exports model caches' counters at every scrape.
type cacheCollector struct {
	caches                                           map[string]CacheStats // by model name
	kinds                                            map[string]string     // model name -> "rerank" or "embed"
	hits, misses, shared, evictions, entries, nbytes *prometheus.Desc
}

func newCacheCollector(caches map[string]CacheStats, kinds map[string]string) *cacheCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("hybrank_cache_"+name, help, []string{"cache", "model"}, nil)
	}
	return &cacheCollector{caches: caches, kinds: kinds,
		hits:      d("hits_total", "Model cache lookups answered from the cache."),
		misses:    d("misses_total", "Model cache lookups not answered from the cache."),
		shared:    d("shared_total", "Misses answered by a concurrent request's model call of the same key."),
		evictions: d("evictions_total", "Entries evicted to stay within the cache's bytes."),
		entries:   d("entries", "Entries in the cache."),
		nbytes:    d("bytes", "Bytes the cache holds (keys, values and overhead)."),
	}
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.shared, c.evictions, c.entries, c.nbytes} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for model, src := range c.caches {
		st, kind := src.Stats(), c.kinds[model]
		ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(st.Hits), kind, model)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(st.Misses), kind, model)
		ch <- prometheus.MustNewConstMetric(c.shared, prometheus.CounterValue, float64(st.Shared), kind, model)
		ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(st.Evictions), kind, model)
		ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(st.Entries), kind, model)
		ch <- prometheus.MustNewConstMetric(c.nbytes, prometheus.GaugeValue, float64(st.Bytes), kind, model)
	}
}

// queueCollector exports the model queues' statistics at every scrape.
type queueCollector struct {
	queues              map[string]QueueStats // by model name
	kinds               map[string]string     // model name -> "rerank" or "embed"
	items, tokens, wait *prometheus.Desc
}

func newQueueCollector(queues map[string]QueueStats, kinds map[string]string) *queueCollector {
	labels := []string{"kind", "model"}
	return &queueCollector{queues: queues, kinds: kinds,
		items:  prometheus.NewDesc("hybrank_batch_items", "Items (pairs or texts) per model call.", labels, nil),
		tokens: prometheus.NewDesc("hybrank_batch_tokens", "Estimated tokens per model call.", labels, nil),
		wait:   prometheus.NewDesc("hybrank_queue_items", "Items waiting in a model's queue.", labels, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.items
	ch <- c.tokens
	ch <- c.wait
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for model, q := range c.queues {
		st, kind := q.Stats(), c.kinds[model]
		ch <- constHistogram(c.items, st.Items, kind, model)
		ch <- constHistogram(c.tokens, st.Tokens, kind, model)
		ch <- prometheus.MustNewConstMetric(c.wait, prometheus.GaugeValue, float64(st.Queued), kind, model)
	}
}

// constHistogram is h as a Prometheus histogram (cumulative buckets).
func constHistogram(d *prometheus.Desc, h queue.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Buckets))
	var cum uint64
	for i, ub := range h.Buckets {
		cum += h.Counts[i]
		buckets[ub] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, labels...)
}
