package onnx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	ort "github.com/yalue/onnxruntime_go"
)

// Provider selects the execution provider.
type Provider string

// Providers.
const (
	// ProviderAuto tries CUDA and falls back to the CPU; the first session
	// logs the choice and its reason in one INFO line.
	ProviderAuto Provider = "auto"
	// ProviderCUDA requires CUDA; NewSession fails with
	// ErrProviderUnavailable when it cannot start.
	ProviderCUDA Provider = "cuda"
	// ProviderCPU uses ONNX Runtime's CPU kernels.
	ProviderCPU Provider = "cpu"
)

// SessionConfig configures NewSession. The zero value is not valid; start
// from DefaultSessionConfig.
type SessionConfig struct {
	// Provider is "auto" (default), "cuda" or "cpu".
	Provider Provider `json:"provider"`
	// IntraOpThreads is the number of threads one run may use inside an
	// operator; 0 lets ONNX Runtime choose (one per physical core). With
	// PoolSize > 1 set it so that PoolSize × IntraOpThreads ≈ cores.
	IntraOpThreads int `json:"intra_op_threads"`
	// InterOpThreads is the number of threads running independent operators
	// in parallel; 0 lets ONNX Runtime choose (sequential execution uses 1).
	InterOpThreads int `json:"inter_op_threads"`
	// PoolSize is the number of ONNX Runtime sessions on the model, i.e. the
	// maximum number of concurrent runs. Each one holds its own copy of the
	// weights. Default 1.
	PoolSize int `json:"pool_size"`
	// GraphOptimization is "disable", "basic", "extended" or "all"
	// (default; enables ORT's BERT fusions such as attention and layer norm).
	GraphOptimization string `json:"graph_optimization"`
	// DisableArena turns off ONNX Runtime's CPU memory arena, trading some
	// speed for returning memory to the OS between runs.
	DisableArena bool `json:"disable_arena"`
	// DisableSpinning stops intra-op threads from busy-waiting for work
	// between operators; useful when several sessions share few cores.
	DisableSpinning bool `json:"disable_spinning"`
	// CUDADeviceID is the GPU used by the CUDA provider.
	CUDADeviceID int `json:"cuda_device_id"`
	// ProfilePrefix, when set, turns on ONNX Runtime's profiler: each
	// session writes a Chrome-trace JSON of every operator's run
	// (PREFIX_<date>.json in the working directory, or under PREFIX's
	// folder) when it is closed. For diagnosis (bench/peers/ort_profile.py
	// reads such traces); it slows every run.
	ProfilePrefix string `json:"profile_prefix,omitempty"`
}

// DefaultSessionConfig returns Provider "auto", one pooled session, ONNX
// Runtime's default thread counts and all graph optimisations.
func DefaultSessionConfig() SessionConfig {
	return SessionConfig{Provider: ProviderAuto, PoolSize: 1, GraphOptimization: "all"}
}

// Validate reports the first invalid field, wrapped in ErrBadConfig.
func (c SessionConfig) Validate() error {
	switch c.Provider {
	case ProviderAuto, ProviderCUDA, ProviderCPU:
	default:
		return fmt.Errorf("%w: provider %q (want auto, cuda or cpu)", ErrBadConfig, c.Provider)
	}
	if c.IntraOpThreads < 0 || c.InterOpThreads < 0 {
		return fmt.Errorf("%w: thread counts must be >= 0 (intra %d, inter %d)", ErrBadConfig, c.IntraOpThreads, c.InterOpThreads)
	}
	if c.PoolSize < 1 || c.PoolSize > 1024 {
		return fmt.Errorf("%w: pool size %d (want 1..1024)", ErrBadConfig, c.PoolSize)
	}
	if _, err := optLevel(c.GraphOptimization); err != nil {
		return err
	}
	if c.CUDADeviceID < 0 {
		return fmt.Errorf("%w: cuda device id %d", ErrBadConfig, c.CUDADeviceID)
	}
	return nil
}

