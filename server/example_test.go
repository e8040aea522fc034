package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/server"
)

// A Server over one model, named "tiny", answering an OpenAI chat request.
// The tiny test model has random weights; its reply is 4 tokens of noise,
// cut by max_tokens ("length").
func Example() {
	srv, err := server.New(server.Config{
		Models: []server.Spec{{Name: "tiny", Path: "../testdata/models/qwen2-tiny"}},
		Engine: engine.Options{Backend: kernels.CPURef},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.WaitLoaded(ctx); err != nil { // models load in the background
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	body := `{"model": "tiny", "max_tokens": 4, "temperature": 0,
		"messages": [{"role": "user", "content": "What is the capital of France?"}]}`
	resp, err := client.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, out.Choices[0].FinishReason, out.Usage.CompletionTokens)
	// Output: 200 length 4
}

// The server's routes mounted on an application's own mux, its request
// logs going to the application's slog.Logger.
func ExampleServer_Register() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.New(server.Config{
		Models: []server.Spec{{Name: "tiny", Path: "../testdata/models/qwen2-tiny"}},
		Engine: engine.Options{Backend: kernels.CPURef},
		Logger: logger,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "the application") })
	srv.Register(mux)
	if err := srv.WaitLoaded(context.Background()); err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(mux)
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, path := range []string{"/v1/models", "/"} {
		resp, err := client.Get(hs.URL + path)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, strings.Contains(string(body), `"id":"tiny"`))
	}
	// Output:
	// /v1/models 200 true
	// / 200 false
}
