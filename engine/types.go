package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hybrank/hybrank/models"
)

// MaxIDLen is the longest document ID the engine accepts, in bytes.
const MaxIDLen = 1024

// Span is a half-open range [Start, End) inside a document's Source, in
// whatever unit the caller chose (lines for code and prose files, bytes,
// pages). Two spans of the same Source are adjacent when one's End equals
// the other's Start, and overlap when they share a unit. The zero Span means
// "no position". It is models.Span, the one range type: the same type
// locates a reranked hit's best window (Provenance.RerankSpan, bytes).
type Span = models.Span

// Document is the unit the engine indexes and returns.
//
// A Document passed to Batch.Add is copied (its Metadata map and Links slice
// included); the caller may reuse it afterwards. Documents returned in a
// Result are copies too.
type Document struct {
	// ID identifies the document within its Tenant: the same ID in two
	// tenants is two documents, and adding a document replaces only the
	// one with the same Tenant and ID.
	ID string `json:"id"`
	// Title is indexed together with Text (Title first).
	Title string `json:"title,omitempty"`
	// Text is the body that is indexed, embedded, reranked and packed.
	Text string `json:"text"`
	// Tenant scopes the document: a search only ever sees documents of
	// the request's tenant. The empty tenant is a tenant like any other.
	Tenant string `json:"tenant,omitempty"`
	// Metadata is matched by Request.Filter (string equality). Keys are
	// non-empty and hold no NUL byte.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Source names where the text came from (a file path, a URL). Passages
	// of the same Source with adjacent or overlapping Spans are coalesced
	// when packing.
	Source string `json:"source,omitempty"`
	// Span locates Text inside Source.
	Span Span `json:"span"`
	// Links are IDs of related documents of the same Tenant, followed by
	// query expansion. Links to unknown IDs are allowed and ignored.
	Links []string `json:"links,omitempty"`
}

// Validate reports why d cannot be indexed, wrapping ErrInvalidDocument.
func (d *Document) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: document %q: %s", ErrInvalidDocument, d.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case d.ID == "":
		return fmt.Errorf("%w: empty ID", ErrInvalidDocument)
	case len(d.ID) > MaxIDLen:
		return bad("ID longer than %d bytes", MaxIDLen)
	case !utf8.ValidString(d.ID):
		return bad("ID is not valid UTF-8")
	case !utf8.ValidString(d.Title) || !utf8.ValidString(d.Text):
		return bad("title or text is not valid UTF-8")
	case !utf8.ValidString(d.Tenant) || !utf8.ValidString(d.Source):
		return bad("tenant or source is not valid UTF-8")
	case d.Span.Start < 0 || d.Span.End < d.Span.Start:
		return bad("span [%d,%d) is not a range", d.Span.Start, d.Span.End)
	}
	for k, v := range d.Metadata {
		if k == "" {
			return bad("empty metadata key")
		}
		if strings.ContainsRune(k, 0) {
			// Refused since the lexical index keyed its filters "key
			// NUL value"; the filter index no longer needs it, but
			// accepting such keys would widen the API for no caller.
			return bad("metadata key %q contains a NUL byte", k)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return bad("metadata %q is not valid UTF-8", k)
		}
	}
	for _, l := range d.Links {
		if l == "" || len(l) > MaxIDLen {
			return bad("link %q is not a valid ID", l)
		}
	}
	return nil
}

// clone returns a deep copy of d.
func (d *Document) clone() Document {
	c := *d
	if d.Metadata != nil {
		c.Metadata = make(map[string]string, len(d.Metadata))
		for k, v := range d.Metadata {
			c.Metadata[k] = v
		}
	}
	if d.Links != nil {
		c.Links = append([]string(nil), d.Links...)
	}
	return c
}

