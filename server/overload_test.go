package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models/modeltest"
)

// TestOverload drives a server with deliberately tiny limits (8 requests in
// flight, 8 queued pairs, one model call at a time over a slow scorer) with
// 64 concurrent clients over loopback, batching on and off. Every answer
// must be 200 or 429 (with Retry-After), both must occur, and afterwards the
// queue is empty, every slot is free, /healthz and /readyz answer 200 and a
// normal rerank is correct. `bench serve --overload` is the long version
// over a real model.
func TestOverload(t *testing.T) {
	const clients = 64
	run := 3 * time.Second
	if testing.Short() {
		run = time.Second
	}
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MaxConcurrentRequests = 8
			cfg.Rerank.Enabled = batching
			cfg.Rerank.MaxQueueItems, cfg.Rerank.MaxItems, cfg.Rerank.Workers = 8, 4, 1
			cfg.Rerank.MaxWait = Duration(time.Millisecond)
			b := Services{Rerankers: defaultReranker(&modeltest.Scorer{Delay: 5 * time.Millisecond})}
			queued(t, cfg, &b)
			s, err := New(cfg, b)
			if err != nil {
				t.Fatal(err)
			}
			base := "http://" + serveLocal(t, s)

			tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			body, _ := json.Marshal(map[string]any{"query": "cat", "documents": rerankDocs})
			var (
				mu         sync.Mutex
				statuses   = map[int]int{}
				noRetry    int
				transport  error
				wg         sync.WaitGroup
				end        = time.Now().Add(run)
				maxPerLoop = 20000
			)
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < maxPerLoop && time.Now().Before(end); i++ {
						resp, err := client.Post(base+"/v1/rerank", "application/json", bytes.NewReader(body))
						if err != nil {
							mu.Lock()
							transport = err
							mu.Unlock()
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						mu.Lock()
						statuses[resp.StatusCode]++
						if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
							noRetry++
						}
						mu.Unlock()
						if resp.StatusCode == http.StatusTooManyRequests {
							time.Sleep(time.Millisecond) // a client that ignores Retry-After, nearly
						}
					}
				}()
			}
			wg.Wait()
			t.Logf("statuses %v", statuses)
			if transport != nil {
				t.Fatalf("transport error: %v", transport)
			}
			for code := range statuses {
				if code != http.StatusOK && code != http.StatusTooManyRequests {
					t.Errorf("status %d under overload (%d times); want only 200 and 429", code, statuses[code])
				}
			}
			if statuses[http.StatusOK] == 0 || statuses[http.StatusTooManyRequests] == 0 {
				t.Errorf("statuses %v: want both 200 and 429", statuses)
			}
			if noRetry > 0 {
				t.Errorf("%d responses 429 without Retry-After", noRetry)
			}

			// Healthy afterwards: nothing queued or held, probes and a normal
			// request answer.
			// (A job leaves the queue with its last item: no item queued is
			// no job queued.)
			if queued := b.Queues[cfg.RerankModel].Stats().Queued; queued != 0 || len(s.slots) != 0 {
				t.Errorf("after the run: %d pairs queued, %d slots held", queued, len(s.slots))
			}
			for _, path := range []string{"/healthz", "/readyz"} {
				resp, err := client.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %d after overload", path, resp.StatusCode)
				}
			}
			resp, err := client.Post(base+"/v1/rerank", "application/json", strings.NewReader(`{"query": "cat", "documents": ["stock markets", "a cat"]}`))
			if err != nil {
				t.Fatal(err)
			}
			var rr struct {
				Results []struct {
					Index int `json:"index"`
				} `json:"results"`
			}
			err = json.NewDecoder(resp.Body).Decode(&rr)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || len(rr.Results) != 2 || rr.Results[0].Index != 1 {
				t.Errorf("rerank after overload: status %d, %+v, %v", resp.StatusCode, rr, err)
			}
		})
	}
}
