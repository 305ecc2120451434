package ort_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
)

// readmeLibrary returns the statements of the README's library example:
// the go block of its "## Library" section after the import block.
func readmeLibrary(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(artifacts.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	section, block, imports := false, false, false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Library"
		case section && line == "```go":
			block = true
		case block && line == "```":
			return out
		case block && line == "import (":
			imports = true
		case block && imports:
			imports = line != ")"
		case block && (len(out) > 0 || line != ""):
			out = append(out, line)
		}
	}
	t.Fatal("README.md has no go block in its Library section")
	return nil
}

// exampleLibrary returns the lines of Example_library between its README
// markers, one tab of indentation removed.
func exampleLibrary(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(b), "\t// README begin\n")
	body, _, ok2 := strings.Cut(body, "\t// README end\n")
	if !ok || !ok2 {
		t.Fatal("readme_example_test.go lacks its README markers")
	}
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	return lines
}

// TestReadmeLibraryExample keeps the README's library example identical to
// Example_library and runs it: generated balanced cross-encoder weights in
// $HYBRANK_MODELS, the real all-MiniLM-L6-v2 when make models has fetched
// it (else a generated embedder), an index directory in a temporary
// working directory. It checks the example's output: both documents found
// (b through the link from a when nothing else brings it) and passages
// packed.
func TestReadmeLibraryExample(t *testing.T) {
	readme, example := readmeLibrary(t), exampleLibrary(t)
	if strings.Join(readme, "\n") != strings.Join(example, "\n") {
		for i := range max(len(readme), len(example)) {
			var r, e string
			if i < len(readme) {
				r = readme[i]
			}
			if i < len(example) {
				e = example[i]
			}
			if r != e {
				t.Fatalf("README library example differs from Example_library at line %d:\nREADME:  %q\nexample: %q", i+1, r, e)
			}
		}
	}
	if testing.Short() {
		t.Skip("loads two models")
	}
	testenv.NeedORT(t)
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	root := t.TempDir()
	if err := bertgen.Write(filepath.Join(root, models.ProfileBalanced), bertgen.MiniLML6CrossEncoder(), vocab, tok); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2")
	if _, err := os.Stat(filepath.Join(real, "config.json")); err == nil {
		t.Setenv(models.RealModelsEnv, artifacts.RealModels())
	} else {
		t.Setenv(models.RealModelsEnv, "")
		if err := bertgen.Write(filepath.Join(root, models.ProfileEmbed), bertgen.MiniLML6Embedder(), vocab, tok); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(models.ModelsEnv, root)
	t.Chdir(t.TempDir())

	out := captureStdout(t, Example_library)
	t.Logf("output:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	found := map[string]bool{}
	for _, l := range lines[:len(lines)-1] {
		if f := strings.Fields(l); len(f) == 3 {
			found[f[1]] = true
		}
	}
	if !found["a"] || !found["b"] || len(lines) != 3 {
		t.Errorf("want hits a and b and a passages line, got %q", lines)
	}
	if last := lines[len(lines)-1]; last == "0 passages" || !strings.HasSuffix(last, " passages") {
		t.Errorf("passages line %q", last)
	}
	if _, err := os.Stat(filepath.Join("index-dir", "LOCK")); err != nil {
		t.Errorf("no index written in the working directory: %v", err)
	}
}

// captureStdout runs f with os.Stdout redirected and returns what it wrote.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	old := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = old }()
	f()
	os.Stdout = old
	w.Close()
	return <-done
}
