package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/wal"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/postings"
)

// Config configures an Engine. Index-shaping fields (Analysis, Postings,
// Dense) are stored with a snapshot; on reopening a directory the stored
// ones win (see Open). The query-time defaults always come from the Config
// passed to Open. A Config is a plain value; copy it freely.
type Config struct {
	// Analysis configures the analyzer for documents and queries.
	Analysis analysis.Config `json:"analysis"`
	// Postings configures the BM25 index. Its AnalyzerVersion is filled by
	// the engine from Analysis.
	Postings postings.Config `json:"postings"`
	// Dense configures the vector index. Dim 0 means "the embedder's Dim";
	// a non-zero Dim must equal it.
	Dense dense.Config `json:"dense"`

	// TopK is the default Request.TopK.
	TopK int `json:"top_k"`
	// Candidates is the default number of candidates per retriever.
	Candidates int `json:"candidates"`
	// Fusion is the default fusion method.
	Fusion Fusion `json:"fusion"`
	// RRFK is the default k of reciprocal rank fusion.
	RRFK float64 `json:"rrf_k"`
	// Alpha is the default dense weight of weighted fusion, in [0, 1].
	Alpha float64 `json:"alpha"`
	// EmbedBatch is how many documents one Embedder.Embed call receives
	// during Commit.
	EmbedBatch int `json:"embed_batch"`
	// Rerank configures the budgeted rerank loop.
	Rerank RerankConfig `json:"rerank"`
	// Durability configures the write-ahead log and the background
	// snapshots of an engine opened on a directory (unused in memory).
	Durability DurabilityConfig `json:"durability"`
	// Maintenance configures the background BM25 norm rebuilds and dense
	// graph compactions. The zero value disables them.
	Maintenance MaintenanceConfig `json:"maintenance"`
}

// MaintenanceConfig configures background maintenance (see the package
// doc, Maintenance). With Interval 0 the other fields are ignored.
type MaintenanceConfig struct {
	// Interval is the pause between two maintenance steps, and between
	// two checks while nothing needs doing; 0 disables maintenance.
	// Default 200 ms.
	Interval time.Duration `json:"interval"`
	// MinDocs: an engine with fewer documents is not maintained (a small
	// index's drift swings with every commit, and its deleted postings
	// cost nothing). Default 1000.
	MinDocs int `json:"min_docs"`
	// RebuildDrift starts a rebuild of the BM25 index (new norms at the
	// current average document length, deleted postings dropped) when
	// |avgdl − avgdl_build| / avgdl_build exceeds it. Default 0.02, the
	// postings package's RebuildDrift.
	RebuildDrift float64 `json:"rebuild_drift"`
	// RebuildDeleted starts a rebuild when deleted documents (their
	// postings are still scanned) exceed this fraction of the BM25 index's
	// documents, live and deleted. Default 0.25.
	RebuildDeleted float64 `json:"rebuild_deleted"`
	// CompactTombstones starts a compaction of the dense graph when nodes
	// of deleted or replaced vectors exceed this fraction of its nodes.
	// Default 0.25.
	CompactTombstones float64 `json:"compact_tombstones"`
	// RebuildStep bounds the work of one rebuild step, in documents,
	// postings and filter entries handled. Default 65536.
	RebuildStep int `json:"rebuild_step"`
	// CompactStep is the number of vectors one compaction step inserts
	// into the new graph. Default 256.
	CompactStep int `json:"compact_step"`
}

// Validate reports why m is unusable, wrapping ErrInvalidConfig.
func (m MaintenanceConfig) Validate() error {
	switch {
	case m.Interval < 0:
		return fmt.Errorf("%w: maintenance interval %v is negative", ErrInvalidConfig, m.Interval)
	case m.Interval == 0:
		return nil
	case m.MinDocs < 0:
		return fmt.Errorf("%w: maintenance min_docs %d is negative", ErrInvalidConfig, m.MinDocs)
	case !(m.RebuildDrift > 0) || math.IsInf(m.RebuildDrift, 0):
		return fmt.Errorf("%w: maintenance rebuild_drift %v must be finite and > 0", ErrInvalidConfig, m.RebuildDrift)
	case !(m.RebuildDeleted > 0 && m.RebuildDeleted <= 1):
		return fmt.Errorf("%w: maintenance rebuild_deleted %v outside (0, 1]", ErrInvalidConfig, m.RebuildDeleted)
	case !(m.CompactTombstones > 0 && m.CompactTombstones <= 1):
		return fmt.Errorf("%w: maintenance compact_tombstones %v outside (0, 1]", ErrInvalidConfig, m.CompactTombstones)
	case m.RebuildStep <= 0 || m.CompactStep <= 0:
		return fmt.Errorf("%w: maintenance rebuild_step and compact_step must be positive", ErrInvalidConfig)
	}
	return nil
}

