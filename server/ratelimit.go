package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hybrank/hybrank/models"
)

// Rate-limit headers.
//
// OpenAI's API answers with x-ratelimit-{limit,remaining}-{requests,tokens}
// and x-ratelimit-reset-{requests,tokens}, and clients size their batches
// by them. Weaviate's text2vec-openai (v1.35.2,
// usecases/modulecomponents/clients/openai getRateLimitsFromHeader and
// usecases/modulecomponents/batch) is the case in point: until a response
// carries all four counts it sends one text per request, and once it has
// them it packs each request up to 95% of the remaining tokens (at most
// 2000 texts, 300,000 tokens), and sends a whole import batch at once when
// it needs at most 15% of the limits. The server has no quota over time;
// what limits a client is admission, so that is what the headers report:
//
//	x-ratelimit-limit-requests      max_concurrent_requests
//	x-ratelimit-remaining-requests  the request slots free now
//	x-ratelimit-limit-tokens        the tokens the model's queue admits at
//	                                once: its items (max_queue_items), bounded
//	                                by max_concurrent_requests × the items one
//	                                request may send (max_inputs,
//	                                max_documents) and by max_inflight_body_bytes
//	                                over the bytes an item takes, times the
//	                                tokens an item takes
//	x-ratelimit-remaining-tokens    the same for what is free now: the queue's
//	                                items less those in flight, the free slots,
//	                                the body bytes not reserved
//	x-ratelimit-reset-*             the time a request of the model takes (a
//	                                running mean) while any is in flight, else 0s
//
// The tokens and bytes an item takes are running means over the model's
// requests (tokens as the usage fields count them; before the first, an
// item is taken to fill max_input_tokens, or the reranker's window). A
// client that keeps within the remaining tokens is not refused for the
// queue, the slots or the body bytes unless its items are shorter than the
// mean (the queue counts items), or others take the room first. Weaviate
// reads the limits as per-minute quotas: it slows down only if it would
// send more than the queue holds in a minute.

// meterWeight is the weight of the newest request in a loadMeter's running
// means.
const meterWeight = 0.1

// loadMeter tracks one model's admitted work: the items (texts or pairs)
// of its requests in flight, and running means of the tokens and bytes an
// item takes and of the time a request takes. It is safe for concurrent
// use; the zero value is ready.
type loadMeter struct {
	mu            sync.Mutex // guards the fields below
	items         int        // items of the requests in flight
	tokensPerItem float64    // running means; 0 until the first sample
	bytesPerItem  float64
	seconds       float64
}

// begin records a request of items items, of bytes bytes of text, going to
// the model. done records its end with the tokens it counted; a request
// that failed (tokens 0) leaves the means as they are.
func (m *loadMeter) begin(items, bytes int) (done func(tokens int)) {
	start := time.Now()
	m.mu.Lock()
	m.items += items
	m.mu.Unlock()
	return func(tokens int) {
		took := time.Since(start).Seconds()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.items -= items
		if tokens <= 0 || items <= 0 {
			return
		}
		mix := func(mean *float64, x float64) {
			if *mean == 0 {
				*mean = x
			} else {
				*mean += meterWeight * (x - *mean)
			}
		}
		mix(&m.tokensPerItem, float64(tokens)/float64(items))
		mix(&m.bytesPerItem, float64(max(bytes, items))/float64(items))
		mix(&m.seconds, took)
	}
}

// snapshot returns the items in flight and the running means.
func (m *loadMeter) snapshot() (items int, tokensPerItem, bytesPerItem, seconds float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.items, m.tokensPerItem, m.bytesPerItem, m.seconds
}

// modelLoad is one model's admission as the rate-limit headers report it:
// its meter and the limits its requests are admitted under.
type modelLoad struct {
	meter      loadMeter
	queueItems int // the batcher's max_queue_items
	maxItems   int // items one request may send (max_inputs, max_documents)
	itemTokens int // the most tokens an item takes (the prior of the mean)
}

