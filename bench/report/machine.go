package report

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/hybrank/hybrank/internal/cpu"
)

// MachineInfo describes where a benchmark ran; printed next to every
// result so figures from different machines are not compared by mistake.
type MachineInfo struct {
	CPU        string   `json:"cpu"`
	Cores      int      `json:"physical_cores"`
	Threads    int      `json:"logical_cores"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Features   []string `json:"features"`
	OS         string   `json:"os"`
	Arch       string   `json:"arch"`
	Go         string   `json:"go"`
	Commit     string   `json:"commit"`
	Dirty      bool     `json:"dirty"`
}

// Machine returns information about this machine and build. The commit
// comes from the binary's VCS stamp when present, else from
// `git rev-parse HEAD` in the working directory as it was at the first
// call (go run and go test binaries carry no stamp, nor do builds with
// -buildvcs=false); it is "" when neither works.
func Machine() MachineInfo {
	f := cpu.Detect()
	m := MachineInfo{
		CPU:        f.Brand,
		Cores:      f.PhysicalCores,
		Threads:    f.LogicalCores,
		Features:   f.Named(), // the features of interest to this module's kernels
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Go:         runtime.Version(),
	}
	if m.Threads == 0 {
		m.Threads = runtime.NumCPU()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				m.Commit = s.Value
			case "vcs.modified":
				m.Dirty = s.Value == "true"
			}
		}
	}
	if m.Commit == "" {
		m.Commit, m.Dirty = gitState()
	}
	return m
}

// gitState is the working directory's commit and whether the tree
// differs from it, read once: at the first Machine call, which cmd/bench
// makes when it starts, so that files edited while a benchmark runs do not
// mark its report dirty. Untracked files count (a new source file is
// compiled in); bench/results does not (every run rewrites it, and it is
// no input of the code measured).
var gitState = sync.OnceValues(func() (commit string, dirty bool) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return strings.TrimSpace(string(out)), false
	}
	if st, err := exec.Command("git", "-C", strings.TrimSpace(string(top)), "status", "--porcelain", "--", ".", ":(exclude)bench/results").Output(); err == nil {
		dirty = len(strings.TrimSpace(string(st))) > 0
	}
	return strings.TrimSpace(string(out)), dirty
})

// String is a one-line summary.
func (m MachineInfo) String() string {
	c := m.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if m.Dirty {
		c += "+dirty"
	}
	return strings.Join([]string{m.CPU, strconv.Itoa(m.Cores) + "c/" + strconv.Itoa(m.Threads) + "t", "GOMAXPROCS=" + strconv.Itoa(m.GOMAXPROCS),
		m.OS + "/" + m.Arch, m.Go, "features=" + strings.Join(m.Features, ","), "commit=" + c}, " | ")
}
