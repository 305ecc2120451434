// Package configtest runs the Validate tables of the benchmark drivers'
// tests: each case changes a valid base config and says whether the result
// must validate; a config that must not is rejected with
// bench.ErrBadOption. For tests only.
package configtest

import (
	"errors"
	"testing"

	"github.com/hybrank/hybrank/bench"
)

// Case is one row of a Validate table; build it with OK or Bad.
type Case[C any] struct {
	name string
	mod  func(*C)
	ok   bool
}

// OK is a case whose config must validate.
func OK[C any](name string, mod func(*C)) Case[C] { return Case[C]{name, mod, true} }

// Bad is a case whose config must fail with bench.ErrBadOption.
func Bad[C any](name string, mod func(*C)) Case[C] { return Case[C]{name, mod, false} }

// Check runs each case as a subtest on a copy of base.
func Check[C interface{ Validate() error }](t *testing.T, base C, cases ...Case[C]) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mod(&c)
			err := c.Validate()
			if (err == nil) != tt.ok || err != nil && !errors.Is(err, bench.ErrBadOption) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