// matches reports whether d belongs to tenant and carries every key/value of
// filter.
func (d *Document) matches(tenant string, filter map[string]string) bool {
	if d.Tenant != tenant {
		return false
	}
	for k, v := range filter {
		if got, ok := d.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Fusion names how the BM25 and dense candidate lists are combined.
type Fusion string

const (
	// FusionRRF is reciprocal rank fusion: Σ 1/(k + rank), rank from 1.
	FusionRRF Fusion = "rrf"
	// FusionWeighted is a convex combination of min-max normalised scores:
	// (1−α)·bm25' + α·dense'. α = 0 is BM25 only, α = 1 dense only.
	FusionWeighted Fusion = "weighted"
	// FusionRelative is Weaviate's relativeScoreFusion: the plain sum of the
	// min-max normalised scores, bm25' + dense' (both lists weigh the same).
	FusionRelative Fusion = "relative"
)

// Expansion asks for documents linked from the best fused candidates.
type Expansion struct {
	// Hops is how many link steps to follow; 0 disables expansion.
	Hops int `json:"hops"`
	// Decay multiplies the parent's fused score at every hop: a document
	// reached at hop h from a seed with score s scores s·Decay^h. 0 means
	// DefaultDecay.
	Decay float64 `json:"decay"`
	// Seeds is how many of the best fused candidates expansion starts from;
	// 0 means the request's TopK.
	Seeds int `json:"seeds"`
}

// DefaultDecay is the per-hop decay used when Expansion.Decay is 0.
const DefaultDecay = 0.5

// Request is one search. The zero value of every optional field means "use
// the engine's configured default"; see Config.
//
// Its JSON form is the body of the server's POST /search: the field tags
// below, with Budget carried as "budget_ms" (see MarshalJSON).
type Request struct {
	// Query is the user's text; it must contain at least one non-space
	// character.
	Query string `json:"query"`
	// Tenant restricts the search to one tenant's documents (the empty
	// string is the default tenant, not "all tenants").
	Tenant string `json:"tenant,omitempty"`
	// Filter keeps documents whose Metadata has every key with exactly the
	// given value. It is applied inside the retrievers, before top-k.
	Filter map[string]string `json:"filter,omitempty"`
	// TopK is how many hits to return (0 = Config.TopK).
	TopK int `json:"top_k,omitempty"`
	// Candidates is how many documents each retriever returns before
	// fusion (0 = Config.Candidates).
	Candidates int `json:"candidates,omitempty"`
	// Fusion is the fusion method ("" = Config.Fusion).
	Fusion Fusion `json:"fusion,omitempty"`
	// RRFK is the k of reciprocal rank fusion (0 = Config.RRFK).
	RRFK float64 `json:"rrf_k,omitempty"`
	// Alpha weighs dense against BM25 in FusionWeighted, in [0, 1]
	// (nil = Config.Alpha). Use engine.Float to set it inline.
	Alpha *float64 `json:"alpha,omitempty"`
	// ScoreThreshold drops fused candidates whose fused score is below it
	// (0 = keep all), documents reached by Expand included; a document it
	// dropped is not brought back by a link. Fused scores are on the scale
	// of the fusion method.
	ScoreThreshold float64 `json:"score_threshold,omitempty"`
	// MMRLambda enables maximal marginal relevance when in (0, 1]: 1 is pure
	// relevance, smaller values favour diversity. 0 disables MMR.
	MMRLambda float64 `json:"mmr_lambda,omitempty"`
	// Expand follows Links from the best candidates.
	Expand Expansion `json:"expand"`
	// Rerank is the reranker profile name ("" = no reranking).
	Rerank string `json:"rerank,omitempty"`
	// Cascade, with First set, reranks in two stages: every candidate
	// with the cheap profile First, then the best Keep of them (by the
	// first stage's score) with Rerank. Both stages are sized by the
	// engine's cost model against the same deadline: the first stops in
	// time to leave the second its predicted cost. Zero: one stage.
	Cascade Cascade `json:"cascade,omitzero"`
	// Chunking, when enabled (Stride > 0), reranks each candidate in
	// overlapping windows of the reranker's tokens instead of truncating
	// it to the window: its score is the windows' aggregate and
	// Provenance.RerankSpan names its best window (see models.Chunking).
	// It applies to every rerank stage (a cascade's both) and needs a
	// reranker whose Capabilities say Chunking (models/ort's does);
	// with another one the stage truncates and Result.Fallbacks says so.
	// The zero value truncates, as without it.
	Chunking models.Chunking `json:"chunking,omitzero"`
	// Budget bounds the wall time of the search (0 = only ctx's deadline):
	// dense retrieval and reranking stop at min(ctx deadline, start +
	// Budget) and the result is marked Degraded, while BM25 retrieval
	// always completes unless ctx itself ends (see the package doc). In JSON
	// it is "budget_ms", whole milliseconds.
	Budget time.Duration `json:"-"`
	// TokenBudget bounds the tokens of Result.Passages (0 = no packing
	// limit: every hit becomes a passage).
	TokenBudget int `json:"token_budget,omitempty"`
	// Reserve is held back from TokenBudget for the caller's prompt.
	Reserve int `json:"reserve,omitempty"`
}

// requestFields is Request without its methods, so the JSON methods can
// reuse the tagged fields and add budget_ms beside them.
type requestFields Request

// maxBudgetMS is the largest budget_ms that fits a time.Duration.
const maxBudgetMS = math.MaxInt64 / int64(time.Millisecond)

// MarshalJSON writes r with Budget as "budget_ms" (omitted when zero),
// rounded up to whole milliseconds so that a positive budget stays one.
func (r Request) MarshalJSON() ([]byte, error) {
	ms := int64(r.Budget / time.Millisecond)
	if r.Budget%time.Millisecond > 0 {
		ms++
	}
	return json.Marshal(struct {
		requestFields
		BudgetMS int64 `json:"budget_ms,omitempty"`
	}{requestFields(r), ms})
}

// UnmarshalJSON reads r with Budget from "budget_ms", an integer number of
// milliseconds. A budget too large for a time.Duration is an error; a
// negative one is left for Validate to reject. The tagged fields and
// budget_ms are read in two passes so that a type error names the field as
// the client wrote it.
func (r *Request) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*requestFields)(r)); err != nil {
		return err
	}
	var w struct {
		BudgetMS int64 `json:"budget_ms"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.BudgetMS > maxBudgetMS || w.BudgetMS < -maxBudgetMS {
		return fmt.Errorf("budget_ms %d is outside [0, %d]", w.BudgetMS, maxBudgetMS)
	}
	r.Budget = time.Duration(w.BudgetMS) * time.Millisecond
	return nil
}

// Float returns a pointer to v, for Request.Alpha.
func Float(v float64) *float64 { return &v }

// Limits on request fields; larger values are rejected as invalid.
const (
	MaxTopK       = 10000
	MaxCandidates = 10000
	MaxHops       = 8
)

// Cascade is a two-stage rerank (Request.Cascade).
type Cascade struct {
	// First is the cheap profile that scores every candidate.
	First string `json:"first,omitempty"`
	// Keep is how many of its best the Request's Rerank profile rescores.
	Keep int `json:"keep,omitempty"`
}

// Validate reports why r cannot be run, wrapping ErrInvalidRequest. It checks
// the request alone; whether the Rerank profile exists is decided by the
// engine (an unknown profile is a fallback, not an error).
func (r *Request) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case strings.TrimSpace(r.Query) == "":
		return bad("empty query")
	case !utf8.ValidString(r.Query):
		return bad("query is not valid UTF-8")
	case r.TopK < 0 || r.TopK > MaxTopK:
		return bad("top_k %d outside [0, %d]", r.TopK, MaxTopK)
	case r.Candidates < 0 || r.Candidates > MaxCandidates:
		return bad("candidates %d outside [0, %d]", r.Candidates, MaxCandidates)
	case r.Fusion != "" && r.Fusion != FusionRRF && r.Fusion != FusionWeighted && r.Fusion != FusionRelative:
		return bad("unknown fusion %q", r.Fusion)
	case !finite(r.RRFK) || r.RRFK < 0:
		return bad("rrf_k %v must be a finite number ≥ 0", r.RRFK)
	case r.Alpha != nil && !(*r.Alpha >= 0 && *r.Alpha <= 1):
		return bad("alpha %v outside [0, 1]", *r.Alpha)
	case !finite(r.ScoreThreshold):
		return bad("score_threshold is not finite")
	case !(r.MMRLambda >= 0 && r.MMRLambda <= 1):
		return bad("mmr_lambda %v outside [0, 1]", r.MMRLambda)
	case r.Expand.Hops < 0 || r.Expand.Hops > MaxHops:
		return bad("expand.hops %d outside [0, %d]", r.Expand.Hops, MaxHops)
	case !(r.Expand.Decay >= 0 && r.Expand.Decay <= 1):
		return bad("expand.decay %v outside [0, 1]", r.Expand.Decay)
	case r.Expand.Seeds < 0 || r.Expand.Seeds > MaxCandidates:
		return bad("expand.seeds %d outside [0, %d]", r.Expand.Seeds, MaxCandidates)
	case r.Budget < 0:
		return bad("negative budget")
	case r.TokenBudget < 0 || r.Reserve < 0:
		return bad("negative token budget or reserve")
	case r.TokenBudget > 0 && r.Reserve >= r.TokenBudget:
		return bad("reserve %d leaves nothing of token budget %d", r.Reserve, r.TokenBudget)
	case r.Cascade != Cascade{} && (r.Cascade.First == "" || r.Rerank == ""):
		return bad("cascade needs cascade.first and rerank (the second stage)")
	case r.Cascade.First != "" && r.Cascade.First == r.Rerank:
		return bad("cascade.first %q is also the second stage", r.Cascade.First)
	case r.Cascade.First != "" && (r.Cascade.Keep < 1 || r.Cascade.Keep > MaxCandidates):
		return bad("cascade.keep %d outside [1, %d]", r.Cascade.Keep, MaxCandidates)
	case r.Chunking.Enabled() && r.Rerank == "":
		return bad("chunking applies to the rerank stage: set rerank")
	}
	if err := r.Chunking.Validate(); err != nil {
		return bad("%v", err)
	}
	for k := range r.Filter {
		if k == "" {
			return bad("empty filter key")
		}
		if strings.ContainsRune(k, 0) {
			return bad("filter key %q contains a NUL byte", k)
		}
	}
	return nil
}

// OriginKind says how a hit entered the candidate set.
type OriginKind string

const (
	// OriginRetrieved: returned by BM25, dense retrieval or both.
	OriginRetrieved OriginKind = "retrieved"
	// OriginExpanded: reached by following Links from another candidate.
	OriginExpanded OriginKind = "expanded"
)

// Origin is where a hit came from.
type Origin struct {
	Kind OriginKind `json:"kind"`
	// From is the candidate whose Links led here (expanded hits only).
	From string `json:"from,omitempty"`
	// Hop is the link distance from a retrieved seed (expanded hits only).
	Hop int `json:"hop,omitempty"`
}

// Provenance explains a hit's score at every stage. Ranks are 1-based; a
// rank of 0 means the hit was not in that stage's list.
type Provenance struct {
	BM25Score  float64 `json:"bm25_score"`
	BM25Rank   int     `json:"bm25_rank"`
	DenseScore float64 `json:"dense_score"`
	DenseRank  int     `json:"dense_rank"`
	// FusedScore is the fusion score (decayed parent score for expanded
	// hits).
	FusedScore float64 `json:"fused_score"`
	// FusedRank is the position in the fused (and expanded) candidate list.
	FusedRank int `json:"fused_rank"`
	// Reranked says whether the cross-encoder scored this hit;
	// RerankScore is meaningful only then.
	Reranked    bool    `json:"reranked"`
	RerankScore float64 `json:"rerank_score"`
	// RerankSpan, when the request chunked (Request.Chunking) and the
	// reranker scored this hit, is the best window's byte range in
	// Document.Text (the reranker reads Title + " " + Text; a window that
	// starts in the title starts at 0 here).
	RerankSpan *Span `json:"rerank_span,omitempty"`
	// FirstStage says whether a cascade's first stage (Cascade.First)
	// scored this hit, with FirstStageScore; RerankScore is then the
	// second stage's, when it reached the hit.
	FirstStage      bool    `json:"first_stage,omitempty"`
	FirstStageScore float64 `json:"first_stage_score,omitempty"`
	// FinalRank is the hit's position in Result.Hits (1-based).
	FinalRank int    `json:"final_rank"`
	Origin    Origin `json:"origin"`
}

// Hit is one result document with its score and provenance.
type Hit struct {
	Document Document `json:"document"`
	// Score is the score that ordered the hit: the rerank score for
	// reranked hits, the fused score otherwise. Reranked hits always come
	// before unreranked ones, whatever the scores (see package doc).
	Score      float64    `json:"score"`
	Provenance Provenance `json:"provenance"`
}

// PassagePart is one hit that contributed to a passage.
type PassagePart struct {
	ID        string `json:"id"`
	Span      Span   `json:"span"`
	FinalRank int    `json:"final_rank"`
}

// Passage is a packed piece of context: one hit, or several hits of the same
// Source whose spans touch or overlap, coalesced.
type Passage struct {
	Source string        `json:"source,omitempty"`
	Span   Span          `json:"span"`
	Text   string        `json:"text"`
	Tokens int           `json:"tokens"`
	Score  float64       `json:"score"`
	Parts  []PassagePart `json:"parts"`
}

// FallbackCode names a degradation the engine chose instead of failing.
type FallbackCode string

const (
	// FallbackNoEmbedder: no embedder attached; BM25 only.
	FallbackNoEmbedder FallbackCode = "no_embedder"
	// FallbackNoVectors: the index holds no vectors; BM25 only.
	FallbackNoVectors FallbackCode = "no_vectors"
	// FallbackEmbedError: embedding the query failed; BM25 only.
	FallbackEmbedError FallbackCode = "embed_error"
	// FallbackDenseError: dense search failed; BM25 only.
	FallbackDenseError FallbackCode = "dense_error"
	// FallbackRetrievalBudget: the latency budget ran out before dense
	// retrieval (the query embedding or the vector search) finished; BM25
	// only (Result.Degraded is set too).
	FallbackRetrievalBudget FallbackCode = "retrieval_budget"
	// FallbackRerankUnknown: no reranker with the requested profile name;
	// fused order.
	FallbackRerankUnknown FallbackCode = "rerank_unknown_profile"
	// FallbackRerankError: the reranker failed; fused order.
	FallbackRerankError FallbackCode = "rerank_error"
	// FallbackRerankBudget: no time was left to rerank anything; fused
	// order (Result.Degraded is set too).
	FallbackRerankBudget FallbackCode = "rerank_budget"
	// FallbackMMRBudget: the latency budget ran out during MMR; the
	// places it had not chosen yet hold the remaining candidates in final
	// order (Result.Degraded is set too).
	FallbackMMRBudget FallbackCode = "mmr_budget"
	// FallbackNoChunking: the request asked for chunking but the reranker
	// does not score in windows (Capabilities Chunking); candidates were
	// truncated to its window.
	FallbackNoChunking FallbackCode = "chunking_unsupported"
)

// Fallback records one degradation with a human-readable detail.
type Fallback struct {
	Code   FallbackCode `json:"code"`
	Detail string       `json:"detail,omitempty"`
}

// Timings are per-stage wall times of one search. In JSON each is a number
// of milliseconds (fractional), the unit of the server's API; see
// MarshalJSON.
type Timings struct {
	Analysis  time.Duration `json:"analysis"`
	BM25      time.Duration `json:"bm25"`
	Dense     time.Duration `json:"dense"` // query embedding included
	Fusion    time.Duration `json:"fusion"`
	Expansion time.Duration `json:"expansion"`
	MMR       time.Duration `json:"mmr"`
	Rerank    time.Duration `json:"rerank"`
	Packing   time.Duration `json:"packing"`
	Total     time.Duration `json:"total"`
}

// timingsMS is Timings as JSON carries it: milliseconds.
type timingsMS struct {
	Analysis  float64 `json:"analysis"`
	BM25      float64 `json:"bm25"`
	Dense     float64 `json:"dense"`
	Fusion    float64 `json:"fusion"`
	Expansion float64 `json:"expansion"`
	MMR       float64 `json:"mmr"`
	Rerank    float64 `json:"rerank"`
	Packing   float64 `json:"packing"`
	Total     float64 `json:"total"`
}

// fields lists t's durations and ms's fields in the same order, so the
// two directions of the conversion cannot disagree.
func (t *Timings) fields(ms *timingsMS) ([]*time.Duration, []*float64) {
	return []*time.Duration{&t.Analysis, &t.BM25, &t.Dense, &t.Fusion, &t.Expansion, &t.MMR, &t.Rerank, &t.Packing, &t.Total},
		[]*float64{&ms.Analysis, &ms.BM25, &ms.Dense, &ms.Fusion, &ms.Expansion, &ms.MMR, &ms.Rerank, &ms.Packing, &ms.Total}
}

// MarshalJSON writes every stage as fractional milliseconds.
func (t Timings) MarshalJSON() ([]byte, error) {
	var ms timingsMS
	ds, fs := t.fields(&ms)
	for i, d := range ds {
		*fs[i] = float64(*d) / float64(time.Millisecond)
	}
	return json.Marshal(ms)
}

// UnmarshalJSON reads stages written by MarshalJSON (milliseconds, rounded
// to the nanosecond).
func (t *Timings) UnmarshalJSON(b []byte) error {
	var ms timingsMS
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	ds, fs := t.fields(&ms)
	for i, f := range fs {
		*ds[i] = time.Duration(math.Round(*f * float64(time.Millisecond)))
	}
	return nil
}

// Result is the answer to one Search. Its JSON form is the server's
// /search response.
type Result struct {
	// Hits in final order, at most TopK.
	Hits []Hit `json:"hits"`
	// Passages packed greedily from Hits into TokenBudget − Reserve.
	Passages []Passage `json:"passages"`
	// Tokens is the token count of all Passages.
	Tokens int `json:"tokens"`
	// Candidates is the size of the fused candidate list (after threshold
	// and expansion).
	Candidates int `json:"candidates"`
	// Reranked is how many candidates the reranker scored (in fused order;
	// with a cascade, the second stage, among the first stage's best).
	Reranked int `json:"reranked"`
	// FirstStage is how many candidates a cascade's first stage scored.
	FirstStage int `json:"first_stage,omitempty"`
	// Degraded is set when the latency budget (or ctx's own deadline,
	// after retrieval) cut the search short: dense retrieval did not
	// finish (BM25 only), reranking stopped before every candidate was
	// scored, or MMR before every place was chosen. Fallbacks say which.
	Degraded  bool       `json:"degraded"`
	Fallbacks []Fallback `json:"fallbacks,omitempty"`
	Timings   Timings    `json:"timings"`
}

// HasFallback reports whether r records a fallback with the given code.
func (r *Result) HasFallback(code FallbackCode) bool {
	for _, f := range r.Fallbacks {
		if f.Code == code {
			return true
		}
	}
	return false
}
