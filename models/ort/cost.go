package ort

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/internal/cpu"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx"
)

// Where a cost model came from (BatchingInfo.Source).
const (
	// CostCalibrated: measured at this load.
	CostCalibrated = "calibrated"
	// CostCached: read from a calibration cache written by an earlier load
	// with the same key.
	CostCached = "cache"
	// CostFile: read from Config.CostTable.
	CostFile = "file"
)

// BatchingInfo says how a loaded model plans its batches. A plain value,
// safe to copy; Table is the caller's copy.
type BatchingInfo struct {
	// Mode is the mode in effect: models.BatchingCost, or
	// models.BatchingTokens when configured or when cost mode could build
	// no cost model (Notes says why).
	Mode string
	// Source is CostCalibrated, CostCached or CostFile in cost mode, ""
	// otherwise.
	Source string
	// Path is the cost table file read or written; "" when none.
	Path string
	// Calibration is the time spent calibrating at this load.
	Calibration time.Duration
	// Residual is the starting cost model's worst relative fit error on
	// the measured cells (CallTimeModel.Residual).
	Residual float64
	// Notes lists what went wrong and was passed over: an unreadable,
	// corrupt or stale cache, an unwritable model directory, a calibration
	// stopped by its budget or failed.
	Notes []string
	// Table is the cost table the model started from (calibrated, cached
	// or from a file; what the planner learns from its calls since is not
	// in it, but is written over the calibration cache at Path when the
	// model is closed; a Config.CostTable file never is); nil in tokens
	// mode.
	Table *CallTimeTable
}

// batchPlanner plans the batches of one call in cost mode, and learns from
// the calls it planned: each runtime call's time (the model's run alone,
// without waiting for a free session) refines the cost model
// (CallTimeModel.Observe), and batch sizes beyond the measured ones are
// proposed optimistically (CallTimeModel.Optimistic) so that the
// batches of one request measure them. A short calibration measures only
// small batches at short lengths (on a 2-core CPU, 2 s covered batches of
// 1 and 2 at 128 tokens, where a batch of 32 was 25 % faster per pair),
// and a cached table measured on a busy machine is wrong everywhere; the
// workload's own calls correct both. Safe for concurrent use.
type batchPlanner struct {
	model     atomic.Pointer[CallTimeModel]
	mu        sync.Mutex // serialises Observe-and-swap
	maxTokens int
	maxBytes  int64 // 0: no cap
	shape     models.HFConfig
	// savePath and saveKey: the calibration cache file the table came
	// from or was written to, and its key, where save writes what was
	// learned; savePath is "" for a Config.CostTable or without a cache.
	savePath  string
	saveKey   map[string]string
	saveStamp fileStamp   // the file as this load read or wrote it
	fallback  []cachePath // where else the key's table may go, in order
	learned   atomic.Bool // a call was observed since load
}

// fileStamp identifies a version of a file by the SHA-256 of its content
// (a cost table is a few KB); zero for a missing or unreadable one. A
// modification time would not do: on many file systems it ticks every few
// milliseconds, and two saves of one size within a tick look the same.
type fileStamp [sha256.Size]byte

func stampOf(path string) fileStamp {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fileStamp{}
	}
	return sha256.Sum256(raw)
}

// exploreDiscount is how much cheaper per sequence an unmeasured batch
// size (up to twice the largest measured at that length) is assumed to be
// than the largest measured one. Doubling goes on while the largest
// measured size is within about 11 % per sequence of the best plan
// without it, and stops once it is costlier than that.
const exploreDiscount = 0.9

// allowed reports whether a batch of b sequences padded to l tokens is
// within the caps. A single sequence always is.
func (p *batchPlanner) allowed(b, l int) bool {
	if b == 1 {
		return true
	}
	return b*l <= p.maxTokens && (p.maxBytes == 0 || p.shape.ActivationBytes(b, l) <= p.maxBytes)
}

// newBatchPlanner returns a planner starting from model m.
func newBatchPlanner(m *CallTimeModel, maxTokens int, maxBytes int64, shape models.HFConfig) *batchPlanner {
	p := &batchPlanner{maxTokens: maxTokens, maxBytes: maxBytes, shape: shape}
	p.model.Store(m)
	return p
}

// costOn is the planner's cost of a batch of b sequences padded to l
// tokens under model m, within the caps: its prediction (which covers up
// to 25 % past the longest length a size was measured at); else the
// lesser of its optimistic estimate (a size to try) and the upper bound
// from its own calls at shorter lengths (what was learned at 300 tokens
// still bounds 400).
func (p *batchPlanner) costOn(m *CallTimeModel, b, l int) (float64, bool) {
	if !p.allowed(b, l) {
		return 0, false
	}
	if ms, ok := m.Predict(b, l); ok {
		return ms, true
	}
	opt, okOpt := m.Optimistic(b, l, exploreDiscount)
	bound, okBound := m.UpperBound(b, l)
	switch {
	case okOpt && okBound:
		return min(opt, bound), true
	case okBound:
		return bound, true
	}
	return opt, okOpt
}

