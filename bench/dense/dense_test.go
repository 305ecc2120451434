package dense

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"zero n", func(c *Config) { c.N = 0 }, false},
		{"zero k", func(c *Config) { c.K = 0 }, false},
		{"no M", func(c *Config) { c.Ms = nil }, false},
		{"M 1", func(c *Config) { c.Ms = []int{1} }, false},
		{"ef 0", func(c *Config) { c.Efs = []int{16, 0} }, false},
		{"no clusters", func(c *Config) { c.Clusters = 0 }, false},
		{"negative noise", func(c *Config) { c.Noise = -1 }, false},
		{"zero efc", func(c *Config) { c.EfConstruction = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if (err == nil) != tt.ok || err != nil && !errors.Is(err, bench.ErrBadOption) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestRunSmall sweeps a tiny index: the flat row is the truth, recall grows
// to nearly 1 with ef, and the report has the dense.md columns.
func TestRunSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.N, cfg.Dim, cfg.Queries, cfg.Clusters, cfg.Rank = 400, 16, 20, 8, 4
	cfg.Ms, cfg.Efs, cfg.EfConstruction = []int{8}, []int{1, 200}, 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Rows[0].Kind != "flat" || res.Rows[0].RecallAtK != 1 || res.Rows[0].M != 0 {
		t.Fatalf("rows %+v", res.Rows)
	}
	lo, hi := res.Rows[1], res.Rows[2]
	if lo.Kind != "hnsw" || lo.M != 8 || lo.EfSearch != 1 || hi.EfSearch != 200 || hi.RecallAtK < 0.95 || hi.RecallAtK < lo.RecallAtK || hi.QPS <= 0 || hi.BuildS < 0 {
		t.Fatalf("hnsw rows %+v / %+v", lo, hi)
	}
	rep := Report(cfg, res, "bench dense")
	if got := strings.Join(rep.Columns, " "); got != "kind m ef_search build_s recall_at_k qps p50_ms p99_ms" || len(rep.Rows) != 3 {
		t.Fatalf("report columns %q, %d rows", got, len(rep.Rows))
	}
}
