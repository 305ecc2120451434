package measure

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ResetPeakRSS resets the process's peak resident set size (Linux: writing
// 5 to /proc/self/clear_refs resets VmHWM to the current RSS), so that
// PeakRSS then reports the peak of what runs in between. It reports false
// where the kernel does not support it.
func ResetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// PeakRSS returns the process's peak resident set size in bytes since the
// start or the last ResetPeakRSS (VmHWM of /proc/self/status), or 0 where
// it cannot be read.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(v) // "123456 kB"
		if len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
