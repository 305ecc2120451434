// Command coldshapes times a cross-encoder's first call of each new input
// shape against later calls of the same shape, and a warm shape after idle
// gaps: the diagnostic behind bench/results/gpu.md's "first call of a new
// input shape" (runs 6 and 7). Documents are made of a fixed word list,
// and with tokens batching (the default here) every call of up to
// MaxBatchTokens is one runtime call of one padded batch, so a shape
// (documents × words) decides the runtime's input shape; each line says
// how many runtime calls a timed call made. Cost batching (-batching cost)
// calibrates at load and may plan a call differently the second time.
//
//	coldshapes -dir MODELS/balanced -provider cuda -quantize fp16
//
// The bundle (bench/gpu/bundle.sh) does not include it; build it with
// `go build -o .gpu/coldshapes ./bench/gpu/coldshapes` to carry it along.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

var vocab = strings.Fields("protein cell gene expression tumor patient study effect clinical risk treatment increase model data analysis result level disease human mouse")

// docs returns n documents of words words each; seed varies the text, not
// the length.
func docs(n, words, seed int) []string {
	out := make([]string, n)
	for d := range out {
		var b strings.Builder
		for i := range words {
			b.WriteString(vocab[(i*7+(seed+d)*3)%len(vocab)])
			b.WriteByte(' ')
		}
		out[d] = b.String()
	}
	return out
}

func main() {
	cfg := models.DefaultConfig()
	flag.StringVar(&cfg.Dir, "dir", "", "cross-encoder model directory")
	flag.StringVar(&cfg.Profile, "profile", models.ProfileBalanced, "profile the directory is loaded as")
	flag.StringVar(&cfg.Provider, "provider", "cuda", "ONNX Runtime provider: auto, cuda, cpu")
	flag.StringVar(&cfg.Quantize, "quantize", "", `"", int8 or fp16 (models.Config.Quantize)`)
	flag.StringVar(&cfg.QuantizeCache, "quantize-cache", "", "where converted copies are kept (\"\" = the user cache)")
	cfg.Batching = models.BatchingTokens
	flag.StringVar(&cfg.Batching, "batching", cfg.Batching, "tokens (one runtime call per call here) or cost (models.Config.Batching)")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "coldshapes:", err)
		os.Exit(1)
	}
}

func run(cfg models.Config) error {
	t0 := time.Now()
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		return err
	}
	defer ce.Close()
	ctx := context.Background()
	batches := 0 // runtime calls of the last timed call
	timed := func(ds []string) (time.Duration, error) {
		t := time.Now()
		_, u, err := ce.ScoreWithUsage(ctx, "what is the effect of the gene", ds)
		batches = u.Batches
		return time.Since(t), err
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	if _, err := timed(docs(2, 10, 0)); err != nil { // load
		return err
	}
	fmt.Printf("provider=%s quantize=%q batching=%s CUDA_MODULE_LOADING=%q load+first call %v\n",
		cfg.Provider, cfg.Quantize, cfg.Batching, os.Getenv("CUDA_MODULE_LOADING"), time.Since(t0))

	fmt.Println("A: a new shape: first call, the same call again, the same shape with other text (words, docs, ms, ms, ms, runtime calls of the first)")
	for _, n := range []int{3, 11, 27} {
		for _, w := range []int{41, 77, 113, 151, 189, 229, 271, 311, 349, 391, 433, 471, 505} {
			var t [3]time.Duration
			var calls int
			for i, ds := range [][]string{docs(n, w, w+n), docs(n, w, w+n), docs(n, w, w+n+1)} {
				if t[i], err = timed(ds); err != nil {
					return err
				}
				if i == 0 {
					calls = batches
				}
			}
			fmt.Println("A", w, n, ms(t[0]), ms(t[1]), ms(t[2]), calls)
		}
	}

	fmt.Println("B: a warm shape after an idle gap (gap, median and max of 7 calls, ms)")
	warm := docs(8, 200, 1)
	if _, err := timed(warm); err != nil {
		return err
	}
	for _, gap := range []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, time.Second} {
		var ts []time.Duration
		for range 7 {
			time.Sleep(gap)
			d, err := timed(warm)
			if err != nil {
				return err
			}
			ts = append(ts, d)
		}
		slices.Sort(ts)
		fmt.Println("B", gap, ms(ts[3]), ms(ts[6]))
	}

	fmt.Println("C: shapes from A again, other text, one call each (words, docs, ms)")
	for _, n := range []int{3, 11, 27} {
		for _, w := range []int{41, 151, 311, 505} {
			d, err := timed(docs(n, w, w+n+5))
			if err != nil {
				return err
			}
			fmt.Println("C", w, n, ms(d))
		}
	}
	return nil
}
