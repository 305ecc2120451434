package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hybrank/hybrank/bench/loadgen"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/server"
)

// runOverload runs oc.Clients clients for oc.Duration against a server on
// 127.0.0.1 with small limits, sampling resident memory, then checks that
// the server is healthy and applies oc.Targets (OverloadTargets.Check).
func runOverload(ctx context.Context, cfg Config, oc OverloadConfig, m *model) (OverloadRow, error) {
	scfg := server.DefaultConfig()
	scfg.Rerank = cfg.Batch
	scfg.Rerank.Enabled = oc.Batching
	scfg.Rerank.MaxQueueItems = oc.QueueItems
	scfg.MaxConcurrentRequests = oc.MaxConcurrentRequests
	scfg.MaxInputTokens, scfg.MaxPairTokens = m.mc.MaxLength, m.mc.MaxLength // batch costs cap at the window
	base, stopServer, err := startServer(scfg, &countingScorer{CrossEncoder: m.ce})
	if err != nil {
		return OverloadRow{}, err
	}
	defer stopServer()
	tr := &http.Transport{MaxIdleConnsPerHost: oc.Clients, MaxConnsPerHost: oc.Clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Duration(scfg.RequestTimeout)}
	body := m.body(cfg.Docs)

	row := OverloadRow{Run: "overload", Profile: cfg.Model.Profile, Threads: cfg.Model.Threads, Clients: oc.Clients,
		Batching: oc.Batching, Docs: cfg.Docs, RealWeights: m.real}
	runtime.GC()
	row.RSSStartMiB = measure.Round(residentMiB(), 1)
	stopSampler := sampleResident(time.Now().Add(oc.Duration/2), oc.SampleEvery, &row)
	lg, err := loadgen.Run(ctx, loadgen.Config{
		URL: base + "/v1/rerank", Clients: oc.Clients, Duration: oc.Duration, Drain: true,
		MaxRequestsPerClient: oc.MaxRequestsPerClient, Backoff: oc.Backoff, Client: client, Body: body,
	})
	stopSampler()
	if err != nil {
		return row, err
	}
	row.Statuses, row.NoRetryAfter = lg.Statuses, lg.NoRetryAfter
	row.Seconds = measure.Round(lg.Elapsed.Seconds(), 2)
	ls, rs := measure.LatencyStats(lg.Latency(http.StatusOK)), measure.LatencyStats(lg.Latency(http.StatusTooManyRequests))
	row.OK = lg.Count(http.StatusOK)
	okPerS := 0.0
	if lg.Elapsed > 0 { // 0 when every client stopped within a warm-up
		okPerS = float64(row.OK) / lg.Elapsed.Seconds()
	}
	row.OKPerS, row.PairsPerS = measure.Round(okPerS, 2), measure.Round(okPerS*float64(cfg.Docs), 1)
	row.P50Ms, row.P99Ms, row.RejectP99Ms = measure.Round(measure.Ms(ls.P50), 1), measure.Round(measure.Ms(ls.P99), 1), measure.Round(measure.Ms(rs.P99), 1)

	bad := healthAfter(client, base, body(0, 0), cfg.Docs)
	row.Healthy, row.HealthDetail = len(bad) == 0, strings.Join(bad, "; ")
	runtime.GC()
	row.RSSEndMiB = measure.Round(residentMiB(), 1)
	row.Checks = oc.Targets.Check(row)
	row.Verdict = report.Verdict(row.Checks)
	return row, nil
}

// sampleResident records the resident-memory peaks into row (before half
// and overall) every period until the returned function is called.
func sampleResident(half time.Time, period time.Duration, row *OverloadRow) (stop func()) {
	done := make(chan struct{})
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				r := residentMiB()
				if now.Before(half) {
					row.RSSPeakFirstHalfMiB = max(row.RSSPeakFirstHalfMiB, measure.Round(r, 1))
				} else {
					row.RSSSecondHalf = true
				}
				row.RSSPeakMiB = max(row.RSSPeakMiB, measure.Round(r, 1))
			}
		}
	}()
	return func() { once.Do(func() { close(quit) }); <-done }
}

// healthAfter checks /healthz, /readyz and one normal rerank of docs
// documents; it returns what failed.
func healthAfter(client *http.Client, base string, body []byte, docs int) []string {
	var bad []string
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := client.Get(base + path)
		if err != nil {
			bad = append(bad, path+": "+err.Error())
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			bad = append(bad, fmt.Sprintf("%s: %d", path, resp.StatusCode))
		}
	}
	resp, err := client.Post(base+"/v1/rerank", "application/json", bytes.NewReader(body))
	if err != nil {
		return append(bad, "rerank: "+err.Error())
	}
	var rr struct {
		Results []struct {
			Index int `json:"index"`
		} `json:"results"`
	}
	derr := json.NewDecoder(resp.Body).Decode(&rr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || derr != nil || len(rr.Results) != docs {
		bad = append(bad, fmt.Sprintf("rerank: status %d, %d results, decode %v", resp.StatusCode, len(rr.Results), derr))
	}
	return bad
}

// residentMiB is this process's resident set in MiB: /proc/self/statm on
// Linux, else the Go runtime's obtained memory (which misses native
// allocations such as the runtime's).
func residentMiB() float64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return float64(pages*int64(os.Getpagesize())) / (1 << 20)
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}
