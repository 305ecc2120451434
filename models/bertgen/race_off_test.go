//go:build !race

package bertgen_test

const raceEnabled = false
