//go:build !hftokenizers || !cgo

package hftok_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models/hftok"
)

// TestUnavailable: without the tag, Load fails with an error that tells
// the user how to get the library.
func TestUnavailable(t *testing.T) {
	if hftok.Available {
		t.Fatal("Available in a build without the hftokenizers tag")
	}
	_, err := hftok.Load("tokenizer.json")
	if !errors.Is(err, hftok.ErrUnavailable) {
		t.Fatalf("Load = %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"-tags hftokenizers", "make hftokenizers-rs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
