package pushtest

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// RunConcurrent runs fn b.N times in total on exactly p goroutines (unlike
// b.RunParallel, whose goroutine count is a multiple of GOMAXPROCS). fn
// gets the call's index. Besides ns/op it reports cpu-ns/op, the process's
// CPU time (user and system) per call: on a shared machine that is steadier
// than wall time, and it counts client and stand-in alike.
func RunConcurrent(b *testing.B, p int, fn func(i int)) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := CPUTime()
	for range p {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				fn(int(i))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/op")
}

// CPUTime returns the process's user and system CPU time so far.
func CPUTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
