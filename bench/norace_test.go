//go:build !race

package bench

// raceEnabled is true under -race; see race_test.go.
const raceEnabled = false
