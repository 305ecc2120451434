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
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/simd"
)

// endpoint is the one shape of every API route: decode the body,
// authorize the request, call the backend, encode the reply. Each step
// returns its error; serveEndpoint answers it through writeError, the one
// place errors become HTTP statuses.
type endpoint[Req any] struct {
	// decode turns the body (already capped at MaxBodyBytes) into a
	// request; its errors are *apiError 4xx (the decoders are fuzzed).
	decode func(r *http.Request, body []byte) (Req, error)
	// authorize decides whether the request may run here: the model it
	// names, the tenant its API key allows (it may rewrite req to that
	// tenant) and whether the route's backend is configured.
	authorize func(r *http.Request, req *Req) error
	// call runs the request and returns the reply to encode as JSON.
	call func(ctx context.Context, r *http.Request, req Req) (reply, error)
	// admit runs call under MaxConcurrentRequests and RequestTimeout.
	admit bool
	// timed sets TEI's x-compute-time, x-compute-tokens and x-total-time.
	timed bool
}

// reply is what an endpoint's call answers.
type reply struct {
	body any
	// tokens is the x-compute-tokens header of timed endpoints.
	tokens int
}

// serveEndpoint returns the handler running e's steps in order.
func serveEndpoint[Req any](s *Server, e endpoint[Req]) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		out, compute, err := runEndpoint(s, e, w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if e.timed {
			timing(w, start, compute, out.tokens)
		}
		writeJSON(w, r, http.StatusOK, out.body)
	}
}

func runEndpoint[Req any](s *Server, e endpoint[Req], w http.ResponseWriter, r *http.Request) (reply, time.Duration, error) {
	release, err := s.admitBody(r)
	if err != nil {
		return reply{}, 0, err
	}
	defer release()
	body, err := s.readBody(w, r)
	if err != nil {
		return reply{}, 0, err
	}
	req, err := e.decode(r, body)
	if err != nil {
		return reply{}, 0, err
	}
	if err := e.authorize(r, &req); err != nil {
		return reply{}, 0, err
	}
	ctx := r.Context()
	if e.admit {
		var done func()
		if ctx, done, err = s.begin(r); err != nil {
			return reply{}, 0, err
		}
		defer done()
	}
	callStart := time.Now()
	out, err := e.call(ctx, r, req)
	if err != nil && ctx.Err() != nil {
		// The deadline or the client ended the call: say that, not how
		// the backend happened to fail.
		err = ctx.Err()
	}
	return out, time.Since(callStart), err
}

// writeJSON writes v with status (a failure to encode it as r's error).
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, r, fmt.Errorf("%w: encode response: %w", ErrBackend, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// readBody reads the body up to MaxBodyBytes (413 beyond), within
// RequestTimeout: the body is read before admission and before the
// request's deadline starts, so a client that sends it slowly must not hold
// the connection and its buffer for ever.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	// Not every ResponseWriter supports deadlines (httptest's recorder);
	// without one the read is unbounded. The deadline is lifted once the
	// body is in: the server's background read, which notices a client
	// that goes away, would otherwise cancel the request when it passed.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(time.Duration(s.cfg.RequestTimeout)))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge("request body exceeds %d bytes (max_body_bytes)", s.cfg.MaxBodyBytes)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &apiError{status: http.StatusRequestTimeout, typ: TypeTimeout, msg: fmt.Sprintf("the request body was not received within %v (request_timeout)", time.Duration(s.cfg.RequestTimeout))}
		}
		return nil, badRequest("read body: %v", err)
	}
	return body, nil
}

