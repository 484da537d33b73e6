package pushtest

import (
	"os"
	"strconv"
	"strings"
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

// MachineCPUTime is the CPU time every process on the machine has used, from
// /proc/stat (user, nice, system, irq and softirq); 0 where there is none. On
// an otherwise quiet machine, its growth minus [CPUTime]'s during a benchmark
// is what the benchmark's database server spent for it.
func MachineCPUTime() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	// USER_HZ is 100 on Linux for every architecture Go supports here.
	return time.Duration(ticks) * (time.Second / 100)
}
