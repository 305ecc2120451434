package embed

import (
	"context"
	"errors"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/models"
)

func TestDefaults(t *testing.T) {
	c := DefaultConfig()
	if c.Kind != models.KindEmbedder || c.Profile != models.ProfileEmbed {
		t.Fatalf("default %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Sweep = DefaultSweep()
	if err := c.Validate(); err != nil || len(c.Sweep.Profiles) != 1 {
		t.Fatalf("default sweep %+v: %v", c.Sweep, err)
	}
	c.Profile = models.ProfileFast
	c.Sweep.Profiles = nil
	if err := c.Validate(); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("fast profile in an embed run: %v", err)
	}
	e := DefaultConfig()
	e.Kind = models.KindCrossEncoder
	if _, err := Run(context.Background(), e); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("cross-encoder config: %v", err)
	}
}
