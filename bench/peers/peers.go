package peers

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/artifacts"
)

// scripts are the harness scripts of this folder, embedded so that the
// bench binary runs them from any working directory.
//
//go:embed *.py
var scripts embed.FS

// Exec runs the program name with args in dir with the environment env
// and returns what it wrote on stdout and stderr. A program that could
// not start or exited non-zero is an error (os/exec's: *exec.Error
// wrapping exec.ErrNotFound for a missing program, *exec.ExitError for a
// failure). Tests inject one to stand in for Python.
type Exec func(ctx context.Context, dir string, env []string, name string, args ...string) (stdout, stderr []byte, err error)

// Config says whether and how the peers run. The zero value is off.
type Config struct {
	// Enabled runs the peers beside hybrank.
	Enabled bool `json:"enabled"`
	// Python is the interpreter, a path or a name looked up on PATH
	// ("python3").
	Python string `json:"python,omitempty"`
	// Dir is the folder of the Python packages (make peers, HYBRANK_PEERS);
	// it goes on PYTHONPATH.
	Dir string `json:"dir,omitempty"`
	// Target is the make target that installs Dir, named in the errors:
	// "" is peers (HYBRANK_PEERS); InferenceConfig's is peers-weaviate
	// (HYBRANK_PEERS_WEAVIATE).
	Target string `json:"target,omitempty"`
	// Exec starts the interpreter; nil means os/exec.
	Exec Exec `json:"-"`
}

// DefaultConfig is python3 and the packages where `make peers` puts them
// (internal/artifacts), off.
func DefaultConfig() Config {
	return Config{Python: "python3", Dir: artifacts.Peers()}
}

// Detect is DefaultConfig, enabled when the packages are installed: the
// default of the drivers' --peers flags.
func Detect() Config {
	c := DefaultConfig()
	c.Enabled = c.Installed() == nil
	return c
}

// InferenceConfig is python3 and the packages where `make peers-weaviate`
// puts them (weaviate_inference.py's), enabled when they are installed.
func InferenceConfig() Config {
	c := Config{Python: "python3", Dir: artifacts.PeersWeaviate(), Target: "peers-weaviate"}
	c.Enabled = c.Installed() == nil
	return c
}

// howToInstall is the advice in the errors: the make target and the
// variable that points elsewhere.
func (c Config) howToInstall() string {
	t := cmp.Or(c.Target, "peers")
	return fmt.Sprintf("run `make %s` (or set HYBRANK_%s)", t, strings.ToUpper(strings.ReplaceAll(t, "-", "_")))
}

// Validate reports an enabled config without an interpreter or a package
// folder. It does not look at the file system (Installed does).
func (c Config) Validate() error {
	if c.Enabled && (c.Python == "" || c.Dir == "") {
		return fmt.Errorf("%w: peers: need a python interpreter and the packages folder (python %q, dir %q)", bench.ErrBadOption, c.Python, c.Dir)
	}
	return nil
}

// Installed returns nil when c.Dir holds a complete `make peers` (or
// c.Target) install,
// else an error wrapping ErrNotInstalled that says how to install.
func (c Config) Installed() error {
	if c.Dir == "" {
		return fmt.Errorf("%w: no packages folder; %s", ErrNotInstalled, c.howToInstall())
	}
	if _, err := os.Stat(filepath.Join(c.Dir, artifacts.PeersMarker)); err != nil {
		return fmt.Errorf("%w: no complete install in %s; %s", ErrNotInstalled, c.Dir, c.howToInstall())
	}
	return nil
}

// Runner runs the peer scripts. It holds only its Config, so it is safe
// for concurrent use (each call works in its own temporary folder), though
// concurrent peers disturb each other's timings.
type Runner struct {
	cfg Config
}

// New validates cfg and checks the install, so a driver fails before it
// measures anything rather than after; the errors wrap bench.ErrBadOption
// or ErrNotInstalled.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Installed(); err != nil {
		return nil, err
	}
	if cfg.Exec == nil {
		cfg.Exec = osExec
	}
	return &Runner{cfg: cfg}, nil
}