// SyncPolicy says when Commit returns relative to the write-ahead log's
// fsync.
type SyncPolicy string

const (
	// SyncEveryCommit: Commit returns once an fsync covers its log record.
	// Concurrent Commits share fsyncs (group commit). Nothing acknowledged
	// is lost, even to a power failure.
	SyncEveryCommit SyncPolicy = SyncPolicy(wal.SyncEveryCommit)
	// SyncInterval: Commit returns once its record is written to the
	// operating system; the log is fsynced every SyncInterval. A killed
	// process loses nothing acknowledged; an operating-system crash or
	// power failure can lose up to SyncInterval of acknowledged commits.
	SyncInterval SyncPolicy = SyncPolicy(wal.SyncInterval)
)

// DurabilityConfig configures the write-ahead log and when the engine
// snapshots by itself (see the package doc, Persistence).
type DurabilityConfig struct {
	// Sync is the log's sync policy. Default SyncEveryCommit.
	Sync SyncPolicy `json:"sync"`
	// SyncInterval is the fsync period under SyncInterval. Default 100 ms.
	SyncInterval time.Duration `json:"sync_interval"`
	// SegmentBytes is the size of a log segment file, the unit that
	// truncation after a snapshot removes. Default 64 MiB.
	SegmentBytes int64 `json:"segment_bytes"`
	// PreallocateBytes is how far ahead of its records the log's active
	// segment is filled with zeros, so that an fsync per commit writes
	// only data, not a new file size (see wal.Config.PreallocateBytes);
	// 0 turns it off. Default 1 MiB.
	PreallocateBytes int64 `json:"preallocate_bytes"`
	// SnapshotLogBytes starts a background snapshot once the log holds
	// this many bytes; 0 disables the trigger. Default 256 MiB.
	SnapshotLogBytes int64 `json:"snapshot_log_bytes"`
	// SnapshotAge starts a background snapshot when the log holds
	// commits and the last snapshot (or Open) is this old; 0 disables the
	// trigger. Default 10 minutes.
	SnapshotAge time.Duration `json:"snapshot_age"`
}

// walConfig is the log's configuration.
func (d DurabilityConfig) walConfig() wal.Config {
	return wal.Config{Sync: wal.SyncPolicy(d.Sync), Interval: d.SyncInterval, SegmentBytes: d.SegmentBytes, PreallocateBytes: d.PreallocateBytes}
}

// RerankConfig sizes the batches of the budgeted rerank loop.
type RerankConfig struct {
	// FirstBatch is the size of the first batch of a profile whose cost
	// per document is not known yet (and whose reranker does not predict
	// its cost, models.Capabilities Cost). Keep it small: it is a measurement.
	FirstBatch int `json:"first_batch"`
	// MinBatch is the smallest batch worth a reranker call; when not even
	// that is predicted to fit in the time left, reranking stops.
	MinBatch int `json:"min_batch"`
	// MaxBatch caps a batch (and is the batch size when there is no
	// deadline).
	MaxBatch int `json:"max_batch"`
	// EWMAAlpha is the weight of the newest observation in the per-profile
	// moving averages of the cost per document and of the observed over
	// the predicted time, in (0, 1].
	EWMAAlpha float64 `json:"ewma_alpha"`
	// Margin is held back from the deadline for the stages after
	// reranking (MMR, packing).
	Margin time.Duration `json:"margin"`
	// MarginFraction adds this fraction of the request's Budget to Margin.
	MarginFraction float64 `json:"margin_fraction"`
}

// DefaultConfig returns the analysis and postings defaults (bm25s
// compatible), default dense settings, TopK 10, 100 candidates per
// retriever, RRF with k = 60, alpha 0.5, embedding batches of 32, rerank
// batches of 4 first, then 2..32, EWMA 0.3, margin 2 ms + 5 % of the budget,
// a log fsynced per commit in 64 MiB segments, snapshotted in the
// background at 256 MiB of log or 10 minutes, and maintenance checked
// every 200 ms (see MaintenanceConfig).
func DefaultConfig() Config {
	return Config{
		Analysis:   analysis.DefaultConfig(),
		Postings:   postings.DefaultConfig(),
		Dense:      dense.DefaultConfig(0),
		TopK:       10,
		Candidates: 100,
		Fusion:     FusionRRF,
		RRFK:       60,
		Alpha:      0.5,
		EmbedBatch: 32,
		Rerank: RerankConfig{
			FirstBatch:     4,
			MinBatch:       2,
			MaxBatch:       32,
			EWMAAlpha:      0.3,
			Margin:         2 * time.Millisecond,
			MarginFraction: 0.05,
		},
		Durability: DurabilityConfig{
			Sync:             SyncEveryCommit,
			SyncInterval:     wal.DefaultConfig().Interval,
			SegmentBytes:     wal.DefaultConfig().SegmentBytes,
			PreallocateBytes: wal.DefaultConfig().PreallocateBytes,
			SnapshotLogBytes: 256 << 20,
			SnapshotAge:      10 * time.Minute,
		},
		Maintenance: MaintenanceConfig{
			Interval:          200 * time.Millisecond,
			MinDocs:           1000,
			RebuildDrift:      postings.DefaultConfig().RebuildDrift,
			RebuildDeleted:    0.25,
			CompactTombstones: 0.25,
			RebuildStep:       1 << 16,
			CompactStep:       256,
		},
	}
}

