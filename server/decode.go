package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

// limits are the per-request caps the decoders enforce.
type limits struct {
	maxDocuments      int
	maxInputs         int
	maxIndexDocuments int
}

func (c Config) limits() limits {
	return limits{maxDocuments: c.MaxDocuments, maxInputs: c.MaxInputs, maxIndexDocuments: c.MaxIndexDocuments}
}

// decodeJSON decodes one JSON object from body into v; anything after it is
// an error. Type errors name the offending field; errors of a type's own
// UnmarshalJSON (engine.Request's budget_ms range) are passed on as they
// read.
func decodeJSON(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return badRequest("request body is empty; want a JSON object")
	}
	if trimmed[0] != '{' {
		return badRequest("request body must be a JSON object")
	}
	if !utf8.Valid(trimmed) {
		// encoding/json would replace the bad bytes with U+FFFD, so that
		// texts, token offsets and stored documents differ from what the
		// client sent; JSON text is UTF-8 (RFC 8259).
		return badRequest("request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest("field %q: got JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type.String()))
		}
		var ae *apiError
		if errors.As(err, &ae) {
			return ae
		}
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			return badRequest("malformed JSON: %v", err)
		}
		return badRequest("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("malformed JSON: unexpected data after the request object")
	}
	return nil
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case goType == "string":
		return "string"
	case goType == "bool":
		return "boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "uint"):
		return "number"
	default:
		return "object"
	}
}

// stringOrList is a JSON string or array of strings.
type stringOrList struct {
	vals   []string
	single bool
	set    bool
}

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	s.set = true
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return badRequest("malformed string: %v", err)
		}
		s.vals, s.single = []string{v}, true
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var raw []json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return badRequest("malformed array: %v", err)
		}
		s.vals = make([]string, len(raw))
		for i, r := range raw {
			if err := json.Unmarshal(r, &s.vals[i]); err != nil {
				return badRequest("item %d: want a string (token-id inputs are not supported)", i)
			}
		}
		return nil
	}
	if string(b) == "null" {
		s.set = false
		return nil
	}
	return badRequest("want a string or an array of strings, got %.20s", b)
}

// rerankDoc is a rerank document: a string or an object with "text".
type rerankDoc string

func (d *rerankDoc) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return badRequest("malformed document string: %v", err)
		}
		*d = rerankDoc(s)
		return nil
	}
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return badRequest("document object: %v", err)
		}
		if o.Text == nil {
			return badRequest("document object must have a string field \"text\"")
		}
		*d = rerankDoc(*o.Text)
		return nil
	}
	return badRequest("each document must be a string or an object {\"text\": ...}")
}

// rerankRequest is a decoded rerank call in either shape.
type rerankRequest struct {
	Model string
	Query string
	Docs  []string
	// TopN is how many results to return; 0 means all.
	TopN int
	// ReturnDocuments is nil when the request did not say.
	ReturnDocuments *bool
	// MaxTokensPerDoc truncates each document first when > 0.
	MaxTokensPerDoc int
	// TEI marks the text-embeddings-inference shape ({query, texts}).
	TEI        bool
	RawScores  bool
	ReturnText bool
	Truncate   bool
	// Chunking scores long documents in windows (zero: truncate).
	Chunking models.Chunking

	// served is the reranker Model names, set by the endpoint's authorize.
	served *rerankModel
	// dialect is the API the body speaks, once it decoded as a JSON
	// object (apiTEI with "texts", else apiCohere; apiHybrank before):
	// its errors take that API's shape.
	dialect api
}

type rerankWire struct {
	Model           string      `json:"model"`
	Query           *string     `json:"query"`
	Documents       []rerankDoc `json:"documents"`
	TopN            *int        `json:"top_n"`
	ReturnDocuments *bool       `json:"return_documents"`
	MaxTokensPerDoc *int        `json:"max_tokens_per_doc"`
	// TEI fields.
	Texts      []rerankDoc `json:"texts"`
	RawScores  bool        `json:"raw_scores"`
	ReturnText bool        `json:"return_text"`
	Truncate   *bool       `json:"truncate"`
	// Chunking is hybrank's extension of every rerank shape.
	Chunking *models.Chunking `json:"chunking"`
}

