package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"iter"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// fake answers "reply-N" and records the conversations it was given; with
// block set it sends one piece and then waits for its context to end.
type fake struct {
	mu      sync.Mutex
	convs   [][]chat.Message
	block   atomic.Bool
	started chan struct{}
}

func (f *fake) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, _ ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return func(yield func(engine.Delta, error) bool) {
		f.mu.Lock()
		f.convs = append(f.convs, req.Messages)
		n := len(f.convs)
		f.mu.Unlock()
		if f.block.Load() {
			if !yield(engine.Delta{Output: engine.Output{TextDelta: "partial"}}, nil) {
				return
			}
			f.started <- struct{}{}
			<-ctx.Done()
			yield(engine.Delta{}, ctx.Err())
			return
		}
		yield(engine.Delta{Output: engine.Output{TextDelta: "reply-"}}, nil)
		yield(engine.Delta{Output: engine.Output{TextDelta: string(rune('0' + n)), Finished: true, FinishReason: "stop"}}, nil)
	}
}

func roles(msgs []chat.Message) string {
	var b []string
	for _, m := range msgs {
		b = append(b, m.Role+":"+m.Content)
	}
	return strings.Join(b, "|")
}

func TestChatScripted(t *testing.T) {
	f := &fake{}
	var out bytes.Buffer
	r := &repl{m: f, out: &out, intr: make(chan os.Signal)}
	code := r.loop(strings.NewReader("hello\nmore\n/system be brief\nhi\n/reset\nyo\n/nope\n\n/quit\nnever read\n"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := []string{
		"user:hello",
		"user:hello|assistant:reply-1|user:more",
		"system:be brief|user:hi",
		"system:be brief|user:yo",
	}
	if len(f.convs) != len(want) {
		t.Fatalf("%d conversations: %v", len(f.convs), f.convs)
	}
	for i, w := range want {
		if got := roles(f.convs[i]); got != w {
			t.Errorf("turn %d: %q, want %q", i, got, w)
		}
	}
	s := out.String()
	for _, w := range []string{"reply-1\n", "reply-4\n", "(conversation reset)", "(unknown command /nope", `system prompt set to "be brief"`} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	// End of input leaves too.
	if code := (&repl{m: f, out: io.Discard, intr: make(chan os.Signal)}).loop(strings.NewReader("x")); code != 0 {
		t.Fatalf("EOF: exit %d", code)
	}
}

// TestInterrupt: Ctrl-C during an answer stops it and drops the turn;
// the REPL goes on; two Ctrl-C at the prompt leave.
func TestChatInterrupt(t *testing.T) {
	f := &fake{started: make(chan struct{})}
	f.block.Store(true)
	intr := make(chan os.Signal)
	pr, pw := io.Pipe()
	var out syncBuf
	r := &repl{m: f, out: &out, intr: intr}
	done := make(chan int)
	go func() { done <- r.loop(pr) }()
	pw.Write([]byte("long question\n"))
	<-f.started
	intr <- os.Interrupt // stops the answer
	f.block.Store(false)
	waitFor(t, &out, "(answer stopped)")
	pw.Write([]byte("next\n"))
	waitFor(t, &out, "reply-2\n> ") // back at the prompt
	if len(f.convs) != 2 || roles(f.convs[1]) != "user:next" {
		t.Fatalf("the stopped turn stayed in the history: %v", f.convs)
	}
	intr <- os.Interrupt // at the prompt: asks again
	waitFor(t, &out, "press Ctrl-C again")
	intr <- os.Interrupt
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	pw.Close()
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func waitFor(t *testing.T, out interface{ String() string }, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", s, out.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestSignals builds the command and drives it with real SIGINTs over a
// pipe: the first at the prompt does not end it, a message is still
// answered by the tiny model, the second consecutive one ends it with
// status 0.
func TestChatSignals(t *testing.T) {
	bin := buildCommand(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--model", "../../testdata/models/qwen2-tiny", "--backend", "cpu", "--max-tokens", "4", "--seed", "1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	var seen strings.Builder
	from := 0 // output before this was matched already
	readUntil := func(s string) {
		t.Helper()
		defer func() { from = seen.Len() }()
		for !strings.Contains(seen.String()[from:], s) {
			b, err := rd.ReadByte()
			if err != nil {
				t.Fatalf("waiting for %q: %v; output %q, stderr %q", s, err, seen.String(), stderr.String())
			}
			seen.WriteByte(b)
		}
	}
	readUntil("> ")
	cmd.Process.Signal(syscall.SIGINT)
	readUntil("press Ctrl-C again")
	readUntil("> ")
	stdin.Write([]byte("hello\n"))
	readUntil("> ") // answered, back at the prompt
	cmd.Process.Signal(syscall.SIGINT)
	readUntil("press Ctrl-C again")
	readUntil("> ")
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; stderr %q", err, stderr.String())
	}
}

// TestChatTimingLine: each answer is followed by a timing line on stderr whose
// counts are that turn's; stdout does not get it. The load line comes first.
func TestChatTimingLine(t *testing.T) {
	var out, errb bytes.Buffer
	code := runChat([]string{"--model", "../../testdata/models/qwen2-tiny", "--backend", "cpu", "--max-tokens", "4", "--ignore-eos", "--seed", "1"},
		strings.NewReader("hello\nand again\n"), &out, &errb, make(chan os.Signal))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "tok/s") {
		t.Errorf("stdout has the timing line: %q", out.String())
	}
	re := regexp.MustCompile(`^prompt (\d+) tokens \((?:(\d+) cached, )?\d+\.\d tok/s\), generated 4 tokens \(\d+\.\d tok/s\), first token after \d+\.\d{3} s, on cpu$`)
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if len(lines) != 3 || !loadLine.MatchString(lines[0]) {
		t.Fatalf("stderr %q: want the load line, then one timing line per answer", errb.String())
	}
	lines = lines[1:]
	var prompts [2]int
	for i, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("timing line %q does not match %v", l, re)
		}
		prompts[i], _ = strconv.Atoi(m[1])
	}
	if prompts[1] <= prompts[0]+4 { // the second prompt holds the first turn and its answer
		t.Errorf("prompt tokens %v: the second turn's should hold the first's", prompts)
	}
}
