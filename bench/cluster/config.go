package cluster

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/hybrid"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/models"
)

// DefaultStatePath is where `make cluster` writes the running cluster's
// state ($HYBRANK_CLUSTER/cluster.json).
func DefaultStatePath() string { return filepath.Join(artifacts.Cluster(), StateFile) }

// Config configures `bench cluster`. Safe to copy.
type Config struct {
	// StatePath is the state file of the running cluster (`make cluster`
	// writes it).
	StatePath string `json:"state_path"`
	// Dataset is the BEIR folder loaded into the collection and searched.
	Dataset string `json:"dataset"`
	// Docs caps the corpus (0 = all): the documents judged for the queries
	// run come first, then the corpus in file order up to Docs. Queries
	// caps the judged queries (0 = all, in file order).
	Docs    int `json:"docs"`
	Queries int `json:"queries"`
	// Collection is the Weaviate class name ("" = "Bench" + the dataset's
	// name); the fault phase's imports go to Collection + "Faults", the
	// peer's to Collection + "Peer".
	Collection string `json:"collection,omitempty"`
	// Shards, Replicas and AsyncReplication shape the collection.
	Shards           int  `json:"shards"`
	Replicas         int  `json:"replicas"`
	AsyncReplication bool `json:"async_replication"`
	// Consistency is the consistency level of every import and read
	// (ONE, QUORUM or ALL).
	Consistency string `json:"consistency"`
	// BatchSize objects per batch request and Importers concurrent batch
	// requests (spread over the nodes) for the load.
	BatchSize int `json:"batch_size"`
	Importers int `json:"importers"`
	// Fused names the bench hybrid setup whose fusion and α the hybrid
	// searches use (weighted-α → relativeScoreFusion with that α; relative
	// → relativeScoreFusion α 0.5; rrf → rankedFusion α 0.5).
	Fused string `json:"fused"`
	// Profile is the reranker profile the sidecars serve and the engine
	// reranks with.
	Profile string `json:"profile"`
	// Analysis is the BM25 side's analysis in Weaviate: AnalysisHybrank
	// stores hybrank's terms of each document (the sidecar's /analyze) in
	// a "whitespace" property and searches it with the query's terms,
	// and also runs BM25 and the fusion once on Weaviate's own analysis;
	// AnalysisWeaviate searches the text with Weaviate's word tokens only.
	Analysis string `json:"analysis"`
	// Limit is the hits per search; RerankLimit the hits of a reranked
	// search (Weaviate reranks every hit it returns: a reranked search's
	// Recall@100 is its recall at RerankLimit).
	Limit       int `json:"limit"`
	RerankLimit int `json:"rerank_limit"`
	// Clients are the concurrent client counts of the hybrid searches
	// (the BM25 and vector-only searches run at the first).
	Clients []int `json:"clients"`
	// Warmup searches run unrecorded before each measured set.
	Warmup int `json:"warmup"`
	// ColdCaches restarts the sidecars before each measured set of
	// searches that uses them (and before the peer phase measures
	// hybrank), so that no set finds the previous one's queries in their
	// query-embedding and rerank-score caches. Within a set the caches
	// work as in production (Weaviate reranks each hit list twice).
	ColdCaches bool `json:"cold_caches"`
	// RequestTimeout bounds one HTTP request to Weaviate.
	RequestTimeout time.Duration `json:"request_timeout_ns"`
	// Engine is hybrank's own engine run beside the cluster on the same
	// data and models.
	Engine EngineConfig `json:"engine"`
	// Peer is the comparison with the Python inference peer.
	Peer PeerConfig `json:"peer"`
	// Faults is the fault phase.
	Faults FaultConfig `json:"faults"`
	// Targets are the goals.
	Targets Targets `json:"targets"`
	// Log receives progress lines (nil = none); Progress forces progress
	// bars.
	Log      io.Writer `json:"-"`
	Progress bool      `json:"-"`
}

// EngineConfig is the in-process engine beside the cluster: the models
// and analysis of bench hybrid.
type EngineConfig struct {
	// Enabled runs it.
	Enabled bool `json:"enabled"`
	// Engine is the engine configuration (analysis, BM25, dense).
	Engine engine.Config `json:"engine"`
	// Models, EmbedDir, RerankDir and Provider are bench hybrid's: where
	// the profiles' directories are, an explicit embedder and reranker
	// (empty: the sidecars' own, when the cluster says which) and the ONNX
	// Runtime provider.
	Models    modeldir.Source `json:"models"`
	EmbedDir  string          `json:"embed_dir,omitempty"`
	RerankDir string          `json:"rerank_dir,omitempty"`
	Provider  string          `json:"provider"`
	Threads   int             `json:"threads,omitempty"`
	// MaxDocTokens is the embedder's truncation (0 = the model's maximum,
	// as a sidecar embeds).
	MaxDocTokens int `json:"max_doc_tokens"`
	// CacheDir keeps document vectors (bench/vcache; "" = none).
	CacheDir string `json:"cache_dir,omitempty"`
}

