package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
)

// headerInt reads an x-ratelimit-* count (-1 when absent or not a number,
// as text2vec-openai's getHeaderInt reads it).
func headerInt(h http.Header, key string) int {
	n, err := strconv.Atoi(h.Get(key))
	if err != nil {
		return -1
	}
	return n
}

// TestRateLimitHeaders: OpenAI's and Cohere's routes send the six
// headers, computed from the admission limits and the model's measured
// tokens and bytes per item; TEI's and hybrank's routes send none.
func TestRateLimitHeaders(t *testing.T) {
	ts := newTestServer(t, nil)
	cfg := ts.s.Config()
	// Two inputs of 3 words: 5 tokens each ([CLS] and [SEP] with the fake
	// tokenizer's 3), 5 bytes each.
	code, h, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": []string{"a b c", "d e f"}})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	items := min(cfg.Embed.MaxQueueItems, cfg.MaxConcurrentRequests*cfg.MaxInputs, int(cfg.MaxInflightBodyBytes/5))
	for key, want := range map[string]string{
		"x-ratelimit-limit-requests":     strconv.Itoa(cfg.MaxConcurrentRequests),
		"x-ratelimit-remaining-requests": strconv.Itoa(cfg.MaxConcurrentRequests), // this request's slot is free again
		"x-ratelimit-limit-tokens":       strconv.Itoa(items * 5),
		"x-ratelimit-remaining-tokens":   strconv.Itoa(items * 5),
		"x-ratelimit-reset-requests":     "0s",
		"x-ratelimit-reset-tokens":       "0s",
	} {
		if got := h.Get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	// The means move with the traffic: one input of 1 word is 3 tokens.
	_, h, _ = ts.do(t, "POST", "/embeddings", "", map[string]any{"input": "a"})
	tpi := 5 + meterWeight*(3-5)
	if got, want := headerInt(h, "x-ratelimit-limit-tokens"), int(float64(cfg.Embed.MaxQueueItems)*tpi); got != want {
		t.Errorf("limit-tokens after a shorter input %d, want %d", got, want)
	}
	// Errors carry them too (a client reads them from its 429).
	code, h, _ = ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": ""})
	if code != 400 || headerInt(h, "x-ratelimit-limit-tokens") <= 0 {
		t.Errorf("400: %d, headers %v", code, h)
	}
	for _, path := range []string{"/v1/rerank", "/v2/rerank"} {
		code, h, body := ts.do(t, "POST", path, "", map[string]any{"query": "cat dog", "documents": rerankDocs})
		if code != 200 || headerInt(h, "x-ratelimit-limit-requests") != cfg.MaxConcurrentRequests || headerInt(h, "x-ratelimit-limit-tokens") <= 0 ||
			headerInt(h, "x-ratelimit-remaining-tokens") != headerInt(h, "x-ratelimit-limit-tokens") {
			t.Errorf("%s: %d %v %s", path, code, h, body)
		}
	}
	for _, c := range []struct {
		path string
		body any
	}{
		{"/embed", map[string]any{"inputs": "a"}},
		{"/rerank", map[string]any{"query": "q", "texts": []string{"a"}}},
		{"/weaviate/vectors", map[string]any{"text": "a"}},
		{"/search", map[string]any{"query": "q"}},
	} {
		if _, h, _ := ts.do(t, "POST", c.path, "", c.body); h.Get("x-ratelimit-limit-tokens") != "" {
			t.Errorf("%s sends rate-limit headers", c.path)
		}
	}
}

// TestRateLimitPerReranker: a rerank route reports the reranker the
// request named, each with its own means.
func TestRateLimitPerReranker(t *testing.T) {
	ts, _ := threeRerankers(t, nil)
	limit := func(model string, docs []string) int {
		t.Helper()
		code, h, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": model, "query": "q", "documents": docs})
		if code != 200 {
			t.Fatalf("%s: %d %s", model, code, body)
		}
		return headerInt(h, "x-ratelimit-limit-tokens")
	}
	short, long := []string{"a", "b"}, []string{strings.Repeat("w ", 40), strings.Repeat("v ", 40)}
	first := limit("balanced", short)
	if other := limit("accurate", long); other <= first {
		t.Fatalf("accurate's long pairs give limit-tokens %d, balanced's short ones %d", other, first)
	}
	if again := limit("balanced", short); again != first {
		t.Fatalf("balanced's limit moved from %d to %d after another reranker's request", first, again)
	}
}

// gatedEmbedder holds every call until gate is closed.
type gatedEmbedder struct {
	fakeEmbedder
	gate    chan struct{}
	started chan int
}

func (g *gatedEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	g.started <- len(texts)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, models.Usage{}, ctx.Err()
	}
	return g.fakeEmbedder.EmbedPooled(ctx, in, texts)
}

