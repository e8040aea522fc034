//go:build !unix

package benchcmd

import "time"

// cpuTime is 0 where the process's CPU time is not read.
func cpuTime() time.Duration { return 0 }
