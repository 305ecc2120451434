//go:build !race

package models_test

// raceEnabled is true under -race, where long native-loop tests skip.
const raceEnabled = false
