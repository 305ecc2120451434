package wordpiece

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
)

// needNode returns the node binary and the HF tokenizers addon folder, or
// skips (fails in CI) when either is missing.
func needNode(t testing.TB) (node, addon string) {
	t.Helper()
	addon = testenv.NeedHFTokenizers(t)
	addon = filepath.Dir(addon)
	node, err := exec.LookPath("node")
	if err != nil {
		if testenv.CI() {
			t.Fatalf("node not found: %v", err)
		}
		t.Skipf("node not found (needed to run the HF tokenizers addon): %v", err)
	}
	abs, err := filepath.Abs(addon)
	if err != nil {
		t.Fatal(err)
	}
	return node, abs
}

// runNode runs a script from testdata with args and fails the test with its
// output on error.
func runNode(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	node, _ := needNode(t)
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", script)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	return out
}
