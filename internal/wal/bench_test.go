package wal

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
)

// BenchmarkGroupCommit appends 256-byte records with an fsync per commit
// from 1 and 16 concurrent committers; commits/fsync shows how many
// committers share an fsync.
func BenchmarkGroupCommit(b *testing.B) {
	for _, committers := range []int{1, 16} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			l, err := Open(vfs.OS, b.TempDir(), DefaultConfig(), 1)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			rec := make([]byte, 256)
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + committers - 1) / committers
			for range committers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if _, err := l.Append(rec); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			st := l.Stats()
			b.ReportMetric(float64(st.Records)/float64(max(st.Syncs, 1)), "commits/fsync")
		})
	}
}
