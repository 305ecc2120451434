package loadgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench/internal/configtest"
)

// server answers 200 to bodies "ok", 429 with Retry-After to "busy", 429
// without it to "rude" and 500 otherwise, and counts the requests.
func server(t *testing.T, n *atomic.Int64) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, _ := io.ReadAll(r.Body)
		switch string(b) {
		case "ok":
			w.WriteHeader(http.StatusOK)
		case "busy":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case "rude":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func TestRunCountsEveryAnswer(t *testing.T) {
	var n atomic.Int64
	bodies := []string{"ok", "busy", "rude", "boom"}
	var windows []bool
	var mu sync.Mutex
	res, err := Run(context.Background(), Config{
		URL: server(t, &n), Clients: 4, Duration: time.Minute, MaxRequestsPerClient: 5, Drain: true,
		Body: func(c, seq int) []byte { return []byte(bodies[c]) },
		OnWindow: func(open bool) {
			mu.Lock()
			windows = append(windows, open)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each client stops after 5 requests, long before the window closes.
	if n.Load() != 20 || res.Count(200) != 5 || res.Count(429) != 10 || res.Count(500) != 5 || res.NoRetryAfter != 5 {
		t.Fatalf("requests %d, result %+v", n.Load(), res)
	}
	if len(res.Latency(200)) != 5 || res.Statuses[Transport] != 0 || res.TransportErr != nil {
		t.Fatalf("latencies %v, transport %v", res.Latencies, res.TransportErr)
	}
	// The clients all stopped long before the minute: the window ends
	// with them (rates are per second of load).
	if res.Elapsed <= 0 || res.Elapsed >= time.Minute {
		t.Fatalf("elapsed %v: every client stopped within milliseconds of a one-minute window", res.Elapsed)
	}
	if len(windows) != 2 || !windows[0] || windows[1] {
		t.Fatalf("window marks %v", windows)
	}
}

func TestRunWarmupNotRecorded(t *testing.T) {
	var n atomic.Int64
	res, err := Run(context.Background(), Config{
		URL: server(t, &n), Clients: 2, Warmup: time.Hour, Duration: time.Millisecond, MaxRequestsPerClient: 3,
		Body: func(int, int) []byte { return []byte("ok") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 6 || len(res.Statuses) != 0 {
		t.Fatalf("%d requests sent, recorded %v (all answers came during the warm-up)", n.Load(), res.Statuses)
	}
}

func TestRunTransportErrorsAndCancel(t *testing.T) {
	var n atomic.Int64
	url := server(t, &n)
	res, err := Run(context.Background(), Config{URL: "http://127.0.0.1:1/", Clients: 1, Duration: time.Minute, MaxRequestsPerClient: 2})
	if err != nil || res.Statuses[Transport] != 2 || res.TransportErr == nil {
		t.Fatalf("unreachable: %+v %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var sent atomic.Int64
	res, err = Run(ctx, Config{URL: url, Clients: 3, Duration: time.Hour, Backoff: time.Millisecond,
		Body: func(c, seq int) []byte {
			if sent.Add(1) == 30 {
				cancel()
			}
			return []byte(strconv.Itoa(seq))
		}})
	if !errors.Is(err, context.Canceled) || res.Count(500) == 0 {
		t.Fatalf("cancelled run: %+v %v", res.Statuses, err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{URL: "http://x", Clients: 1, Duration: time.Second}
	configtest.Check(t, ok,
		configtest.OK("ok", func(*Config) {}),
		configtest.Bad("no url", func(c *Config) { c.URL = "" }),
		configtest.Bad("no clients", func(c *Config) { c.Clients = 0 }),
		configtest.Bad("no duration", func(c *Config) { c.Duration = 0 }),
		configtest.Bad("negative warmup", func(c *Config) { c.Warmup = -1 }),
		configtest.Bad("negative backoff", func(c *Config) { c.Backoff = -1 }),
		configtest.Bad("negative max requests", func(c *Config) { c.MaxRequestsPerClient = -1 }),
	)
}