// Validate reports why c is unusable, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if err := c.Analysis.Validate(); err != nil {
		return fmt.Errorf("%w: analysis: %w", ErrInvalidConfig, err)
	}
	if err := c.Postings.Validate(); err != nil {
		return fmt.Errorf("%w: postings: %w", ErrInvalidConfig, err)
	}
	dc := c.Dense
	if dc.Dim == 0 {
		dc.Dim = 1 // filled from the embedder at Open
	}
	if err := dc.Validate(); err != nil {
		return fmt.Errorf("%w: dense: %w", ErrInvalidConfig, err)
	}
	r := c.Rerank
	switch {
	case c.TopK <= 0 || c.TopK > MaxTopK:
		return bad("top_k %d outside [1, %d]", c.TopK, MaxTopK)
	case c.Candidates <= 0 || c.Candidates > MaxCandidates:
		return bad("candidates %d outside [1, %d]", c.Candidates, MaxCandidates)
	case c.Fusion != FusionRRF && c.Fusion != FusionWeighted && c.Fusion != FusionRelative:
		return bad("unknown fusion %q", c.Fusion)
	case math.IsNaN(c.RRFK) || math.IsInf(c.RRFK, 0) || c.RRFK < 0:
		return bad("rrf_k %v must be finite and ≥ 0", c.RRFK)
	case !(c.Alpha >= 0 && c.Alpha <= 1):
		return bad("alpha %v outside [0, 1]", c.Alpha)
	case c.EmbedBatch <= 0:
		return bad("embed_batch must be positive")
	case r.FirstBatch <= 0 || r.MinBatch <= 0 || r.MaxBatch < r.MinBatch || r.MaxBatch < r.FirstBatch:
		return bad("rerank batches need 0 < first_batch, min_batch ≤ max_batch")
	case !(r.EWMAAlpha > 0 && r.EWMAAlpha <= 1):
		return bad("rerank ewma_alpha %v outside (0, 1]", r.EWMAAlpha)
	case r.Margin < 0 || !(r.MarginFraction >= 0 && r.MarginFraction < 1):
		return bad("rerank margin must be ≥ 0 and margin_fraction in [0, 1)")
	case c.Durability.SnapshotLogBytes < 0 || c.Durability.SnapshotAge < 0:
		return bad("durability snapshot_log_bytes and snapshot_age must be ≥ 0")
	}
	if err := c.Durability.walConfig().Validate(); err != nil {
		return fmt.Errorf("%w: durability: %w", ErrInvalidConfig, err)
	}
	return c.Maintenance.Validate()
}

// Option attaches a model or helper to an Engine at Open.
type Option func(*options)

type options struct {
	embedder  models.Embedder
	rerankers map[string]models.Reranker
	counter   TokenCounter
	fs        vfs.FS
}

// WithEmbedder attaches the bi-encoder used to embed documents on Commit and
// queries on Search. Without one, search is BM25 only (a fallback that each
// Result records). Open loads the embedder (Load).
func WithEmbedder(e models.Embedder) Option {
	return func(o *options) { o.embedder = e }
}

// WithReranker registers r under a profile name (e.g. "fast", "balanced",
// "accurate") for Request.Rerank. Registering a name twice keeps the last.
// Open loads the reranker (Load).
func WithReranker(profile string, r models.Reranker) Option {
	return func(o *options) {
		if o.rerankers == nil {
			o.rerankers = map[string]models.Reranker{}
		}
		o.rerankers[profile] = r
	}
}

// WithFS sets the filesystem the engine makes every call of its
// write-ahead log and snapshots through (default vfs.OS, the operating
// system's). Tests pass an error-injecting one (internal/vfs/errorfs) to
// check what the engine does when the disk fails; the lock file and the
// postings and dense index files read at Open use the operating system's
// directly.
func WithFS(fsys vfs.FS) Option {
	return func(o *options) { o.fs = fsys }
}

// WithTokenCounter sets the counter used by packing. Without one the engine
// estimates with models.EstimateTokens.
func WithTokenCounter(tc TokenCounter) Option {
	return func(o *options) { o.counter = tc }
}
