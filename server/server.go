package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hybrank/hybrank/models"
)

// Server serves the HTTP API over a set of Services. It is safe for
// concurrent use. Build it with New, serve with Serve or ListenAndServe, and
// Close it (Serve closes it on return).
type Server struct {
	cfg     Config
	b       Services
	log     *slog.Logger
	metrics *metrics
	lim     limits
	keys    map[[32]byte]string // sha256(key) -> tenant
	slots   chan struct{}       // MaxConcurrentRequests
	// bodyBytes is the request body bytes reserved now
	// (MaxInflightBodyBytes; see reserveBody).
	bodyBytes atomic.Int64
	// memUsed and memLimit read the runtime's memory and its limit
	// (MemoryHighWater); tests replace them.
	memUsed, memLimit func() int64
	handler           http.Handler

	// rerankers are the served rerankers, the default first
	// (Config.Rerankers); rerankByName finds one by any of its names.
	rerankers    []*rerankModel
	rerankByName map[string]*rerankModel
	embedLoad    modelLoad // the embedder's admission (rate-limit headers)

	draining  atomic.Bool // Serve is shutting down: /readyz answers 503
	closed    atomic.Bool // Close ran: no request is admitted
	closeOnce sync.Once
}

// rerankModel is one served reranker: its configuration and its model
// (nil when Services has none for it).
type rerankModel struct {
	cfg    RerankerConfig
	window int // tokens of the longest pair: cfg.MaxPairTokens, else Config.MaxPairTokens
	r      models.Reranker
	load   modelLoad // its admission (rate-limit headers)
}

// New validates cfg and builds a Server over b; nil services leave their
// routes answering 503.
func New(cfg Config, b Services) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, b: b, log: slog.Default(), metrics: newMetrics(cfg.Provider), lim: cfg.limits(),
		keys:    make(map[[32]byte]string, len(cfg.APIKeys)),
		slots:   make(chan struct{}, cfg.MaxConcurrentRequests),
		memUsed: runtimeMemory, memLimit: memoryLimit,
	}
	if err := s.servedModels(); err != nil {
		return nil, err
	}
	if err := s.checkRoutes(); err != nil {
		return nil, err
	}
	if b.Stats != nil {
		s.metrics.reg.MustRegister(newIndexCollector(b.Stats))
	}
	kinds := map[string]string{cfg.EmbedModel: "embed"}
	for _, m := range s.rerankers {
		kinds[m.cfg.Name] = "rerank"
		m.r = b.Rerankers[m.cfg.Name]
	}
	if len(b.Caches) > 0 {
		s.metrics.reg.MustRegister(newCacheCollector(b.Caches, kinds))
	}
	if len(b.Queues) > 0 {
		s.metrics.reg.MustRegister(newQueueCollector(b.Queues, kinds))
	}
	for _, k := range cfg.APIKeys {
		s.keys[sha256.Sum256([]byte(k.Key))] = k.Tenant
	}
	s.embedLoad.queueItems, s.embedLoad.maxItems, s.embedLoad.itemTokens = cfg.Embed.MaxQueueItems, cfg.MaxInputs, cfg.MaxInputTokens+2
	s.handler = s.routes()
	return s, nil
}

