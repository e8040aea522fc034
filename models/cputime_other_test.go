//go:build !unix

package models

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
