package modeldir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
)

// TestGeneratorConfigMatchesProfiles checks that every profile generates a
// model of the profile's published shape and kind.
func TestGeneratorConfigMatchesProfiles(t *testing.T) {
	for _, p := range models.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			g, err := Generator(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if g.Layers != p.Layers || g.Hidden != p.Hidden || g.Heads != p.Heads || g.Intermediate != p.Intermediate || g.MaxPositions != p.MaxLength {
				t.Fatalf("generator %+v, profile %+v", g, p)
			}
			wantKind := bertgen.CrossEncoder
			if p.Kind == models.KindEmbedder {
				wantKind = bertgen.BiEncoder
			}
			if g.Kind != wantKind {
				t.Fatalf("kind %s, want %s", g.Kind, wantKind)
			}
			md := models.ModelDir{Config: models.HFConfig{NumHiddenLayers: g.Layers, HiddenSize: g.Hidden,
				NumAttentionHeads: g.Heads, IntermediateSize: g.Intermediate, MaxPositionEmbeddings: g.MaxPositions}}
			s := Shape(md, p.Kind)
			if bertgen.FLOPs(s, 128) != bertgen.FLOPs(g, 128) {
				t.Fatalf("Shape FLOPs %v != generator %v", bertgen.FLOPs(s, 128), bertgen.FLOPs(g, 128))
			}
		})
	}
	if _, err := Generator("huge"); !errors.Is(err, models.ErrUnknownProfile) {
		t.Fatalf("unknown profile: %v", err)
	}
	if _, err := Run(context.Background(), Config{}); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("Run without Out: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Out: "o", VocabTxt: "v", TokenizerJSON: "t"}
	configtest.Check(t, ok,
		configtest.OK("ok", func(*Config) {}),
		configtest.OK("some profiles", func(c *Config) { c.Profiles = []string{"fast", "embed"} }),
		configtest.Bad("no out", func(c *Config) { c.Out = "" }),
		configtest.Bad("no vocab", func(c *Config) { c.VocabTxt = "" }),
		configtest.Bad("unknown profile", func(c *Config) { c.Profiles = []string{"huge"} }),
	)
}

// TestResolver generates a missing directory once, reuses it, takes an
// explicit directory as it is, and without assets only finds existing ones.
func TestResolver(t *testing.T) {
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	root := t.TempDir()
	r := NewResolver(Source{Root: root, VocabTxt: vocab, TokenizerJSON: tok})
	defer r.Close()
	dir, err := r.Dir(models.ProfileFast, "")
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(root, "fast") || RealWeights(dir) {
		t.Fatalf("dir %s real %v", dir, RealWeights(dir))
	}
	st, _ := os.Stat(filepath.Join(dir, "config.json"))
	if again, err := r.Dir(models.ProfileFast, ""); err != nil || again != dir {
		t.Fatalf("again: %s %v", again, err)
	}
	st2, _ := os.Stat(filepath.Join(dir, "config.json"))
	if !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("an existing directory was rewritten")
	}
	if d, err := r.Dir(models.ProfileFast, "/some/export"); err != nil || d != "/some/export" {
		t.Fatalf("explicit: %s %v", d, err)
	}
	bare := NewResolver(Source{Root: root})
	if d, err := bare.Dir(models.ProfileFast, ""); err != nil || d != dir {
		t.Fatalf("existing without assets: %s %v", d, err)
	}
	if _, err := bare.Dir(models.ProfileBalanced, ""); err == nil {
		t.Fatal("missing directory without assets resolved")
	}
	// No root and no $HYBRANK_MODELS: a temporary folder, removed by Close.
	t.Setenv(models.ModelsEnv, "")
	tmp := NewResolver(Source{VocabTxt: vocab, TokenizerJSON: tok})
	d, err := tmp.Dir(models.ProfileFast, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil || tmp.Close() != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Fatalf("temporary model dir left behind: %v", err)
	}
}

// TestWeights: a directory without bertgen's marker is real, one with it is
// generated, one with the marker and an import record is a trained encoder
// under a random head; an unreadable marker never reads as real.
func TestWeights(t *testing.T) {
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real, gen, head, bad := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write(gen, bertgen.MarkerFile, `{"real_weights":false}`)
	write(head, bertgen.MarkerFile, `{"real_weights":false}`)
	write(head, bertgen.ImportFile, `{}`)
	write(bad, bertgen.MarkerFile, `not json`)
	write(bad, bertgen.ImportFile, `{}`)
	for dir, want := range map[string]string{real: WeightsReal, gen: WeightsGenerated, head: WeightsRandomHead, bad: WeightsGenerated} {
		if got := Weights(dir); got != want {
			t.Errorf("Weights(%s) = %q, want %q", dir, got, want)
		}
	}
}
