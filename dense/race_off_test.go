//go:build !race

package dense_test

// raceEnabled shrinks the slowest tests under the race detector.
const raceEnabled = false