// PeerConfig is the swap of the sidecars for the Python peer.
type PeerConfig struct {
	// Enabled runs the peer phase.
	Enabled bool `json:"enabled"`
	// Docs are imported through the peer and, before the swap, through
	// hybrank (embedding requests per second), by Importers concurrent
	// batches of BatchSize (Weaviate's transformers module embeds a
	// batch's objects one after the other: concurrency comes from
	// batches); Queries reranked searches run through each at
	// RerankClients clients.
	Docs          int `json:"docs"`
	Importers     int `json:"importers"`
	BatchSize     int `json:"batch_size"`
	Queries       int `json:"queries"`
	RerankClients int `json:"rerank_clients"`
	// Sample is how many documents' stored vectors are compared with the
	// peer's vectors of the same texts.
	Sample int `json:"sample"`
	// Direct is how long each sidecar endpoint (vectors, rerank) is driven
	// directly, DirectClients clients, with the requests Weaviate sends
	// (0 = not measured).
	Direct        time.Duration `json:"direct_ns"`
	DirectClients int           `json:"direct_clients"`
	// Int8 also drives node 0's sidecar directly with int8 copies of its
	// models (serve --quantize int8), and compares its vectors with the
	// float32 ones.
	Int8 bool `json:"int8"`
	// Ready bounds the wait for a swapped sidecar.
	Ready time.Duration `json:"ready_ns"`
}

// FaultConfig is the fault phase: Queriers clients search and Importers
// import while node Node is SIGKILLed and restarted, then node Sidecar's
// sidecar.
type FaultConfig struct {
	Enabled   bool `json:"enabled"`
	Queriers  int  `json:"queriers"`
	Importers int  `json:"importers"`
	// BatchSize objects per import batch.
	BatchSize int `json:"batch_size"`
	// Node and Sidecar are the indexes of the node killed and of the node
	// whose sidecar is killed.
	Node    int `json:"node"`
	Sidecar int `json:"sidecar"`
	// Steady is the load before the first fault and between the phases;
	// Down how long each killed process stays dead.
	Steady time.Duration `json:"steady_ns"`
	Down   time.Duration `json:"down_ns"`
	// SearchLimit is the hits of the searches under load (reranked and
	// not, alternately).
	SearchLimit int `json:"search_limit"`
	// CatchUp bounds the wait for every acknowledged object to be on
	// every replica.
	CatchUp time.Duration `json:"catch_up_ns"`
}

// Targets are the goals, checked in the report.
type Targets struct {
	// MaxNDCGGap: |Weaviate − engine| nDCG@10 of the same setup.
	MaxNDCGGap float64 `json:"max_ndcg_gap"`
	// MinPeerSpeedup: hybrank's embedding and rerank requests/s over the
	// peer's.
	MinPeerSpeedup float64 `json:"min_peer_speedup"`
	// MaxCosineGap: 1 − cosine of hybrank's and the peer's vectors.
	MaxCosineGap float64 `json:"max_cosine_gap"`
	// MaxFailedReads at Consistency on the live nodes while a node is
	// down; MaxMissing acknowledged objects missing from a replica after
	// catch-up.
	MaxFailedReads int `json:"max_failed_reads"`
	MaxMissing     int `json:"max_missing"`
	// MaxRecovery: from a restart until the node (or its sidecar) serves
	// again.
	MaxRecovery time.Duration `json:"max_recovery_ns"`
}

// The BM25 analyses of Config.Analysis.
const (
	AnalysisHybrank  = "hybrank"
	AnalysisWeaviate = "weaviate"
)

// DefaultFused is the fusion bench hybrid chose on cisi with the real
// all-MiniLM-L6-v2 and checked on scifact (hybrid_real_all-minilm-l6-v2.md).
const DefaultFused = "weighted-0.5"

