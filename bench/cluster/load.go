package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hybrank/hybrank/bench/measure"
)

// ImportRow is one import of documents into a collection: a line of
// cluster.md.
type ImportRow struct {
	// Phase names the import ("load", "peer load").
	Phase      string `json:"phase" table:""`
	Collection string `json:"collection" table:""`
	// Sidecars is who embedded the documents ("hybrank" or "peer").
	Sidecars string `json:"sidecars" table:""`
	Docs     int    `json:"docs" table:""`
	// Acked objects Weaviate acknowledged at Consistency; Failed the
	// others (FirstError is one of their messages).
	Acked       int     `json:"acked" table:""`
	Failed      int     `json:"failed" table:""`
	Consistency string  `json:"consistency"`
	Seconds     float64 `json:"seconds" table:""`
	DocsPerS    float64 `json:"docs_per_s" table:"docs/s"`
	// Counted is the collection's object count read back after the
	// import (Aggregate meta count, read until it matches Acked or 30 s).
	Counted    int    `json:"counted" table:""`
	Batches    int    `json:"batches"`
	FirstError string `json:"first_error,omitempty"`
}

// importAll sends objs to the collection in batches of size from
// importers concurrent clients, batch i to node i mod len(nodes), and
// reads the count back.
func importAll(ctx context.Context, w *weaviate, nodes []Endpoint, class, cl string, objs []Object, size, importers int, progress *measure.Progress) (ImportRow, error) {
	row := ImportRow{Collection: class, Docs: len(objs), Consistency: cl}
	type job struct {
		i    int
		objs []Object
	}
	jobs := make(chan job)
	var (
		mu      sync.Mutex // guards row's counts
		wg      sync.WaitGroup
		lastErr error
	)
	start := time.Now()
	for range importers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				out, err := w.importBatch(ctx, nodes[j.i%len(nodes)].HTTP, class, cl, j.objs)
				mu.Lock()
				row.Batches++
				row.Acked += len(out.Acked)
				row.Failed += len(out.Failed)
				for _, msg := range out.Failed {
					if row.FirstError == "" {
						row.FirstError = clip(msg, 300)
					}
				}
				if err != nil && !errors.Is(err, ErrWeaviate) {
					lastErr = err
				}
				mu.Unlock()
				progress.Add(len(j.objs))
			}
		}()
	}
	for i, lo := 0, 0; lo < len(objs) && ctx.Err() == nil; i, lo = i+1, lo+size {
		select {
		case jobs <- job{i, objs[lo:min(lo+size, len(objs))]}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	progress.Done()
	el := time.Since(start)
	row.Seconds = measure.Round(el.Seconds(), 2)
	if el > 0 {
		row.DocsPerS = measure.Round(float64(row.Acked)/el.Seconds(), 1)
	}
	if err := ctx.Err(); err != nil {
		return row, err
	}
	// The count reads one replica per shard, which may apply the last
	// writes a moment after the quorum acknowledged them: read it until it
	// matches, for a while.
	var n int
	var cerr error
	_, _ = poll(ctx, 30*time.Second, 500*time.Millisecond, func() bool {
		n, cerr = w.count(ctx, nodes[0].HTTP, class)
		return cerr != nil || n == row.Acked
	})
	if cerr != nil {
		return row, fmt.Errorf("cluster: count %s after the import: %w", class, cerr)
	}
	row.Counted = n
	if row.Acked == 0 && lastErr != nil {
		return row, fmt.Errorf("cluster: import into %s: nothing acknowledged: %w", class, lastErr)
	}
	return row, nil
}
