//go:build unix

package models

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user and system, all
// threads: unlike wall time, it hardly moves when other processes share
// the cores.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
