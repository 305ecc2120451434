package onnx_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// initORT initialises the runtime or skips the test when the library is
// missing.
func initORT(t testing.TB) {
	t.Helper()
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatalf("Init: %v", err)
	}
}

// built unwraps a model constructor's result; constructors here only fail on
// arguments fixed in this file.
func built(m *onnxpb.Model, err error) *onnxpb.Model {
	if err != nil {
		panic(err)
	}
	return m
}

func writeModel(t testing.TB, m *onnxpb.Model) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := m.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// mixedModel has a float input x [rows, 4] and an int64 input ids [rows];
// outputs y = 2x + 1 and z = float(ids).
func mixedModel(t testing.TB) string {
	g := onnxpb.NewGraph("mixed")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("rows"), onnxpb.Fixed(4))
	g.AddInput("ids", onnxpb.Int64, onnxpb.Symbolic("rows"))
	two := g.AddFloat32("two", nil, []float32{2})
	one := g.AddFloat32("one", nil, []float32{1})
	x2 := g.AddNode("x2", "Mul", []string{"x", two})
	g.AddNode("y", "Add", []string{x2, one})
	g.AddNode("z", "Cast", []string{"ids"}, onnxpb.AttrInt("to", int64(onnxpb.Float32)))
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("rows"), onnxpb.Fixed(4))
	g.AddOutput("z", onnxpb.Float32, onnxpb.Symbolic("rows"))
	return writeModel(t, onnxpb.NewModel(g))
}

func cpuConfig() onnx.SessionConfig {
	c := onnx.DefaultSessionConfig()
	c.Provider = onnx.ProviderCPU
	c.IntraOpThreads = 1
	return c
}

func newSession(t testing.TB, path string, in, out []string, cfg onnx.SessionConfig) *onnx.Session {
	t.Helper()
	s, err := onnx.NewSession(path, in, out, cfg)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInitLibraryErrors(t *testing.T) {
	initORT(t)
	other := filepath.Join(t.TempDir(), "libother.so")
	if err := os.WriteFile(other, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"missing", filepath.Join(t.TempDir(), "nope.so"), "make runtime"},
		{"different path after init", other, "already initialised"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := onnx.Init(onnx.RuntimeConfig{LibraryPath: tc.path})
			if !errors.Is(err, onnx.ErrLibrary) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Init(%s) = %v, want ErrLibrary mentioning %q", tc.path, err, tc.want)
			}
		})
	}
	// Same path again is a no-op.
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: artifacts.ORTLib()}); err != nil {
		t.Fatalf("second Init with the same path: %v", err)
	}
}

func TestSessionConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*onnx.SessionConfig)
		ok   bool
	}{
		{"default", func(*onnx.SessionConfig) {}, true},
		{"cpu", func(c *onnx.SessionConfig) { c.Provider = onnx.ProviderCPU }, true},
		{"bad provider", func(c *onnx.SessionConfig) { c.Provider = "tpu" }, false},
		{"zero pool", func(c *onnx.SessionConfig) { c.PoolSize = 0 }, false},
		{"negative threads", func(c *onnx.SessionConfig) { c.IntraOpThreads = -1 }, false},
		{"bad optimization", func(c *onnx.SessionConfig) { c.GraphOptimization = "max" }, false},
		{"disable optimization", func(c *onnx.SessionConfig) { c.GraphOptimization = "disable" }, true},
		{"negative device", func(c *onnx.SessionConfig) { c.CUDADeviceID = -1 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := onnx.DefaultSessionConfig()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, onnx.ErrBadConfig) {
				t.Fatalf("error %v does not wrap ErrBadConfig", err)
			}
		})
	}
}