// NewSystem is a Runner of cfg.Python with the interpreter's own packages
// instead of a make peers install (cfg.Dir is ignored), for peers that come
// with a machine's image, such as PeerTorch on a GPU machine.
func NewSystem(cfg Config) (*Runner, error) {
	if cfg.Python == "" {
		return nil, fmt.Errorf("%w: peers: need a python interpreter", bench.ErrBadOption)
	}
	cfg.Dir = ""
	if cfg.Exec == nil {
		cfg.Exec = osExec
	}
	return &Runner{cfg: cfg}, nil
}

// workDir makes a temporary folder for one script run; the caller removes
// it.
func workDir() (string, error) {
	dir, err := os.MkdirTemp("", "hybrank-peer-")
	if err != nil {
		return "", fmt.Errorf("peers: %w", err)
	}
	return dir, nil
}

// Run runs script (a file of this folder, e.g. "bm25s_run.py") with args,
// from dir, and decodes the JSON object of the last line of its stdout
// that holds one into out. The script's raw output files are its
// arguments' business (paths under dir). A missing interpreter wraps
// ErrNoPython, a missing package ErrNotInstalled, output without a JSON
// line ErrOutput; other failures carry the end of the script's stderr.
func (r *Runner) Run(ctx context.Context, dir, script string, args []string, out any) error {
	if _, err := fs.Stat(scripts, script); err != nil {
		return fmt.Errorf("peers: unknown script %q: %w", script, err)
	}
	if err := writeScripts(dir); err != nil {
		return err
	}
	path := filepath.Join(dir, script)
	env, where := r.env()
	stdout, stderr, err := r.cfg.Exec(ctx, dir, env, r.cfg.Python, append([]string{path}, args...)...)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("peer %s: %w", script, ctx.Err())
		case notStarted(err):
			return fmt.Errorf("%w: %q (install python3, or set the peers' Python): %v", ErrNoPython, r.cfg.Python, err)
		case bytes.Contains(stderr, []byte("ModuleNotFoundError")) || bytes.Contains(stderr, []byte("No module named")):
			return fmt.Errorf("%w: %s: a package is missing from %s\n%s", ErrNotInstalled, script, where, tail(stderr))
		}
		return fmt.Errorf("peer %s: %w\n%s", script, err, tail(stderr))
	}
	line := lastJSONLine(stdout)
	if line == nil {
		return fmt.Errorf("%w: %s printed no JSON line\n%s", ErrOutput, script, tail(stdout))
	}
	if err := json.Unmarshal(line, out); err != nil {
		return fmt.Errorf("%w: %s: %v: %s", ErrOutput, script, err, line)
	}
	return nil
}

// writeScripts writes every script of this folder into dir: a script
// imports the shared modules (rerank_common.py, bert_weights.py) from its
// own folder.
func writeScripts(dir string) error {
	files, err := fs.ReadDir(scripts, ".")
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	for _, f := range files {
		src, err := scripts.ReadFile(f.Name())
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f.Name()), src, 0o600)
		}
		if err != nil {
			return fmt.Errorf("peers: %w", err)
		}
	}
	return nil
}

// env is a script's environment, and where its packages come from (for
// the errors): the packages folder on PYTHONPATH, set last, when the
// Runner has one.
func (r *Runner) env() (env []string, where string) {
	env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // nothing written into the shared folder
	where = "the interpreter's environment"
	if r.cfg.Dir != "" {
		env = append(env, "PYTHONPATH="+r.cfg.Dir, "PYTHONNOUSERSITE=1") // the pinned packages, not the user's
		where = r.cfg.Dir + "; " + r.cfg.howToInstall()
	}
	return env, where
}

// notStarted reports whether err says the interpreter does not exist: not
// on PATH, or no file at the path given.
func notStarted(err error) bool {
	var exit *exec.ExitError
	return !errors.As(err, &exit) && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist))
}

// lastJSONLine returns the last line of out that is a JSON object, or nil:
// libraries may print other lines before the script's own.
func lastJSONLine(out []byte) []byte {
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) > 0 && l[0] == '{' && json.Valid(l) {
			return l
		}
	}
	return nil
}

// tail is the end of a script's output, enough for a traceback.
func tail(b []byte) string {
	const n = 2000
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = append([]byte("…"), b[len(b)-n:]...)
	}
	return string(b)
}

// osExec is Exec through os/exec; a cancelled ctx kills the process.
func osExec(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.Bytes(), e.Bytes(), err
}
