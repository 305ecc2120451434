package server

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
)

// needNode skips (or, in CI, fails) when node or npm is missing.
func needNode(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			msg := bin + " not found: the real-client tests need Node.js and npm (apt-get install nodejs npm)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// installClients runs `npm ci` in testdata/npmclients once (node_modules is
// git-ignored), installing the pinned openai and cohere-ai packages.
func installClients(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "npmclients"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "cohere-ai", "package.json")); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err == nil {
			return dir
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := "npm ci in " + dir + " failed (is the npm registry reachable?): " + err.Error() + "\n" + string(out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// TestRealClients drives a real server on 127.0.0.1 with the official
// openai (embeddings) and cohere-ai (rerank, v1 and v2) npm clients.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("real-client test starts node; skipped with -short")
	}
	needNode(t)
	dir := installClients(t)

	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.APIKeys = []APIKey{{Key: "secret-key", Tenant: "t"}}
	s, err := New(cfg, Services{Scorers: scorers(&fakeScorer{}), Embedder: &fakeEmbedder{}, Tokenizer: fakeTokenizer{}})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveLocal(t, s)

	nctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(nctx, "node", "clients.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HYBRANK_URL=http://"+addr, "HYBRANK_KEY=secret-key")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node clients.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		OpenAIDefault struct {
			Model string
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
			Data []struct {
				Index     int
				Embedding []float32
			}
		} `json:"openai_default"`
		OpenAIFloat struct {
			Data []struct{ Embedding []float32 }
		} `json:"openai_float"`
		OpenAIAlias struct {
			Model string
			Dims  int
		} `json:"openai_alias"`
		CohereUnknownModel struct {
			Status  int
			Message string
		} `json:"cohere_unknown_model"`
		OpenAIUnknownModel struct{ Status int } `json:"openai_unknown_model"`
		OpenAIBadKey       struct{ Status int } `json:"openai_bad_key"`
		CohereV1           struct {
			ID      string
			Results []struct {
				Index          int
				RelevanceScore float64
				Document       *struct{ Text string }
			}
			Meta struct {
				BilledUnits struct{ SearchUnits int }
				Tokens      struct{ InputTokens int }
			}
		} `json:"cohere_v1"`
		CohereV2 struct {
			Results []struct {
				Index          int
				RelevanceScore float64
			}
		} `json:"cohere_v2"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}

	inputs := []string{"first text", "second text here"}
	if got.OpenAIDefault.Model != "hybrank-embed" || len(got.OpenAIDefault.Data) != 2 || got.OpenAIDefault.Usage.PromptTokens != 9 {
		t.Fatalf("openai embeddings: %+v", got.OpenAIDefault)
	}
	for i, d := range got.OpenAIDefault.Data {
		assertVec(t, "openai base64", d.Embedding, fakeVector(inputs[d.Index]))
		if d.Index != i {
			t.Fatalf("index %d at %d", d.Index, i)
		}
	}
	if len(got.OpenAIFloat.Data) != 1 {
		t.Fatalf("openai float: %+v", got.OpenAIFloat)
	}
	assertVec(t, "openai float", got.OpenAIFloat.Data[0].Embedding, fakeVector("first text"))
	if got.OpenAIUnknownModel.Status != 404 || got.OpenAIBadKey.Status != 401 {
		t.Fatalf("openai errors: unknown model %d (want 404), bad key %d (want 401)", got.OpenAIUnknownModel.Status, got.OpenAIBadKey.Status)
	}

	if got.OpenAIAlias.Model != "hybrank-embed" || got.OpenAIAlias.Dims != fakeDim {
		t.Fatalf("openai with text-embedding-3-small: %+v", got.OpenAIAlias)
	}
	if got.CohereUnknownModel.Status != 404 || !strings.Contains(got.CohereUnknownModel.Message, `unknown rerank model "no-such-reranker"`) {
		t.Fatalf("cohere unknown model: %+v (the client reads the top-level message)", got.CohereUnknownModel)
	}

	want := expectedOrder("cat dog", rerankDocs)
	v1 := got.CohereV1
	if v1.ID == "" || len(v1.Results) != 3 || v1.Meta.BilledUnits.SearchUnits != 1 || v1.Meta.Tokens.InputTokens <= 0 {
		t.Fatalf("cohere v1: %+v", v1)
	}
	for k, r := range v1.Results {
		if r.Index != want[k] || r.Document == nil || r.Document.Text != rerankDocs[r.Index] ||
			math.Abs(r.RelevanceScore-models.Sigmoid(fakeScore(models.Pair{Query: "cat dog", Doc: rerankDocs[r.Index]}))) > 1e-9 {
			t.Fatalf("cohere v1 result %d: %+v", k, r)
		}
	}
	if len(got.CohereV2.Results) != 2 || got.CohereV2.Results[0].Index != want[0] || got.CohereV2.Results[1].Index != want[1] {
		t.Fatalf("cohere v2: %+v", got.CohereV2)
	}
}

func assertVec(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d dims, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s: dim %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}
