package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hybrank/hybrank/bench"
)

// Transport is the status recorded for a request that got no HTTP answer
// (connection refused or reset, client timeout).
const Transport = "transport"

// Config configures one run of closed-loop clients: each client sends a
// request, waits for the whole answer, and sends the next.
type Config struct {
	// URL is the target of every request.
	URL string
	// Method is the HTTP method ("" = POST).
	Method string
	// ContentType is the requests' Content-Type ("" = application/json).
	ContentType string
	// Body returns the body of request seq (0, 1, …) of client (0 …
	// Clients-1); nil sends no body. Called from the client's goroutine.
	Body func(client, seq int) []byte
	// Clients is the number of concurrent clients (≥ 1).
	Clients int
	// Warmup is how long requests run before the measured window opens;
	// requests that finish before it opens are not recorded.
	Warmup time.Duration
	// Duration is the measured window (> 0). No request starts after it
	// closes.
	Duration time.Duration
	// Drain records the requests still in flight when the window closes
	// (every answer counts, as an overload check needs); without it they
	// are dropped, so rates over Duration count only finished work.
	Drain bool
	// MaxRequestsPerClient stops a client after that many requests (0 =
	// no bound).
	MaxRequestsPerClient int
	// Backoff is a client's pause after an answer other than 2xx.
	Backoff time.Duration
	// Client sends the requests; nil means one with a transport sized to
	// Clients connections and no timeout.
	Client *http.Client
	// OnWindow, when set, is called with true as the window opens and with
	// false as it closes or the run ends, whichever is first (for example
	// to snapshot a server's counters). Neither is called when the run ends
	// before the window opens.
	OnWindow func(open bool)
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: loadgen: empty URL", bench.ErrBadOption)
	case c.Clients < 1:
		return fmt.Errorf("%w: loadgen: clients %d", bench.ErrBadOption, c.Clients)
	case c.Duration <= 0 || c.Warmup < 0 || c.Backoff < 0:
		return fmt.Errorf("%w: loadgen: duration %v, warmup %v, backoff %v", bench.ErrBadOption, c.Duration, c.Warmup, c.Backoff)
	case c.MaxRequestsPerClient < 0:
		return fmt.Errorf("%w: loadgen: max requests per client %d", bench.ErrBadOption, c.MaxRequestsPerClient)
	}
	return nil
}

// Result is what the clients recorded in the window.
type Result struct {
	// Statuses counts answers by HTTP status code ("200", "429", …;
	// Transport for no answer).
	Statuses map[string]int
	// Latencies are the recorded requests' durations by status.
	Latencies map[string][]time.Duration
	// NoRetryAfter counts 429 answers without a Retry-After header.
	NoRetryAfter int
	// Elapsed is the window's length: Duration, or the time until every
	// client stopped when that is shorter (MaxRequestsPerClient), or with
	// Drain the time until the last recorded answer when that is later.
	Elapsed time.Duration
	// TransportErr is the first transport error, if any.
	TransportErr error
}

// Count returns the recorded answers with the given status.
func (r Result) Count(status int) int { return r.Statuses[strconv.Itoa(status)] }

// Latency returns the durations of the answers with the given status.
func (r Result) Latency(status int) []time.Duration { return r.Latencies[strconv.Itoa(status)] }

// Run drives cfg.Clients closed-loop clients against cfg.URL until the
// window closes, every client reached MaxRequestsPerClient, or ctx is done
// (then ctx's error is returned with what was recorded).
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	client := cfg.Client
	if client == nil {
		tr := &http.Transport{MaxIdleConnsPerHost: cfg.Clients, MaxConnsPerHost: cfg.Clients}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	method := cfg.Method
	if method == "" {
		method = http.MethodPost
	}
	ctype := cfg.ContentType
	if ctype == "" {
		ctype = "application/json"
	}
	res := Result{Statuses: map[string]int{}, Latencies: map[string][]time.Duration{}}
	var (
		mu   sync.Mutex // guards res and last
		last time.Time  // when the last recorded answer came
		wg   sync.WaitGroup
	)
	start := time.Now()
	open := start.Add(cfg.Warmup)
	end := open.Add(cfg.Duration)
	stopMarks := markWindow(ctx, open, end, cfg.OnWindow)
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; cfg.MaxRequestsPerClient == 0 || seq < cfg.MaxRequestsPerClient; seq++ {
				if ctx.Err() != nil || !time.Now().Before(end) {
					return
				}
				var body []byte
				if cfg.Body != nil {
					body = cfg.Body(c, seq)
				}
				status, retryAfter, d, err := send(ctx, client, method, cfg.URL, ctype, body)
				done := time.Now()
				// Recorded: answers that came in the window, wherever
				// their request started (counting only those that also
				// started in it would drop most requests when latency is
				// a sizeable part of the window), plus the tail with Drain.
				if !done.Before(open) && (cfg.Drain || !done.After(end)) {
					mu.Lock()
					res.Statuses[status]++
					res.Latencies[status] = append(res.Latencies[status], d)
					if status == "429" && !retryAfter {
						res.NoRetryAfter++
					}
					if err != nil && res.TransportErr == nil {
						res.TransportErr = err
					}
					if done.After(last) {
						last = done
					}
					mu.Unlock()
				}
				if status[0] != '2' && cfg.Backoff > 0 {
					select {
					case <-time.After(cfg.Backoff):
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	stopMarks()
	// Clients that all stopped early (MaxRequestsPerClient) end the
	// window then: rates are per second of load, not of Duration.
	res.Elapsed = min(cfg.Duration, max(time.Since(open), 0))
	if cfg.Drain && last.Sub(open) > res.Elapsed {
		res.Elapsed = last.Sub(open)
	}
	return res, ctx.Err()
}

// send makes one request and reads the whole answer.
func send(ctx context.Context, client *http.Client, method, url, ctype string, body []byte) (status string, retryAfter bool, d time.Duration, err error) {
	t0 := time.Now()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return Transport, false, time.Since(t0), err
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Transport, false, time.Since(t0), err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d = time.Since(t0)
	if err != nil {
		return Transport, false, d, err
	}
	return strconv.Itoa(resp.StatusCode), resp.Header.Get("Retry-After") != "", d, nil
}

// markWindow calls mark(true) at open and mark(false) at end, or as soon
// as the returned stop function is called once the window has opened; with
// ctx done before open it calls neither. stop waits for the marks.
func markWindow(ctx context.Context, open, end time.Time, mark func(bool)) (stop func()) {
	if mark == nil {
		return func() {}
	}
	stopc := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-time.After(time.Until(open)):
			mark(true)
		case <-stopc:
			return
		case <-ctx.Done():
			return
		}
		select {
		case <-time.After(time.Until(end)):
		case <-stopc:
		case <-ctx.Done():
		}
		mark(false)
	}()
	return func() { close(stopc); <-done }
}
