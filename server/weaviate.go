package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/simd"
)

// Weaviate's own inference protocols.
//
// Weaviate's text2vec-transformers and reranker-transformers modules call
// an inference container over a small HTTP protocol of their own; the
// server speaks it under WeaviateConfig.Prefix (default /weaviate), so
// that TRANSFORMERS_INFERENCE_API=http://host:port/weaviate and
// RERANKER_INFERENCE_API=http://host:port/weaviate replace the Python
// containers. What the modules send and read is v1.35.2's
// (usecases/modulecomponents/clients/transformers/transformers.go,
// modules/reranker-transformers/clients/ranker.go):
//
//	POST {prefix}/vectors, {prefix}/vectors/  {"text", "config": {"pooling_strategy",
//	        "task_type", "dimensions"}} (plus "dims", "vector", "error", which the
//	        module marshals empty) -> {"text", "vector", "dim", "dims"}. One text a
//	        request: the module sends each object alone (its VectorizeBatch is
//	        sequential); concurrent requests merge in the embedding batcher.
//	        task_type "query" embeds with the embedder's query prompt, "passage" (and
//	        none) with its document prompt (models.Input; all-MiniLM-L6-v2 has
//	        neither); pooling_strategy must be the embedder's ("masked_mean" is mean,
//	        "cls" CLS; none: the embedder's), else 400; dimensions cuts the vector
//	        to its leading dimensions (more than the embedder has is 400). Vectors
//	        are unit length, after the cut, as the sentence-transformers container
//	        gives them. A text longer than the window is cut by the model, token-exact (as sentence-transformers cuts).
//	POST {prefix}/rerank  {"query", "documents", "property"} -> {"query", "scores":
//	        [{"document", "score"}]} in the documents' order (the module places
//	        scores by position and sends at most 32 documents a request, several
//	        requests at once); without "documents", {"query", "property"} scores
//	        the one pair -> {"query", "property", "score"}. Scores are the
//	        default reranker's sigmoid, as sentence-transformers' CrossEncoder
//	        gives them. A call the model cannot answer within
//	        WeaviateConfig.RerankBudget (queue wait included) is answered
//	        degraded, not failed: the documents scored −1, −2, … in the order
//	        sent, so the search keeps Weaviate's order for them.
//	GET  {prefix}/meta    the served models (the module passes it on as is to
//	        Weaviate's /v1/meta)
//	GET  {prefix}/.well-known/ready  204 once an embedder or a reranker is loaded
//	        and the server is not draining, else 503 (the modules wait at
//	        start-up for a status under 300)
//	GET  {prefix}/.well-known/live   204
//
// Errors are {"error": "..."} (apiWeaviate), the text the modules put in
// their own error ("fail with status 400: ..."). Both modules share the
// one prefix and its /meta and readiness; the embedding and reranking go
// through the same batchers, caches, limits and metrics as every other
// route.

// weaviateKeyHint ends a 401 on the Weaviate routes.
const weaviateKeyHint = "; Weaviate's text2vec-transformers and reranker-transformers send no key: " +
	"set weaviate.public (serve --weaviate-public) to serve these routes without one"

// weaviateSegment is one segment of a WeaviateConfig.Prefix.
var weaviateSegment = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

func (w WeaviateConfig) validate(timeout Duration) error {
	if w.RerankBudget < 0 || w.RerankBudget > 0 && w.RerankBudget >= timeout {
		return fmt.Errorf("weaviate.rerank_budget %v must be below request_timeout %v, or 0 (nine tenths of it)", time.Duration(w.RerankBudget), time.Duration(timeout))
	}
	p := w.Prefix
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("weaviate.prefix %q must start with \"/\" and not end with one (e.g. \"/weaviate\"; \"\" turns the routes off)", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if !weaviateSegment.MatchString(seg) || seg == "." || seg == ".." {
			return fmt.Errorf("weaviate.prefix %q: segment %q must be letters, digits and . _ ~ - only", p, seg)
		}
	}
	return nil
}