func (p *batchPlanner) plan(lens []int) [][]int {
	return p.planOn(p.model.Load(), lens) // one model for the whole plan
}

// planOn plans lens under model m.
func (p *batchPlanner) planOn(m *CallTimeModel, lens []int) [][]int {
	return planCost(lens, 2*m.MaxBatch(), func(b, l int) (float64, bool) { return p.costOn(m, b, l) })
}

// estimate returns the predicted milliseconds of the batches plan(lens)
// makes (each batch's cost at its longest length, as planned): their sum,
// the costliest one's and their number; false when a batch's cost is
// unknown.
func (p *batchPlanner) estimate(lens []int) (total, costliest float64, batches int, ok bool) {
	m := p.model.Load()
	plan := p.planOn(m, lens)
	for _, idx := range plan {
		longest := 0
		for _, i := range idx {
			longest = max(longest, lens[i])
		}
		ms, ok := p.costOn(m, len(idx), longest)
		if !ok {
			return 0, 0, 0, false
		}
		total, costliest = total+ms, max(costliest, ms)
	}
	return total, costliest, len(plan), true
}

// observe records that a runtime call on b sequences padded to l tokens
// took d.
func (p *batchPlanner) observe(b, l int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.model.Store(p.model.Load().Observe(b, l, float64(d)/float64(time.Millisecond)))
	p.learned.Store(true)
}

// save writes the cost model with what it learned from the calls since
// load (CallTimeModel.Table) over the calibration cache file it came
// from, so that the next load starts from the workload's own timings
// rather than a short calibration. Nothing is written when no call was
// observed, when the table has no cache file (Config.CostTable, or caching
// off), or when the file changed since this load read or wrote it: another
// process sharing the cache saved its own learning first, and this one's,
// built on the older file, would overwrite it. Where the file cannot be
// written (a read-only model directory), the next cache place that takes
// it is used; loads read the newest. Called once the model's calls are
// over (Close).
func (p *batchPlanner) save() error {
	if p.savePath == "" || !p.learned.Load() {
		return nil
	}
	if stampOf(p.savePath) != p.saveStamp {
		slog.Info("models/ort: cost cache changed since load (another process saved it); keeping that version", "path", p.savePath)
		return nil
	}
	t := p.model.Load().Table()
	t.Meta = p.saveKey
	// The loaded file first; if it refuses (a read-only model directory),
	// the next place that takes it, which the next load reads as the
	// newest.
	paths := []cachePath{{path: p.savePath}}
	for _, cp := range p.fallback {
		if cp.path != p.savePath {
			paths = append(paths, cp)
		}
	}
	var errs []error
	if writeCache(paths, t, func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }) == "" {
		return errors.Join(errs...)
	}
	return nil
}

// hostFacts are the facts about the machine and runtime that change
// timings. The real ones come from currentHost; tests vary them.
type hostFacts struct {
	ortVersion string
	cpu        string // brand name
	cpuFlags   string // hash of the CPU feature list
	cpus       int    // logical CPUs
}

func currentHost() hostFacts {
	f := cpu.Detect()
	sum := sha256.Sum256([]byte(strings.Join(f.Flags, ",")))
	return hostFacts{
		ortVersion: onnx.Version(),
		cpu:        f.Brand,
		cpuFlags:   hex.EncodeToString(sum[:8]),
		cpus:       runtime.NumCPU(),
	}
}

// costEnv is what setting up cost mode needs; loadORT fills it from the
// loaded session, tests from fakes.
type costEnv struct {
	cfg      models.Config
	dir      models.ModelDir
	maxLen   int
	provider string
	plan     string // Plan.Key: quantization and rewrites change the costs
	fusion   string // Plan.Loaded.Fusion: what the rewrites did (or "none": a fallback to the file)
	host     hostFacts
	run      runner
	now      func() time.Time
	// userCacheDir is os.UserCacheDir.
	userCacheDir func() (string, error)
}