// servedModels builds the rerankers from the configuration and checks
// that every reranker, cache and queue of the Services fronts a served
// model.
func (s *Server) servedModels() error {
	s.rerankByName = map[string]*rerankModel{}
	for _, rc := range s.cfg.Rerankers() {
		m := &rerankModel{cfg: rc, window: cmp.Or(rc.MaxPairTokens, s.cfg.MaxPairTokens)}
		m.load.queueItems, m.load.maxItems, m.load.itemTokens = s.cfg.Rerank.MaxQueueItems, s.cfg.MaxDocuments, m.window
		s.rerankers = append(s.rerankers, m)
		for _, n := range rc.Names() {
			s.rerankByName[n] = m
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.b.Rerankers)) {
		if m := s.rerankByName[name]; m == nil || m.cfg.Name != name {
			errs = append(errs, fmt.Errorf("Services.Rerankers[%q]: no reranker is served under that name (served: %s)", name, quoteList(s.rerankerNames())))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.b.Caches)) {
		if m := s.rerankByName[name]; name != s.cfg.EmbedModel && (m == nil || m.cfg.Name != name) {
			errs = append(errs, fmt.Errorf("Services.Caches[%q]: no model is served under that name", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.b.Queues)) {
		if m := s.rerankByName[name]; name != s.cfg.EmbedModel && (m == nil || m.cfg.Name != name) {
			errs = append(errs, fmt.Errorf("Services.Queues[%q]: no model is served under that name", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// rerankerNames returns the served names of the rerankers, the default
// first.
func (s *Server) rerankerNames() []string {
	out := make([]string, len(s.rerankers))
	for i, m := range s.rerankers {
		out[i] = m.cfg.Name
	}
	return out
}

// Handler returns the server's HTTP handler (all routes).
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the configuration the server was built with.
func (s *Server) Config() Config { return s.cfg }

// route is one registered route: its method and path (the mux pattern
// "METHOD PATH"), the route label of its hybrank_http_* metrics ("" for a
// route that is not counted), whether it needs the API key when keys are
// configured, and its handler.
type route struct {
	method, path string
	metric       string
	auth         bool
	handler      http.Handler
}

// routeTable is every route the server registers, the catch-all aside:
// routes registers it, and the OpenAPI test checks openapi.json against
// it (each route documented with its method, nothing else documented).
func (s *Server) routeTable() []route {
	rerank := serveEndpoint(s, s.rerankEndpoint())
	// Cohere's and OpenAI's routes send rate-limit headers (ratelimit.go).
	cohereRerank := s.rateLimited(func() *modelLoad { return &s.rerankers[0].load }, rerank)
	openAIEmbed := s.rateLimited(func() *modelLoad { return &s.embedLoad }, serveEndpoint(s, s.embeddingEndpoint(decodeOpenAIEmbed, s.openAIEmbedding)))
	documents := serveEndpoint(s, s.documentsEndpoint())
	return append([]route{
		{"POST", "/rerank", "/rerank", true, rerank},
		{"POST", "/v1/rerank", "/v1/rerank", true, cohereRerank},
		{"POST", "/v2/rerank", "/v2/rerank", true, cohereRerank},
		{"POST", "/embed", "/embed", true, serveEndpoint(s, s.embeddingEndpoint(decodeEmbed, teiEmbedding))},
		{"POST", "/v1/embeddings", "/v1/embeddings", true, openAIEmbed},
		{"POST", "/embeddings", "/v1/embeddings", true, openAIEmbed},
		{"GET", "/v1/models", "/v1/models", true, http.HandlerFunc(s.handleModels)},
		{"POST", "/tokenize", "/tokenize", true, serveEndpoint(s, s.tokenizeEndpoint())},
		{"POST", "/analyze", "/analyze", true, serveEndpoint(s, s.analyzeEndpoint())},
		{"POST", "/search", "/search", true, serveEndpoint(s, s.searchEndpoint())},
		{"POST", "/documents", "/documents", true, documents},
		{"DELETE", "/documents", "/documents", true, documents},
		{"GET", "/documents/{id}", "/documents/{id}", true, serveEndpoint(s, s.documentEndpoint())},
		{"GET", "/healthz", "/healthz", false, http.HandlerFunc(s.handleHealth)},
		{"GET", "/health", "/healthz", false, http.HandlerFunc(s.handleHealth)},
		{"GET", "/readyz", "/readyz", false, http.HandlerFunc(s.handleReady)},
		{"GET", "/metrics", "", false, s.metrics.handler()},
		{"GET", "/openapi.json", "/openapi.json", false, http.HandlerFunc(serveOpenAPI)},
	}, s.weaviateRoutes()...)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routeTable() {
		h := rt.handler
		if rt.auth {
			h = s.authenticate(h)
		}
		h = withState(s.pathAPI(rt.path), h)
		if rt.metric != "" {
			h = s.metrics.instrument(rt.metric, h)
		}
		mux.Handle(routePattern(rt), h)
	}
	// The catch-all keeps errors in the server's JSON shapes; it also
	// swallows ServeMux's own 405, so it answers that itself (noRoute).
	mux.Handle("/", s.metrics.instrument("other", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		withState(s.pathAPI(r.URL.Path), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { noRoute(mux, w, r) })).ServeHTTP(w, r)
	})))
	return mux
}

// routePattern is rt's ServeMux pattern: "METHOD PATH", and a path ending
// in "/" matches that path only ({$}), not the tree below it.
func routePattern(rt route) string {
	p := rt.method + " " + rt.path
	if strings.HasSuffix(rt.path, "/") {
		p += "{$}"
	}
	return p
}

// checkRoutes refuses a route table in which a path would be registered
// twice or shadow another route (a Weaviate prefix such as /v1 or
// /documents), which ServeMux would panic on or silently prefer.
func (s *Server) checkRoutes() error {
	mux := http.NewServeMux()
	seen := map[string]bool{}
	var errs []error
	for _, rt := range s.routeTable() {
		p := routePattern(rt)
		probe, _ := http.NewRequest(rt.method, rt.path, nil)
		if _, taken := mux.Handler(probe); seen[p] || taken != "" {
			errs = append(errs, fmt.Errorf("route %s %s is also served as %s; choose another weaviate.prefix", rt.method, rt.path, cmp.Or(taken, p)))
			continue
		}
		seen[p] = true
		mux.Handle(p, http.NotFoundHandler())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// probeMethods are the methods an Allow header may list, in its order.
var probeMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// noRoute answers a request that no method pattern matched: 405 with an
// Allow header when the path has routes under other methods (as ServeMux
// does without a catch-all), else 404.
func noRoute(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range probeMethods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeError(w, r, &apiError{status: http.StatusNotFound, typ: TypeNotFound,
			msg: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
		return
	}
	list := strings.Join(allow, ", ")
	w.Header().Set("Allow", list)
	writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, typ: TypeMethodNotAllowed,
		msg: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, list)})
}

// Serve answers requests on ln until ctx is done, then shuts down
// gracefully: it stops accepting, waits up to ShutdownTimeout for requests
// in flight to finish, and closes the server. It returns nil after a clean
// shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Bodies get RequestTimeout each (readBody); an idle keep-alive
		// connection is closed after this.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return errors.Join(err, s.Close())
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.log.Info("shutting down: draining requests in flight", "timeout", time.Duration(s.cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.cfg.ShutdownTimeout))
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		err = fmt.Errorf("shutdown: %w", err)
	}
	return errors.Join(err, s.Close())
}

// ListenAndServe listens on cfg.Addr and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
	}
	s.log.Info("listening", "addr", ln.Addr().String())
	return s.Serve(ctx, ln)
}

