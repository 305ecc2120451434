package ort_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// A cross-encoder from a Hugging Face ONNX export directory (or one written
// by `bench models --out DIR`), loaded on first use.
func ExampleCrossEncoder() {
	cfg, err := models.ProfileConfig(models.ProfileBalanced)
	if err != nil {
		log.Fatal(err)
	}
	cfg.Dir = "models/balanced" // config.json, tokenizer.json or vocab.txt, onnx/model.onnx
	cfg.Sigmoid = true          // scores in 0..1
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer ce.Close()
	scores, err := ce.Score(context.Background(), "what is bm25", []string{
		"BM25 is a bag-of-words ranking function.",
		"HNSW is a graph index for nearest neighbours.",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(scores))
}

// Embeddings with the default bi-encoder: mean pooling and L2 norm.
func ExampleBiEncoder() {
	cfg := models.DefaultEmbedderConfig()
	cfg.Dir = "models/embed"
	be, err := ort.NewBiEncoder(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	vecs, err := be.Embed(context.Background(), models.InputQuery, []string{"hybrid retrieval"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vecs[0]) == be.Dim())
}