// DefaultConfig is the full run: all of scifact, every judged query, a
// collection of 3 shards × 3 replicas with async replication, QUORUM
// everywhere, searches of 100 hits (20 of them for a reranked search: on
// a 2-core machine a balanced cross-encoder scores about 80 pairs a second)
// at 1 and 16 clients,
// the engine, the peer and the faults.
func DefaultConfig() Config {
	return Config{
		StatePath:        DefaultStatePath(),
		Dataset:          artifacts.Dataset("scifact"),
		Shards:           3,
		Replicas:         3,
		AsyncReplication: true,
		Consistency:      "QUORUM",
		BatchSize:        64,
		Importers:        4,
		Fused:            DefaultFused,
		Profile:          models.ProfileBalanced,
		Analysis:         AnalysisHybrank,
		Limit:            100,
		RerankLimit:      20,
		Clients:          []int{1, 16},
		Warmup:           3,
		ColdCaches:       true,
		RequestTimeout:   5 * time.Minute,
		Engine: EngineConfig{
			Enabled: true, Engine: engine.DefaultConfig(), Models: modeldir.DefaultSource(), Provider: "cpu",
			CacheDir: filepath.Join("out", "cache"),
		},
		Peer: PeerConfig{Enabled: true, Docs: 1000, Importers: 16, BatchSize: 8, Queries: 100, RerankClients: 16, Sample: 100,
			Direct: 20 * time.Second, DirectClients: 4, Int8: true, Ready: 3 * time.Minute},
		Faults: FaultConfig{Enabled: true, Queriers: 16, Importers: 4, BatchSize: 16, Node: 1, Sidecar: 2,
			Steady: 15 * time.Second, Down: 30 * time.Second, SearchLimit: 10, CatchUp: 5 * time.Minute},
		Targets: Targets{MaxNDCGGap: 0.01, MinPeerSpeedup: 3, MaxCosineGap: 1e-5, MaxFailedReads: 0, MaxMissing: 0,
			MaxRecovery: 30 * time.Second},
	}
}

// Quick shrinks c for a smoke run: 1,000 documents, 30 queries, short
// peer and fault phases.
func (c Config) Quick() Config {
	c.Docs, c.Queries, c.Warmup = 1000, 30, 1
	c.Peer.Docs, c.Peer.Queries, c.Peer.Sample, c.Peer.Direct = 200, 20, 20, 5*time.Second
	c.Faults.Steady, c.Faults.Down, c.Faults.CatchUp = 5*time.Second, 12*time.Second, 2*time.Minute
	return c
}

// analyzed says whether the collection stores hybrank's terms.
func (c Config) analyzed() bool { return c.Analysis == AnalysisHybrank }

// Validate reports the first unusable option.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: cluster: %s", bench.ErrBadOption, fmt.Sprintf(format, args...))
	}
	switch {
	case c.StatePath == "":
		return bad("no state file")
	case c.Dataset == "":
		return bad("no dataset")
	case c.Docs < 0 || c.Queries < 0:
		return bad("docs %d, queries %d must be ≥ 0", c.Docs, c.Queries)
	case c.Collection != "" && !validClass(c.Collection):
		return bad("collection %q: want a letter (upper case) then letters, digits or _", c.Collection)
	case c.Shards < 1 || c.Replicas < 1:
		return bad("shards %d, replicas %d must be ≥ 1", c.Shards, c.Replicas)
	case !slices.Contains([]string{"ONE", "QUORUM", "ALL"}, c.Consistency):
		return bad("consistency %q: want ONE, QUORUM or ALL", c.Consistency)
	case c.BatchSize < 1 || c.Importers < 1:
		return bad("batch size %d, importers %d must be ≥ 1", c.BatchSize, c.Importers)
	case c.Limit < 1 || c.RerankLimit < 1 || c.Limit > 10000 || c.RerankLimit > 10000:
		return bad("limit %d, rerank limit %d must be in [1, 10000]", c.Limit, c.RerankLimit)
	case c.Analysis != AnalysisHybrank && c.Analysis != AnalysisWeaviate:
		return bad("analysis %q: want %q or %q", c.Analysis, AnalysisHybrank, AnalysisWeaviate)
	case len(c.Clients) == 0:
		return bad("no client counts")
	case c.Warmup < 0 || c.RequestTimeout <= 0:
		return bad("warmup %d, request timeout %v", c.Warmup, c.RequestTimeout)
	}
	for _, n := range c.Clients {
		if n < 1 {
			return bad("client count %d", n)
		}
	}
	if _, err := fusedSetup(c.Fused, c.Profile); err != nil {
		return err
	}
	if p, err := models.LookupProfile(c.Profile); err != nil || p.Kind != models.KindCrossEncoder {
		return bad("%q is not a reranker profile", c.Profile)
	}
	if c.Engine.Enabled {
		if err := c.Engine.Engine.Validate(); err != nil {
			return bad("engine: %v", err)
		}
		if c.Engine.Threads < 0 || c.Engine.MaxDocTokens < 0 {
			return bad("engine threads %d, max doc tokens %d", c.Engine.Threads, c.Engine.MaxDocTokens)
		}
	}
	if p := c.Peer; p.Enabled && (p.Docs < 1 || p.Importers < 1 || p.BatchSize < 1 || p.Queries < 1 || p.RerankClients < 1 || p.Sample < 1 || p.Direct < 0 || p.DirectClients < 1 || p.Ready <= 0) {
		return bad("peer %+v: docs, importers, batch size, queries, rerank clients, sample and direct clients ≥ 1, direct ≥ 0, ready > 0", p)
	}
	if f := c.Faults; f.Enabled {
		switch {
		case f.Queriers < 1 || f.Importers < 0 || f.BatchSize < 1 || f.SearchLimit < 1:
			return bad("faults: queriers %d ≥ 1, importers %d ≥ 0, batch size %d ≥ 1, search limit %d ≥ 1", f.Queriers, f.Importers, f.BatchSize, f.SearchLimit)
		case f.Node < 0 || f.Sidecar < 0:
			return bad("faults: node %d, sidecar %d must be ≥ 0", f.Node, f.Sidecar)
		case f.Steady <= 0 || f.Down <= 0 || f.CatchUp <= 0:
			return bad("faults: steady %v, down %v, catch-up %v must be > 0", f.Steady, f.Down, f.CatchUp)
		}
	}
	t := c.Targets
	if t.MaxNDCGGap < 0 || t.MinPeerSpeedup < 0 || t.MaxCosineGap < 0 || t.MaxFailedReads < 0 || t.MaxMissing < 0 || t.MaxRecovery <= 0 {
		return bad("targets %+v", t)
	}
	return nil
}