// setupCost builds the cost planner for env.cfg: nil in tokens mode or
// when no cost model could be built (the info's Notes say why; planning
// falls back to tokens mode). Only a bad Config.CostTable file is an
// error.
func setupCost(env costEnv) (*batchPlanner, BatchingInfo, error) {
	cfg := env.cfg
	info := BatchingInfo{Mode: cfg.BatchingMode()}
	if info.Mode != models.BatchingCost {
		return nil, info, nil
	}
	p := newBatchPlanner(nil, cfg.MaxBatchTokens, cfg.MaxBatchBytes, env.dir.Config)
	note := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		info.Notes = append(info.Notes, msg)
		slog.Warn("models/ort: "+msg, "model", env.dir.Dir)
	}
	var table *CallTimeTable
	var key map[string]string
	switch {
	case cfg.CostTable != "":
		t, err := ReadCallTimeTable(cfg.CostTable)
		if err != nil {
			return nil, info, fmt.Errorf("load %s: %w", env.dir.Dir, err)
		}
		table, info.Source, info.Path = t, CostFile, cfg.CostTable
	default:
		var err error
		key, err = costKey(env)
		if err != nil {
			note("calibration cache not used: %v", err)
		}
		var paths []cachePath
		if key != nil {
			paths = cachePaths(env, key)
			// The newest of the places that hold a table for this key: a
			// read-only model directory may hold an older one, and what
			// later loads learned went to the user cache (see save).
			var newest time.Time
			for _, cp := range paths {
				t, mtime, err := readCache(cp.path, key)
				switch {
				case err == nil:
					if table == nil || mtime.After(newest) {
						table, info.Source, info.Path, newest = t, CostCached, cp.path, mtime
					}
				case !errors.Is(err, fs.ErrNotExist):
					note("ignoring calibration cache: %v", err)
				}
			}
		}
		p.fallback = paths
		if table == nil {
			table = calibrateFor(env, p, &info, note)
			if table != nil && key != nil {
				table.Meta = key
				info.Path = writeCache(paths, table, note)
			}
		}
	}
	if table == nil {
		info.Mode = models.BatchingTokens
		return nil, info, nil
	}
	m, err := NewCallTimeModel(table)
	if err != nil { // a validated table fits; only a measured table can get here
		note("cost table unusable, batching by tokens: %v", err)
		info.Mode, info.Source = models.BatchingTokens, ""
		return nil, info, nil
	}
	p.model.Store(m)
	if info.Source != CostFile && info.Path != "" {
		p.savePath, p.saveKey, p.saveStamp = info.Path, key, stampOf(info.Path)
	}
	info.Residual = m.Residual()
	info.Table = table.Clone()
	return p, info, nil
}

// calibrateFor runs the calibration for env and returns its table, or nil
// (with a note) when it failed or measured nothing.
func calibrateFor(env costEnv, p *batchPlanner, info *BatchingInfo, note func(string, ...any)) *CallTimeTable {
	budget := time.Duration(env.cfg.CalibrationBudget()) * time.Millisecond
	c := &calibrator{
		batches: calibBatches,
		lens:    gridLens(env.maxLen),
		budget:  budget,
		now:     env.now,
		run:     env.run,
		allowed: p.allowed,
		vocab:   env.dir.Config.VocabSize,
	}
	t, st, err := c.calibrate(context.Background())
	info.Calibration = st.elapsed
	info.Source = CostCalibrated
	if err == nil && st.measured == 0 {
		err = errNoTable
	}
	if err != nil {
		note("calibration failed, batching by tokens: %v", err)
		info.Source = ""
		return nil
	}
	if st.stopped {
		// Expected on slow machines and big models: information, not a problem.
		msg := fmt.Sprintf("calibration stopped by its %v budget after %d of %d cells (raise Config.CalibrationMillis to measure more)",
			budget, st.measured, st.cells)
		info.Notes = append(info.Notes, msg)
		slog.Info("models/ort: "+msg, "model", env.dir.Dir)
	}
	return t
}

