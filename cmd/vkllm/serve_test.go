package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestServeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{nil, 1},
		{[]string{"--model", "noequals"}, 2},
		{[]string{"--model", "a:b=x"}, 2},
		{[]string{"--model", "a=x", "--backend", "tpu"}, 1},
		{[]string{"--bogus"}, 2},
	} {
		var errb bytes.Buffer
		if code := runServe(context.Background(), c.args, &errb); code != c.code {
			t.Errorf("%v: exit %d, want %d: %s", c.args, code, c.code, errb.String())
		} else if code == 1 && !strings.HasPrefix(errb.String(), "error: ") {
			t.Errorf("%v: stderr %q", c.args, errb.String())
		}
	}
}

// TestSIGTERMDrains builds the server, starts a long stream and sends
// SIGTERM: the stream still ends with [DONE] and the process exits 0.
func TestServeSIGTERMDrains(t *testing.T) {
	bin := buildCommand(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--model", "tiny=../../testdata/models/qwen2-tiny", "--addr", "127.0.0.1:0", "--backend", "cpu")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stderr)
	var log strings.Builder
	var base string
	for base == "" {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("server log ended: %v\n%s", err, log.String())
		}
		log.WriteString(line)
		if m := servingRe.FindStringSubmatch(line); m != nil {
			base = m[1]
		}
	}
	go io.Copy(&log, rd) // keep draining the log
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"tiny","prompt":"x","max_tokens":200,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("stream cut by SIGTERM: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, log.String())
	}
}
