//go:build race

package lexical

// raceEnabled is true under -race; the slowest parity checks are skipped
// there (they test arithmetic, not concurrency).
const raceEnabled = true