func TestRunMatMulMatchesGo(t *testing.T) {
	initORT(t)
	const n = 16
	path := writeModel(t, built(onnxpb.MatMulModel(n, 7)))
	s := newSession(t, path, []string{"x"}, []string{"y"}, cpuConfig())
	if s.Provider() != onnx.ProviderCPU {
		t.Fatalf("Provider() = %q, want cpu", s.Provider())
	}
	// Recover W by feeding the identity matrix.
	eye := make([]float32, n*n)
	for i := range n {
		eye[i*n+i] = 1
	}
	out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{n, n}, Float32: eye}})
	if err != nil {
		t.Fatal(err)
	}
	w := out[0].Float32
	r := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int64{1, 3, 8} {
		x := make([]float32, int(rows)*n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{rows, n}, Float32: x}})
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Shape; len(got) != 2 || got[0] != rows || got[1] != n {
			t.Fatalf("rows=%d: shape %v", rows, got)
		}
		for i := range int(rows) {
			for j := range n {
				var want float64
				for k := range n {
					want += float64(x[i*n+k]) * float64(w[k*n+j])
				}
				if got := float64(out[0].Float32[i*n+j]); math.Abs(got-want) > 1e-4 {
					t.Fatalf("rows=%d y[%d,%d] = %g, want %g", rows, i, j, got, want)
				}
			}
		}
	}
}