// decodeRerank decodes a Cohere/Jina rerank body, or TEI's when it has
// "texts". Errors are *apiError (400, or 413 over the document limit).
func decodeRerank(body []byte, lim limits) (rerankRequest, error) {
	var w rerankWire
	if err := decodeJSON(body, &w); err != nil {
		return rerankRequest{}, err
	}
	r := rerankRequest{Model: w.Model, ReturnDocuments: w.ReturnDocuments, dialect: apiCohere}
	if w.Texts != nil {
		r.dialect = apiTEI
	}
	if w.Query == nil {
		return r, badRequest("field \"query\" is required")
	}
	if strings.TrimSpace(*w.Query) == "" {
		return r, badRequest("field \"query\" must not be empty")
	}
	r.Query = *w.Query
	docs := w.Documents
	if w.Texts != nil {
		if w.Documents != nil {
			return r, badRequest("send either \"documents\" or \"texts\", not both")
		}
		r.TEI, r.RawScores, r.ReturnText = true, w.RawScores, w.ReturnText
		r.Truncate = w.Truncate != nil && *w.Truncate
		docs = w.Texts
	}
	if len(docs) == 0 {
		return r, badRequest("field \"documents\" must be a non-empty array")
	}
	if len(docs) > lim.maxDocuments {
		return r, tooLarge("%d documents in one request; the limit is %d", len(docs), lim.maxDocuments)
	}
	r.Docs = make([]string, len(docs))
	for i, d := range docs {
		r.Docs[i] = string(d)
	}
	if w.TopN != nil {
		if *w.TopN < 1 {
			return r, badRequest("field \"top_n\" must be >= 1")
		}
		r.TopN = min(*w.TopN, len(docs))
	}
	if w.MaxTokensPerDoc != nil {
		if *w.MaxTokensPerDoc < 1 {
			return r, badRequest("field \"max_tokens_per_doc\" must be >= 1")
		}
		r.MaxTokensPerDoc = *w.MaxTokensPerDoc
	}
	if w.Chunking != nil {
		if err := w.Chunking.Validate(); err != nil {
			return r, badRequest("field \"chunking\": %v", err)
		}
		r.Chunking = *w.Chunking
	}
	return r, nil
}

// embedRequest is a decoded embedding call (TEI or OpenAI shape).
type embedRequest struct {
	Model     string
	Inputs    []string
	Single    bool
	Normalize bool
	Truncate  bool
	// Base64 asks for little-endian float32 bytes, base64 encoded (OpenAI).
	Base64 bool
	// Dimensions truncates vectors to this length when > 0 (OpenAI).
	Dimensions int
}

func checkInputs(in stringOrList, field string, lim limits) error {
	if !in.set {
		return badRequest("field %q is required", field)
	}
	if len(in.vals) == 0 {
		return badRequest("field %q must not be empty", field)
	}
	if len(in.vals) > lim.maxInputs {
		return tooLarge("%d inputs in one request; the limit is %d", len(in.vals), lim.maxInputs)
	}
	for i, s := range in.vals {
		if s == "" {
			return badRequest("%s[%d] is an empty string", field, i)
		}
	}
	return nil
}

