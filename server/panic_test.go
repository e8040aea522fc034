package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/models"
)

// TestForwardPanicIs500: a panic in the forward pass (a backend bug)
// answers 500 internal_error, is logged with its stack (the answer
// carries only the message), and the server goes on serving.
func TestForwardPanicIs500(t *testing.T) {
	fb := &kerneltest.Faulty{Backend: cpu.New(0)}
	t.Cleanup(func() { fb.Close() }) // after the server's cleanup
	logged := &logCapture{}
	opts := tinyOptions()
	opts.Model = []models.Option{models.WithBackend(fb)}
	ts := newTestServer(t, Config{Logger: slog.New(logged), Open: func(s Spec) (*Model, error) { return OpenModel(context.Background(), s.Path, opts) }})
	ts.waitLoaded()
	c := ts.client()
	msg := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("hi"), MaxTokens: openai.Int(2)}

	fb.Armed.Store(true)
	_, err := c.Chat.Completions.New(context.Background(), msg)
	ae := checkAPIError(t, err, 500, "")
	if ae.Code != "internal_error" || !strings.Contains(ae.Message, kerneltest.FaultValue) || strings.Contains(ae.Message, "goroutine ") {
		t.Fatalf("answer: code %q, message %q; want internal_error naming the panic, without a stack", ae.Code, ae.Message)
	}
	log := logged.String()
	if !strings.Contains(log, "internal error: ") || !strings.Contains(log, kerneltest.FaultValue) || !strings.Contains(log, "panic stack:\ngoroutine ") {
		t.Fatalf("log lacks the error or its stack:\n%s", log)
	}

	fb.Armed.Store(false)
	ts.settle()
	if _, err := c.Chat.Completions.New(context.Background(), msg); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
}
