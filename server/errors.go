package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/engine"
)

// Errors returned by the server's building blocks. statusOf turns them
// into JSON errors (in the shape of the request's API, see api) with the
// status noted.
var (
	// ErrConfig wraps every problem Config.Validate finds.
	ErrConfig = errors.New("server: invalid config")
	// ErrQueueFull means a batcher or the request limiter is at capacity
	// (429 with Retry-After).
	ErrQueueFull = errors.New("server: queue full")
	// ErrClosed means the server or batcher is shutting down (503).
	ErrClosed = errors.New("server: shutting down")
	// ErrNotConfigured means the route's backend was not given (503).
	ErrNotConfigured = errors.New("server: backend not configured")
	// ErrForbidden means the request touched another tenant's data (403).
	// DocumentStore implementations wrap it.
	ErrForbidden = errors.New("server: forbidden")
	// ErrInvalid means a backend rejected the request as invalid (400).
	// Searcher and DocumentStore implementations wrap it.
	ErrInvalid = errors.New("server: invalid request")
	// ErrBackend means the model or engine failed on valid input (500).
	ErrBackend = errors.New("server: backend failed")
)

// Error types carried in the "type" field of a JSON error.
const (
	TypeInvalidRequest   = "invalid_request_error"    // 400
	TypeUnauthorized     = "authentication_error"     // 401
	TypeForbidden        = "permission_error"         // 403
	TypeNotFound         = "not_found_error"          // 404
	TypeMethodNotAllowed = "method_not_allowed_error" // 405, with an Allow header
	TypeTooLarge         = "payload_too_large"        // 413
	TypeOverloaded       = "overloaded_error"         // 429
	TypeInternal         = "backend_error"            // 500
	TypeUnavailable      = "unavailable_error"        // 503
	TypeTimeout          = "timeout_error"            // 504
)

// apiError is an error with the HTTP status and JSON type to answer with.
type apiError struct {
	status int
	typ    string
	msg    string
	// param names the request field at fault, if one is (OpenAI's
	// "param": "model", "dimensions").
	param string
	// retryAfter, in seconds, is sent as Retry-After when > 0.
	retryAfter int
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.typ, e.msg) }

func badRequest(format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: TypeInvalidRequest, msg: fmt.Sprintf(format, a...)}
}

func tooLarge(format string, a ...any) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: TypeTooLarge, msg: fmt.Sprintf(format, a...)}
}

// tooManyBodyBytes is the 429 of a request whose body would pass
// MaxInflightBodyBytes.
func tooManyBodyBytes(inFlight, limit int64) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: TypeOverloaded, retryAfter: 1,
		msg: fmt.Sprintf("server overloaded: %d bytes of request bodies in flight, max_inflight_body_bytes is %d; retry later", inFlight, limit)}
}

// nearMemoryLimit is the 503 of a request refused above MemoryHighWater.
func nearMemoryLimit(used, limit int64, highWater float64) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: TypeUnavailable, retryAfter: 1,
		msg: fmt.Sprintf("server is near its memory limit (%d MiB used of %d MiB, memory_high_water %.2f); retry later", used>>20, limit>>20, highWater)}
}

// api is the wire dialect of a request, which gives its errors their
// shape: each API's clients read the error text where that API puts it
// (Weaviate's reranker-cohere reads a top-level "message", its
// text2vec-openai "error.message", its text2vec-transformers and
// reranker-transformers a top-level "error" string, text2vec-jinaai and
// Jina's clients "detail"). A route's path gives its API (pathAPI); the
// rerank routes, which take TEI's body and Cohere's alike, switch to the
// body's once it is decoded.
type api uint8

const (
	// apiHybrank is hybrank's own routes (search, documents, health,
	// unknown routes): {"error": {"message", "type"}}.
	apiHybrank api = iota
	// apiOpenAI is /v1/embeddings, /embeddings (OpenAI's path, which
	// Jina's embeddings API shares) and /v1/models: {"error": {"message",
	// "type", "param", "code"}, "detail"}; Jina's clients read "detail".
	apiOpenAI
	// apiCohere is Cohere's (v1 and v2) and Jina's rerank bodies on
	// /v1/rerank, /v2/rerank and /rerank: {"message", "detail", "type"}
	// (Cohere's clients read "message", Jina's "detail"; the two APIs
	// share /v1/rerank and their bodies do not tell them apart).
	apiCohere
	// apiTEI is text-embeddings-inference's routes and bodies (/rerank,
	// /embed, /tokenize, and TEI's {query, texts} on any rerank route):
	// {"error", "error_type"}, error_type in TEI's words (Validation,
	// Overloaded, Backend, Unhealthy) where TEI has one, else the type.
	apiTEI
	// apiWeaviate is the Weaviate inference protocols (under
	// WeaviateConfig.Prefix): {"error"}, as their Python containers answer.
	apiWeaviate
)

// pathAPI is the API of a request to path before its body is read: the
// one owner of which route speaks which dialect.
func (s *Server) pathAPI(path string) api {
	switch path {
	case "/v1/embeddings", "/embeddings", "/v1/models":
		return apiOpenAI
	case "/v1/rerank", "/v2/rerank":
		return apiCohere
	case "/rerank", "/embed", "/tokenize":
		return apiTEI
	}
	if p := s.cfg.Weaviate.Prefix; p != "" && (path == p || strings.HasPrefix(path, p+"/")) {
		return apiWeaviate
	}
	return apiHybrank
}

