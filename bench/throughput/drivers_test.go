package throughput_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/embed"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

// TestDrivers checks the defaults of the embed driver and that it refuses
// cross-encoders (the rerank driver's own test is in package rerank).
func TestDrivers(t *testing.T) {
	for _, d := range []struct {
		name     string
		config   func() throughput.Config
		sweep    func() throughput.Sweep
		run      func(context.Context, throughput.Config) (throughput.Result, error)
		kind     models.Kind
		profile  string
		profiles int
		foreign  string // a profile of the other kind
	}{
		{"embed", embed.DefaultConfig, embed.DefaultSweep, embed.Run, models.KindEmbedder, models.ProfileEmbed, 1, models.ProfileFast},
	} {
		t.Run(d.name, func(t *testing.T) {
			c := d.config()
			if c.Kind != d.kind || c.Profile != d.profile {
				t.Fatalf("default %+v", c)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			c.Sweep = d.sweep()
			if err := c.Validate(); err != nil || len(c.Sweep.Profiles) != d.profiles {
				t.Fatalf("default sweep %+v: %v", c.Sweep, err)
			}
			c.Profile, c.Sweep.Profiles = d.foreign, nil
			if err := c.Validate(); !errors.Is(err, bench.ErrBadOption) {
				t.Fatalf("%s profile: %v", d.foreign, err)
			}
			other := d.config()
			other.Kind = models.KindCrossEncoder
			if d.kind == models.KindCrossEncoder {
				other.Kind = models.KindEmbedder
			}
			if _, err := d.run(context.Background(), other); !errors.Is(err, bench.ErrBadOption) {
				t.Fatalf("config of the other kind: %v", err)
			}
		})
	}
}
