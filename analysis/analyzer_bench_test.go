package analysis_test

import (
	"testing"

	"github.com/hybrank/hybrank/analysis"
)

const benchQuery = "0-dimensional biomaterials show inductive properties in stem cell differentiation"

const benchDoc = "Alterations of the architecture of cerebral white matter in the developing human brain " +
	"can affect cortical development and result in functional disabilities. A line scan diffusion-weighted " +
	"magnetic resonance imaging (MRI) sequence with diffusion tensor analysis was applied to measure the " +
	"apparent diffusion coefficient, to calculate relative anisotropy, and to delineate three-dimensional " +
	"fiber architecture in cerebral white matter in preterm (n = 17) and full-term infants (n = 7)."

func BenchmarkAnalyze(b *testing.B) {
	cases := []struct {
		name string
		cfg  analysis.Config
		text string
	}{
		{"query/default", analysis.DefaultConfig(), benchQuery},
		{"doc/default", analysis.DefaultConfig(), benchDoc},
		{"doc/nocache", func() analysis.Config { c := analysis.DefaultConfig(); c.StemCacheEntries = 0; return c }(), benchDoc},
		{"doc/code", func() analysis.Config { c := analysis.DefaultConfig(); c.CodeAware = true; return c }(), benchDoc},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := analysis.MustNew(c.cfg)
			dst := a.AppendAnalyze(nil, c.text)
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst = a.AppendAnalyze(dst[:0], c.text)
			}
		})
	}
}

func BenchmarkAnalyzeParallel(b *testing.B) {
	a := analysis.MustNew(analysis.DefaultConfig())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var dst []string
		for pb.Next() {
			dst = a.AppendAnalyze(dst[:0], benchDoc)
		}
	})
}