// readConsistency is the consistencyLevel of a search: none without
// replication (Weaviate's GraphQL has the argument only for replicated
// classes).
func (c Config) readConsistency() string {
	if c.Replicas <= 1 {
		return ""
	}
	return c.Consistency
}

// collection is the class name the run uses.
func (c Config) collection() string {
	if c.Collection != "" {
		return c.Collection
	}
	var b strings.Builder
	b.WriteString("Bench")
	up := true
	for _, r := range filepath.Base(filepath.Clean(c.Dataset)) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if up {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	return b.String()
}

// validClass reports whether s is a usable Weaviate class name.
func validClass(s string) bool {
	for i, r := range s {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
		if !ok || i == 0 && !unicode.IsUpper(r) {
			return false
		}
	}
	return s != ""
}

// fusion is how a hybrid search fuses: Weaviate's fusionType and α, and
// the bench hybrid setup it reproduces.
type fusion struct {
	Setup  hybrid.Setup `json:"setup"`
	Type   string       `json:"weaviate_fusion"`
	Alpha  float64      `json:"weaviate_alpha"`
	Rerank hybrid.Setup `json:"rerank_setup"`
}

// fusedSetup looks the setup named up in bench hybrid's matrix and maps it
// to Weaviate's fusion: weighted-α is relativeScoreFusion at α (the same
// formula: (1−α)·minmax(bm25) + α·minmax(vector)); relative is
// relativeScoreFusion at 0.5 (half the same sum, the same order); rrf is
// rankedFusion at 0.5 (Weaviate's is 1/(60 + rank − 1) per list, weighted,
// so the order can differ slightly from the engine's 1/(60 + rank)).
func fusedSetup(name, profile string) (fusion, error) {
	all := hybrid.Matrix([]string{profile})
	var f fusion
	for _, s := range all {
		switch s.Name {
		case name:
			f.Setup = s
		case name + "+" + profile:
			f.Rerank = s
		}
	}
	if f.Setup.Name == "" || !f.Setup.Dense || f.Setup.Alpha == 1 || f.Setup.Rerank != "" || f.Setup.MMRLambda != 0 || f.Rerank.Name == "" {
		return f, fmt.Errorf("%w: cluster: fused setup %q: want a plain fusion of bench hybrid (rrf, weighted-0.3/0.5/0.7, relative)", bench.ErrBadOption, name)
	}
	switch f.Setup.Fusion {
	case engine.FusionWeighted:
		f.Type, f.Alpha = "relativeScoreFusion", f.Setup.Alpha
	case engine.FusionRelative:
		f.Type, f.Alpha = "relativeScoreFusion", 0.5
	default:
		f.Type, f.Alpha = "rankedFusion", 0.5
	}
	return f, nil
}
