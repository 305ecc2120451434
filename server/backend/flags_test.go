package backend_test

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models/queue"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

func parseFlags(c *backend.Config, args ...string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	return fs.Parse(args)
}

func TestRegisterFlags(t *testing.T) {
	c := backend.DefaultConfig()
	c.Server.Rerank.MaxItems, c.Server.Embed.MaxItems = 7, 9 // as a config file could set them
	c.Server.APIKeys = []server.APIKey{{Key: "from-file", Tenant: "f"}}
	err := parseFlags(&c, "--pool", "3", "--batching=false", "--batch-max-wait", "5ms", "--batch-max-tokens", "100",
		"--api-key", "k1=t1", "--api-key", "a2V5Mg===t2", "--memory-index", "--rerank-profile", "fast", "--embed=false",
		"--request-timeout", "2s", "--addr", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Server
	for _, b := range []queue.Config{s.Rerank, s.Embed} {
		if b.Workers != 3 || b.Enabled || time.Duration(b.MaxWait) != 5*time.Millisecond || b.MaxTokens != 100 {
			t.Errorf("queue %+v", b)
		}
	}
	if s.Rerank.MaxItems != 7 || s.Embed.MaxItems != 9 {
		t.Errorf("flags not given changed the queues' items: %d %d", s.Rerank.MaxItems, s.Embed.MaxItems)
	}
	if len(s.APIKeys) != 2 || s.APIKeys[0] != (server.APIKey{Key: "k1", Tenant: "t1"}) || s.APIKeys[1] != (server.APIKey{Key: "a2V5Mg==", Tenant: "t2"}) {
		t.Errorf("api keys %+v (the flags replace the file's)", s.APIKeys)
	}
	if c.Pool != 3 || !c.MemoryIndex || c.RerankProfile != "fast" || c.Embed || time.Duration(s.RequestTimeout) != 2*time.Second || s.Addr != "127.0.0.1:9" {
		t.Errorf("config %+v", c)
	}
	for _, bad := range [][]string{{"--api-key", "no-tenant"}, {"--pool", "x"}, {"--batch-max-wait", "soon"}, {"--batching=maybe"}, {"--rerank", "fast,,balanced"}} {
		c := backend.DefaultConfig()
		if err := parseFlags(&c, bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// --rerank lists the rerankers: the first use replaces the file's, later
// ones add; NAME=DIR names a directory.
func TestRerankFlag(t *testing.T) {
	c := backend.DefaultConfig()
	c.Server.RerankModels = []server.RerankerConfig{{Name: "from-file"}}
	if err := parseFlags(&c, "--rerank", "fast, balanced", "--rerank", "mine=/models/my-ce"); err != nil {
		t.Fatal(err)
	}
	want := []server.RerankerConfig{{Name: "fast"}, {Name: "balanced"}, {Name: "mine", Dir: "/models/my-ce"}}
	if !reflect.DeepEqual(c.Server.RerankModels, want) {
		t.Fatalf("rerank models %+v, want %+v", c.Server.RerankModels, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// The one reranker's flags and the list do not mix.
	c = backend.DefaultConfig()
	if err := parseFlags(&c, "--rerank", "fast,accurate", "--rerank-profile", "balanced"); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--rerank-profile") {
		t.Fatalf("Validate = %v, want the mix refused", err)
	}
}
