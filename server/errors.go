package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models/queue"
)

// Errors returned by the server's building blocks. statusOf turns them
// into JSON errors {"error": {"message", "type"}} with the status noted.
var (
	// ErrConfig wraps every problem Config.Validate finds.
	ErrConfig = errors.New("server: invalid config")
	// ErrQueueFull means the request limiter is at capacity (429 with
	// Retry-After), as queue.ErrFull means a model's queue is.
	ErrQueueFull = errors.New("server: queue full")
	// ErrClosed means the server is shutting down (503), as
	// queue.ErrClosed means a model's queue is.
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

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
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
	case errors.Is(err, ErrQueueFull), errors.Is(err, queue.ErrFull):
		return &apiError{status: http.StatusTooManyRequests, typ: TypeOverloaded,
			msg: "server overloaded: queue full, retry later", retryAfter: 1}
	case errors.Is(err, ErrClosed), errors.Is(err, queue.ErrClosed):
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

// writeError answers err as statusOf maps it, with Retry-After when the
// answer says to retry.
func writeError(w http.ResponseWriter, err error) {
	ae := statusOf(err)
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	b, _ := json.Marshal(errorBody{Error: errorDetail{Message: ae.msg, Type: ae.typ}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(b, '\n'))
}