// weaviateRoutes are the Weaviate protocol routes (none without a prefix).
func (s *Server) weaviateRoutes() []route {
	p := s.cfg.Weaviate.Prefix
	if p == "" {
		return nil
	}
	auth := !s.cfg.Weaviate.Public
	vectors := serveEndpoint(s, s.weaviateVectorsEndpoint())
	return []route{
		{"POST", p + "/vectors", p + "/vectors", auth, vectors},
		{"POST", p + "/vectors/", p + "/vectors", auth, vectors},
		{"POST", p + "/rerank", p + "/rerank", auth, serveEndpoint(s, s.weaviateRerankEndpoint())},
		{"GET", p + "/meta", p + "/meta", auth, http.HandlerFunc(s.handleWeaviateMeta)},
		{"GET", p + "/.well-known/ready", p + "/.well-known/ready", false, http.HandlerFunc(s.handleWeaviateReady)},
		{"GET", p + "/.well-known/live", p + "/.well-known/live", false, http.HandlerFunc(handleWeaviateLive)},
	}
}

// weaviateVectorRequest is a decoded {prefix}/vectors call.
type weaviateVectorRequest struct {
	Text string
	// Input is the kind of text config.task_type says (query, or document).
	Input models.Input
	// Pooling is the pooling config.pooling_strategy asks for; "" means
	// the embedder's. Strategy is the name as sent, for messages.
	Pooling  models.Pooling
	Strategy string
	// Dimensions cuts the vector to this many leading dimensions when > 0.
	Dimensions int
}

// weaviatePooling maps the module's pooling_strategy names (and the
// models package's own) to a pooling mode.
var weaviatePooling = map[string]models.Pooling{
	"masked_mean": models.PoolingMean, "mean": models.PoolingMean,
	"cls": models.PoolingCLS, "max": models.PoolingMax, "mean_sqrt_len": models.PoolingMeanSqrtLen,
}

// weaviatePoolingName is a pooling mode's name in the module's
// vocabulary.
func weaviatePoolingName(p models.Pooling) string {
	if p == models.PoolingMean {
		return "masked_mean"
	}
	return string(p)
}