// reqState is what the route wrappers keep for one request, reached from
// its context: the API whose error shape it is answered in and, on the
// routes with rate-limit headers, the model whose admission the headers
// report. Only the request's own goroutine touches it.
type reqState struct {
	api  api
	load *modelLoad
}

type reqStateKey struct{}

// withState gives every request to h a reqState of API a.
func withState(a api, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reqStateKey{}, &reqState{api: a})))
	})
}

// stateOf returns r's reqState, or nil (a request that no route wrapped:
// tests' direct calls, r nil).
func stateOf(r *http.Request) *reqState {
	if r == nil {
		return nil
	}
	st, _ := r.Context().Value(reqStateKey{}).(*reqState)
	return st
}

// setAPI switches r's error shape to a (a rerank body's own API).
func setAPI(r *http.Request, a api) {
	if st := stateOf(r); st != nil {
		st.api = a
	}
}

// errorBody is hybrank's own error shape (apiHybrank).
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// openAIErrorBody is OpenAI's error shape, with Jina's detail beside it.
type openAIErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
	Detail string `json:"detail"`
}

// cohereErrorBody is Cohere's error shape ("message"), with Jina's
// ("detail") and the error's type.
type cohereErrorBody struct {
	Message string `json:"message"`
	Detail  string `json:"detail"`
	Type    string `json:"type"`
}

// teiErrorBody is text-embeddings-inference's error shape.
type teiErrorBody struct {
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
}

// weaviateErrorBody is the Weaviate inference containers' error shape.
type weaviateErrorBody struct {
	Error string `json:"error"`
}

// teiErrorType is TEI's error_type for an error of status and type typ:
// TEI's own word where it has one for the status, else typ.
func teiErrorType(status int, typ string) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "Validation"
	case http.StatusTooManyRequests:
		return "Overloaded"
	case http.StatusInternalServerError:
		return "Backend"
	case http.StatusServiceUnavailable:
		return "Unhealthy"
	}
	return typ
}

// openAICode is OpenAI's machine-readable "code" of an error, when it has
// one for it.
func openAICode(ae *apiError) *string {
	var c string
	switch {
	case ae.status == http.StatusUnauthorized:
		c = "invalid_api_key"
	case ae.status == http.StatusNotFound && ae.param == "model":
		c = "model_not_found"
	case ae.status == http.StatusTooManyRequests:
		c = "rate_limit_exceeded"
	default:
		return nil
	}
	return &c
}

// errorJSON is ae in the shape of API a.
func errorJSON(a api, ae *apiError) any {
	switch a {
	case apiOpenAI:
		var b openAIErrorBody
		b.Error.Message, b.Error.Type, b.Error.Code, b.Detail = ae.msg, ae.typ, openAICode(ae), ae.msg
		if ae.param != "" {
			b.Error.Param = &ae.param
		}
		return b
	case apiCohere:
		return cohereErrorBody{Message: ae.msg, Detail: ae.msg, Type: ae.typ}
	case apiTEI:
		return teiErrorBody{Error: ae.msg, ErrorType: teiErrorType(ae.status, ae.typ)}
	case apiWeaviate:
		return weaviateErrorBody{Error: ae.msg}
	}
	return errorBody{Error: errorDetail{Message: ae.msg, Type: ae.typ}}
}

// statusOf is the one mapping from an error to its HTTP answer; every
// handler returns its errors to writeError, which asks it. Checked in
// order: an *apiError (decoders, limits, auth, unknown model) answers as it
// says; context.DeadlineExceeded is 504 and context.Canceled 499 (the
// client went away); then the documented error variables with the status
// noted on each, and engine.ErrReadOnly (503, no Retry-After: only a
// restart recovers); anything else is a backend failure, 500.
func statusOf(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusGatewayTimeout, typ: TypeTimeout,
			msg: "the request ran past its deadline (request_timeout) and was abandoned"}
	case errors.Is(err, context.Canceled):
		return &apiError{status: 499, typ: TypeTimeout, msg: "the client went away"}
	case errors.Is(err, ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, typ: TypeOverloaded,
			msg: "server overloaded: queue full, retry later", retryAfter: 1}
	case errors.Is(err, ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, typ: TypeUnavailable, msg: "server is shutting down"}
	case errors.Is(err, ErrForbidden):
		return &apiError{status: http.StatusForbidden, typ: TypeForbidden, msg: err.Error()}
	case errors.Is(err, ErrInvalid):
		return &apiError{status: http.StatusBadRequest, typ: TypeInvalidRequest, msg: err.Error()}
	case errors.Is(err, engine.ErrReadOnly):
		return &apiError{status: http.StatusServiceUnavailable, typ: TypeUnavailable,
			msg: "the index is read-only and acknowledges no more writes until the server is restarted " +
				"(free disk space or fix the disk, then restart; searches keep working): " + err.Error()}
	case errors.Is(err, ErrNotConfigured):
		return &apiError{status: http.StatusServiceUnavailable, typ: TypeUnavailable, msg: err.Error()}
	default:
		return &apiError{status: http.StatusInternalServerError, typ: TypeInternal, msg: err.Error()}
	}
}

// writeError answers err as statusOf maps it, in the shape of r's API
// (hybrank's own when r has none), with Retry-After when the answer says
// to retry. It is the one writer of error responses.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := statusOf(err)
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	a := apiHybrank
	if st := stateOf(r); st != nil {
		a = st.api
	}
	b, _ := json.Marshal(errorJSON(a, ae))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(b, '\n'))
}