func optLevel(s string) (ort.GraphOptimizationLevel, error) {
	switch s {
	case "disable":
		return ort.GraphOptimizationLevelDisableAll, nil
	case "basic":
		return ort.GraphOptimizationLevelEnableBasic, nil
	case "extended":
		return ort.GraphOptimizationLevelEnableExtended, nil
	case "all", "":
		return ort.GraphOptimizationLevelEnableAll, nil
	}
	return 0, fmt.Errorf("%w: graph optimization %q (want disable, basic, extended or all)", ErrBadConfig, s)
}

// Input is one named input tensor. Exactly one of Int64 and Float32 is set,
// and its length equals the product of Shape.
type Input struct {
	Name    string
	Shape   []int64
	Int64   []int64
	Float32 []float32
}

// Output is one output tensor; Float32 is owned by the caller.
type Output struct {
	Name    string
	Shape   []int64
	Float32 []float32
}

// Model is what NewSessionModel loads.
type Model struct {
	// Path is the ONNX file: what the sessions load without ForCPU or
	// ForCUDA, or when its copy does not load, and what errors name.
	Path string
	// ForCPU, when set, is called once, before the first CPU session is
	// created (not at all when every session runs on CUDA), and returns
	// the path of the model file the CPU sessions load instead of Path:
	// the same inputs and outputs, the graph rewritten for the CPU kernels
	// (package onnx/fuse). "" loads Path; an error fails
	// NewSessionModel. The sessions have read the file when
	// NewSessionModel returns: a temporary file may be removed then.
	ForCPU func() (string, error)
	// ForCUDA is ForCPU for the CUDA sessions (the graph rewritten in
	// ways that pay on any provider).
	ForCUDA func() (string, error)
}

// Session is a pool of ONNX Runtime sessions on one model (a file, or the
// copy Model.ForCPU or Model.ForCUDA made of it). It is safe for concurrent
// use.
type Session struct {
	modelPath string
	// rewrite[cuda] is Model.ForCPU or ForCUDA until it has been called;
	// copyPath[cuda] its result, "" when those sessions load modelPath.
	rewrite     [2]func() (string, error)
	copyPath    [2]string
	copyLoaded  [2]bool // a session of the pool runs copyPath
	inputNames  []string
	outputNames []string
	inputs      map[string]int // input name → position in inputNames
	inputInfo   []IOInfo       // declared type/shape per inputNames entry
	provider    Provider

	pool chan *ort.DynamicAdvancedSession // idle sessions
	all  []*ort.DynamicAdvancedSession    // every session, for Close

	mu       sync.Mutex     // guards closed and the Add side of inflight
	closed   bool           // set once by Close
	inflight sync.WaitGroup // runs between admission and return
	done     chan struct{}  // closed by Close; wakes runs waiting for a session
}

// autoProviderSaid makes Provider "auto" say once per process each
// provider it chose, with its reason: on a machine without CUDA the CPU is
// the expected outcome, an INFO line, not a warning at every start; a
// later model that falls back where an earlier one got CUDA says so.
var autoProviderSaid sync.Map // "provider\x00reason" → struct{}

// logAutoProvider logs the provider "auto" chose, once per process for
// each provider and reason.
func logAutoProvider(provider Provider, reason string) {
	if _, said := autoProviderSaid.LoadOrStore(string(provider)+"\x00"+reason, struct{}{}); !said {
		slog.Info("onnx: execution provider", "provider", string(provider), "reason", reason)
	}
}

// NewSession opens modelPath as cfg.PoolSize ONNX Runtime sessions with the
// given input and output names (outputs are returned by Run in this order).
// It checks the names against the model and requires float32 outputs.
func NewSession(modelPath string, inputNames, outputNames []string, cfg SessionConfig) (*Session, error) {
	return NewSessionModel(Model{Path: modelPath}, inputNames, outputNames, cfg)
}

