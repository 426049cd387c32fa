package telemetry

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWrite measures the sustained rate of the whole write path — enqueue, encode, one write
// call — for a typical master record: 20 cuts of 12 coefficients. It syncs every half queue so that
// no record is dropped; with FsyncNever those syncs are the only fsyncs. Allocations are counted
// across both goroutines.
func BenchmarkWrite(b *testing.B) {
	for _, policy := range []FsyncPolicy{FsyncNever, FsyncInterval} {
		b.Run(policy.String(), func(b *testing.B) {
			rec := masterRecord(newRand(1), 1, 12, 20)
			l := mustOpen(b, b.TempDir(), LogOptions{Fsync: policy}, nil)
			b.SetBytes(int64(len(canonical(b, rec)) + 1))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if !l.Write(rec) {
					b.Fatal("dropped")
				}
				if n++; n == DefaultQueueSize/2 {
					mustSync(b, l)
					n = 0
				}
			}
			mustSync(b, l)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			mustClose(b, l)
		})
	}
}

// BenchmarkRead measures decoding the same records back, plain and gzipped.
func BenchmarkRead(b *testing.B) {
	const n = 2000
	rec := masterRecord(newRand(1), 1, 12, 20)
	line := []byte(canonical(b, rec) + "\n")
	plain := bytes.Repeat(line, n)
	dir := b.TempDir()
	files := map[string][]byte{
		"plain": plain,
		"gzip":  gzipBytes(b, plain),
	}
	for _, name := range []string{"plain", "gzip"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, files[name], 0o640); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := NewReader(path)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				r.Close()
				if got != n {
					b.Fatalf("read %d records, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