// TestRateLimitUnderLoad: work in flight takes its items, its slot and
// its body bytes off what remains, and the resets say when it ends.
func TestRateLimitUnderLoad(t *testing.T) {
	g := &gatedEmbedder{gate: make(chan struct{}), started: make(chan int, 1)}
	ts := newTestServer(t, func(_ *Config, b *Services) { b.Embedder = g })
	cfg := ts.s.Config()
	inputs := make([]string, 100)
	for i := range inputs {
		inputs[i] = "x"
	}
	done := make(chan int)
	go func() {
		code, _, _ := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": inputs})
		done <- code
	}()
	<-g.started
	code, h, _ := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": ""}) // refused before the model
	close(g.gate)
	if c := <-done; c != 200 || code != 400 {
		t.Fatalf("held request %d, probe %d", c, code)
	}
	// No request has finished: an item counts max_input_tokens + 2.
	tpi := cfg.MaxInputTokens + 2
	if got, want := headerInt(h, "x-ratelimit-remaining-tokens"), (cfg.Embed.MaxQueueItems-100)*tpi; got != want {
		t.Errorf("remaining-tokens %d, want %d (100 items in flight)", got, want)
	}
	if got, want := headerInt(h, "x-ratelimit-limit-tokens"), cfg.Embed.MaxQueueItems*tpi; got != want {
		t.Errorf("limit-tokens %d, want %d", got, want)
	}
	if got := headerInt(h, "x-ratelimit-remaining-requests"); got != cfg.MaxConcurrentRequests-1 {
		t.Errorf("remaining-requests %d, want %d", got, cfg.MaxConcurrentRequests-1)
	}
	if d, err := time.ParseDuration(h.Get("x-ratelimit-reset-requests")); err != nil || d <= 0 {
		t.Errorf("reset-requests %q while a request is in flight", h.Get("x-ratelimit-reset-requests"))
	}

	// The body bytes in flight bound what remains.
	rl := ts.s.rateLimits(&ts.s.embedLoad)
	ts.s.bodyBytes.Add(cfg.MaxInflightBodyBytes - 10)
	tight := ts.s.rateLimits(&ts.s.embedLoad)
	ts.s.bodyBytes.Add(-(cfg.MaxInflightBodyBytes - 10))
	_, _, bpi, _ := ts.s.embedLoad.meter.snapshot()
	if want := int64(10 / bpi * float64(rl.limitTokens) / float64(cfg.Embed.MaxQueueItems)); tight.remainingTokens != want || rl.remainingTokens != rl.limitTokens {
		t.Errorf("remaining-tokens %d with 10 body bytes free, want %d (idle: %d of %d)", tight.remainingTokens, want, rl.remainingTokens, rl.limitTokens)
	}
}

// The rate limiting of Weaviate v1.35.2's text2vec-openai, ported from
// usecases/modulecomponents (client_results.go RateLimits,
// clients/openai/openai.go getRateLimitsFromHeader, batch/batch.go
// batchWorker and sendBatch; the module's batch.Settings in
// modules/text2vec-openai/module.go), without its sleeps, which change
// when requests go, not how large they are.

// weaviateLimits is RateLimits, the fields the batcher reads.
type weaviateLimits struct {
	limitRequests, limitTokens, remainingRequests, remainingTokens int
	reservedRequests, reservedTokens                               int
	missing                                                        bool // UpdateWithMissingValues
}

// weaviateHeaderLimits is getRateLimitsFromHeader (not Azure).
func weaviateHeaderLimits(h http.Header) *weaviateLimits {
	rl := &weaviateLimits{
		limitRequests: headerInt(h, "x-ratelimit-limit-requests"), limitTokens: headerInt(h, "x-ratelimit-limit-tokens"),
		remainingRequests: headerInt(h, "x-ratelimit-remaining-requests"), remainingTokens: headerInt(h, "x-ratelimit-remaining-tokens"),
	}
	_, errR := time.ParseDuration(h.Get("x-ratelimit-reset-requests"))
	_, errT := time.ParseDuration(h.Get("x-ratelimit-reset-tokens"))
	rl.missing = rl.limitRequests <= 0 || rl.limitTokens <= 0 || rl.remainingRequests < 0 || rl.remainingTokens < 0 || errR != nil || errT != nil
	return rl
}

// update is UpdateWithRateLimit.
func (rl *weaviateLimits) update(o *weaviateLimits) {
	if o.missing {
		return
	}
	rl.limitRequests, rl.limitTokens, rl.remainingRequests, rl.remainingTokens = o.limitRequests, o.limitTokens, o.remainingRequests, o.remainingTokens
}

// probing is IsInitialized, which is true while the limits are unknown.
func (rl *weaviateLimits) probing() bool { return rl.remainingRequests == 0 && rl.remainingTokens == 0 }

// canSendFullBatch is CanSendFullBatch.
func (rl *weaviateLimits) canSendFullBatch(numRequests, batchTokens int) bool {
	if rl.remainingRequests-rl.reservedRequests < numRequests || rl.remainingTokens-rl.reservedTokens < batchTokens {
		return false
	}
	var pr, pt int
	if rl.limitRequests > 0 {
		pr = numRequests * 100 / rl.limitRequests
	}
	if rl.limitTokens > 0 {
		pt = batchTokens * 100 / rl.limitTokens
	}
	return pr <= 15 && pt <= 15
}

