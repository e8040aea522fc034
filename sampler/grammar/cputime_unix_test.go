//go:build unix

package grammar

import "syscall"

// cpuTime is the process's user+system CPU time in ns: on a shared
// machine it measures the work where wall time measures the queue too.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