// Close stops admitting requests. It does not close the Services (models,
// their queues, the index), which the caller owns. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		s.closed.Store(true)
	})
	return nil
}

// tenantKey is the context key of the authenticated tenant.
type tenantKey struct{}

// authenticate checks the bearer key when keys are configured and records
// its tenant in the request context.
func (s *Server) authenticate(h http.Handler) http.Handler {
	if len(s.keys) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		key, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			key, ok = strings.CutPrefix(auth, "bearer ")
		}
		tenant, known := s.keys[sha256.Sum256([]byte(strings.TrimSpace(key)))]
		if !ok || !known {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hybrank"`)
			msg := "missing or unknown API key; send Authorization: Bearer <key>"
			if stateOf(r) != nil && stateOf(r).api == apiWeaviate {
				msg += weaviateKeyHint
			}
			writeError(w, r, &apiError{status: http.StatusUnauthorized, typ: TypeUnauthorized, msg: msg})
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// keyTenant returns the tenant of the request's API key, if auth is on.
func keyTenant(r *http.Request) (string, bool) {
	t, ok := r.Context().Value(tenantKey{}).(string)
	return t, ok
}

// countTokens counts text's tokens with the Tokenizer, else estimates.
func (s *Server) countTokens(text string) int {
	if s.b.Tokenizer == nil {
		return models.EstimateTokens(text)
	}
	return s.b.Tokenizer.CountTokens(text)
}

// truncateTokens returns the longest prefix of text that ends at a word
// boundary (or, when not even the first word fits, at a rune boundary) and
// has at most maxTokens tokens by countTokens. Its work is bounded by the
// prefix it returns, not by text: prefixes of doubling length (256 bytes,
// 512, …; at a word's end when one is near) are counted until one is too
// long, and the cut is binary-searched inside that one, so a megabyte
// document cut to 512 tokens costs some kilobytes of counting, with or
// without spaces in it. A probe inside a word longer than the probe can
// stop the cut one such word short. It returns ctx's error when ctx ends
// between counts.
func (s *Server) truncateTokens(ctx context.Context, text string, maxTokens int) (string, error) {
	if maxTokens <= 0 {
		return "", nil
	}
	// fits is text[:lo] (known to fit), hi the first probe that does not.
	if err := ctx.Err(); err != nil {
		return "", err
	}
	lo, hi := 0, -1
	var err error
	s.eachPrefix(text, func(end, n int) bool {
		switch {
		case n > maxTokens:
			hi = end
		case end == len(text):
		default:
			lo, err = end, ctx.Err()
			return err == nil
		}
		return false
	})
	switch {
	case err != nil:
		return "", err
	case hi < 0:
		return text, nil
	}
	// The longest prefix ending at a word end below hi that fits: word
	// ends only add tokens, so the ones that fit come first.
	var ends []int
	in := false
	for i := range hi {
		space := isSpaceByte(text[i])
		if space && in {
			ends = append(ends, i)
		}
		in = !space
	}
	a, b := 0, len(ends) // ends[:a] fit, ends[b:] do not
	for a < b {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		mid := (a + b) / 2
		if s.countTokens(text[:ends[mid]]) <= maxTokens {
			a = mid + 1
		} else {
			b = mid
		}
	}
	if a > 0 {
		return text[:ends[a-1]], nil
	}
	// Not even the first word fits: cut it at a rune boundary, between
	// what fits (lo, at most inside it) and what does not.
	if len(ends) > 0 {
		hi = ends[0]
	}
	if lo >= hi {
		lo = 0 // a probe past the first word's end fit where the word did not
	}
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		mid := (lo + hi) / 2
		for mid > lo && !utf8.RuneStart(text[mid]) {
			mid--
		}
		if mid == lo { // no rune starts in (lo, middle]: try the one after lo
			_, n := utf8.DecodeRuneInString(text[lo:])
			if mid = lo + n; mid >= hi {
				return text[:lo], nil
			}
		}
		if s.countTokens(text[:mid]) <= maxTokens {
			lo = mid
		} else {
			hi = mid
		}
	}
}