// decodeWeaviateVectors decodes the body text2vec-transformers sends.
func decodeWeaviateVectors(body []byte) (weaviateVectorRequest, error) {
	var w struct {
		Text   *string `json:"text"`
		Config *struct {
			PoolingStrategy string `json:"pooling_strategy"`
			TaskType        string `json:"task_type"`
			Dimensions      *int64 `json:"dimensions"`
		} `json:"config"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return weaviateVectorRequest{}, err
	}
	if w.Text == nil {
		return weaviateVectorRequest{}, badRequest("field \"text\" is required")
	}
	r := weaviateVectorRequest{Text: *w.Text, Input: models.InputDocument}
	if c := w.Config; c != nil {
		switch c.TaskType {
		case "", "passage":
		case "query":
			r.Input = models.InputQuery
		default:
			return r, badRequest("field \"config.task_type\" is %q; want \"query\" or \"passage\"", c.TaskType)
		}
		if c.PoolingStrategy != "" {
			p, ok := weaviatePooling[c.PoolingStrategy]
			if !ok {
				return r, badRequest("field \"config.pooling_strategy\" is %q; want \"masked_mean\" or \"cls\" (or max, mean_sqrt_len), the embedder's pooling", c.PoolingStrategy)
			}
			r.Pooling, r.Strategy = p, c.PoolingStrategy
		}
		if d := c.Dimensions; d != nil {
			if *d < 1 || *d > math.MaxInt32 {
				return r, badRequest("field \"config.dimensions\" is %d; want a positive number of dimensions, or none", *d)
			}
			r.Dimensions = int(*d)
		}
	}
	return r, nil
}

// embedderSettings returns the embedder's pooling and prompts, from its
// Capabilities (which its queue and cache pass on). An embedder that
// reports no pooling is taken to pool by mean, what the models package's
// embedders do for a directory that says nothing.
func (s *Server) embedderSettings() models.Embedding {
	em := s.b.Embedder.Capabilities().Embedding
	if em.Pooling == "" {
		em.Pooling = models.PoolingMean
	}
	return em
}

// weaviateVector is the {prefix}/vectors reply: "dim" is what the Python
// containers send, "dims" what the module's struct reads (it uses neither).
type weaviateVector struct {
	Text   string    `json:"text"`
	Vector []float32 `json:"vector"`
	Dim    int       `json:"dim"`
	Dims   int       `json:"dims"`
}

func (s *Server) weaviateVectorsEndpoint() endpoint[weaviateVectorRequest] {
	return endpoint[weaviateVectorRequest]{
		decode: func(_ *http.Request, body []byte) (weaviateVectorRequest, error) { return decodeWeaviateVectors(body) },
		authorize: func(_ *http.Request, req *weaviateVectorRequest) error {
			if s.b.Embedder == nil {
				return notConfigured("embedding model")
			}
			if d := s.b.Embedder.Dim(); req.Dimensions > d {
				return badRequest("field \"config.dimensions\" is %d, more than the %d of embedding model %q; set the collection's dimensions to at most %d, or leave them unset", req.Dimensions, d, s.cfg.EmbedModel, d)
			}
			if req.Pooling == "" {
				return nil
			}
			if em := s.embedderSettings(); req.Pooling != em.Pooling {
				return badRequest("field \"config.pooling_strategy\" is %q, but embedding model %q pools by %s (%q); set the collection's poolingStrategy to %q or leave it unset",
					req.Strategy, s.cfg.EmbedModel, em.Pooling, weaviatePoolingName(em.Pooling), weaviatePoolingName(em.Pooling))
			}
			return nil
		},
		call: func(ctx context.Context, _ *http.Request, req weaviateVectorRequest) (reply, error) {
			// A query or a document: the model adds its prompt for the
			// kind (models.Embedding.Prefix), through the shared queue.
			vecs, _, usage, err := s.embedTexts(ctx, embedRequest{Inputs: []string{req.Text}, Input: req.Input, ModelCut: true})
			if err != nil {
				return reply{}, err
			}
			if len(vecs) != 1 {
				return reply{}, fmt.Errorf("%w: embedder returned %d vectors for 1 text", ErrBackend, len(vecs))
			}
			v := vecs[0]
			if req.Dimensions > 0 && req.Dimensions < len(v) {
				v = v[:req.Dimensions]
			}
			simd.L2Normalize(v)
			return reply{body: weaviateVector{Text: req.Text, Vector: v, Dim: len(v), Dims: len(v)}, tokens: usage.Tokens}, nil
		},
		admit: true, timed: true,
	}
}

// weaviateRankRequest is a decoded {prefix}/rerank call.
type weaviateRankRequest struct {
	rerankRequest
	// Property is the legacy single pair's text (no "documents").
	Property string
	Single   bool
}

// decodeWeaviateRerank decodes the body reranker-transformers sends:
// {query, documents, property} (property unused when documents are
// given), or the single pair {query, property}.
func decodeWeaviateRerank(body []byte, lim limits) (weaviateRankRequest, error) {
	var w struct {
		Query     *string  `json:"query"`
		Documents []string `json:"documents"`
		Property  *string  `json:"property"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return weaviateRankRequest{}, err
	}
	no := false
	r := weaviateRankRequest{rerankRequest: rerankRequest{ReturnDocuments: &no}}
	switch {
	case w.Query == nil:
		return r, badRequest("field \"query\" is required")
	case strings.TrimSpace(*w.Query) == "":
		return r, badRequest("field \"query\" must not be empty")
	}
	r.Query = *w.Query
	switch {
	case w.Documents != nil:
		r.Docs = w.Documents
	case w.Property != nil:
		r.Single, r.Property, r.Docs = true, *w.Property, []string{*w.Property}
	default:
		return r, badRequest("field \"documents\" is required (or \"property\", for one pair)")
	}
	if len(r.Docs) == 0 {
		return r, badRequest("field \"documents\" must be a non-empty array")
	}
	if len(r.Docs) > lim.maxDocuments {
		return r, tooLarge("%d documents in one request; the limit is %d", len(r.Docs), lim.maxDocuments)
	}
	return r, nil
}

type weaviateScore struct {
	Document string  `json:"document"`
	Score    float64 `json:"score"`
}

// weaviateRank is the {prefix}/rerank reply: Scores for documents, or
// Property and Score for the single pair.
type weaviateRank struct {
	Query    string          `json:"query"`
	Scores   []weaviateScore `json:"scores,omitempty"`
	Property *string         `json:"property,omitempty"`
	Score    *float64        `json:"score,omitempty"`
}

func (s *Server) weaviateRerankEndpoint() endpoint[weaviateRankRequest] {
	rerank := s.rerankEndpoint()
	return endpoint[weaviateRankRequest]{
		decode: func(_ *http.Request, body []byte) (weaviateRankRequest, error) {
			return decodeWeaviateRerank(body, s.lim)
		},
		authorize: func(r *http.Request, req *weaviateRankRequest) error {
			return rerank.authorize(r, &req.rerankRequest)
		},
		call: func(ctx context.Context, r *http.Request, req weaviateRankRequest) (reply, error) {
			scores, tokens, err := s.weaviateScores(ctx, r, req)
			if err != nil {
				return reply{}, err
			}
			body := weaviateRank{Query: req.Query}
			if req.Single {
				body.Property, body.Score = &req.Property, &scores[0].Score
			} else {
				body.Scores = scores
			}
			return reply{body: body, tokens: tokens}, nil
		},
		admit: true, timed: true,
	}
}