// costKey returns everything that changes a calibrated table: the
// procedure, the provider and session settings, the model's plan (Plan.Key)
// and what its rewrites did, the caps
// and budget that bound the grid, the runtime version, the CPU and the
// model file (size and modification time: rewriting the model invalidates
// its tables).
func costKey(env costEnv) (map[string]string, error) {
	st, err := os.Stat(env.dir.ONNXPath)
	if err != nil {
		return nil, err
	}
	c := env.cfg
	itoa := strconv.Itoa
	key := map[string]string{
		"format":            itoa(calibFormat),
		"provider":          env.provider,
		"intra_op_threads":  itoa(c.IntraOpThreads),
		"inter_op_threads":  itoa(c.InterOpThreads),
		"pool_size":         itoa(c.PoolSize),
		"graph_opt":         c.GraphOptimization,
		"plan":              env.plan,
		"graph_fusion":      env.fusion,
		"disable_arena":     strconv.FormatBool(c.DisableArena),
		"disable_spinning":  strconv.FormatBool(c.DisableSpinning),
		"cuda_device_id":    itoa(c.CUDADeviceID),
		"max_length":        itoa(env.maxLen),
		"max_batch_tokens":  itoa(c.MaxBatchTokens),
		"max_batch_bytes":   strconv.FormatInt(c.MaxBatchBytes, 10),
		"calibration_ms":    itoa(c.CalibrationBudget()),
		"ort_version":       env.host.ortVersion,
		"cpu":               env.host.cpu,
		"cpu_flags":         env.host.cpuFlags,
		"cpus":              itoa(env.host.cpus),
		"model_file":        filepath.Base(env.dir.ONNXPath),
		"model_size":        strconv.FormatInt(st.Size(), 10),
		"model_mtime_nanos": strconv.FormatInt(st.ModTime().UnixNano(), 10),
	}
	if env.provider == string(onnx.ProviderCUDA) {
		// The card, not only its index: an H100 and an H200 host with the
		// same CPU would share a table beside the model.
		key["gpu"] = gpuName(c.CUDADeviceID)
	}
	return key, nil
}

// gpuName names CUDA device i as nvidia-smi does ("" when it cannot say),
// asked once per device. A variable, for tests.
var gpuName = func(i int) string {
	gpuNames.Lock()
	defer gpuNames.Unlock()
	if n, ok := gpuNames.m[i]; ok {
		return n
	}
	out, _ := exec.Command("nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", strconv.Itoa(i)).Output()
	n := strings.TrimSpace(string(out))
	if gpuNames.m == nil {
		gpuNames.m = map[int]string{}
	}
	gpuNames.m[i] = n
	return n
}

var gpuNames struct {
	sync.Mutex
	m map[int]string
}

// shortHash is 16 hex digits of the SHA-256 of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// costFilePrefix begins the names of calibrated tables' files.
const costFilePrefix = "hybrank_cost_"

// isCostTable reports whether rel (a path inside a model directory) is a
// calibrated table cached beside the model: the runtime's, not the
// model's.
func isCostTable(rel string) bool {
	return filepath.Dir(rel) == "." && strings.HasPrefix(rel, costFilePrefix) && strings.HasSuffix(rel, ".json")
}

// cachePath is one place a calibrated table may be cached.
type cachePath struct {
	path  string
	mkdir bool // create its directory before writing (never the model directory)
}

// cachePaths returns where the table for key may be cached, in order of
// preference: beside the model, then under the user cache directory (for
// read-only model directories), or under Config.CalibrationCache alone.
// Outside the model directory a subdirectory named after the model
// directory's path keeps models apart.
func cachePaths(env costEnv, key map[string]string) []cachePath {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(key)) {
		lines = append(lines, k+"="+key[k])
	}
	name := costFilePrefix + shortHash(strings.Join(lines, "\n")) + ".json"
	abs, err := filepath.Abs(env.dir.Dir)
	if err != nil {
		abs = env.dir.Dir
	}
	elsewhere := func(root string) cachePath {
		return cachePath{path: filepath.Join(root, shortHash(abs), name), mkdir: true}
	}
	switch cc := env.cfg.CalibrationCache; cc {
	case models.CalibrationCacheOff:
		return nil
	case "":
		paths := []cachePath{{path: filepath.Join(env.dir.Dir, name)}}
		if root, err := env.userCacheDir(); err == nil {
			paths = append(paths, elsewhere(filepath.Join(root, "hybrank", "cost")))
		}
		return paths
	default:
		return []cachePath{elsewhere(cc)}
	}
}

// errStaleCache reports a cache file whose key differs from the current
// one (a hash collision or an edited file).
var errStaleCache = errors.New("measured under other settings")

// readCache reads the cached table at path if its key matches, and its
// modification time. A missing file wraps fs.ErrNotExist.
func readCache(path string, key map[string]string) (*CallTimeTable, time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	t, err := ReadCallTimeTable(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !maps.Equal(t.Meta, key) {
		return nil, time.Time{}, fmt.Errorf("%s: %w", path, errStaleCache)
	}
	return t, st.ModTime(), nil
}

// writeCache writes t to the first of paths that takes it and returns that
// path ("" when none did, with a note per failure).
func writeCache(paths []cachePath, t *CallTimeTable, note func(string, ...any)) string {
	for _, p := range paths {
		var err error
		if p.mkdir {
			err = os.MkdirAll(filepath.Dir(p.path), 0o755)
		}
		if err == nil {
			err = WriteCallTimeTable(p.path, t)
		}
		if err == nil {
			return p.path
		}
		note("cannot cache calibration: %v", err)
	}
	return ""
}