// NewSessionModel is NewSession for a Model: its CPU sessions may load a
// rewritten copy of the file (Model.ForCPU, Model.ForCUDA).
func NewSessionModel(model Model, inputNames, outputNames []string, cfg SessionConfig) (*Session, error) {
	modelPath := model.Path
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	if len(inputNames) == 0 || len(outputNames) == 0 {
		return nil, fmt.Errorf("%w: need at least one input and one output name", ErrModel)
	}
	ins, outs, err := ModelIO(modelPath)
	if err != nil {
		return nil, err
	}
	s := &Session{
		modelPath:   modelPath,
		rewrite:     [2]func() (string, error){model.ForCPU, model.ForCUDA},
		inputNames:  append([]string(nil), inputNames...),
		outputNames: append([]string(nil), outputNames...),
		inputs:      make(map[string]int, len(inputNames)),
		inputInfo:   make([]IOInfo, len(inputNames)),
		done:        make(chan struct{}),
	}
	for i, name := range inputNames {
		if _, dup := s.inputs[name]; dup {
			return nil, fmt.Errorf("%w: input %q named twice", ErrModel, name)
		}
		s.inputs[name] = i
		info, ok := findIO(ins, name)
		if !ok {
			return nil, fmt.Errorf("%w: %s has no input %q (inputs: %s)", ErrModel, modelPath, name, ioNames(ins))
		}
		if info.Type != Float32 && info.Type != Int64 {
			return nil, fmt.Errorf("%w: input %q has type %q; only float32 and int64 inputs are supported", ErrModel, name, info.Type)
		}
		s.inputInfo[i] = info
	}
	for _, name := range outputNames {
		info, ok := findIO(outs, name)
		if !ok {
			return nil, fmt.Errorf("%w: %s has no output %q (outputs: %s)", ErrModel, modelPath, name, ioNames(outs))
		}
		if info.Type != Float32 {
			return nil, fmt.Errorf("%w: output %q has type %q; only float32 outputs are supported", ErrModel, name, info.Type)
		}
	}

	provider := cfg.Provider
	first, err := s.newORTSession(cfg, provider == ProviderAuto || provider == ProviderCUDA)
	switch {
	case err == nil && provider != ProviderCPU:
		if provider == ProviderAuto {
			logAutoProvider(ProviderCUDA, "provider auto: CUDA is available")
		}
		provider = ProviderCUDA
	case err == nil:
	case errors.Is(err, ErrProviderUnavailable) && provider == ProviderAuto:
		logAutoProvider(ProviderCPU, "provider auto: CUDA unavailable ("+err.Error()+")")
		provider = ProviderCPU
		first, err = s.newORTSession(cfg, false)
		if err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	s.provider = provider
	s.all = append(s.all, first)
	for len(s.all) < cfg.PoolSize {
		sess, err := s.newORTSession(cfg, provider == ProviderCUDA)
		if err != nil {
			s.destroyAll()
			return nil, err
		}
		s.all = append(s.all, sess)
	}
	s.pool = make(chan *ort.DynamicAdvancedSession, len(s.all))
	for _, sess := range s.all {
		s.pool <- sess
	}
	return s, nil
}

func findIO(list []IOInfo, name string) (IOInfo, bool) {
	for _, x := range list {
		if x.Name == name {
			return x, true
		}
	}
	return IOInfo{}, false
}

func ioNames(list []IOInfo) string {
	s := ""
	for i, x := range list {
		if i > 0 {
			s += ", "
		}
		s += strconv.Quote(x.Name)
	}
	return s
}

// newORTSession creates one ORT session. With cuda set, a failure to start
// the CUDA provider (appending it or creating the session with it) is
// reported as ErrProviderUnavailable.
func (s *Session) newORTSession(cfg SessionConfig, cuda bool) (*ort.DynamicAdvancedSession, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("%w: session options: %v", ErrLibrary, err)
	}
	defer opts.Destroy()
	level, _ := optLevel(cfg.GraphOptimization)
	if err := opts.SetGraphOptimizationLevel(level); err != nil {
		return nil, fmt.Errorf("onnx: set graph optimization: %w", err)
	}
	if cfg.IntraOpThreads > 0 {
		if err := opts.SetIntraOpNumThreads(cfg.IntraOpThreads); err != nil {
			return nil, fmt.Errorf("onnx: set intra-op threads: %w", err)
		}
	}
	if cfg.InterOpThreads > 0 {
		if err := opts.SetInterOpNumThreads(cfg.InterOpThreads); err != nil {
			return nil, fmt.Errorf("onnx: set inter-op threads: %w", err)
		}
	}
	if cfg.DisableArena {
		if err := opts.SetCpuMemArena(false); err != nil {
			return nil, fmt.Errorf("onnx: disable arena: %w", err)
		}
	}
	if cfg.DisableSpinning {
		if err := opts.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
			return nil, fmt.Errorf("onnx: disable spinning: %w", err)
		}
		if err := opts.AddSessionConfigEntry("session.inter_op.allow_spinning", "0"); err != nil {
			return nil, fmt.Errorf("onnx: disable spinning: %w", err)
		}
	}
	if cfg.ProfilePrefix != "" {
		if err := opts.EnableProfiling(cfg.ProfilePrefix); err != nil {
			return nil, fmt.Errorf("onnx: enable profiling: %w", err)
		}
	}
	if cuda {
		if err := appendCUDA(opts, cfg.CUDADeviceID); err != nil {
			return nil, fmt.Errorf("%w: cuda: %v", ErrProviderUnavailable, err)
		}
	} else if CustomOps() == nil {
		// A graph rewritten for the CPU may use them (onnx/ops.Domain).
		if err := registerCustomOps(opts); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrLibrary, err)
		}
	}
	k, target := 0, "the CPU"
	if cuda {
		k, target = 1, "CUDA"
	}
	if rw := s.rewrite[k]; rw != nil {
		s.rewrite[k] = nil // asked once: the pool's other sessions load its answer
		p, err := rw()
		if err != nil {
			return nil, fmt.Errorf("%w: %s for %s: %w", ErrModel, s.modelPath, target, err)
		}
		s.copyPath[k] = p
	}
	path := s.modelPath
	if s.copyPath[k] != "" {
		path = s.copyPath[k]
	}
	sess, err := ort.NewDynamicAdvancedSession(path, s.inputNames, s.outputNames, opts)
	switch {
	case err == nil && path != s.modelPath:
		s.copyLoaded[k] = true
	case err != nil && path != s.modelPath && !s.copyLoaded[k]:
		// A runtime that refuses the rewritten copy (one built without
		// contrib operators, say) still runs the file; said only when
		// the file does load (else the provider is what fails). Once a
		// session runs the copy, the pool's others must too.
		fileSess, fileErr := ort.NewDynamicAdvancedSession(s.modelPath, s.inputNames, s.outputNames, opts)
		if fileErr == nil {
			slog.Warn("onnx: the model rewritten for "+target+" does not load; loading the file as it is",
				"model", s.modelPath, "err", err)
			s.copyPath[k] = ""
		}
		sess, err, path = fileSess, fileErr, s.modelPath
	}
	if err != nil {
		if cuda {
			return nil, fmt.Errorf("%w: cuda session: %v", ErrProviderUnavailable, err)
		}
		what := s.modelPath
		if path != s.modelPath {
			what += " (rewritten for the CPU as " + path + ")"
		}
		return nil, fmt.Errorf("%w: load %s: %v", ErrModel, what, err)
	}
	return sess, nil
}