// decodeEmbed decodes TEI's POST /embed body {inputs, normalize, truncate}.
func decodeEmbed(body []byte, lim limits) (embedRequest, error) {
	var w struct {
		Inputs    stringOrList `json:"inputs"`
		Normalize *bool        `json:"normalize"`
		Truncate  *bool        `json:"truncate"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return embedRequest{}, err
	}
	if err := checkInputs(w.Inputs, "inputs", lim); err != nil {
		return embedRequest{}, err
	}
	return embedRequest{
		Inputs:    w.Inputs.vals,
		Single:    w.Inputs.single,
		Normalize: w.Normalize == nil || *w.Normalize,
		Truncate:  w.Truncate != nil && *w.Truncate,
	}, nil
}

// decodeOpenAIEmbed decodes OpenAI's POST /v1/embeddings body.
func decodeOpenAIEmbed(body []byte, lim limits) (embedRequest, error) {
	var w struct {
		Input          stringOrList `json:"input"`
		Model          string       `json:"model"`
		EncodingFormat string       `json:"encoding_format"`
		Dimensions     *int         `json:"dimensions"`
		User           string       `json:"user"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return embedRequest{}, err
	}
	if err := checkInputs(w.Input, "input", lim); err != nil {
		return embedRequest{}, err
	}
	r := embedRequest{Model: w.Model, Inputs: w.Input.vals, Single: w.Input.single, Normalize: true, Truncate: true}
	switch w.EncodingFormat {
	case "", "float":
	case "base64":
		r.Base64 = true
	default:
		return r, badRequest("field \"encoding_format\" must be \"float\" or \"base64\", got %q", w.EncodingFormat)
	}
	if w.Dimensions != nil {
		if *w.Dimensions < 1 {
			return r, badRequest("field \"dimensions\" must be >= 1")
		}
		r.Dimensions = *w.Dimensions
	}
	return r, nil
}

// decodeSearch decodes POST /search: the JSON of engine.Request, checked
// by its Validate so that a bad field is a 400 before any work.
func decodeSearch(body []byte, _ limits) (engine.Request, error) {
	var r engine.Request
	if err := decodeJSON(body, &r); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, badRequest("%v", err)
	}
	return r, nil
}

// decodeDocuments decodes POST /documents {documents, delete} or, when
// del is set, DELETE /documents {ids}, into an unscoped batch. Every
// document must pass engine.Document.Validate; DocumentBatch.Validate
// runs once the handler has settled the tenants.
func decodeDocuments(body []byte, lim limits, del bool) (DocumentBatch, error) {
	var w struct {
		Documents []engine.Document `json:"documents"`
		Delete    []string          `json:"delete"`
		IDs       []string          `json:"ids"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return DocumentBatch{}, err
	}
	r := DocumentBatch{Upserts: w.Documents, Deletes: w.Delete}
	if del {
		if w.Documents != nil || w.Delete != nil {
			return r, badRequest("DELETE /documents takes {\"ids\": [...]} only")
		}
		r = DocumentBatch{Deletes: w.IDs}
	} else if w.IDs != nil {
		return r, badRequest("POST /documents takes {\"documents\": [...], \"delete\": [...]}; use DELETE /documents for {\"ids\"}")
	}
	n := len(r.Upserts) + len(r.Deletes)
	if n == 0 {
		return r, badRequest("nothing to do: no documents and no ids")
	}
	if n > lim.maxIndexDocuments {
		return r, tooLarge("%d documents and ids in one request; the limit is %d", n, lim.maxIndexDocuments)
	}
	// The documents and IDs themselves are checked by DocumentBatch.Validate
	// (the engine's validation) once the tenants are final.
	return r, nil
}

// tokenizeRequest is a decoded /tokenize call.
type tokenizeRequest struct {
	Inputs []string
	// AddSpecial adds the model's special tokens ([CLS], [SEP]); TEI's
	// add_special_tokens, true when absent.
	AddSpecial bool
}

// decodeTokenize decodes TEI's POST /tokenize body {inputs, add_special_tokens}.
func decodeTokenize(body []byte, lim limits) (tokenizeRequest, error) {
	var w struct {
		Inputs           stringOrList `json:"inputs"`
		AddSpecialTokens *bool        `json:"add_special_tokens"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return tokenizeRequest{}, err
	}
	if err := checkInputs(w.Inputs, "inputs", lim); err != nil {
		return tokenizeRequest{}, err
	}
	return tokenizeRequest{Inputs: w.Inputs.vals, AddSpecial: w.AddSpecialTokens == nil || *w.AddSpecialTokens}, nil
}