// countTokensUpTo is min(countTokens(text), limit), reading text only
// about as far as limit tokens go: word-aligned prefixes of doubling
// length are counted until one holds limit tokens or is the whole text
// (a probe inside a long word may count a token or two more than the
// whole word has).
func (s *Server) countTokensUpTo(text string, limit int) int {
	if limit <= 0 {
		return 0
	}
	count := 0
	s.eachPrefix(text, func(_, n int) bool {
		count = min(n, limit)
		return n < limit
	})
	return count
}

// eachPrefix calls fn with the end and the token count of word-aligned
// prefixes of text of doubling length (probeEnd of 256 bytes, 512, …; the
// last is all of text) while fn returns true.
func (s *Server) eachPrefix(text string, fn func(end, n int) bool) {
	for size := 256; ; size *= 2 {
		end := probeEnd(text, size)
		if !fn(end, s.countTokens(text[:end])) || end == len(text) {
			return
		}
	}
}

// isSpaceByte reports the ASCII whitespace that separates words here (no
// byte of a multi-byte UTF-8 rune is one).
func isSpaceByte(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// probeEnd is where truncateTokens' probe of about size bytes ends: all of
// text when it is that short, else the first word end within twice size,
// else the rune boundary at or below size (a probe inside a long word).
func probeEnd(text string, size int) int {
	if size >= len(text) {
		return len(text)
	}
	for i := size; i < len(text) && i < 2*size; i++ {
		if isSpaceByte(text[i]) && !isSpaceByte(text[i-1]) {
			return i
		}
	}
	for size > 0 && !utf8.RuneStart(text[size]) {
		size--
	}
	return size
}
