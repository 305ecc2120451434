package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The wire of Weaviate v1.35.2's module clients, copied from their Go
// structs (the files named on each), so that the tests send what the
// modules send and read our answers as the modules do. Fixtures under
// testdata/weaviate hold the request bodies the modules marshal; the
// first test proves them equal to these structs' encoding.

// t2vRequest is text2vec-transformers' body both ways: vecRequest of
// usecases/modulecomponents/clients/transformers/transformers.go. The
// module marshals it (zero Dims, nil Vector, empty Error included) and
// unmarshals the answer, 200 or not, into it.
type t2vRequest struct {
	Text   string           `json:"text"`
	Dims   int              `json:"dims"`
	Vector []float32        `json:"vector"`
	Error  string           `json:"error"`
	Config t2vRequestConfig `json:"config"`
}

// t2vRequestConfig is vecRequestConfig of the same file.
type t2vRequestConfig struct {
	PoolingStrategy string `json:"pooling_strategy,omitempty"`
	TaskType        string `json:"task_type,omitempty"`
	Dimensions      *int64 `json:"dimensions,omitempty"`
}

// rtRankInput is reranker-transformers' request: RankInput of
// modules/reranker-transformers/clients/ranker.go (RankPropertyValue is
// never set: "property" goes out empty).
type rtRankInput struct {
	Query             string   `json:"query"`
	Documents         []string `json:"documents"`
	RankPropertyValue string   `json:"property"`
}

// rtDocumentScore and rtRankResponse are DocumentScore and RankResponse
// of the same file; the module reads Scores by position and, on a status
// other than 200, Error.
type rtDocumentScore struct {
	Document string  `json:"document"`
	Score    float64 `json:"score"`
}

type rtRankResponse struct {
	Query             string            `json:"query"`
	Scores            []rtDocumentScore `json:"scores"`
	RankPropertyValue string            `json:"property"`
	Score             float64           `json:"score"`
	Error             string            `json:"error"`
}

// cohereRankInput is reranker-cohere's request: RankInput of
// modules/reranker-cohere/clients/ranker.go, posted to baseURL +
// "/v1/rerank" with Authorization: Bearer <key>, Content-Type and
// Request-Source headers; no top_n, return_documents false.
type cohereRankInput struct {
	Documents       []string `json:"documents"`
	Query           string   `json:"query"`
	Model           string   `json:"model"`
	ReturnDocuments bool     `json:"return_documents"`
}

// cohereResult, cohereRankResponse and cohereAPIError are Result,
// RankResponse and cohereApiError of the same file: results are placed
// by Index (toDocumentScores); a status other than 200 is read as
// cohereApiError, whose Message is the error's text.
type cohereResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
	Document       struct {
		Text string `json:"text"`
	} `json:"document"`
}

type cohereRankResponse struct {
	ID      string         `json:"id"`
	Results []cohereResult `json:"results"`
	Meta    struct {
		APIVersion struct {
			Version string `json:"version"`
		} `json:"api_version"`
	} `json:"meta"`
}

type cohereAPIError struct {
	Message string `json:"message"`
}

// openAIEmbeddingsRequest is text2vec-openai's request: embeddingsRequest
// of usecases/modulecomponents/clients/openai/openai.go, posted to
// baseURL + "/v1/embeddings" with Authorization: Bearer <key>. Weaviate
// sends Dimensions 1536 for text-embedding-3-small unless the collection
// sets another (modules/text2vec-openai/ent: PickDefaultDimensions), none
// for ada-002.
type openAIEmbeddingsRequest struct {
	Input      []string `json:"input"`
	Model      string   `json:"model,omitempty"`
	Dimensions *int64   `json:"dimensions,omitempty"`
}

// moduleOpenAIEmbedding, moduleOpenAIData, openAIAPIError and openAICodeWire
// are embedding, embeddingData, openAIApiError and openAICode of the same
// file: the body is unmarshalled into moduleOpenAIEmbedding whatever the status
// (so a body it cannot read loses the error), and an error is reported
// with Error.Message.
type moduleOpenAIEmbedding struct {
	Object string             `json:"object"`
	Data   []moduleOpenAIData `json:"data,omitempty"`
	Error  *openAIAPIError    `json:"error,omitempty"`
	Usage  *struct {
		PromptTokens int `json:"prompt_tokens,omitempty"`
		TotalTokens  int `json:"total_tokens,omitempty"`
	} `json:"usage,omitempty"`
}

type moduleOpenAIData struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding []float32       `json:"embedding"`
	Error     *openAIAPIError `json:"error,omitempty"`
}

type openAIAPIError struct {
	Message string         `json:"message"`
	Type    string         `json:"type"`
	Param   string         `json:"param"`
	Code    openAICodeWire `json:"code"`
}

type openAICodeWire string

// UnmarshalJSON is openAICode's: a number or a string (null reads as "").
func (c *openAICodeWire) UnmarshalJSON(data []byte) error {
	if n, err := strconv.Atoi(string(data)); err == nil {
		*c = openAICodeWire(strconv.Itoa(n))
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*c = openAICodeWire(s)
	return nil
}

// moduleFixture returns testdata/weaviate/name.
func moduleFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "weaviate", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

func int64p(n int64) *int64 { return &n }

// moduleFixtures are the fixtures and the module structs they encode.
var moduleFixtures = map[string]any{
	"t2v-vectors-passage.json": t2vRequest{Text: "The cat sat on the mat.",
		Config: t2vRequestConfig{PoolingStrategy: "masked_mean", TaskType: "passage"}},
	"t2v-vectors-query-dimensions.json": t2vRequest{Text: "where do cats sit",
		Config: t2vRequestConfig{PoolingStrategy: "masked_mean", TaskType: "query", Dimensions: int64p(4)}},
	"reranker-transformers-rerank.json": rtRankInput{Query: "cat dog", Documents: rerankDocs},
	"reranker-cohere-rerank.json":       cohereRankInput{Documents: rerankDocs, Query: "cat dog", Model: "rerank-v3.5"},
	"text2vec-openai-3-small.json": openAIEmbeddingsRequest{Input: []string{"The cat sat on the mat.", "Dogs chase cats."},
		Model: "text-embedding-3-small", Dimensions: int64p(1536)},
	"text2vec-openai-ada-002.json": openAIEmbeddingsRequest{Input: []string{"The cat sat on the mat.", "Dogs chase cats."},
		Model: "text-embedding-ada-002"},
}

// TestModuleFixturesAreTheModulesWire: each fixture is exactly what the
// module's struct marshals to (encoding/json, as the modules encode).
func TestModuleFixturesAreTheModulesWire(t *testing.T) {
	for name, v := range moduleFixtures {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := moduleFixture(t, name); !bytes.Equal(got, want) {
			t.Errorf("testdata/weaviate/%s is\n%s\nthe module's struct encodes to\n%s", name, got, want)
		}
	}
}

// moduleRequest sends body as a module does: method, URL, only the
// headers given (the transformers modules set none, not even
// Content-Type).
func moduleRequest(t *testing.T, ts *testServer, method, path string, header map[string]string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// bearer is the headers Weaviate's API modules send (reranker-cohere's,
// text2vec-openai's).
func bearer(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json", "Request-Source": "unspecified:weaviate"}
}
