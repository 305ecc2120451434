package rerank

import (
	"context"
	"errors"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/models"
)

func TestDefaults(t *testing.T) {
	c := DefaultConfig()
	if c.Kind != models.KindCrossEncoder || c.Profile != models.ProfileBalanced {
		t.Fatalf("default %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Sweep = DefaultSweep()
	if err := c.Validate(); err != nil || len(c.Sweep.Profiles) != 3 {
		t.Fatalf("default sweep %+v: %v", c.Sweep, err)
	}
	c.Profile = models.ProfileEmbed
	c.Sweep.Profiles = nil
	if err := c.Validate(); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("embed profile in a rerank run: %v", err)
	}
	e := DefaultConfig()
	e.Kind = models.KindEmbedder
	if _, err := Run(context.Background(), e); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("embedder config: %v", err)
	}
}