// text2vec-openai's batch.Settings.
const (
	weaviateMaxObjectsPerBatch = 2000
	weaviateMaxTokensPerBatch  = 300000
)

// weaviateImport runs one import job of texts (with the client's token
// counts) through the batcher as v1.35.2 does, sending each request to
// path, and returns the number of texts in each request and whether the
// job went as a concurrent batch.
func weaviateImport(t *testing.T, ts *testServer, path string, texts []string, tokens []int, strip bool) (sizes []int, concurrent bool) {
	t.Helper()
	send := func(batch []string) http.Header {
		t.Helper()
		code, h, body := ts.do(t, "POST", path, "", map[string]any{"input": batch, "model": "text-embedding-ada-002"})
		if code != 200 {
			t.Fatalf("request of %d texts: %d %s", len(batch), code, body)
		}
		if strip {
			h = http.Header{} // as before the server sent them
		}
		sizes = append(sizes, len(batch))
		return h
	}
	rl := &weaviateLimits{} // GetVectorizerRateLimit with no headers given: all 0
	next := 0
	for next < len(texts) && rl.probing() { // one text a request until the limits are known
		rl.update(weaviateHeaderLimits(send(texts[next : next+1])))
		next++
	}
	tokenSum := 0
	for _, n := range tokens {
		tokenSum += n
	}
	expected := 1 + int(1.25*float32(len(texts)))/weaviateMaxObjectsPerBatch
	lim := rl
	if rl.canSendFullBatch(expected, tokenSum) {
		// A concurrent batch packs against a dummy of a million of each,
		// which each response's headers then update (makeRequest).
		concurrent, lim = true, &weaviateLimits{limitRequests: 1e6, limitTokens: 1e6, remainingRequests: 1e6, remainingTokens: 1e6}
	}
	for next < len(texts) {
		var batch []string
		est := 0
		for next < len(texts) && float32(est+tokens[next]) <= 0.95*float32(lim.remainingTokens) &&
			float32(est+tokens[next]) <= 0.95*float32(weaviateMaxTokensPerBatch) && len(batch) < weaviateMaxObjectsPerBatch {
			est += tokens[next]
			batch = append(batch, texts[next])
			next++
		}
		if len(batch) == 0 { // one text over the limits goes alone
			batch = texts[next : next+1]
			next++
		}
		lim.update(weaviateHeaderLimits(send(batch)))
	}
	return sizes, concurrent
}

// importJob is n texts of words words each, with their token counts.
func importJob(n, words int) ([]string, []int) {
	texts, tokens := make([]string, n), make([]int, n)
	for i := range texts {
		texts[i] = strings.TrimSpace(strings.Repeat("word ", words-1) + strconv.Itoa(i))
		tokens[i] = words // about what tiktoken counts for them
	}
	return texts, tokens
}

// TestWeaviateBatchesWithTheHeaders: given the headers, text2vec-openai
// leaves its one-text probe after the first request and sends the rest
// of an import job in one request (a concurrent batch, the job being
// well under 15% of the limits); without them it sends every text
// alone. With a queue too small for a concurrent batch it packs
// requests up to the remaining tokens, which still take the job whole.
func TestWeaviateBatchesWithTheHeaders(t *testing.T) {
	ts := newTestServer(t, nil)
	texts, tokens := importJob(1000, 50)
	sizes, concurrent := weaviateImport(t, ts, "/v1/embeddings", texts, tokens, false)
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 999 || !concurrent {
		t.Fatalf("requests of %v texts (concurrent %v), want [1 999] in a concurrent batch", sizes, concurrent)
	}
	texts, tokens = importJob(200, 50)
	if sizes, _ := weaviateImport(t, ts, "/v1/embeddings", texts, tokens, true); len(sizes) != len(texts) {
		t.Fatalf("without the headers: %d requests for %d texts, want one each", len(sizes), len(texts))
	}
	small := newTestServer(t, func(c *Config, _ *Services) { c.Embed.MaxQueueItems = 2000 })
	texts, tokens = importJob(1000, 50)
	sizes, concurrent = weaviateImport(t, small, "/v1/embeddings", texts, tokens, false)
	if len(sizes) != 2 || sizes[1] != 999 || concurrent {
		t.Fatalf("small queue: requests of %v texts (concurrent %v), want [1 999] sent sequentially", sizes, concurrent)
	}
	// What the server told the client after the probe, for the record.
	_, h, _ := small.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": texts[:1]})
	b, _ := json.Marshal(map[string]string{"limit": h.Get("x-ratelimit-limit-tokens"), "remaining": h.Get("x-ratelimit-remaining-tokens")})
	t.Logf("small queue: tokens %s", b)
}
