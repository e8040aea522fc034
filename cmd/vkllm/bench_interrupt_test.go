//go:build cgo

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer written by one goroutine and read by
// another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBenchSweepInterrupt: SIGTERM during `vkllm bench --sweep` (a sweep
// of minutes on lavapipe) ends it at the next candidate, well within
// interruptGrace and without the last-resort exit: status 1, the tuning
// of what finished written, the cut listed. (Before, bench stopped
// watching the signals after resolving its flags but kept them caught,
// so SIGTERM did nothing.)
func TestBenchSweepInterrupt(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tuning.json")
	var stdout, stderr lockedBuffer
	sig := make(chan os.Signal, 1)
	exited := make(chan int, 1)
	e := env{stdout: &stdout, stderr: &stderr, signals: func() <-chan os.Signal { return sig }, exit: func(code int) { exited <- code }}
	args := []string{"bench", "--sweep", "--sweep-models", "qwen2.5-0.5b-tiny", "--sweep-dtypes", "Q4_0,F16", "--sweep-reps", "20", "--sweep-out", out}
	done := make(chan int, 1)
	go func() { done <- vkllm(context.Background(), e, args) }()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), "sweep matvec/q4_0: started"); {
		select {
		case rc := <-done:
			if strings.Contains(stderr.String(), "no Vulkan") && os.Getenv("VKLLM_VULKAN_OPTIONAL") == "1" {
				t.Skipf("no Vulkan device: %s", stderr.String())
			}
			t.Fatalf("the sweep ended (%d) before it started: %s", rc, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sweep started in 2 minutes: %s", stderr.String())
		}
	}
	time.Sleep(200 * time.Millisecond) // into the first family
	t0 := time.Now()
	sig <- syscall.SIGTERM
	select {
	case rc := <-done:
		took := time.Since(t0)
		t.Logf("ended %v after SIGTERM, status %d", took, rc)
		if rc != 1 || took > interruptGrace {
			t.Errorf("status %d %v after SIGTERM, want 1 within %v", rc, took, interruptGrace)
		}
	case code := <-exited:
		t.Fatalf("the last-resort exit (%d) ended it: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGTERM: %s", stderr.String())
	}
	errs := stderr.String()
	for _, want := range []string{"sweep cut: matvec/q4_0: ", "(interrupted)", "error: sweep interrupted"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("--sweep-out not written: %v", err)
	}
}

// TestExitAfterGrace: a command still busy interruptGrace after its
// interrupt is ended with status 130; one that returns in time is not.
func TestExitAfterGrace(t *testing.T) {
	exited := make(chan int, 1)
	e := env{stderr: &bytes.Buffer{}, exit: func(code int) { exited <- code }}
	ctx, cancel := context.WithCancel(context.Background())
	stop := e.exitAfterGrace(ctx)
	cancel()
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
	case <-time.After(interruptGrace + 5*time.Second):
		t.Fatal("no exit after the grace")
	}
	stop()

	ctx, cancel = context.WithCancel(context.Background())
	stop = e.exitAfterGrace(ctx)
	cancel()
	stop()
	select {
	case code := <-exited:
		t.Errorf("exit %d after the command returned", code)
	case <-time.After(interruptGrace + 500*time.Millisecond):
	}
}
