package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("%w: encode response: %w", ErrBackend, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// statusOf maps an error to its HTTP answer.
func statusOf(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusGatewayTimeout, typ: TypeTimeout,
			msg: "the request ran past its deadline (request_timeout) and was abandoned"}
	case errors.Is(err, context.Canceled):
		return &apiError{status: 499, typ: TypeTimeout, msg: "the client went away"}
	case errors.Is(err, ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, typ: TypeOverloaded,
			msg: "server overloaded: queue full, retry later", retryAfter: 1}
	case errors.Is(err, ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, typ: TypeUnavailable, msg: "server is shutting down"}
	case errors.Is(err, ErrForbidden):
		return &apiError{status: http.StatusForbidden, typ: TypeForbidden, msg: err.Error()}
	case errors.Is(err, ErrInvalid):
		return &apiError{status: http.StatusBadRequest, typ: TypeInvalidRequest, msg: err.Error()}
	case errors.Is(err, ErrNotConfigured):
		return &apiError{status: http.StatusServiceUnavailable, typ: TypeUnavailable, msg: err.Error()}
	default:
		return &apiError{status: http.StatusInternalServerError, typ: TypeInternal, msg: err.Error()}
	}
}

func writeError(w http.ResponseWriter, err error) {
	ae := statusOf(err)
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	b, _ := json.Marshal(errorBody{Error: errorDetail{Message: ae.msg, Type: ae.typ}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(b, '\n'))
}

// readBody reads the body up to MaxBodyBytes (413 beyond).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge("request body exceeds %d bytes (max_body_bytes)", s.cfg.MaxBodyBytes)
		}
		return nil, badRequest("read body: %v", err)
	}
	return body, nil
}

// begin admits a request under MaxConcurrentRequests and gives it the
// configured deadline. done must be called when the request ends.
func (s *Server) begin(r *http.Request) (ctx context.Context, done func(), err error) {
	if s.draining.Load() {
		return nil, nil, ErrClosed
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, nil, ErrQueueFull
	}
	s.metrics.inflight.Inc()
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(s.cfg.RequestTimeout))
	return ctx, func() {
		cancel()
		s.metrics.inflight.Dec()
		<-s.slots
	}, nil
}

// timing sets TEI's x-compute-time, x-compute-tokens and x-total-time.
func timing(w http.ResponseWriter, start time.Time, compute time.Duration, tokens int) {
	h := w.Header()
	h.Set("x-compute-time", strconv.FormatInt(compute.Milliseconds(), 10))
	h.Set("x-compute-tokens", strconv.Itoa(tokens))
	h.Set("x-total-time", strconv.FormatInt(time.Since(start).Milliseconds(), 10))
}

func sigmoid(x float32) float64 { return 1 / (1 + math.Exp(-float64(x))) }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func unknownModel(kind, got, want string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: TypeNotFound,
		msg: fmt.Sprintf("unknown %s model %q; this server serves %q", kind, got, want)}
}

// Cohere/Jina rerank response.
type rerankResult struct {
	Index          int         `json:"index"`
	RelevanceScore float64     `json:"relevance_score"`
	Document       *rerankText `json:"document,omitempty"`
}

type rerankText struct {
	Text string `json:"text"`
}

type rerankResponse struct {
	ID      string         `json:"id"`
	Results []rerankResult `json:"results"`
	Meta    rerankMeta     `json:"meta"`
}

type rerankMeta struct {
	BilledUnits struct {
		SearchUnits int `json:"search_units"`
	} `json:"billed_units"`
	Tokens struct {
		InputTokens int `json:"input_tokens"`
	} `json:"tokens"`
}

// TEI rerank response item.
type teiRank struct {
	Index int     `json:"index"`
	Score float64 `json:"score"`
	Text  *string `json:"text,omitempty"`
}