func TestRunMixedInputsAnyOrder(t *testing.T) {
	initORT(t)
	s := newSession(t, mixedModel(t), []string{"x", "ids"}, []string{"z", "y"}, cpuConfig())
	out, err := s.Run(context.Background(), []onnx.Input{
		{Name: "ids", Shape: []int64{2}, Int64: []int64{5, -3}},
		{Name: "x", Shape: []int64{2, 4}, Float32: []float32{0, 1, 2, 3, 4, 5, 6, 7}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Name != "z" || out[1].Name != "y" {
		t.Fatalf("output order %q %q, want z y", out[0].Name, out[1].Name)
	}
	if fmt.Sprint(out[0].Float32) != "[5 -3]" {
		t.Fatalf("z = %v", out[0].Float32)
	}
	if fmt.Sprint(out[1].Float32) != "[1 3 5 7 9 11 13 15]" {
		t.Fatalf("y = %v", out[1].Float32)
	}
}

func TestRunBadInput(t *testing.T) {
	initORT(t)
	s := newSession(t, mixedModel(t), []string{"x", "ids"}, []string{"y", "z"}, cpuConfig())
	x := onnx.Input{Name: "x", Shape: []int64{1, 4}, Float32: []float32{1, 2, 3, 4}}
	ids := onnx.Input{Name: "ids", Shape: []int64{1}, Int64: []int64{1}}
	tests := []struct {
		name   string
		inputs []onnx.Input
	}{
		{"missing input", []onnx.Input{x}},
		{"extra input", []onnx.Input{x, ids, ids}},
		{"unknown name", []onnx.Input{x, {Name: "idz", Shape: []int64{1}, Int64: []int64{1}}}},
		{"duplicate name", []onnx.Input{x, x}},
		{"no data", []onnx.Input{x, {Name: "ids", Shape: []int64{1}}}},
		{"both data", []onnx.Input{x, {Name: "ids", Shape: []int64{1}, Int64: []int64{1}, Float32: []float32{1}}}},
		{"wrong type", []onnx.Input{x, {Name: "ids", Shape: []int64{1}, Float32: []float32{1}}}},
		{"short data", []onnx.Input{{Name: "x", Shape: []int64{2, 4}, Float32: []float32{1, 2, 3, 4}}, ids}},
		{"long data", []onnx.Input{{Name: "x", Shape: []int64{1, 2}, Float32: []float32{1, 2, 3, 4}}, ids}},
		{"fixed dim mismatch", []onnx.Input{{Name: "x", Shape: []int64{2, 2}, Float32: []float32{1, 2, 3, 4}}, ids}},
		{"wrong rank", []onnx.Input{{Name: "x", Shape: []int64{4}, Float32: []float32{1, 2, 3, 4}}, ids}},
		{"empty shape", []onnx.Input{x, {Name: "ids", Int64: []int64{1}}}},
		{"negative dim", []onnx.Input{x, {Name: "ids", Shape: []int64{-1}, Int64: []int64{1}}}},
		{"overflow", []onnx.Input{{Name: "x", Shape: []int64{math.MaxInt64 / 2, 4}, Float32: []float32{1}}, ids}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Run(context.Background(), tc.inputs)
			if !errors.Is(err, onnx.ErrBadInput) {
				t.Fatalf("Run = %v, want ErrBadInput", err)
			}
		})
	}
	// The session still works afterwards.
	if _, err := s.Run(context.Background(), []onnx.Input{x, ids}); err != nil {
		t.Fatal(err)
	}
}

func TestNewSessionErrors(t *testing.T) {
	initORT(t)
	path := mixedModel(t)
	bad := filepath.Join(t.TempDir(), "garbage.onnx")
	if err := os.WriteFile(bad, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		in, out []string
		want    error
	}{
		{"unknown input", path, []string{"x", "nope"}, []string{"y"}, onnx.ErrModel},
		{"unknown output", path, []string{"x", "ids"}, []string{"nope"}, onnx.ErrModel},
		{"missing file", filepath.Join(t.TempDir(), "x.onnx"), []string{"x"}, []string{"y"}, onnx.ErrModel},
		{"not a model", bad, []string{"x"}, []string{"y"}, onnx.ErrModel},
		{"no outputs", path, []string{"x"}, nil, onnx.ErrModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := onnx.NewSession(tc.path, tc.in, tc.out, cpuConfig())
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewSession = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestModelIO(t *testing.T) {
	initORT(t)
	ins, outs, err := onnx.ModelIO(mixedModel(t))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ins, outs)
	want := "[{x float32 [-1 4]} {ids int64 [-1]}] [{y float32 [-1 4]} {z float32 [-1]}]"
	if got != want {
		t.Fatalf("ModelIO = %s, want %s", got, want)
	}
}

func TestProviderAutoFallsBackToCPU(t *testing.T) {
	initORT(t)
	cfg := cpuConfig()
	cfg.Provider = onnx.ProviderAuto
	s := newSession(t, mixedModel(t), []string{"x", "ids"}, []string{"y"}, cfg)
	if p := s.Provider(); p != onnx.ProviderCPU && p != onnx.ProviderCUDA {
		t.Fatalf("Provider() = %q", p)
	}
	if _, err := onnx.NewSession(mixedModel(t), []string{"x", "ids"}, []string{"y"}, withProvider(cfg, onnx.ProviderCUDA)); err == nil {
		if s.Provider() != onnx.ProviderCUDA {
			t.Fatalf("cuda session opened but auto chose %q", s.Provider())
		}
		return
	}
	if s.Provider() != onnx.ProviderCPU {
		t.Fatalf("CUDA unavailable but auto reports %q", s.Provider())
	}
}

func withProvider(c onnx.SessionConfig, p onnx.Provider) onnx.SessionConfig {
	c.Provider = p
	return c
}

func TestProviderCUDA(t *testing.T) {
	initORT(t)
	s, err := onnx.NewSession(mixedModel(t), []string{"x", "ids"}, []string{"y"}, withProvider(cpuConfig(), onnx.ProviderCUDA))
	if err != nil {
		if !errors.Is(err, onnx.ErrProviderUnavailable) {
			t.Fatalf("NewSession(cuda) = %v, want nil or ErrProviderUnavailable", err)
		}
		t.Skipf("CUDA execution provider unavailable (expected without a GPU build of ONNX Runtime): %v", err)
	}
	defer s.Close()
	if s.Provider() != onnx.ProviderCUDA {
		t.Fatalf("Provider() = %q", s.Provider())
	}
	out, err := s.Run(context.Background(), []onnx.Input{
		{Name: "x", Shape: []int64{1, 4}, Float32: []float32{0, 1, 2, 3}},
		{Name: "ids", Shape: []int64{1}, Int64: []int64{9}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out[0].Float32) != "[1 3 5 7]" {
		t.Fatalf("y = %v", out[0].Float32)
	}
}

func TestConcurrentRuns(t *testing.T) {
	initORT(t)
	cfg := cpuConfig()
	cfg.PoolSize = 2
	s := newSession(t, mixedModel(t), []string{"x", "ids"}, []string{"y", "z"}, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				v := float32(g*100 + i)
				out, err := s.Run(context.Background(), []onnx.Input{
					{Name: "x", Shape: []int64{1, 4}, Float32: []float32{v, v, v, v}},
					{Name: "ids", Shape: []int64{1}, Int64: []int64{int64(v)}},
				})
				if err != nil {
					errs <- err
					return
				}
				if out[0].Float32[3] != 2*v+1 || out[1].Float32[0] != v {
					errs <- fmt.Errorf("goroutine %d run %d: got %v %v", g, i, out[0].Float32, out[1].Float32)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// chainModel is slow enough (many MatMul nodes) to cancel mid-run.
func chainModel(t testing.TB) string {
	return writeModel(t, built(onnxpb.MatMulChainModel(256, 2000, 3)))
}

func chainInput(rows int) []onnx.Input {
	return []onnx.Input{{Name: "x", Shape: []int64{int64(rows), 256}, Float32: make([]float32, rows*256)}}
}

func TestCancelMidRun(t *testing.T) {
	initORT(t)
	s := newSession(t, chainModel(t), []string{"x"}, []string{"y"}, cpuConfig())
	// 2000 MatMuls of [2048,256]·[256,256] are ~537 GFLOP: several seconds
	// on one thread even at a modern core's theoretical peak, so a run that
	// ends within the bound below was terminated.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Run(ctx, chainInput(2048))
	elapsed := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	t.Logf("cancelled after 20ms, Run returned after %v", elapsed)
	if elapsed > 2*time.Second {
		t.Fatalf("cancelled run took %v", elapsed)
	}
	// The pooled session is usable again.
	out, err := s.Run(context.Background(), chainInput(1))
	if err != nil || len(out[0].Float32) != 256 {
		t.Fatalf("run after cancel: %v", err)
	}
}

func TestDeadlineBeforeStart(t *testing.T) {
	initORT(t)
	s := newSession(t, mixedModel(t), []string{"x", "ids"}, []string{"y"}, cpuConfig())
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	_, err := s.Run(ctx, []onnx.Input{
		{Name: "x", Shape: []int64{1, 4}, Float32: []float32{0, 1, 2, 3}},
		{Name: "ids", Shape: []int64{1}, Int64: []int64{9}},
	})
	if err != context.DeadlineExceeded {
		t.Fatalf("Run = %v, want context.DeadlineExceeded", err)
	}
}

func TestWaitForPoolHonoursContext(t *testing.T) {
	initORT(t)
	s := newSession(t, chainModel(t), []string{"x"}, []string{"y"}, cpuConfig())
	busyCtx, stopBusy := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		close(started)
		_, err := s.Run(busyCtx, chainInput(256))
		done <- err
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // let it take the only session
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Run(ctx, chainInput(1))
	stopBusy()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting Run = %v, want DeadlineExceeded", err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("busy Run = %v, want Canceled", err)
	}
}

func TestCloseTwiceAndRunAfterClose(t *testing.T) {
	initORT(t)
	s, err := onnx.NewSession(mixedModel(t), []string{"x", "ids"}, []string{"y"}, cpuConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	_, err = s.Run(context.Background(), []onnx.Input{
		{Name: "x", Shape: []int64{1, 4}, Float32: []float32{0, 1, 2, 3}},
		{Name: "ids", Shape: []int64{1}, Int64: []int64{9}},
	})
	if !errors.Is(err, onnx.ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

func TestCloseWhileRunning(t *testing.T) {
	initORT(t)
	cfg := cpuConfig()
	cfg.PoolSize = 2
	s, err := onnx.NewSession(writeModel(t, built(onnxpb.MatMulChainModel(128, 40, 5))), []string{"x"}, []string{"y"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]int{}
	for range 6 {
		wg.Go(func() {
			for {
				out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{64, 128}, Float32: make([]float32, 64*128)}})
				mu.Lock()
				switch {
				case err == nil && len(out[0].Float32) == 64*128:
					results["ok"]++
				case errors.Is(err, onnx.ErrClosed):
					results["closed"]++
				default:
					results[fmt.Sprint(err)]++
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if results["closed"] != 6 || len(results) > 2 {
		t.Fatalf("results %v: want every goroutine to end with ErrClosed and no other errors", results)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResidentMemoryFlat runs a small model 2,000 times and checks that
// resident memory does not grow: a leaked input or output tensor per run
// (64 KiB each here) would add over 120 MiB.
func TestResidentMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 2,000 runs")
	}
	initORT(t)
	const n = 128
	s := newSession(t, writeModel(t, built(onnxpb.MatMulModel(n, 9))), []string{"x"}, []string{"y"}, cpuConfig())
	x := make([]float32, n*n)
	run := func(k int) {
		for range k {
			if _, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{n, n}, Float32: x}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(200) // warm up arenas and Go heap
	runtime.GC()
	before := onnx.ResidentBytes()
	if before == 0 {
		t.Skip("no /proc/self/statm")
	}
	run(2000)
	runtime.GC()
	after := onnx.ResidentBytes()
	growth := after - before
	t.Logf("RSS before %.1f MiB, after 2000 runs %.1f MiB (growth %.1f MiB)", mib(before), mib(after), mib(growth))
	if growth > 24<<20 {
		t.Fatalf("resident memory grew by %.1f MiB over 2000 runs", mib(growth))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func BenchmarkRunSmall(b *testing.B) {
	initORT(b)
	s := newSession(b, mixedModel(b), []string{"x", "ids"}, []string{"y", "z"}, cpuConfig())
	in := []onnx.Input{
		{Name: "x", Shape: []int64{1, 4}, Float32: []float32{0, 1, 2, 3}},
		{Name: "ids", Shape: []int64{1}, Int64: []int64{9}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Run(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatMulGFLOPS reports the runtime's MatMul throughput on one
// thread; cmd/bench measures the machine's peak with all threads.
func BenchmarkMatMulGFLOPS(b *testing.B) {
	initORT(b)
	const n = 512
	s := newSession(b, writeModel(b, built(onnxpb.MatMulModel(n, 1))), []string{"x"}, []string{"y"}, cpuConfig())
	in := []onnx.Input{{Name: "x", Shape: []int64{n, n}, Float32: make([]float32, n*n)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Run(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestNewSessionModelForCPU: CPU sessions run the model ForCPU returns
// (here a different weight, so the outputs tell which ran), asked once
// for the whole pool; "" or a copy the runtime cannot load loads the
// file; an error fails the load.
func TestNewSessionModelForCPU(t *testing.T) {
	initORT(t)
	const n = 8
	file := writeModel(t, built(onnxpb.MatMulModel(n, 1)))
	other := writeModel(t, built(onnxpb.MatMulModel(n, 2)))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i + 1)
	}
	run := func(t *testing.T, s *onnx.Session) []float32 {
		t.Helper()
		out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{1, n}, Float32: x}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Float32
	}
	open := func(t *testing.T, m onnx.Model, pool int) *onnx.Session {
		t.Helper()
		cfg := cpuConfig()
		cfg.PoolSize = pool
		s, err := onnx.NewSessionModel(m, []string{"x"}, []string{"y"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	fromFile := run(t, newSession(t, file, []string{"x"}, []string{"y"}, cpuConfig()))
	fromOther := run(t, open(t, onnx.Model{Path: other}, 1))
	if fmt.Sprint(fromFile) == fmt.Sprint(fromOther) {
		t.Fatal("the two weights give the same output: the test cannot tell them apart")
	}

	calls := 0
	s := open(t, onnx.Model{Path: file, ForCPU: func() (string, error) { calls++; return other, nil }}, 3)
	for range 3 { // every pooled session
		if got := run(t, s); fmt.Sprint(got) != fmt.Sprint(fromOther) {
			t.Fatalf("CPU session ran %v, want the rewritten model's %v", got, fromOther)
		}
	}
	if calls != 1 || !s.Rewritten() {
		t.Fatalf("ForCPU called %d times, Rewritten %v", calls, s.Rewritten())
	}

	s = open(t, onnx.Model{Path: file, ForCPU: func() (string, error) { return "", nil }}, 1)
	if got := run(t, s); fmt.Sprint(got) != fmt.Sprint(fromFile) || s.Rewritten() {
		t.Fatalf("no rewrite: ran %v (rewritten %v), want the file's %v", got, s.Rewritten(), fromFile)
	}

	// A copy the runtime refuses: the sessions load the file instead.
	junk := filepath.Join(t.TempDir(), "junk.onnx")
	if err := os.WriteFile(junk, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, onnx.Model{Path: file, ForCPU: func() (string, error) { return junk, nil }}, 2)
	if got := run(t, s); fmt.Sprint(got) != fmt.Sprint(fromFile) || s.Rewritten() {
		t.Fatalf("unloadable copy: ran %v (rewritten %v), want the file's %v", got, s.Rewritten(), fromFile)
	}

	boom := errors.New("boom")
	_, err := onnx.NewSessionModel(onnx.Model{Path: file, ForCPU: func() (string, error) { return "", boom }}, []string{"x"}, []string{"y"}, cpuConfig())
	if !errors.Is(err, boom) || !errors.Is(err, onnx.ErrModel) {
		t.Fatalf("ForCPU error: %v", err)
	}
}
