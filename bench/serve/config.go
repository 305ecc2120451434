package serve

import (
	"cmp"
	"fmt"
	"io"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/queue"
	"github.com/hybrank/hybrank/server"
)

// Config configures `bench serve`: Clients concurrent HTTP clients over
// loopback send rerank requests of Docs documents of Model.DocTokens tokens
// to a real in-process server for Duration, once per Batching mode; then
// the library's throughput curve on the same documents; then, when set,
// the overload check. Safe to copy.
type Config struct {
	// Model holds the model, thread and text settings (Profile, ModelDir,
	// Models, Provider, Threads, PoolSize, BatchTokens, DocTokens,
	// QueryTokens, Seed); its Pairs field is ignored (Docs is used).
	Model throughput.Spec `json:"model"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Docs is the number of documents per rerank request.
	Docs int `json:"docs"`
	// Duration is how long requests are measured, after Warmup.
	Duration time.Duration `json:"duration_ns"`
	Warmup   time.Duration `json:"warmup_ns"`
	// Batch configures the model's queue (Enabled is set per run;
	// Workers bounds concurrent model calls in both modes).
	Batch queue.Config `json:"batch"`
	// Batching lists the serve runs: batching on (true) and/or off
	// (false), in order; empty runs none.
	Batching []bool `json:"batching"`
	// CurveSizes are the batch sizes of the library curve (empty: no
	// curve); each is measured for at least CurveMinTime.
	CurveSizes   []int         `json:"curve_sizes,omitempty"`
	CurveMinTime time.Duration `json:"curve_min_time_ns"`
	// Search, when set, runs the search run (SearchConfig) after the
	// serve runs.
	Search *SearchConfig `json:"search,omitempty"`
	// Overload, when set, runs the overload check last.
	Overload *OverloadConfig `json:"overload,omitempty"`
	// Targets are checked against the serve runs and the curve.
	Targets Targets `json:"targets"`
	// Log receives one line per row as it is measured (nil = none).
	Log io.Writer `json:"-"`
}

// DefaultConfig is the target shape: 16 clients × 8 documents of ~100
// tokens on the balanced profile, batching on then off, the library curve
// at batch sizes 1 to 64, no overload run.
func DefaultConfig() Config {
	m := throughput.DefaultSpec()
	m.DocTokens, m.QueryTokens, m.PeakN = 100, 8, 0
	return Config{
		Model: m, Clients: 16, Docs: 8, Duration: 10 * time.Second, Warmup: time.Second,
		Batch: server.DefaultConfig().Rerank, Batching: []bool{true, false},
		CurveSizes: []int{1, 2, 4, 8, 16, 32, 64}, CurveMinTime: 3 * time.Second,
		Targets: DefaultTargets(),
	}
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	m := c.Model
	m.Pairs = max(c.Docs, 1)
	if err := m.Validate(); err != nil {
		return err
	}
	if p, err := models.LookupProfile(m.Profile); m.ModelDir == "" && (err != nil || p.Kind != models.KindCrossEncoder) {
		return fmt.Errorf("%w: serve: profile %q is not a cross-encoder profile", bench.ErrBadOption, m.Profile)
	}
	switch {
	case c.Clients < 1 || c.Docs < 1:
		return fmt.Errorf("%w: serve: clients %d, docs %d must be positive", bench.ErrBadOption, c.Clients, c.Docs)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("%w: serve: duration %v, warmup %v", bench.ErrBadOption, c.Duration, c.Warmup)
	case len(c.CurveSizes) > 0 && c.CurveMinTime <= 0:
		return fmt.Errorf("%w: serve: curve min time %v", bench.ErrBadOption, c.CurveMinTime)
	}
	for _, n := range c.CurveSizes {
		if n < 1 {
			return fmt.Errorf("%w: serve: curve batch size %d", bench.ErrBadOption, n)
		}
	}
	if err := c.Batch.Validate(); err != nil {
		return fmt.Errorf("%w: serve: %w", bench.ErrBadOption, err)
	}
	if c.Overload != nil {
		if err := c.Overload.Validate(); err != nil {
			return err
		}
	}
	if c.Search != nil {
		if err := c.Search.Validate(); err != nil {
			return err
		}
	}
	return c.Targets.Validate()
}

// Targets are what the server must reach against itself and the library.
type Targets struct {
	// MinBatchingGain is the least pairs/s with batching on over off (2:
	// merging requests must at least double throughput). 0 disables.
	MinBatchingGain float64 `json:"min_batching_gain"`
	// MinLibraryShare is the least pairs/s of the server (batching on) over
	// the library curve's best (0.85: HTTP and batching cost at most 15 %).
	// 0 disables.
	MinLibraryShare float64 `json:"min_library_share"`
}

// DefaultTargets are a 2× batching gain and 85 % of the library.
func DefaultTargets() Targets { return Targets{MinBatchingGain: 2, MinLibraryShare: 0.85} }

// Validate reports a negative target or a share above 1.
func (t Targets) Validate() error {
	if t.MinBatchingGain < 0 || t.MinLibraryShare < 0 || t.MinLibraryShare > 1 {
		return fmt.Errorf("%w: serve targets %+v", bench.ErrBadOption, t)
	}
	return nil
}

// Check compares res's serve runs and curve with t; a target whose runs
// are missing (batching on or off, the curve) is not checked. The curve's
// gain over one request's batch is reported for information.
func (t Targets) Check(res Result, docs int) []report.Check {
	var out []report.Check
	best := bestPoint(res.Curve)
	for _, p := range res.Curve {
		if p.BatchSize == docs && p.PairsPerS > 0 {
			out = append(out, report.Inform("library curve, best / one request's batch, pairs/s", best.PairsPerS/p.PairsPerS,
				fmt.Sprintf("best %.1f pairs/s (batch %d) / %.1f pairs/s at batch %d, what batching off runs: the most merging %d-document requests can gain on this machine",
					best.PairsPerS, best.BatchSize, p.PairsPerS, p.BatchSize, docs)))
		}
	}
	on, off := res.mode(true), res.mode(false)
	if t.MinBatchingGain > 0 && on != nil && off != nil && off.PairsPerS > 0 {
		out = append(out, report.AtLeast("batching on / off, pairs/s", on.PairsPerS/off.PairsPerS, t.MinBatchingGain,
			fmt.Sprintf("%.1f / %.1f pairs/s", on.PairsPerS, off.PairsPerS)))
	}
	if t.MinLibraryShare > 0 && on != nil && best.PairsPerS > 0 {
		out = append(out, report.AtLeast("server (batching on) / library best, pairs/s", on.PairsPerS/best.PairsPerS, t.MinLibraryShare,
			fmt.Sprintf("%.1f / %.1f pairs/s at batch %d", on.PairsPerS, best.PairsPerS, best.BatchSize)))
	}
	return out
}

// OverloadConfig configures the overload check: many clients against a
// server with deliberately small limits, so most requests are refused.
// The model, documents per request and batcher are the Config's.
type OverloadConfig struct {
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Duration bounds the run; each client also stops after
	// MaxRequestsPerClient requests.
	Duration             time.Duration `json:"duration_ns"`
	MaxRequestsPerClient int           `json:"max_requests_per_client"`
	// MaxConcurrentRequests and QueueItems are the server's small limits
	// (server.Config.MaxConcurrentRequests, Rerank.MaxQueueItems).
	MaxConcurrentRequests int `json:"max_concurrent_requests"`
	QueueItems            int `json:"queue_items"`
	// Backoff is a client's pause after a 429 (shorter than Retry-After on
	// purpose, to keep the pressure on).
	Backoff time.Duration `json:"backoff_ns"`
	// SampleEvery is the resident-memory sampling period.
	SampleEvery time.Duration `json:"sample_every_ns"`
	// Batching is the server's batcher mode during the run.
	Batching bool `json:"batching"`
	// Targets bound the memory growth.
	Targets OverloadTargets `json:"targets"`
}

// DefaultOverloadConfig is 64 clients for 60 s against 16 requests in
// flight and 32 queued pairs, batching on.
func DefaultOverloadConfig() OverloadConfig {
	return OverloadConfig{
		Clients: 64, Duration: 60 * time.Second, MaxRequestsPerClient: 100000,
		MaxConcurrentRequests: 16, QueueItems: 32, Backoff: 10 * time.Millisecond, SampleEvery: 100 * time.Millisecond,
		Batching: true, Targets: OverloadTargets{MaxRSSGrowth: 0.10, RSSSlackMiB: 32},
	}
}

// Validate reports the first unusable field.
func (c OverloadConfig) Validate() error {
	switch {
	case c.Clients < 1 || c.Duration <= 0 || c.MaxRequestsPerClient < 1:
		return fmt.Errorf("%w: overload: clients %d, duration %v, max requests %d must be positive", bench.ErrBadOption, c.Clients, c.Duration, c.MaxRequestsPerClient)
	case c.MaxConcurrentRequests < 1 || c.QueueItems < 1:
		return fmt.Errorf("%w: overload: max concurrent %d, queue items %d must be positive", bench.ErrBadOption, c.MaxConcurrentRequests, c.QueueItems)
	case c.Backoff < 0 || c.SampleEvery <= 0:
		return fmt.Errorf("%w: overload: backoff %v, sample period %v", bench.ErrBadOption, c.Backoff, c.SampleEvery)
	case c.Targets.MaxRSSGrowth < 0 || c.Targets.RSSSlackMiB < 0:
		return fmt.Errorf("%w: overload targets %+v", bench.ErrBadOption, c.Targets)
	}
	return nil
}

// OverloadTargets bound resident memory once the queues are full: the
// second half's peak may exceed the first half's by at most MaxRSSGrowth
// (a fraction) plus RSSSlackMiB. The other checks of an overload run are
// fixed: only 200 and 429 answers, every 429 with Retry-After, some 200s,
// and a healthy server afterwards.
type OverloadTargets struct {
	MaxRSSGrowth float64 `json:"max_rss_growth"`
	RSSSlackMiB  float64 `json:"rss_slack_mib"`
}

// Check returns the overload checks of r.
func (t OverloadTargets) Check(r OverloadRow) []report.Check {
	other := 0
	for st, n := range r.Statuses {
		if st != "200" && st != "429" {
			other += n
		}
	}
	healthy := 0.0
	if r.Healthy {
		healthy = 1
	}
	cs := []report.Check{
		report.AtMost("overload: answers other than 200 and 429", float64(other), 0, report.FormatValue(r.Statuses)),
		report.AtMost("overload: 429s without Retry-After", float64(r.NoRetryAfter), 0, ""),
		report.AtLeast("overload: 200 answers", float64(r.OK), 1, ""),
		report.AtLeast("overload: healthy afterwards (/healthz, /readyz, one rerank)", healthy, 1, r.HealthDetail),
	}
	const rssName = "overload: resident memory peak, second half (MiB)"
	if !r.RSSSecondHalf {
		// The run ended before its second half was sampled: nothing to
		// judge (a peak of 0 had passed, a missing baseline had failed).
		return append(cs, report.Inform(rssName, r.RSSPeakMiB, fmt.Sprintf("not checked: no sample after the run's halfway point (it ran %.2f s); start %.0f, end %.0f MiB",
			r.Seconds, r.RSSStartMiB, r.RSSEndMiB)))
	}
	// Without a first-half sample (a half shorter than the sampling
	// period) the baseline is the resident memory at the start.
	base := cmp.Or(r.RSSPeakFirstHalfMiB, r.RSSStartMiB)
	lim := base*(1+t.MaxRSSGrowth) + t.RSSSlackMiB
	return append(cs, report.AtMost(rssName, r.RSSPeakMiB, lim,
		fmt.Sprintf("first half's peak %.0f MiB (start %.0f) + %.0f %% + %.0f MiB; end %.0f MiB",
			r.RSSPeakFirstHalfMiB, r.RSSStartMiB, 100*t.MaxRSSGrowth, t.RSSSlackMiB, r.RSSEndMiB)))
}
