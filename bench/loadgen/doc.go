// Package loadgen is the benchmarks' one closed-loop HTTP load generator:
// Clients goroutines each send a request, read the whole answer and send
// the next, for a warm-up and then a measured window, counting answers by
// status (429s without Retry-After apart) and keeping each answer's
// latency. `bench serve` measures throughput with it (answers in the
// window only) and runs its overload check with it (Drain: every answer
// counts).
//
// It imports nothing of the server, so the server's own tests can drive a
// server with it (server/overload_test.go's client loop is this one).
//
// # Concurrency
//
// Run may be called from several goroutines at once; each call owns its
// clients and its Result. Config.Body and Config.OnWindow are called from
// the run's goroutines (Body from each client's, concurrently).
package loadgen
