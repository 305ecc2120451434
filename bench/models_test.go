package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
)

// TestGeneratorConfigMatchesProfiles checks that every profile generates a
// model of the profile's published shape and kind.
func TestGeneratorConfigMatchesProfiles(t *testing.T) {
	for _, p := range models.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			g, err := GeneratorConfig(p.Name)
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
			s := ShapeOf(md, p.Kind)
			if bertgen.FLOPs(s, 128) != bertgen.FLOPs(g, 128) {
				t.Fatalf("ShapeOf FLOPs %v != generator %v", bertgen.FLOPs(s, 128), bertgen.FLOPs(g, 128))
			}
		})
	}
	if _, err := GeneratorConfig("huge"); !errors.Is(err, models.ErrUnknownProfile) {
		t.Fatalf("unknown profile: %v", err)
	}
	if _, err := WriteModels(context.Background(), ModelsConfig{}); err == nil {
		t.Fatal("WriteModels without Out succeeded")
	}
}
