package dense

import (
	"context"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/internal/configtest"
)

func TestConfigValidate(t *testing.T) {
	configtest.Check(t, DefaultConfig(),
		configtest.OK("default", func(*Config) {}),
		configtest.Bad("zero n", func(c *Config) { c.N = 0 }),
		configtest.Bad("zero k", func(c *Config) { c.K = 0 }),
		configtest.Bad("no M", func(c *Config) { c.Ms = nil }),
		configtest.Bad("M 1", func(c *Config) { c.Ms = []int{1} }),
		configtest.Bad("ef 0", func(c *Config) { c.Efs = []int{16, 0} }),
		configtest.Bad("no clusters", func(c *Config) { c.Clusters = 0 }),
		configtest.Bad("negative noise", func(c *Config) { c.Noise = -1 }),
		configtest.Bad("zero efc", func(c *Config) { c.EfConstruction = 0 }),
	)
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