// begin admits a request under MaxConcurrentRequests and gives it the
// configured deadline. done must be called when the request ends. While
// Serve drains, requests are still admitted: the listener is closed, so
// the only ones are those already in flight (a body still arriving
// included), which the drain is waiting for; after Close none is.
func (s *Server) begin(r *http.Request) (ctx context.Context, done func(), err error) {
	if s.closed.Load() {
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

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// checkModel accepts an empty model (the route's default) or one of
// names, else answers 404 listing the names this server accepts.
func checkModel(kind, got string, names []string) error {
	if got == "" || slices.Contains(names, got) {
		return nil
	}
	return &apiError{status: http.StatusNotFound, typ: TypeNotFound, param: "model",
		msg: fmt.Sprintf("unknown %s model %q; this server's %s model is named %s", kind, got, kind, quoteList(names))}
}

// rerankModelFor returns the reranker a request's "model" names: the
// default for "", else the one answering to the name; any other name is
// 404 listing the served rerankers and their aliases.
func (s *Server) rerankModelFor(name string) (*rerankModel, error) {
	if name == "" {
		return s.rerankers[0], nil
	}
	if m := s.rerankByName[name]; m != nil {
		return m, nil
	}
	if len(s.rerankers) == 1 {
		return nil, checkModel("rerank", name, s.rerankers[0].cfg.Names())
	}
	served := make([]string, len(s.rerankers))
	for i, m := range s.rerankers {
		names := m.cfg.Names()
		served[i] = strconv.Quote(names[0])
		if len(names) > 1 {
			served[i] += " (or " + quoteList(names[1:]) + ")"
		}
	}
	return nil, &apiError{status: http.StatusNotFound, typ: TypeNotFound, param: "model",
		msg: fmt.Sprintf("unknown rerank model %q; this server's rerank models are %s; an empty model means %q", name, strings.Join(served, ", "), s.rerankers[0].cfg.Name)}
}

// quoteList returns names quoted and comma-separated.
func quoteList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

// notConfigured is the error of a route whose backend is missing (503).
func notConfigured(what string) error { return fmt.Errorf("%w: no %s loaded", ErrNotConfigured, what) }

// Cohere/Jina rerank response.
type rerankResult struct {
	Index          int         `json:"index"`
	RelevanceScore float64     `json:"relevance_score"`
	Document       *rerankText `json:"document,omitempty"`
	// Span is the best window's bytes in the document (chunking only).
	Span *models.Span `json:"span,omitempty"`
}

type rerankText struct {
	Text string `json:"text"`
}

// rerankResponse is the Cohere rerank response; on /rerank and /v1/rerank
// (Jina's path) it also carries Jina's model and usage, which Cohere's v1
// clients ignore. Cohere v2 has neither.
type rerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model,omitempty"`
	Results []rerankResult `json:"results"`
	Meta    rerankMeta     `json:"meta"`
	Usage   *rerankUsage   `json:"usage,omitempty"`
}

// rerankUsage is Jina's usage object.
type rerankUsage struct {
	TotalTokens int `json:"total_tokens"`
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
	// Span is the best window's bytes in the text (chunking only).
	Span *models.Span `json:"span,omitempty"`
}

func (s *Server) rerankEndpoint() endpoint[rerankRequest] {
	return endpoint[rerankRequest]{
		decode: func(r *http.Request, body []byte) (rerankRequest, error) {
			req, err := decodeRerank(body, s.lim)
			if req.dialect != apiHybrank {
				setAPI(r, req.dialect) // TEI's body or Cohere's, on any rerank route
			}
			return req, err
		},
		authorize: func(r *http.Request, req *rerankRequest) (err error) {
			if req.served, err = s.rerankModelFor(req.Model); err != nil {
				return err
			}
			noteLoad(r, &req.served.load)
			if req.served.batch == nil {
				return notConfigured(fmt.Sprintf("reranking model %q", req.served.cfg.Name))
			}
			return nil
		},
		call:  s.rerankCall,
		admit: true, timed: true,
	}
}

// checkPairLengths refuses, as TEI does without truncate=true, a request
// with a (query, text) pair longer than the cross-encoder's window: the
// model would cut it silently. Cohere and Jina requests are truncated, as
// those APIs document. q is the query's token count.
func (s *Server) checkPairLengths(req rerankRequest, q int) error {
	if !req.TEI || req.Truncate || req.Chunking.Enabled() {
		return nil
	}
	window := req.served.window
	for i, d := range req.Docs {
		if n := q + s.countTokens(d) + models.PairSpecialTokens; n > window {
			return tooLarge("texts[%d] with the query is %d tokens ([CLS] query [SEP] text [SEP]), more than the window of %d (max_pair_tokens) of reranker %q; shorten it or send truncate=true to cut it", i, n, window, req.served.cfg.Name)
		}
	}
	return nil
}

// pairInputTokens is a rerank request's usage: each pair's tokens as
// countTokens counts them ([CLS] query [SEP] document [SEP]), cut to the
// reranker's window: what the request asked the model to read, whether
// the score cache (--cache-mb) or the model answered. (The model's own
// count of what it computed goes to x-compute-tokens and the tokens
// metric.) Every pair holds the request's query, of q tokens; each
// document is read only as far as the window lets it count.
func (s *Server) pairInputTokens(q int, pairs []models.Pair, window int) int {
	n := 0
	rest := max(0, window-q-models.PairSpecialTokens) // what a document can add
	for _, p := range pairs {
		n += min(q+s.countTokensUpTo(p.Doc, rest)+models.PairSpecialTokens, window)
	}
	return n
}

func (s *Server) rerankCall(ctx context.Context, r *http.Request, req rerankRequest) (reply, error) {
	q := s.countTokens(req.Query) // once: a query may be megabytes long
	if s.b.Tokenizer != nil && q == 0 {
		// Not blank, yet nothing to the model (zero-width or control
		// characters only): refused here, as the model would refuse it.
		return reply{}, badRequest("field \"query\" has no tokens for the model (only characters the tokenizer drops)")
	}
	if err := s.checkPairLengths(req, q); err != nil {
		return reply{}, err
	}
	pairs := make([]models.Pair, len(req.Docs))
	for i, d := range req.Docs {
		if req.MaxTokensPerDoc > 0 {
			var err error
			if d, err = s.truncateTokens(ctx, d, req.MaxTokensPerDoc); err != nil {
				return reply{}, err
			}
		}
		pairs[i] = models.Pair{Query: req.Query, Doc: d}
	}
	pairs, windows, err := s.chunkPairs(req, pairs, q)
	if err != nil {
		return reply{}, err
	}
	m := req.served
	done := m.load.meter.begin(len(pairs), pairBytes(pairs))
	scores, usage, err := m.batch.Submit(ctx, pairs)
	if err != nil {
		done(0)
		return reply{}, err
	}
	input := s.pairInputTokens(q, pairs, m.window)
	done(input)
	scores, spans, err := windows.scores(scores)
	if err != nil {
		return reply{}, err
	}
	s.metrics.tokens.WithLabelValues("rerank", m.cfg.Name).Add(float64(usage.Tokens))
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	if req.TopN > 0 {
		order = order[:req.TopN]
	}
	if req.TEI {
		out := make([]teiRank, len(order))
		for k, i := range order {
			out[k] = teiRank{Index: i, Score: float64(scores[i])}
			if spans != nil {
				out[k].Span = &spans[i]
			}
			if !req.RawScores {
				out[k].Score = models.Sigmoid(scores[i])
			}
			if req.ReturnText {
				t := req.Docs[i]
				out[k].Text = &t
			}
		}
		return reply{body: out, tokens: usage.Tokens}, nil
	}
	// Documents are returned by default on Cohere v1 and Jina; Cohere v2
	// has no return_documents and returns index and score only, unless a
	// request asks for them anyway.
	cohereV2 := r.URL.Path == "/v2/rerank"
	returnDocs := !cohereV2
	if req.ReturnDocuments != nil {
		returnDocs = *req.ReturnDocuments
	}
	resp := rerankResponse{ID: newID(), Results: make([]rerankResult, len(order))}
	if !cohereV2 {
		resp.Model = m.cfg.Name
		resp.Usage = &rerankUsage{TotalTokens: input}
	}
	for k, i := range order {
		resp.Results[k] = rerankResult{Index: i, RelevanceScore: models.Sigmoid(scores[i])}
		if spans != nil {
			resp.Results[k].Span = &spans[i]
		}
		if returnDocs {
			resp.Results[k].Document = &rerankText{Text: req.Docs[i]}
		}
	}
	// Cohere bills one search unit per query per 100 documents.
	resp.Meta.BilledUnits.SearchUnits = (len(req.Docs) + 99) / 100
	resp.Meta.Tokens.InputTokens = input
	return reply{body: resp, tokens: usage.Tokens}, nil
}

// embedTexts runs an embedding request through the batcher after applying
// truncation rules; it returns vectors the caller may modify (the
// responses normalise and shorten them in place): embedders hand out
// vectors their callers own (models.Embedder). input is the request's
// usage, its texts' tokens ([CLS] text [SEP], after truncation) by
// countTokens, whether the embedding cache (--cache-mb) or the model
// answered; usage is what the model reports it computed.
func (s *Server) embedTexts(ctx context.Context, req embedRequest) (vecs [][]float32, input int, usage models.Usage, err error) {
	texts, copied := req.Inputs, false
	for i, t := range req.Inputs {
		n := s.countTokens(t)
		if n > s.cfg.MaxInputTokens {
			if !req.Truncate {
				return nil, 0, models.Usage{}, tooLarge("input %d has %d tokens, more than max_input_tokens %d; send truncate=true to cut it", i, n, s.cfg.MaxInputTokens)
			}
			if !copied {
				texts, copied = append([]string(nil), texts...), true
			}
			if texts[i], err = s.truncateTokens(ctx, t, s.cfg.MaxInputTokens); err != nil {
				return nil, 0, models.Usage{}, err
			}
			n = s.countTokens(texts[i])
		}
		input += n + 2
	}
	done := s.embedLoad.meter.begin(len(texts), textBytes(texts))
	vecs, usage, err = s.embed.Submit(ctx, texts)
	if err != nil {
		done(0)
		return nil, 0, usage, err
	}
	done(input)
	s.metrics.tokens.WithLabelValues("embed", s.cfg.EmbedModel).Add(float64(usage.Tokens))
	return vecs, input, usage, nil
}

// authorizeEmbed checks the embedding model: the name a request gives
// (OpenAI's "model"; TEI's requests have none) and that one is loaded.
func (s *Server) authorizeEmbed(_ *http.Request, req *embedRequest) error {
	if err := checkModel("embedding", req.Model, s.cfg.EmbedNames()); err != nil {
		return err
	}
	if s.embed == nil {
		return notConfigured("embedding model")
	}
	if d := s.b.Embedder.Dim(); req.Dimensions > d {
		ae := badRequest("field \"dimensions\" is %d, more than the %d of embedding model %q; send at most %d, or no dimensions", req.Dimensions, d, s.cfg.EmbedModel, d)
		if slices.Contains(s.cfg.ClientEmbedAliases, req.Model) && req.Model != s.cfg.EmbedModel {
			ae.msg += fmt.Sprintf(" (%q is an alias here; Weaviate's text2vec-openai sends 1536 for text-embedding-3-small and 3072 for -3-large: "+
				"set the collection's \"dimensions\" to %d, or its \"model\" to %q, for which it sends none)", req.Model, d, s.cfg.EmbedModel)
		}
		ae.param = "dimensions"
		return ae
	}
	return nil
}

// embeddingEndpoint is the endpoint of /embed (TEI) and /v1/embeddings
// (OpenAI), which differ only in their decoder and their response shape.
func (s *Server) embeddingEndpoint(decode func([]byte, limits) (embedRequest, error), respond func(req embedRequest, vecs [][]float32, input int) any) endpoint[embedRequest] {
	return endpoint[embedRequest]{
		decode:    func(_ *http.Request, body []byte) (embedRequest, error) { return decode(body, s.lim) },
		authorize: s.authorizeEmbed,
		call: func(ctx context.Context, _ *http.Request, req embedRequest) (reply, error) {
			vecs, input, usage, err := s.embedTexts(ctx, req)
			if err != nil {
				return reply{}, err
			}
			return reply{body: respond(req, vecs, input), tokens: usage.Tokens}, nil
		},
		admit: true, timed: true,
	}
}

// teiEmbedding is TEI's /embed response: the pooled vectors, L2-normalised
// unless the request said normalize=false.
func teiEmbedding(req embedRequest, vecs [][]float32, _ int) any {
	if req.Normalize {
		for _, v := range vecs {
			simd.L2Normalize(v)
		}
	}
	return vecs
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

// openAIEmbedding is OpenAI's /v1/embeddings response.
func (s *Server) openAIEmbedding(req embedRequest, vecs [][]float32, input int) any {
	resp := openAIEmbedResponse{Object: "list", Model: s.cfg.EmbedModel, Data: make([]openAIEmbedding, len(vecs))}
	for i, v := range vecs {
		if req.Dimensions > 0 && req.Dimensions < len(v) {
			// Shortened embeddings are the leading dimensions,
			// normalised (as OpenAI does for text-embedding-3).
			v = v[:req.Dimensions]
		}
		simd.L2Normalize(v) // OpenAI's embeddings are unit vectors
		resp.Data[i] = openAIEmbedding{Object: "embedding", Index: i, Embedding: v}
		if req.Base64 {
			resp.Data[i].Embedding = float32Base64(v)
		}
	}
	resp.Usage.PromptTokens, resp.Usage.TotalTokens = input, input
	return resp
}

// tokenizeEndpoint serves TEI's /tokenize, admission-controlled like the
// model routes: a body of one-letter words makes a reply some thirty times
// its size. A request may ask for at most max_inputs × max_input_tokens
// tokens (what one embedding request may send; 413 beyond), counted before
// any is materialised.
func (s *Server) tokenizeEndpoint() endpoint[tokenizeRequest] {
	return endpoint[tokenizeRequest]{
		decode: func(_ *http.Request, body []byte) (tokenizeRequest, error) { return decodeTokenize(body, s.lim) },
		authorize: func(*http.Request, *tokenizeRequest) error {
			if s.b.Tokenizer == nil {
				return notConfigured("tokenizer")
			}
			return nil
		},
		admit: true,
		call: func(ctx context.Context, _ *http.Request, req tokenizeRequest) (reply, error) {
			limit, total := s.lim.maxInputs*s.cfg.MaxInputTokens, 0
			for _, t := range req.Inputs {
				if err := ctx.Err(); err != nil {
					return reply{}, err
				}
				if total += s.b.Tokenizer.CountTokens(t); total > limit {
					return reply{}, tooLarge("the inputs have more than %d tokens, the most one request may tokenize (max_inputs × max_input_tokens); send fewer or shorter inputs", limit)
				}
			}
			out := make(tokenLists, len(req.Inputs))
			for i, t := range req.Inputs {
				if err := ctx.Err(); err != nil {
					return reply{}, err
				}
				toks, err := s.b.Tokenizer.Tokenize(t, req.AddSpecial)
				if err != nil {
					return reply{}, fmt.Errorf("%w: tokenize input %d: %w", ErrBackend, i, err)
				}
				out[i] = toks
			}
			return reply{body: out}, nil
		},
	}
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

func (s *Server) searchEndpoint() endpoint[engine.Request] {
	return endpoint[engine.Request]{
		decode: func(_ *http.Request, body []byte) (engine.Request, error) { return decodeSearch(body, s.lim) },
		authorize: func(r *http.Request, req *engine.Request) (err error) {
			if req.Tenant, err = forceTenant(r, req.Tenant); err != nil {
				return err
			}
			if s.b.Searcher == nil {
				return notConfigured("search index")
			}
			req.Rerank, req.Cascade.First = s.servedRerankName(req.Rerank), s.servedRerankName(req.Cascade.First)
			return nil
		},
		call: func(ctx context.Context, r *http.Request, req engine.Request) (reply, error) {
			res, err := s.b.Searcher.Search(ctx, req)
			if err != nil {
				return reply{}, fmt.Errorf("search: %w", err)
			}
			// JSON arrays, never null, as openapi.json documents them
			// (the engine leaves them nil when nothing is found or fits).
			if res.Hits == nil {
				res.Hits = []engine.Hit{}
			}
			if res.Passages == nil {
				res.Passages = []engine.Passage{}
			}
			if _, authed := keyTenant(r); authed {
				ownTenant(res, req.Tenant)
			}
			return reply{body: res}, nil
		},
		admit: true, timed: true,
	}
}

// servedRerankName returns the served name of the reranker that name
// means, so that /search's "rerank" takes every name "model" takes; a
// name no reranker answers to (or "") is returned as it is, for the
// Searcher to judge.
func (s *Server) servedRerankName(name string) string {
	if m := s.rerankByName[name]; m != nil && name != "" {
		return m.cfg.Name
	}
	return name
}

// ownTenant drops the hits of res that are not tenant's, and the passages
// packed from them: defence in depth, so a Searcher bug cannot leak
// another tenant's documents to an API key.
func ownTenant(res *engine.Result, tenant string) {
	dropped := map[string]bool{}
	kept := res.Hits[:0]
	for _, h := range res.Hits {
		if h.Document.Tenant == tenant {
			kept = append(kept, h)
		} else {
			dropped[h.Document.ID] = true
		}
	}
	res.Hits = kept
	if len(dropped) == 0 {
		return
	}
	passages := res.Passages[:0]
	for _, p := range res.Passages {
		leaks := false
		for _, part := range p.Parts {
			leaks = leaks || dropped[part.ID]
		}
		if !leaks {
			passages = append(passages, p)
		}
	}
	res.Passages = passages
}

func (s *Server) documentsEndpoint() endpoint[DocumentBatch] {
	return endpoint[DocumentBatch]{
		decode: func(r *http.Request, body []byte) (DocumentBatch, error) {
			return decodeDocuments(body, s.lim, r.Method == http.MethodDelete)
		},
		authorize: func(r *http.Request, b *DocumentBatch) (err error) {
			// One rule with or without a key: ?tenant= names the batch's
			// tenant (deletes); a key allows its own tenant only, in the
			// query and in every document.
			q := r.URL.Query()
			if b.Tenant, err = forceTenant(r, q.Get("tenant")); err != nil {
				return err
			}
			if _, keyed := keyTenant(r); keyed {
				for i := range b.Upserts {
					if b.Upserts[i].Tenant, err = forceTenant(r, b.Upserts[i].Tenant); err != nil {
						return err
					}
				}
			}
			if err := b.Validate(); err != nil {
				return err // the engine's validation, wraps ErrInvalid: 400
			}
			if s.b.Documents == nil {
				return notConfigured("writable index")
			}
			return nil
		},
		call: func(ctx context.Context, _ *http.Request, b DocumentBatch) (reply, error) {
			res, err := s.b.Documents.Apply(ctx, b)
			if err != nil {
				return reply{}, fmt.Errorf("apply documents: %w", err)
			}
			return reply{body: res}, nil
		},
		admit: true,
	}
}

// getDocument is GET /documents/{id}?tenant=T: one stored document of the
// tenant (the key's with an API key), 404 when there is none.
type getDocument struct{ tenant, id string }

func (s *Server) documentEndpoint() endpoint[getDocument] {
	return endpoint[getDocument]{
		decode: func(r *http.Request, _ []byte) (getDocument, error) {
			return getDocument{tenant: r.URL.Query().Get("tenant"), id: r.PathValue("id")}, nil
		},
		authorize: func(r *http.Request, g *getDocument) (err error) {
			if g.tenant, err = forceTenant(r, g.tenant); err != nil {
				return err
			}
			if s.b.Documents == nil {
				return notConfigured("writable index")
			}
			return nil
		},
		call: func(ctx context.Context, _ *http.Request, g getDocument) (reply, error) {
			d, ok, err := s.b.Documents.Get(ctx, g.tenant, g.id)
			if err != nil {
				return reply{}, fmt.Errorf("get document: %w", err)
			}
			if !ok {
				return reply{}, &apiError{status: http.StatusNotFound, typ: TypeNotFound,
					msg: fmt.Sprintf("no document %q in tenant %q", g.id, g.tenant)}
			}
			return reply{body: d}, nil
		},
	}
}

// modelEntry is one item of GET /v1/models: OpenAI's model object, plus
// what the name means here.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Kind is "rerank" or "embed".
	Kind string `json:"kind"`
	// Root is the served name of the model ID names (ID itself for a
	// served name, the model's served name for an alias).
	Root string `json:"root"`
	// Default says an empty "model" means this model.
	Default bool `json:"default"`
	// Aliases are the model's other names, on its served name's entry.
	Aliases []string `json:"aliases,omitempty"`
}

// modelList is the GET /v1/models response.
type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	// Every name a request may give is listed, each model's served name
	// first, the default reranker first.
	list := modelList{Object: "list", Data: []modelEntry{}}
	add := func(kind string, names []string, def bool) {
		for i, n := range names {
			e := modelEntry{ID: n, Object: "model", OwnedBy: "hybrank", Kind: kind, Root: names[0], Default: def}
			if i == 0 && len(names) > 1 {
				e.Aliases = names[1:]
			}
			list.Data = append(list.Data, e)
		}
	}
	for i, m := range s.rerankers {
		if m.batch != nil {
			add("rerank", m.cfg.Names(), i == 0)
		}
	}
	if s.b.Embedder != nil {
		add("embed", s.cfg.EmbedNames(), true)
	}
	writeJSON(w, r, http.StatusOK, list)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady answers 200 when every configured model is loaded, the
// server is not draining and the document store takes writes (WriteState),
// 503 otherwise, listing what is present and, when read-only, why.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	state := "ready"
	var reason string
	if s.draining.Load() {
		status, state = http.StatusServiceUnavailable, "draining"
	} else if ws, ok := s.b.Documents.(WriteState); ok {
		if err := ws.ReadOnly(); err != nil {
			status, state, reason = http.StatusServiceUnavailable, "read-only", err.Error()
		}
	}
	loaded := []string{}
	for _, m := range s.rerankers {
		if m.batch != nil {
			loaded = append(loaded, m.cfg.Name)
		}
	}
	if len(loaded) == 0 && s.b.Embedder == nil && s.b.Searcher == nil && status == http.StatusOK {
		status, state = http.StatusServiceUnavailable, "no models loaded"
	}
	body := map[string]any{
		"status":    state,
		"reranker":  len(loaded) > 0,
		"rerankers": loaded,
		"embedder":  s.b.Embedder != nil,
		"tokenizer": s.b.Tokenizer != nil,
		"search":    s.b.Searcher != nil,
		"documents": s.b.Documents != nil,
		"provider":  s.cfg.Provider,
	}
	if reason != "" {
		body["reason"] = reason
	}
	writeJSON(w, r, status, body)
}
