package server

import (
	"math"
	"net/http"
	"runtime/debug"
	rtmetrics "runtime/metrics"
)

// runtimeMemory is the memory the Go memory limit governs: everything the
// runtime has mapped, less what it returned to the operating system.
// runtime/metrics reads it without stopping the world (unlike
// runtime.ReadMemStats), so it is cheap enough to check per request.
func runtimeMemory() int64 {
	s := [2]rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s[:])
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// memoryLimit is the Go memory limit (math.MaxInt64 when none is set).
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// admitBody is the memory admission of a request with a body, before its
// body is read: it refuses the request while the process is above
// MemoryHighWater of its memory limit (503), and reserves the body's size
// under MaxInflightBodyBytes (429 beyond, unless nothing is reserved). The
// reservation is the Content-Length, or MaxBodyBytes without one (the
// read stops there). release must be called once the request is answered.
func (s *Server) admitBody(r *http.Request) (release func(), err error) {
	if hw := s.cfg.MemoryHighWater; hw > 0 {
		if limit := s.memLimit(); limit > 0 && limit < math.MaxInt64 {
			if used := s.memUsed(); float64(used) > hw*float64(limit) {
				s.metrics.shed.WithLabelValues("memory").Inc()
				return nil, nearMemoryLimit(used, limit, hw)
			}
		}
	}
	need := r.ContentLength
	if need < 0 || need > s.cfg.MaxBodyBytes {
		need = s.cfg.MaxBodyBytes
	}
	if need == 0 {
		return func() {}, nil
	}
	for {
		cur := s.bodyBytes.Load()
		if cur > 0 && cur+need > s.cfg.MaxInflightBodyBytes {
			s.metrics.shed.WithLabelValues("body_bytes").Inc()
			return nil, tooManyBodyBytes(cur, s.cfg.MaxInflightBodyBytes)
		}
		if s.bodyBytes.CompareAndSwap(cur, cur+need) {
			break
		}
	}
	s.metrics.bodyBytes.Add(float64(need))
	return func() {
		s.bodyBytes.Add(-need)
		s.metrics.bodyBytes.Sub(float64(need))
	}, nil
}
