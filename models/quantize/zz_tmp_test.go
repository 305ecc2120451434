package quantize_test

import (
	"context"
	"os"
	"testing"

	"github.com/hybrank/hybrank/models/quantize"
)

func TestZZQuant8(t *testing.T) {
	src, dst := os.Getenv("ZZSRC"), os.Getenv("ZZDST")
	if src == "" {
		t.Skip()
	}
	cfg := quantize.DefaultConfig()
	cfg.WeightBits = 8
	if _, err := quantize.Dir(context.Background(), src, dst, cfg); err != nil {
		t.Fatal(err)
	}
}
