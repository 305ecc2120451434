//go:build !race

package lexical

// raceEnabled is true under -race; see race_test.go.
const raceEnabled = false
