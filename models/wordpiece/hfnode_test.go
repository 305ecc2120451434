package wordpiece_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
)

// needNodeBin returns the node binary, or skips (fails in CI) when it is
// missing.
func needNodeBin(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if testenv.CI() {
			t.Fatalf("node not found: %v", err)
		}
		t.Skipf("node not found (needed to run the HF tokenizers addon): %v", err)
	}
	return node
}

// runNodeScript runs a script from testdata with args and fails the test
// with its output on error.
func runNodeScript(t testing.TB, node, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", script)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	return out
}
