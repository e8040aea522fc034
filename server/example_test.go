package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/server"
	"github.com/vkllm/vkllm/kernels"
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
