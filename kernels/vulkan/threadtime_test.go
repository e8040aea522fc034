//go:build cgo && linux

package vulkan

import (
	"syscall"
	"time"
	"unsafe"
)

// threadTime is the CPU time of the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID): unlike wall time, it leaves out the
// driver's threads (lavapipe runs submitted work on a thread of its
// own) and other processes. The caller locks its OS thread.
func threadTime() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
