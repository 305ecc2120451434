package serve

import "github.com/hybrank/hybrank/bench/report"

// ServeRow is one serve run: clients against the server, batching on or
// off, and the library at the same concurrency. Columns of serve.md are
// tagged `table`; the three row kinds share them, "run" says which.
type ServeRow struct {
	Run       string  `json:"run" table:""` // "serve"
	Route     string  `json:"route"`
	Profile   string  `json:"profile" table:""`
	Provider  string  `json:"provider"`
	Threads   int     `json:"threads" table:""`
	Clients   int     `json:"clients" table:""`
	Batching  bool    `json:"batching" table:""`
	Docs      int     `json:"docs" table:""`
	DocTokens int     `json:"doc_tokens" table:""`
	Requests  int     `json:"requests" table:""`
	RPS       float64 `json:"rps" table:""`
	PairsPerS float64 `json:"pairs_per_s" table:""`
	P50Ms     float64 `json:"p50_ms" table:""`
	P99Ms     float64 `json:"p99_ms" table:""`
	// Errors counts failed requests by HTTP status (loadgen.Transport for
	// connection errors).
	Errors map[string]int `json:"errors" table:""`
	// ModelCalls is how many ScorePairs calls the server made in the
	// window, and PairsPerCall their mean size (how much batching merged).
	ModelCalls   int     `json:"model_calls"`
	PairsPerCall float64 `json:"pairs_per_call" table:""`
	// LibraryPairsPerS is the in-process figure on the same model and
	// documents: Clients goroutines calling CrossEncoder.Score with Docs
	// documents each, no HTTP, no server batching.
	LibraryPairsPerS float64 `json:"library_pairs_per_s" table:""`
	RealWeights      bool    `json:"real_weights" table:""`
}

// CurvePoint is the library's throughput at one batch size: calls of
// CrossEncoder.ScorePairs with BatchSize pairs, one at a time, in process.
type CurvePoint struct {
	Run       string `json:"run" table:""` // "library"
	Profile   string `json:"profile" table:""`
	Threads   int    `json:"threads" table:""`
	DocTokens int    `json:"doc_tokens" table:""`
	BatchSize int    `json:"batch_size" table:""`
	// Calls is the number of timed calls (the report's requests column)
	// and MsPerCall their mean duration (its p50_ms column).
	Calls       int     `json:"calls" table:"requests"`
	PairsPerS   float64 `json:"pairs_per_s" table:""`
	MsPerCall   float64 `json:"ms_per_call" table:"p50_ms"`
	RealWeights bool    `json:"real_weights" table:""`
}

// bestPoint returns the point with the most pairs/s (zero if none).
func bestPoint(pts []CurvePoint) CurvePoint {
	var best CurvePoint
	for _, p := range pts {
		if p.PairsPerS > best.PairsPerS {
			best = p
		}
	}
	return best
}

// OverloadRow is one overload run.
type OverloadRow struct {
	Run      string `json:"run" table:""` // "overload"
	Profile  string `json:"profile" table:""`
	Threads  int    `json:"threads" table:""`
	Clients  int    `json:"clients" table:""`
	Batching bool   `json:"batching" table:""`
	Docs     int    `json:"docs" table:""`
	// OK counts 200 answers; OKPerS is them per second and PairsPerS their
	// documents per second. P50Ms and P99Ms are over the 200s,
	// RejectP99Ms over the 429s.
	OK          int     `json:"ok" table:"requests"`
	OKPerS      float64 `json:"ok_per_s" table:"rps"`
	PairsPerS   float64 `json:"pairs_per_s" table:""`
	P50Ms       float64 `json:"p50_ms" table:""`
	P99Ms       float64 `json:"p99_ms" table:""`
	RejectP99Ms float64 `json:"reject_p99_ms"`
	// Statuses counts every answer by HTTP status (loadgen.Transport for
	// connection errors); only 200 and 429 pass.
	Statuses map[string]int `json:"statuses" table:"errors"`
	// NoRetryAfter counts 429s without a Retry-After header.
	NoRetryAfter int     `json:"no_retry_after"`
	Seconds      float64 `json:"seconds"`
	// Resident memory of this process (which hosts the server, the model
	// and the clients) in MiB: before the clients start, the peak over the
	// first half and the whole run, and after it.
	RSSStartMiB         float64 `json:"rss_start_mib" table:""`
	RSSPeakFirstHalfMiB float64 `json:"rss_peak_first_half_mib"`
	RSSPeakMiB          float64 `json:"rss_peak_mib" table:""`
	// RSSSecondHalf says a sample was taken after the run's halfway point
	// (a run that ends early may have none).
	RSSSecondHalf bool    `json:"rss_second_half"`
	RSSEndMiB     float64 `json:"rss_end_mib" table:""`
	// Healthy is true when /healthz and /readyz answered 200 and a normal
	// rerank succeeded after the run; HealthDetail says what failed.
	Healthy      bool   `json:"healthy"`
	HealthDetail string `json:"health_detail,omitempty"`
	// Checks are OverloadTargets.Check of this row; Verdict sums them up
	// ("PASS" or "FAIL: …").
	Checks      []report.Check `json:"checks"`
	Verdict     string         `json:"verdict" table:""`
	RealWeights bool           `json:"real_weights" table:""`
}

// Pass reports whether every overload check held.
func (r OverloadRow) Pass() bool { return len(report.Failed(r.Checks)) == 0 }

// Result is one Run: the serve runs, the library curve, the overload run
// (nil when not run) and the checks of the targets.
type Result struct {
	Serve    []ServeRow     `json:"serve"`
	Curve    []CurvePoint   `json:"curve"`
	Search   []SearchRow    `json:"search,omitempty"`
	Overload *OverloadRow   `json:"overload,omitempty"`
	Checks   []report.Check `json:"checks"`
}

// mode returns the serve run with batching on or off (nil if none).
func (r Result) mode(on bool) *ServeRow {
	for i := range r.Serve {
		if r.Serve[i].Batching == on {
			return &r.Serve[i]
		}
	}
	return nil
}
