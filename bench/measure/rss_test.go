package measure

import (
	"runtime"
	"testing"
)

func TestPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	if !ResetPeakRSS() {
		t.Skip("this kernel cannot reset the peak RSS")
	}
	before := PeakRSS()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	after := PeakRSS()
	runtime.KeepAlive(buf)
	if before <= 0 || after < before+48<<20 {
		t.Fatalf("peak RSS %d → %d after touching 64 MiB", before, after)
	}
}
