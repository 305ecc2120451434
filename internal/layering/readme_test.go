package layering_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// moduleRoot is the module's root, relative to this package's directory
// (where go test runs).
const moduleRoot = "../.."

// readmeLayout returns the package directories the README's Layout table
// names: every backticked path in the first column of the table under
// "## Layout", without its trailing slash, with the line it is on.
func readmeLayout(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(moduleRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := regexp.MustCompile("`([^`]+)`")
	named := map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Layout"
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(line, "|")
			if len(cells) < 3 {
				continue
			}
			for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
				named[strings.TrimSuffix(m[1], "/")] = n
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(named) == 0 {
		t.Fatal(`README.md has no "## Layout" table naming packages`)
	}
	return named
}

// packageDirs returns every directory of the module that holds .go files,
// relative to the root with forward slashes: not under testdata, not in a
// directory the go command ignores (a name starting with "." or "_"), not
// in a nested module.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(moduleRoot, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") && rel != d.Name() {
			if dir := filepath.ToSlash(filepath.Dir(rel)); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestReadmeLayout keeps the README's Layout table equal to the tree: every
// package directory (one holding .go files, outside testdata) is named in
// the table's package column, and every path named there is a package
// directory. A row may name several packages; a package is named by its
// own path (a parent's row does not cover it).
func TestReadmeLayout(t *testing.T) {
	named, dirs := readmeLayout(t), packageDirs(t)
	for _, dir := range dirs {
		if _, ok := named[dir]; !ok {
			t.Errorf("package %s/ is missing from the README's Layout table: add it to a row's package column", dir)
		}
	}
	for path, line := range named {
		if !slices.Contains(dirs, path) {
			t.Errorf("README.md:%d: the Layout table names %s/, which is not a package directory of the module", line, path)
		}
	}
}