// rateLimits are the values of the x-ratelimit-* headers.
type rateLimits struct {
	limitRequests, remainingRequests int
	limitTokens, remainingTokens     int64
	reset                            time.Duration
}

// bytesPerToken is the prior of an item's bytes before the first request
// has measured them: about four bytes of English text to a token.
const bytesPerToken = 4

// rateLimits computes l's headers from the server's limits and its load
// now.
func (s *Server) rateLimits(l *modelLoad) rateLimits {
	inFlight, tpi, bpi, took := l.meter.snapshot()
	if tpi <= 0 {
		tpi = float64(max(l.itemTokens, 1))
	}
	if bpi <= 0 {
		bpi = bytesPerToken * tpi
	}
	slots := cap(s.slots)
	free := slots - len(s.slots)
	bodyFree := max(0, s.cfg.MaxInflightBodyBytes-s.bodyBytes.Load())
	capItems := min(float64(l.queueItems), float64(slots)*float64(l.maxItems), float64(s.cfg.MaxInflightBodyBytes)/bpi)
	freeItems := min(float64(max(0, l.queueItems-inFlight)), float64(free)*float64(l.maxItems), float64(bodyFree)/bpi)
	rl := rateLimits{
		limitRequests:     slots,
		remainingRequests: free,
		limitTokens:       max(1, int64(capItems*tpi)),
		remainingTokens:   max(0, int64(freeItems*tpi)),
	}
	if inFlight > 0 || free < slots {
		rl.reset = max(time.Millisecond, time.Duration(took*float64(time.Second)).Round(time.Millisecond))
	}
	return rl
}

// set writes rl as OpenAI's headers (resets as Go durations, "0s", "12ms",
// "1.5s", which is how OpenAI writes them and Weaviate parses them).
func (rl rateLimits) set(h http.Header) {
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(rl.limitRequests))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(rl.remainingRequests))
	h.Set("x-ratelimit-limit-tokens", strconv.FormatInt(rl.limitTokens, 10))
	h.Set("x-ratelimit-remaining-tokens", strconv.FormatInt(rl.remainingTokens, 10))
	h.Set("x-ratelimit-reset-requests", rl.reset.String())
	h.Set("x-ratelimit-reset-tokens", rl.reset.String())
}

// rateLimited sends the x-ratelimit-* headers on every answer of h (its
// errors too, after authentication): those of the model the request's
// reqState names when the answer is written (a rerank request names the
// reranker it asked for), else of def's. It runs inside withState.
func (s *Server) rateLimited(def func() *modelLoad, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateOf(r)
		if st == nil {
			h.ServeHTTP(w, r)
			return
		}
		if st.load == nil {
			st.load = def()
		}
		h.ServeHTTP(&headerHook{ResponseWriter: w, before: func(hd http.Header) {
			if st.load != nil {
				s.rateLimits(st.load).set(hd)
			}
		}}, r)
	})
}

// headerHook calls before with the headers once, just before they are
// written.
type headerHook struct {
	http.ResponseWriter
	before func(http.Header)
	done   bool
}

func (h *headerHook) WriteHeader(code int) {
	if !h.done {
		h.done = true
		h.before(h.Header())
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerHook) Write(b []byte) (int, error) {
	if !h.done {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (readBody's
// read deadline).
func (h *headerHook) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// noteLoad makes r's rate-limit headers report l (the reranker a rerank
// request named).
func noteLoad(r *http.Request, l *modelLoad) {
	if st := stateOf(r); st != nil {
		st.load = l
	}
}

// textBytes is the bytes of texts (what their request body mostly is).
func textBytes(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	return n
}

// pairBytes is the bytes of a rerank request's pairs as its body carries
// them: every document, and the query once.
func pairBytes(pairs []models.Pair) int {
	if len(pairs) == 0 {
		return 0
	}
	n := len(pairs[0].Query)
	for _, p := range pairs {
		n += len(p.Doc)
	}
	return n
}