func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := decodeRerank(body, s.lim)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.Model != "" && req.Model != s.cfg.RerankModel {
		writeError(w, unknownModel("rerank", req.Model, s.cfg.RerankModel))
		return
	}
	if s.rerank == nil {
		writeError(w, fmt.Errorf("%w: no reranking model loaded", ErrNotConfigured))
		return
	}
	ctx, done, err := s.begin(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer done()
	pairs := make([]Pair, len(req.Docs))
	for i, d := range req.Docs {
		if req.MaxTokensPerDoc > 0 {
			d = s.truncateTokens(d, req.MaxTokensPerDoc)
		}
		pairs[i] = Pair{Query: req.Query, Doc: d}
	}
	computeStart := time.Now()
	scores, usage, err := s.rerank.Submit(ctx, pairs)
	compute := time.Since(computeStart)
	if err != nil {
		writeError(w, err)
		return
	}
	if usage.Tokens == 0 {
		for _, p := range pairs {
			usage.Tokens += s.pairCost(p)
		}
	}
	s.metrics.tokens.WithLabelValues("rerank").Add(float64(usage.Tokens))
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	if req.TopN > 0 {
		order = order[:req.TopN]
	}
	timing(w, start, compute, usage.Tokens)
	if req.TEI {
		out := make([]teiRank, len(order))
		for k, i := range order {
			out[k] = teiRank{Index: i, Score: float64(scores[i])}
			if !req.RawScores {
				out[k].Score = sigmoid(scores[i])
			}
			if req.ReturnText {
				t := req.Docs[i]
				out[k].Text = &t
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	// return_documents defaults to true on Cohere v1 and Jina, false on v2.
	returnDocs := r.URL.Path != "/v2/rerank"
	if req.ReturnDocuments != nil {
		returnDocs = *req.ReturnDocuments
	}
	resp := rerankResponse{ID: newID(), Results: make([]rerankResult, len(order))}
	for k, i := range order {
		resp.Results[k] = rerankResult{Index: i, RelevanceScore: sigmoid(scores[i])}
		if returnDocs {
			resp.Results[k].Document = &rerankText{Text: req.Docs[i]}
		}
	}
	// Cohere bills one search unit per query per 100 documents.
	resp.Meta.BilledUnits.SearchUnits = (len(req.Docs) + 99) / 100
	resp.Meta.Tokens.InputTokens = usage.Tokens
	writeJSON(w, http.StatusOK, resp)
}

// embedTexts runs an embedding request through the batcher after applying
// truncation rules; it returns vectors the caller may modify.
func (s *Server) embedTexts(ctx context.Context, req embedRequest) ([][]float32, Usage, error) {
	if s.embed == nil {
		return nil, Usage{}, fmt.Errorf("%w: no embedding model loaded", ErrNotConfigured)
	}
	texts, copied := req.Inputs, false
	for i, t := range req.Inputs {
		if n := s.countTokens(t); n > s.cfg.MaxInputTokens {
			if !req.Truncate {
				return nil, Usage{}, tooLarge("input %d has %d tokens, more than max_input_tokens %d; send truncate=true to cut it", i, n, s.cfg.MaxInputTokens)
			}
			if !copied {
				texts, copied = append([]string(nil), texts...), true
			}
			texts[i] = s.truncateTokens(t, s.cfg.MaxInputTokens)
		}
	}
	vecs, usage, err := s.embed.Submit(ctx, texts)
	if err != nil {
		return nil, usage, err
	}
	if usage.Tokens == 0 {
		for _, t := range texts {
			usage.Tokens += s.textCost(t)
		}
	}
	s.metrics.tokens.WithLabelValues("embed").Add(float64(usage.Tokens))
	return vecs, usage, nil
}

func l2normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}

func (s *Server) handleEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := decodeEmbed(body, s.lim)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, done, err := s.begin(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer done()
	computeStart := time.Now()
	vecs, usage, err := s.embedTexts(ctx, req)
	compute := time.Since(computeStart)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.Normalize {
		for _, v := range vecs {
			l2normalize(v)
		}
	}
	timing(w, start, compute, usage.Tokens)
	writeJSON(w, http.StatusOK, vecs)
}

type openAIEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type openAIEmbedResponse struct {
	Object string            `json:"object"`
	Data   []openAIEmbedding `json:"data"`
	Model  string            `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// float32Base64 encodes v as little-endian float32 bytes in base64, the
// OpenAI encoding_format=base64 layout.
func float32Base64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (s *Server) handleOpenAIEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := decodeOpenAIEmbed(body, s.lim)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.Model != "" && req.Model != s.cfg.EmbedModel {
		writeError(w, unknownModel("embedding", req.Model, s.cfg.EmbedModel))
		return
	}
	if s.b.Embedder != nil && req.Dimensions > s.b.Embedder.Dim() {
		writeError(w, badRequest("field \"dimensions\" is %d; model %q has %d", req.Dimensions, s.cfg.EmbedModel, s.b.Embedder.Dim()))
		return
	}
	ctx, done, err := s.begin(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer done()
	computeStart := time.Now()
	vecs, usage, err := s.embedTexts(ctx, req)
	compute := time.Since(computeStart)
	if err != nil {
		writeError(w, err)
		return
	}
	resp := openAIEmbedResponse{Object: "list", Model: s.cfg.EmbedModel, Data: make([]openAIEmbedding, len(vecs))}
	for i, v := range vecs {
		if req.Dimensions > 0 && req.Dimensions < len(v) {
			// Shortened embeddings are the leading dimensions, renormalised
			// (as OpenAI does for its text-embedding-3 models).
			v = v[:req.Dimensions]
			l2normalize(v)
		}
		resp.Data[i] = openAIEmbedding{Object: "embedding", Index: i, Embedding: v}
		if req.Base64 {
			resp.Data[i].Embedding = float32Base64(v)
		}
	}
	resp.Usage.PromptTokens, resp.Usage.TotalTokens = usage.Tokens, usage.Tokens
	timing(w, start, compute, usage.Tokens)
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	var data []model
	if s.b.Scorer != nil {
		data = append(data, model{ID: s.cfg.RerankModel, Object: "model", OwnedBy: "hybrank"})
	}
	if s.b.Embedder != nil {
		data = append(data, model{ID: s.cfg.EmbedModel, Object: "model", OwnedBy: "hybrank"})
	}
	if data == nil {
		data = []model{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Inputs           stringOrList `json:"inputs"`
		AddSpecialTokens *bool        `json:"add_special_tokens"`
	}
	if err := decodeJSON(body, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkInputs(req.Inputs, "inputs", s.lim); err != nil {
		writeError(w, err)
		return
	}
	if s.b.Tokenizer == nil {
		writeError(w, fmt.Errorf("%w: no tokenizer loaded", ErrNotConfigured))
		return
	}
	special := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	out := make([][]Token, len(req.Inputs.vals))
	for i, t := range req.Inputs.vals {
		toks, err := s.b.Tokenizer.Tokenize(t, special)
		if err != nil {
			writeError(w, fmt.Errorf("%w: tokenize input %d: %w", ErrBackend, i, err))
			return
		}
		out[i] = toks
	}
	writeJSON(w, http.StatusOK, out)
}

// forceTenant applies the API key's tenant to a requested one: empty means
// the key's, a different one is 403.
func forceTenant(r *http.Request, requested string) (string, error) {
	t, ok := keyTenant(r)
	if !ok {
		return requested, nil
	}
	if requested != "" && requested != t {
		return "", &apiError{status: http.StatusForbidden, typ: TypeForbidden,
			msg: fmt.Sprintf("this API key may only access tenant %q", t)}
	}
	return t, nil
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := decodeSearch(body, s.lim)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.Tenant, err = forceTenant(r, req.Tenant); err != nil {
		writeError(w, err)
		return
	}
	if s.b.Searcher == nil {
		writeError(w, fmt.Errorf("%w: no search index loaded", ErrNotConfigured))
		return
	}
	ctx, done, err := s.begin(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer done()
	resp, err := s.b.Searcher.Search(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		writeError(w, fmt.Errorf("search: %w", err))
		return
	}
	if resp.Hits == nil {
		resp.Hits = []SearchHit{}
	}
	// Defence in depth: a Searcher bug must not leak another tenant's hits.
	if _, authed := keyTenant(r); authed {
		kept := resp.Hits[:0]
		for _, h := range resp.Hits {
			if h.Document.Tenant == req.Tenant {
				kept = append(kept, h)
			}
		}
		resp.Hits = kept
	}
	timing(w, start, time.Since(start), 0)
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleDocuments(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := decodeDocuments(body, s.lim, r.Method == http.MethodDelete)
	if err != nil {
		writeError(w, err)
		return
	}
	batch := DocumentBatch{Upserts: req.Upserts, Deletes: req.Deletes}
	if t, ok := keyTenant(r); ok {
		batch.Tenant, batch.Scoped = t, true
		for i := range batch.Upserts {
			if batch.Upserts[i].Tenant, err = forceTenant(r, batch.Upserts[i].Tenant); err != nil {
				writeError(w, err)
				return
			}
		}
	} else if q := r.URL.Query(); q.Has("tenant") {
		batch.Tenant, batch.Scoped = q.Get("tenant"), true
	}
	if s.b.Documents == nil {
		writeError(w, fmt.Errorf("%w: no writable index loaded", ErrNotConfigured))
		return
	}
	ctx, done, err := s.begin(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer done()
	res, err := s.b.Documents.Apply(ctx, batch)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		writeError(w, fmt.Errorf("apply documents: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady answers 200 when every configured model is loaded and the
// server is not draining, 503 otherwise, listing what is present.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	state := "ready"
	if s.draining.Load() {
		status, state = http.StatusServiceUnavailable, "draining"
	} else if s.b.Scorer == nil && s.b.Embedder == nil && s.b.Searcher == nil {
		status, state = http.StatusServiceUnavailable, "no models loaded"
	}
	writeJSON(w, status, map[string]any{
		"status":    state,
		"reranker":  s.b.Scorer != nil,
		"embedder":  s.b.Embedder != nil,
		"tokenizer": s.b.Tokenizer != nil,
		"search":    s.b.Searcher != nil,
		"documents": s.b.Documents != nil,
		"provider":  s.cfg.Provider,
	})
}
