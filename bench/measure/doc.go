// Package measure holds what every benchmark driver uses while it measures:
// latency percentiles by the nearest-rank method (Percentile for any
// ordered values, e.g. token lengths), conversion of durations to
// milliseconds and rounding for result fields, a terminal progress bar,
// and the process's peak RSS and GPU memory (GPUMemoryMB asks nvidia-smi).
//
// # Concurrency
//
// LatencyStats, Percentile, Ms and Round are pure. A Progress may be advanced from
// several goroutines (Add) and is finished by one (Done); a nil *Progress
// does nothing, so callers need not check whether a bar is shown.
package measure