// weaviateScores scores req's documents in their order, within the
// route's rerank budget (WeaviateConfig.RerankBudget). When the budget
// runs out first, and the request's own deadline has not, the documents
// are answered in the order sent, scored −1, −2, … (degradedScores).
func (s *Server) weaviateScores(ctx context.Context, r *http.Request, req weaviateRankRequest) ([]weaviateScore, int, error) {
	bctx, cancel := context.WithTimeout(ctx, s.cfg.Weaviate.rerankBudget(s.cfg.RequestTimeout))
	defer cancel()
	out, err := s.rerankCall(bctx, r, req.rerankRequest)
	if err != nil {
		if bctx.Err() == nil || ctx.Err() != nil {
			return nil, 0, err
		}
		s.metrics.weaviateDegraded.WithLabelValues(req.served.cfg.Name).Inc()
		return degradedScores(req.Docs), 0, nil
	}
	res, ok := out.body.(rerankResponse)
	if !ok || len(res.Results) != len(req.Docs) {
		return nil, 0, errors.New("server: rerank answered in an unexpected shape") // a bug: 500
	}
	// Cohere's results are by score; the module wants the documents'
	// order.
	scores := make([]weaviateScore, len(req.Docs))
	for _, x := range res.Results {
		scores[x.Index] = weaviateScore{Document: req.Docs[x.Index], Score: x.RelevanceScore}
	}
	return scores, out.tokens, nil
}

// degradedScores are the scores of documents the budget left unscored:
// −1, −2, … in the order sent. Weaviate sorts a reranked search's hits by
// score, so these keep its own order, below every scored hit (a model
// score is a sigmoid, in (0, 1)); a client sees the fallback in the sign.
func degradedScores(docs []string) []weaviateScore {
	out := make([]weaviateScore, len(docs))
	for i, d := range docs {
		out[i] = weaviateScore{Document: d, Score: -float64(i + 1)}
	}
	return out
}

// weaviateMeta is {prefix}/meta: the served models.
type weaviateMeta struct {
	Server   string              `json:"server"`
	Provider string              `json:"provider"`
	Embedder *weaviateEmbedMeta  `json:"embedder,omitempty"`
	Reranker *weaviateRerankMeta `json:"reranker,omitempty"`
}

type weaviateEmbedMeta struct {
	Model string   `json:"model"`
	Names []string `json:"names"`
	Dim   int      `json:"dim"`
	// PoolingStrategy is the pooling in the module's words (masked_mean,
	// cls), what a collection's poolingStrategy must be or leave unset.
	PoolingStrategy string `json:"pooling_strategy"`
	QueryPrefix     string `json:"query_prefix"`
	DocumentPrefix  string `json:"document_prefix"`
	MaxInputTokens  int    `json:"max_input_tokens"`
}

type weaviateRerankMeta struct {
	Model         string   `json:"model"`
	Names         []string `json:"names"`
	MaxPairTokens int      `json:"max_pair_tokens"`
}

func (s *Server) handleWeaviateMeta(w http.ResponseWriter, r *http.Request) {
	m := weaviateMeta{Server: "hybrank", Provider: s.cfg.Provider}
	if s.b.Embedder != nil {
		em := s.embedderSettings()
		m.Embedder = &weaviateEmbedMeta{Model: s.cfg.EmbedModel, Names: s.cfg.EmbedNames(), Dim: s.b.Embedder.Dim(),
			PoolingStrategy: weaviatePoolingName(em.Pooling), QueryPrefix: em.QueryPrefix, DocumentPrefix: em.DocumentPrefix,
			MaxInputTokens: s.cfg.MaxInputTokens}
	}
	if d := s.rerankers[0]; d.r != nil {
		m.Reranker = &weaviateRerankMeta{Model: d.cfg.Name, Names: d.cfg.Names(), MaxPairTokens: d.window}
	}
	writeJSON(w, r, http.StatusOK, m)
}

// handleWeaviateReady answers the modules' start-up check.
func (s *Server) handleWeaviateReady(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.draining.Load():
		writeError(w, r, ErrClosed)
	case s.b.Embedder == nil && s.rerankers[0].r == nil:
		writeError(w, r, notConfigured("embedding or reranking model"))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func handleWeaviateLive(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
