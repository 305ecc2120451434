package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Command is what a Process runs: Path with Args, in Dir, with Env over
// the environment of whoever starts it (so a restart from another command
// runs with the same variables set; PATH and HOME come from the caller).
// ReadyPath is the HTTP path, under the process's base URL, that answers
// 2xx once it serves.
type Command struct {
	Path      string   `json:"path"`
	Args      []string `json:"args"`
	Env       []string `json:"env"`
	Dir       string   `json:"dir,omitempty"`
	ReadyPath string   `json:"ready_path"`
}

// Process is one started process as the state file records it: the
// command, its log file (appended to across restarts) and, while it runs,
// its PID and start time. StartTicks is the process's start time in clock
// ticks since boot (/proc/PID/stat); a PID whose start time differs has
// been reused by another process, which is never signalled.
type Process struct {
	Command    Command   `json:"command"`
	Log        string    `json:"log"`
	PID        int       `json:"pid,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
}

// reapers holds, for each process this process started, a channel closed
// once it has exited and been waited for: without the wait a killed child
// stays a zombie (and its PID looks alive) for as long as we run.
var reapers sync.Map // int (PID) -> chan struct{}

// start runs p.Command detached in a new session (it outlives the caller
// and takes no signal meant for the caller's terminal), output appended
// to p.Log, and records the PID and start time.
func (p *Process) start() error {
	if p.Running() {
		return fmt.Errorf("%s: %w (pid %d)", p.Command.Path, ErrRunning, p.PID)
	}
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "\n=== %s start: %s %s\n", time.Now().Format(time.RFC3339), p.Command.Path, strings.Join(p.Command.Args, " "))
	cmd := exec.Command(p.Command.Path, p.Command.Args...)
	cmd.Env = append(os.Environ(), p.Command.Env...) // the later value of a key wins
	cmd.Dir = p.Command.Dir
	cmd.Stdout, cmd.Stderr = f, f // an *os.File is handed over as it is: no copying goroutine
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Command.Path, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	reapers.Store(pid, done)
	go func() {
		cmd.Wait()
		close(done)
	}()
	ticks, err := startTicks(pid)
	if err != nil {
		// Exited already (its log says why); a zero start time never
		// matches, so the PID is treated as dead.
		ticks = 0
	}
	p.PID, p.StartTicks, p.StartedAt = pid, ticks, time.Now().UTC()
	return nil
}

// Running reports whether p's PID is alive, not a zombie, and still the
// process that was started: the kernel's start time of the PID is the one
// recorded at start (a reused PID starts later). The command line is not
// compared: a script's shows its interpreter, and programs may rewrite it.
func (p *Process) Running() bool {
	if p.PID <= 0 || p.StartTicks == 0 {
		return false
	}
	st, err := readStat(p.PID)
	return err == nil && st.state != 'Z' && st.state != 'X' && st.startTicks == p.StartTicks
}

// exited reports whether every thread of p's process has exited: the
// PID is gone, reused, or a zombie with no thread left but the leader.
func (p *Process) exited() bool {
	st, err := readStat(p.PID)
	if err != nil || st.startTicks != p.StartTicks {
		return true
	}
	if st.state != 'Z' && st.state != 'X' {
		return false
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p.PID) + "/task")
	return err != nil || len(tasks) <= 1
}

// signal sends sig to p's process group (the session it leads, with any
// children it forked) after checking p is still the process started.
func (p *Process) signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	if err := syscall.Kill(-p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %d to pid %d: %w", sig, p.PID, err)
	}
	return nil
}

// wait returns once p has exited (true) or timeout has passed (false).
func (p *Process) wait(timeout time.Duration) bool {
	if done, ok := reapers.Load(p.PID); ok {
		select {
		case <-done.(chan struct{}):
			reapers.Delete(p.PID)
			return true
		case <-time.After(timeout):
			return false
		}
	}
	// Not our child: whoever is its parent reaps it; poll until no thread
	// is left (a SIGKILLed leader is a zombie while its other threads
	// still exit, holding its sockets).
	deadline := time.Now().Add(timeout)
	for !p.exited() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// stop ends p: SIGTERM, then SIGKILL after grace (0: SIGKILL at once). It
// clears the PID once the process is gone; a PID that is no longer the
// process started is cleared without a signal.
func (p *Process) stop(grace time.Duration) error {
	if !p.Running() {
		p.clear()
		return nil
	}
	if grace > 0 {
		if err := p.signal(syscall.SIGTERM); err != nil {
			return err
		}
		if p.wait(grace) {
			p.clear()
			return nil
		}
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.wait(10 * time.Second) {
		return fmt.Errorf("pid %d (%s) still running 10s after SIGKILL", p.PID, p.Command.Path)
	}
	p.clear()
	return nil
}

func (p *Process) clear() { p.PID, p.StartTicks = 0, 0 }

// logTail returns the last n lines of p's log, for errors.
func (p *Process) logTail(n int) string {
	f, err := os.Open(p.Log)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		f.Seek(-64<<10, io.SeekEnd)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type procStat struct {
	state      byte
	startTicks uint64
	// cpuTicks is the user and system time of the process's threads
	// (utime + stime), in clock ticks.
	cpuTicks uint64
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times.
const clockTicks = 100

// CPU is the CPU time (user + system, all its threads) the running
// process has used since it started.
func (p *Process) CPU() (time.Duration, error) {
	if !p.Running() {
		return 0, fmt.Errorf("cluster: process %d is not running", p.PID)
	}
	st, err := readStat(p.PID)
	if err != nil {
		return 0, err
	}
	return time.Duration(st.cpuTicks) * time.Second / clockTicks, nil
}

// readStat reads the state, start time and CPU time of pid from
// /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat starttime: %w", pid, err)
	}
	// utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat cpu time: %w", pid, err)
	}
	return procStat{state: f[0][0], startTicks: t, cpuTicks: ut + stime}, nil
}

func startTicks(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.startTicks, err
}
