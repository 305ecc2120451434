package server

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors returned by the server's building blocks. HTTP handlers turn them
// into JSON errors {"error": {"message", "type"}} with the status noted.
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
	TypeInvalidRequest = "invalid_request_error" // 400
	TypeUnauthorized   = "authentication_error"  // 401
	TypeForbidden      = "permission_error"      // 403
	TypeNotFound       = "not_found_error"       // 404
	TypeTooLarge       = "payload_too_large"     // 413
	TypeOverloaded     = "overloaded_error"      // 429
	TypeInternal       = "backend_error"         // 500
	TypeUnavailable    = "unavailable_error"     // 503
	TypeTimeout        = "timeout_error"         // 504
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

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}
