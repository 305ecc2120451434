package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The inference protocols of Weaviate's text2vec-transformers and
// reranker-transformers modules, as the modules send them to a sidecar
// (hybrank's /weaviate prefix, or the peer's root): the same request
// bodies, so a direct measurement loads a sidecar as Weaviate does.

// vectorsBody is what text2vec-transformers sends for one text (its
// client sends one text per request): task "passage" for objects, "query"
// for searches.
func vectorsBody(text, task string) map[string]any {
	return map[string]any{"text": text, "config": map[string]any{"pooling_strategy": "masked_mean", "task_type": task}}
}

// rerankBody is what reranker-transformers sends: a query and up to
// rerankChunk documents.
func rerankBody(query string, docs []string) map[string]any {
	return map[string]any{"query": query, "documents": docs}
}

// rerankChunk is how many documents reranker-transformers sends per
// request (its client's maxDocuments): a rerank of n hits is
// ceil(n / rerankChunk) requests.
const rerankChunk = 32

// rerankRequests is the requests one rerank of n hits costs a sidecar.
func rerankRequests(n int) int { return (n + rerankChunk - 1) / rerankChunk }

// searchRerankRequests is the rerank requests of one reranked search of
// n hits: Weaviate v1.35.2 reranks a hybrid search's hits twice (its
// hybrid searcher and the Get's additional property each call the
// reranker), as hybrank's request counters show.
func searchRerankRequests(n int) int { return 2 * rerankRequests(n) }

// embed asks the sidecar at inference for text's vector.
func (w *weaviate) embed(ctx context.Context, inference, text, task string) ([]float32, error) {
	var ans struct {
		Vector []float32 `json:"vector"`
		Dim    int       `json:"dim"`
		Error  string    `json:"error"`
	}
	if _, err := w.do(ctx, http.MethodPost, inference, "/vectors", vectorsBody(text, task), &ans); err != nil {
		return nil, fmt.Errorf("sidecar vectors: %w", err)
	}
	if len(ans.Vector) == 0 {
		return nil, fmt.Errorf("sidecar vectors: empty vector (%s)", ans.Error)
	}
	return ans.Vector, nil
}

// rerank asks the sidecar at inference for the scores of docs against
// query, in input order.
func (w *weaviate) rerank(ctx context.Context, inference, query string, docs []string) ([]float64, error) {
	var ans struct {
		Scores []struct {
			Document string  `json:"document"`
			Score    float64 `json:"score"`
		} `json:"scores"`
	}
	if _, err := w.do(ctx, http.MethodPost, inference, "/rerank", rerankBody(query, docs), &ans); err != nil {
		return nil, fmt.Errorf("sidecar rerank: %w", err)
	}
	if len(ans.Scores) != len(docs) {
		return nil, fmt.Errorf("sidecar rerank: %d scores for %d documents", len(ans.Scores), len(docs))
	}
	out := make([]float64, len(docs))
	for i, s := range ans.Scores {
		out[i] = s.Score
	}
	return out, nil
}

// sidecarMeta is the sidecar's GET /meta (the model it serves), as JSON
// text for the report ("" when it does not answer).
func (w *weaviate) sidecarMeta(ctx context.Context, inference string) string {
	var m map[string]any
	if _, err := w.do(ctx, http.MethodGet, inference, "/meta", nil, &m); err != nil {
		return ""
	}
	return fmt.Sprint(m)
}

// sidecarReady waits until the sidecar at inference answers
// /.well-known/ready with 2xx, polling every interval, up to limit. It
// returns how long that took.
func (w *weaviate) sidecarReady(ctx context.Context, inference string, limit time.Duration) (time.Duration, error) {
	return poll(ctx, limit, 250*time.Millisecond, func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := w.do(c, http.MethodGet, inference, "/.well-known/ready", nil, nil)
		return err == nil
	})
}

// poll calls ok every interval until it returns true or limit passes; it
// returns the time from the call until ok held.
func poll(ctx context.Context, limit, interval time.Duration, ok func() bool) (time.Duration, error) {
	start := time.Now()
	for {
		if ok() {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("not within %v", limit)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(interval):
		}
	}
}

// requestCounts reads hybrank's /metrics at sidecar and sums
// hybrank_http_requests_total by route, and the rerank cache's counters
// under the keys rerankHits, rerankMisses and rerankShared ({} when the
// sidecar has no such counters, as the peer).
func (w *weaviate) requestCounts(ctx context.Context, sidecar string) map[string]float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sidecar+"/metrics", nil)
	if err != nil {
		return map[string]float64{}
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return map[string]float64{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return map[string]float64{}
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return parseRequestCounts(buf.String())
}

// Keys of requestCounts for the rerank cache's counters (no route starts
// with a space).
const (
	rerankHits   = " rerank cache hits"
	rerankMisses = " rerank cache misses"
	rerankShared = " rerank cache shared"
)

// parseRequestCounts sums the samples of hybrank_http_requests_total in a
// Prometheus text exposition by their route label, and the rerank cache's
// hits, misses and shared misses.
func parseRequestCounts(text string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	const name = "hybrank_http_requests_total{"
	for sc.Scan() {
		line := sc.Text()
		for _, c := range []struct{ prefix, key string }{
			{`hybrank_cache_hits_total{cache="rerank"`, rerankHits},
			{`hybrank_cache_misses_total{cache="rerank"`, rerankMisses},
			{`hybrank_cache_shared_total{cache="rerank"`, rerankShared},
		} {
			if strings.HasPrefix(line, c.prefix) {
				if _, rest, ok := strings.Cut(line, "} "); ok {
					if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
						out[c.key] += v
					}
				}
			}
		}
		if !strings.HasPrefix(line, name) {
			continue
		}
		labels, rest, ok := strings.Cut(line[len(name):], "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			continue
		}
		route := ""
		for _, kv := range strings.Split(labels, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok && k == "route" {
				route, _ = strconv.Unquote(val)
			}
		}
		out[route] += v
	}
	return out
}

// cosine is the cosine similarity of a and b (same length; 0 for a zero
// vector).
func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}
