package ort_test

import (
	"context"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// TestSmoothing: the calibration measures every activation quantize would
// quantize, K channel maxima each, all finite and some positive, for a
// cross-encoder (pairs) and a bi-encoder (passages); a rewrite with it
// smooths every one of them.
func TestSmoothing(t *testing.T) {
	for _, c := range []struct {
		gen  bertgen.Kind
		kind models.Kind
	}{{bertgen.CrossEncoder, models.KindCrossEncoder}, {bertgen.BiEncoder, models.KindEmbedder}} {
		dir := generated(t, smallConfig(c.gen)).dir
		s, err := ort.Smoothing(context.Background(), dir, c.kind, quantize.DefaultConfig(), "")
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		md, err := models.OpenModelDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := onnxpb.ReadFile(md.ONNXPath)
		if err != nil {
			t.Fatal(err)
		}
		acts, err := quantize.Activations(m, quantize.DefaultConfig())
		if err != nil || len(acts) == 0 {
			t.Fatalf("%s: activations %v, %v", c.kind, acts, err)
		}
		if s.Alpha != ort.SmoothAlpha || len(s.AMax) != len(acts) || s.Source == "" {
			t.Fatalf("%s: alpha %v, %d activations measured of %d, source %q", c.kind, s.Alpha, len(s.AMax), len(acts), s.Source)
		}
		for _, a := range acts {
			v := s.AMax[a.Name]
			positive := 0
			for _, x := range v {
				if x > 0 {
					positive++
				}
			}
			if len(v) != a.K || positive < a.K/2 {
				t.Errorf("%s: %s: %d channel maxima (%d positive), want %d", c.kind, a.Name, len(v), positive, a.K)
			}
		}
		cfg := quantize.DefaultConfig()
		cfg.Smooth = s
		rep, err := quantize.Rewrite(context.Background(), m, cfg)
		if err != nil || rep.Smoothed != len(acts) {
			t.Errorf("%s: rewrite smoothed %d of %d activations (%v)", c.kind, rep.Smoothed, len(acts), err)
		}
	}
}