// Rewritten reports whether the sessions run the file Model.ForCPU (on
// the CPU) or Model.ForCUDA (on CUDA) returned rather than Model.Path.
func (s *Session) Rewritten() bool {
	if s.provider == ProviderCUDA {
		return s.copyPath[1] != ""
	}
	return s.copyPath[0] != ""
}

func appendCUDA(opts *ort.SessionOptions, device int) error {
	co, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer co.Destroy()
	// use_tf32 0: float32 MatMuls in float32, not TensorFloat-32 (10-bit
	// mantissa), so a float32 model scores as on the CPU; the fast GPU path
	// is a float16 model (models.Config.Quantize "fp16").
	if err := co.Update(map[string]string{"device_id": strconv.Itoa(device), "use_tf32": "0"}); err != nil {
		return err
	}
	return opts.AppendExecutionProviderCUDA(co)
}

// Provider returns the execution provider in use: "cuda" or "cpu".
func (s *Session) Provider() Provider { return s.provider }

// Run executes the model once. inputs may come in any order but must name
// every input given to NewSession exactly once. Outputs come back in
// NewSession's outputNames order with the shapes the model produced.
//
// If ctx is done before a pooled session is free, or before the run starts,
// Run returns ctx.Err(). If ctx is done during the run, ONNX Runtime is told
// to terminate (it stops at the next node boundary) and Run returns an error
// wrapping ctx.Err() once the native call has returned; a run that finishes
// before ONNX Runtime sees the flag returns its outputs.
func (s *Session) Run(ctx context.Context, inputs []Input) ([]Output, error) {
	out, _, err := s.RunTimed(ctx, inputs)
	return out, err
}

