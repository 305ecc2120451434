//go:build !race

package ort_test

// raceEnabled is true under -race, where long native-loop tests skip.
const raceEnabled = false
