package queue

import (
	"errors"
	"fmt"
	"time"

	"github.com/hybrank/hybrank/models"
)

// Errors of a queue's calls.
var (
	// ErrFull means the queue holds MaxQueueItems items already.
	ErrFull = errors.New("queue: full")
	// ErrClosed means the queue was closed.
	ErrClosed = errors.New("queue: closed")
	// ErrMismatch means the model returned another number of results than
	// it was given inputs.
	ErrMismatch = errors.New("queue: model returned a wrong number of results")
)

// Config tunes one model's queue (the server's config file has one for the
// rerankers, "rerank", and one for the embedder, "embed").
type Config struct {
	// Enabled merges work from concurrent calls into shared model calls.
	// When false each call goes straight to the model on its own (still
	// at most Workers at once).
	Enabled bool `json:"enabled"`
	// MaxTokens caps the estimated tokens in one model call (sum over items).
	// One item larger than the cap still runs, alone.
	MaxTokens int `json:"max_tokens"`
	// MaxItems caps the items (pairs or texts) in one model call.
	MaxItems int `json:"max_items"`
	// MaxWait is how long the queue waits for more work once a batch has
	// been started and is not yet full.
	MaxWait models.Duration `json:"max_wait"`
	// ChunkItems is how many items one call contributes to a batch per
	// round-robin turn, so one huge call cannot starve small ones.
	ChunkItems int `json:"chunk_items"`
	// MaxQueueItems caps the items waiting in the queue; more is refused
	// with ErrFull (a call that arrives on an empty queue is always
	// admitted).
	MaxQueueItems int `json:"max_queue_items"`
	// Workers is how many model calls may run at once (both modes). One
	// batch at a time, as TEI does, is the default: on CPU two concurrent
	// runtime calls contend for the same cores. Raise it to the model's
	// session pool size when the runtime has capacity to spare (GPU).
	Workers int `json:"workers"`
}

// DefaultConfig returns the configuration cmd/serve starts from.
func DefaultConfig() Config {
	return Config{
		Enabled:       true,
		MaxTokens:     16384,
		MaxItems:      64,
		MaxWait:       models.Duration(2 * time.Millisecond),
		ChunkItems:    16,
		MaxQueueItems: 65536,
		Workers:       1,
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error { return c.ValidateAs("queue") }

// ValidateAs is Validate with the fields named under name ("rerank",
// "embed"), for a config file holding several.
func (c Config) ValidateAs(name string) error {
	var errs []error
	if c.MaxTokens <= 0 {
		errs = append(errs, fmt.Errorf("%s.max_tokens must be > 0", name))
	}
	if c.MaxItems <= 0 {
		errs = append(errs, fmt.Errorf("%s.max_items must be > 0", name))
	}
	if c.MaxWait < 0 || time.Duration(c.MaxWait) > time.Second {
		errs = append(errs, fmt.Errorf("%s.max_wait must be in [0, 1s]", name))
	}
	if c.ChunkItems <= 0 {
		errs = append(errs, fmt.Errorf("%s.chunk_items must be > 0", name))
	}
	if c.MaxQueueItems <= 0 {
		errs = append(errs, fmt.Errorf("%s.max_queue_items must be > 0", name))
	}
	if c.Workers <= 0 {
		errs = append(errs, fmt.Errorf("%s.workers must be > 0", name))
	}
	return errors.Join(errs...)
}