// RunTimed is Run, and also returns how long the model ran: the native
// call alone, without the wait for a free pooled session (which, with
// more concurrent callers than PoolSize, is queueing, not the cost of the
// inputs).
func (s *Session) RunTimed(ctx context.Context, inputs []Input) ([]Output, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	ordered, err := s.checkInputs(inputs)
	if err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, 0, ErrClosed
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	var sess *ort.DynamicAdvancedSession
	select {
	case sess = <-s.pool:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	case <-s.done:
		return nil, 0, ErrClosed
	}
	defer func() { s.pool <- sess }()
	t0 := time.Now()
	out, err := s.runOne(ctx, sess, ordered)
	return out, time.Since(t0), err
}

// checkInputs validates inputs against the model and returns them in
// inputNames order.
func (s *Session) checkInputs(inputs []Input) ([]*Input, error) {
	if len(inputs) != len(s.inputNames) {
		return nil, fmt.Errorf("%w: got %d inputs, model session takes %d (%v)", ErrBadInput, len(inputs), len(s.inputNames), s.inputNames)
	}
	ordered := make([]*Input, len(inputs))
	for i := range inputs {
		in := &inputs[i]
		pos, ok := s.inputs[in.Name]
		if !ok {
			return nil, fmt.Errorf("%w: unknown input %q (want %v)", ErrBadInput, in.Name, s.inputNames)
		}
		if ordered[pos] != nil {
			return nil, fmt.Errorf("%w: input %q given twice", ErrBadInput, in.Name)
		}
		info := s.inputInfo[pos]
		var n int
		switch {
		case in.Int64 != nil && in.Float32 != nil:
			return nil, fmt.Errorf("%w: input %q sets both Int64 and Float32", ErrBadInput, in.Name)
		case in.Int64 != nil:
			if info.Type != Int64 {
				return nil, fmt.Errorf("%w: input %q is %s in the model, got int64 data", ErrBadInput, in.Name, info.Type)
			}
			n = len(in.Int64)
		case in.Float32 != nil:
			if info.Type != Float32 {
				return nil, fmt.Errorf("%w: input %q is %s in the model, got float32 data", ErrBadInput, in.Name, info.Type)
			}
			n = len(in.Float32)
		default:
			return nil, fmt.Errorf("%w: input %q has no data (set Int64 or Float32)", ErrBadInput, in.Name)
		}
		if len(in.Shape) == 0 {
			return nil, fmt.Errorf("%w: input %q has an empty shape", ErrBadInput, in.Name)
		}
		if len(info.Shape) > 0 && len(info.Shape) != len(in.Shape) {
			return nil, fmt.Errorf("%w: input %q has rank %d, model wants %d (%v)", ErrBadInput, in.Name, len(in.Shape), len(info.Shape), info.Shape)
		}
		prod := int64(1)
		for d, v := range in.Shape {
			if v <= 0 {
				return nil, fmt.Errorf("%w: input %q dimension %d is %d (must be > 0)", ErrBadInput, in.Name, d, v)
			}
			if len(info.Shape) > 0 && info.Shape[d] > 0 && info.Shape[d] != v {
				return nil, fmt.Errorf("%w: input %q dimension %d is %d, model fixes it at %d", ErrBadInput, in.Name, d, v, info.Shape[d])
			}
			if prod > math.MaxInt64/v {
				return nil, fmt.Errorf("%w: input %q shape %v overflows", ErrBadInput, in.Name, in.Shape)
			}
			prod *= v
		}
		if prod != int64(n) {
			return nil, fmt.Errorf("%w: input %q shape %v needs %d elements, got %d", ErrBadInput, in.Name, in.Shape, prod, n)
		}
		ordered[pos] = in
	}
	return ordered, nil
}

