package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// TestMaintenance drives an engine past both maintenance thresholds — long
// documents after short ones (avgdl drift) and deleted documents (dense
// tombstones) — and lets background maintenance, in small steps, rebuild
// the BM25 index and compact the graph while searches and commits run.
// Every search must see the same tenant-"" documents throughout (the
// commits write another tenant): the 20 "keystone" documents through BM25,
// every live document through dense retrieval, never a deleted one.
func TestMaintenance(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Maintenance.Interval = time.Millisecond
	cfg.Maintenance.MinDocs = 10
	cfg.Maintenance.RebuildStep = 64
	cfg.Maintenance.CompactStep = 8
	cfg.Dense.FlatThreshold = 0 // searches below take the graph while it is compacted
	dir := filepath.Join(t.TempDir(), "idx")
	e := openCfg(t, dir, cfg, engine.WithEmbedder(enginetest.NewHashEmbedder(16)))
	ctx := context.Background()
	var docs []engine.Document
	for i := 0; i < 300; i++ {
		docs = append(docs, engine.Document{ID: fmt.Sprintf("s%d", i), Text: fmt.Sprintf("shorty w%d", i%7)})
	}
	for i := 0; i < 20; i++ {
		docs = append(docs, engine.Document{ID: fmt.Sprintf("k%d", i), Text: fmt.Sprintf("keystone w%d", i%7)})
	}
	commit(t, e, docs...)
	docs = docs[:0]
	long := strings.Repeat("lengthy filler words ", 10)
	for i := 0; i < 100; i++ {
		docs = append(docs, engine.Document{ID: fmt.Sprintf("l%d", i), Text: long + fmt.Sprint("w", i%7)})
	}
	commit(t, e, docs...)
	b := e.NewBatch()
	deleted := map[string]bool{}
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("s%d", i)
		b.DeleteIn("", id)
		deleted[id] = true
	}
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	live := 320 + 100 - 200
	before := e.Stats()
	if before.Documents != live || before.Postings.Drift <= cfg.Maintenance.RebuildDrift || before.Dense.Tombstones < 200 {
		t.Fatalf("setup: %+v", before)
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 8)
	var searches atomic.Int64
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := e.Search(ctx, engine.Request{Query: "keystone shorty lengthy", TopK: 1000, Candidates: 1000})
				if err != nil {
					errc <- err
					return
				}
				keys, dn := 0, 0
				for _, h := range res.Hits {
					if deleted[h.Document.ID] {
						errc <- fmt.Errorf("deleted %s returned", h.Document.ID)
						return
					}
					if strings.HasPrefix(h.Document.ID, "k") && h.Provenance.BM25Rank > 0 {
						keys++
					}
					if h.Provenance.DenseRank > 0 {
						dn++
					}
				}
				if keys != 20 || dn != live || len(res.Hits) != live {
					errc <- fmt.Errorf("%d keystone documents through BM25, %d through dense, %d hits; want 20, %d, %d", keys, dn, len(res.Hits), live, live)
					return
				}
				// Fewer candidates than documents: the graph, not a scan.
				res, err = e.Search(ctx, engine.Request{Query: "keystone w3", TopK: 50, Candidates: 50})
				if err != nil {
					errc <- err
					return
				}
				for _, h := range res.Hits {
					if deleted[h.Document.ID] {
						errc <- fmt.Errorf("deleted %s returned by a graph search", h.Document.ID)
						return
					}
				}
				searches.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // commits into another tenant while maintenance runs
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b := e.NewBatch()
			b.Add(engine.Document{ID: fmt.Sprintf("o%d", i), Tenant: "other", Text: long + " other"})
			if i >= 5 {
				b.DeleteIn("other", fmt.Sprintf("o%d", i-5))
			}
			if err := e.Commit(ctx, b); err != nil {
				errc <- err
				return
			}
		}
	}()
	waitFor(t, "a rebuild and a compaction", func() bool {
		m := e.Stats().Maintenance
		return m.Rebuilds > 0 && m.Compactions > 0 || len(errc) > 0
	})
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	after := e.Stats()
	if after.Maintenance.LastError != "" || after.Maintenance.Steps < 10 || searches.Load() == 0 {
		t.Fatalf("maintenance %+v after %d searches", after.Maintenance, searches.Load())
	}
	if after.Postings.BuildAvgDL == before.Postings.BuildAvgDL || after.Dense.Tombstones >= before.Dense.Tombstones {
		t.Fatalf("not maintained: before %+v\nafter %+v", before, after)
	}
	if after.Tenants != 2 || after.SnapshotGeneration == 0 {
		t.Fatalf("stats %+v (a rebuild asks for a snapshot)", after)
	}
}

func TestMaintenanceConfigValidate(t *testing.T) {
	for name, edit := range map[string]func(*engine.MaintenanceConfig){
		"negative interval": func(m *engine.MaintenanceConfig) { m.Interval = -1 },
		"zero drift":        func(m *engine.MaintenanceConfig) { m.RebuildDrift = 0 },
		"deleted above 1":   func(m *engine.MaintenanceConfig) { m.RebuildDeleted = 1.5 },
		"zero tombstones":   func(m *engine.MaintenanceConfig) { m.CompactTombstones = 0 },
		"zero step":         func(m *engine.MaintenanceConfig) { m.CompactStep = 0 },
		"negative min docs": func(m *engine.MaintenanceConfig) { m.MinDocs = -1 },
	} {
		cfg := engine.DefaultConfig()
		edit(&cfg.Maintenance)
		if err := cfg.Validate(); !errors.Is(err, engine.ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	cfg := engine.DefaultConfig()
	cfg.Maintenance = engine.MaintenanceConfig{} // disabled: nothing else checked
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