// runOne runs sess once. Every native object it creates is destroyed before
// it returns, and only after the native Run call has returned.
func (s *Session) runOne(ctx context.Context, sess *ort.DynamicAdvancedSession, inputs []*Input) (_ []Output, err error) {
	values := make([]ort.Value, len(inputs))
	outputs := make([]ort.Value, len(s.outputNames)) // nil: ORT allocates
	defer func() {
		for _, v := range values {
			if v != nil {
				err = errors.Join(err, v.Destroy())
			}
		}
		for _, v := range outputs {
			if v != nil {
				err = errors.Join(err, v.Destroy())
			}
		}
	}()
	for i, in := range inputs {
		var v ort.Value
		var terr error
		if in.Int64 != nil {
			v, terr = ort.NewTensor(ort.NewShape(in.Shape...), in.Int64)
		} else {
			v, terr = ort.NewTensor(ort.NewShape(in.Shape...), in.Float32)
		}
		if terr != nil {
			return nil, fmt.Errorf("%w: input %q: %v", ErrBadInput, in.Name, terr)
		}
		values[i] = v
	}
	ro, err := ort.NewRunOptions()
	if err != nil {
		return nil, fmt.Errorf("onnx: run options: %w", err)
	}
	defer func() { err = errors.Join(err, ro.Destroy()) }()

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	terminated := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(terminated)
		_ = ro.Terminate() // fails only if ro is nil, which it is not yet
	})
	runErr := sess.RunWithOptions(values, outputs, ro)
	if !stop() {
		// The callback started: wait for it before ro can be destroyed.
		<-terminated
	}
	if runErr != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("onnx: run terminated: %w", cerr)
		}
		return nil, fmt.Errorf("onnx: run %s: %w", s.modelPath, runErr)
	}
	res := make([]Output, len(outputs))
	for i, v := range outputs {
		t, ok := v.(*ort.Tensor[float32])
		if !ok {
			return nil, fmt.Errorf("%w: output %q is not a float32 tensor", ErrModel, s.outputNames[i])
		}
		// GetData is Go memory (onnxruntime_go copies ORT-allocated outputs),
		// so it stays valid after the tensor is destroyed.
		res[i] = Output{Name: s.outputNames[i], Shape: append([]int64(nil), t.GetShape()...), Float32: t.GetData()}
	}
	return res, nil
}

// Close refuses new runs, waits for runs in flight and releases every ONNX
// Runtime session. It is idempotent; later calls return nil.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.inflight.Wait()
	return s.destroyAll()
}

func (s *Session) destroyAll() error {
	var err error
	for _, sess := range s.all {
		err = errors.Join(err, sess.Destroy())
	}
	s.all = nil
	return err
}
