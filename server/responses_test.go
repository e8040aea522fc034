package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// The Responses API (POST /v1/responses) through the official openai-go
// client: over a fake generator, for what the server hands the library
// and how it answers, and over the tiny model for text.format.

// respText is the text of a response's message items.
func respText(r *responses.Response) string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, c := range it.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

func textInput(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

func items(its ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: its}
}

var weatherFn = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
	Description: openai.String("Weather in a city"), Strict: openai.Bool(false),
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}

// lastReq is the latest chat request the fake generator got.
func (f *fakeGen) lastReq() engine.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

// roles is "role:text" of each message, calls as "call(name,args)".
func roles(msgs []chat.Message) []string {
	var out []string
	for _, m := range msgs {
		s := m.Role + ":" + m.Text()
		for _, c := range m.ToolCalls {
			s += " call(" + c.Function.Name + "," + c.Function.Arguments + ")"
		}
		if m.ToolCallID != "" {
			s += " for " + m.ToolCallID
		}
		out = append(out, s)
	}
	return out
}

func TestResponsesPlain(t *testing.T) {
	ts, f := newFakeServer(t, "Hello from the fake model.")
	c := ts.client()
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("Hi"),
		Instructions: openai.String("Be brief."), MaxOutputTokens: openai.Int(50), Temperature: openai.Float(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	if got := respText(resp); got != "Hello from the fake model." {
		t.Errorf("output text %q", got)
	}
	if resp.Status != "completed" || !strings.HasPrefix(resp.ID, "resp_") || resp.Object != "response" || resp.Model != "fake" ||
		len(resp.Output) != 1 || resp.Output[0].Role != "assistant" || resp.Output[0].Status != "completed" || !strings.HasPrefix(resp.Output[0].ID, "msg_") {
		t.Errorf("response %s", resp.RawJSON())
	}
	if u := resp.Usage; u.InputTokens != 3 || u.OutputTokens != 5 || u.TotalTokens != 8 {
		t.Errorf("usage %+v", u)
	}
	if resp.Instructions.OfString != "Be brief." || resp.Temperature != 0.5 || resp.MaxOutputTokens != 50 || !strings.Contains(resp.RawJSON(), `"store":true`) {
		t.Errorf("echoed fields %s", resp.RawJSON())
	}
	want := []string{"system:Be brief.", "user:Hi"}
	if got := roles(f.lastReq().Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("the library got %q, want %q", got, want)
	}

	// A message array: developer, user, an earlier assistant turn as
	// output_text parts.
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: items(
		responses.ResponseInputItemParamOfMessage("Answer in French.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage("Hello", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("Bonjour", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: "How"}}, {OfInputText: &responses.ResponseInputTextParam{Text: "are you?"}}},
			responses.EasyInputMessageRoleUser))})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"developer:Answer in French.", "user:Hello", "assistant:Bonjour", "user:How\nare you?"}
	if got := roles(f.lastReq().Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("the library got %q, want %q", got, want)
	}
}

// streamResponse runs a streamed response and returns its events, after
// checking their sequence numbers count up from 0 and the stream begins
// with response.created and response.in_progress.
func streamResponse(t *testing.T, c openai.Client, p responses.ResponseNewParams) []responses.ResponseStreamEventUnion {
	t.Helper()
	st := c.Responses.NewStreaming(context.Background(), p)
	defer st.Close()
	var evs []responses.ResponseStreamEventUnion
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != int64(len(evs)) {
			t.Fatalf("event %d (%s) has sequence_number %d", len(evs), ev.Type, ev.SequenceNumber)
		}
		evs = append(evs, ev)
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(evs) < 3 || evs[0].Type != "response.created" || evs[1].Type != "response.in_progress" ||
		evs[0].Response.Status != "in_progress" || evs[0].Response.ID == "" || evs[0].Response.ID != evs[len(evs)-1].Response.ID {
		t.Fatalf("stream %v", types(evs))
	}
	return evs
}

func types(evs []responses.ResponseStreamEventUnion) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

func TestResponsesStream(t *testing.T) {
	const reply = "Hello from the fake model."
	ts, _ := newFakeServer(t, reply)
	c := ts.client()
	evs := streamResponse(t, c, responses.ResponseNewParams{Model: "fake", Input: textInput("Hi")})
	var deltas strings.Builder
	var order []string
	for _, ev := range evs {
		if ev.Type == "response.output_text.delta" {
			deltas.WriteString(ev.Delta)
			if ev.ItemID == "" || ev.OutputIndex != 0 || ev.ContentIndex != 0 {
				t.Errorf("delta %s", ev.RawJSON())
			}
			continue
		}
		order = append(order, ev.Type)
		if ev.Type == "response.output_item.added" && !strings.Contains(ev.RawJSON(), `"content":[]`) {
			t.Errorf("a message item is added without its empty content: %s", ev.RawJSON())
		}
	}
	if deltas.String() != reply {
		t.Errorf("deltas add up to %q", deltas.String())
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("events %q, want %q (deltas aside)", order, want)
	}
	last := evs[len(evs)-1].Response
	if last.Status != "completed" || respText(&last) != reply || last.Usage.OutputTokens != 5 {
		t.Errorf("completed %s", last.RawJSON())
	}
	for _, ev := range evs {
		if ev.Type == "response.output_text.done" && ev.Text != reply {
			t.Errorf("output_text.done says %q", ev.Text)
		}
	}
}

func TestResponsesTools(t *testing.T) {
	ts, f := newFakeServer(t, toolReply)
	c := ts.client()
	ctx := context.Background()
	p := responses.ResponseNewParams{Model: "fake", Input: textInput("Weather in Paris?"), Tools: []responses.ToolUnionParam{weatherFn}}
	resp, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.Output[0].Type != "message" || respText(resp) != "Let me look." || resp.Output[1].Type != "function_call" {
		t.Fatalf("output %s", resp.RawJSON())
	}
	call := resp.Output[1].AsFunctionCall()
	if call.Name != "get_weather" || call.Arguments != `{"city":"Paris","unit":"c"}` || !strings.HasPrefix(call.CallID, "call_") ||
		!strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" {
		t.Fatalf("call %s", resp.Output[1].RawJSON())
	}
	r := f.lastReq()
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "get_weather" || r.Tools[0].Function.Description != "Weather in a city" ||
		!strings.Contains(string(r.Tools[0].Function.Parameters), `"city"`) || r.ToolChoice != "" {
		t.Fatalf("the library got %+v", r)
	}

	// Streamed: a message item, then the call's item; its arguments
	// come in several deltas and add up to the same call.
	evs := streamResponse(t, c, p)
	var args strings.Builder
	var argDeltas int
	var seen []string
	for _, ev := range evs {
		switch ev.Type {
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
			argDeltas++
			if ev.OutputIndex != 1 {
				t.Errorf("arguments delta of output %d", ev.OutputIndex)
			}
		case "response.function_call_arguments.done":
			if ev.Arguments != call.Arguments || !strings.Contains(ev.RawJSON(), `"name":"get_weather"`) {
				t.Errorf("arguments done %s", ev.RawJSON())
			}
		case "response.output_item.added", "response.output_item.done":
			seen = append(seen, ev.Type+":"+ev.Item.Type)
		}
	}
	if args.String() != call.Arguments || argDeltas < 2 {
		t.Errorf("%d argument deltas add up to %q", argDeltas, args.String())
	}
	want := []string{"response.output_item.added:message", "response.output_item.done:message",
		"response.output_item.added:function_call", "response.output_item.done:function_call"}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("items %q, want %q", seen, want)
	}
	if last := evs[len(evs)-1].Response; len(last.Output) != 2 || last.Output[1].Name != "get_weather" {
		t.Errorf("completed %s", last.RawJSON())
	}

	// The call's output, sent back after the stored response: the
	// library gets the whole turn, the call and its result.
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", PreviousResponseID: openai.String(resp.ID),
		Tools: []responses.ToolUnionParam{weatherFn},
		Input: items1(callOutput(call.CallID, "18 C, sunny"))})
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := []string{"user:Weather in Paris?", `assistant:Let me look. call(get_weather,{"city":"Paris","unit":"c"})`, "tool:18 C, sunny for " + call.CallID}
	if got := roles(f.lastReq().Messages); !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("after previous_response_id the library got %q, want %q", got, wantMsgs)
	}
	// The same turn given in full as items, without a stored response.
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Tools: []responses.ToolUnionParam{weatherFn},
		Input: items(responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("Let me look.", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, "get_weather"),
			callOutput(call.CallID, "18 C, sunny"))})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(f.lastReq().Messages); !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("items: the library got %q, want %q", got, wantMsgs)
	}

	// "parameters": null (what the client sends for none) is no schema.
	if status, _, b := ts.do("POST", "/v1/responses", "application/json",
		`{"model":"fake","input":"hi","tools":[{"type":"function","name":"now","parameters":null,"strict":null}]}`); status != http.StatusOK ||
		f.lastReq().Tools[0].Function.Parameters != nil {
		t.Errorf("parameters null: %d %s, the library got %q", status, b, f.lastReq().Tools[0].Function.Parameters)
	}

	// tool_choice: required, and a named function.
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(responses.ToolChoiceOptionsRequired)}
	if _, err := c.Responses.New(ctx, p); err != nil || f.lastReq().ToolChoice != engine.ToolRequired {
		t.Errorf("required: %v, the library got %q", err, f.lastReq().ToolChoice)
	}
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}
	if _, err := c.Responses.New(ctx, p); err != nil || f.lastReq().ToolChoice != "get_weather" {
		t.Errorf("named: %v, the library got %q", err, f.lastReq().ToolChoice)
	}
}

func callOutput(id, out string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: openai.String(id), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(out)}}}
}

func items1(it responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return items(it)
}

// TestResponsesJSONSchema runs the tiny random model under text.format
// json_schema: the reply, streamed or not, validates against the
// schema (random weights: only the library's constraint makes it valid).
func TestResponsesJSONSchema(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	validate := jsonValidator(t, userSchema)
	var schema map[string]any
	if err := json.Unmarshal([]byte(userSchema), &schema); err != nil {
		t.Fatal(err)
	}
	p := responses.ResponseNewParams{Model: "tiny", Input: textInput("A user, as JSON."), MaxOutputTokens: openai.Int(200),
		Temperature: openai.Float(1), Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "user", Schema: schema, Strict: openai.Bool(true)}}}}
	for seed := range int64(3) {
		resp, err := c.Responses.New(context.Background(), p, option.WithJSONSet("seed", seed))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != "completed" {
			t.Fatalf("seed %d: status %s: %s", seed, resp.Status, resp.RawJSON())
		}
		if err := validate(respText(resp)); err != nil {
			t.Errorf("seed %d: %q: %v", seed, respText(resp), err)
		}
		if resp.Text.Format.Type != "json_schema" || resp.Text.Format.Name != "user" {
			t.Errorf("text.format echoed as %s", resp.Text.RawJSON())
		}
	}
	evs := streamResponse(t, c, p)
	last := evs[len(evs)-1].Response
	if err := validate(respText(&last)); err != nil {
		t.Errorf("streamed: %q: %v", respText(&last), err)
	}

	// max_output_tokens reached: incomplete, streamed or not.
	p = responses.ResponseNewParams{Model: "tiny", Input: textInput("Hi"), MaxOutputTokens: openai.Int(2), Temperature: openai.Float(0)} // greedy: no end of text at the second token
	resp, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" || resp.Usage.OutputTokens != 2 || resp.Output[0].Status != "incomplete" {
		t.Errorf("cut: %s", resp.RawJSON())
	}
	evs = streamResponse(t, c, p)
	if last := evs[len(evs)-1]; last.Type != "response.incomplete" || last.Response.Status != "incomplete" {
		t.Errorf("cut, streamed: %s", last.RawJSON())
	}
	ts.settle()
}

func TestResponsesPrevious(t *testing.T) {
	ts, f := newFakeServer(t, "Reply.")
	c := ts.client()
	ctx := context.Background()
	r1, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("One"), Instructions: openai.String("Be brief.")})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("Two"), PreviousResponseID: openai.String(r1.ID)})
	if err != nil {
		t.Fatal(err)
	}
	// Instructions are not carried over, as OpenAI's.
	want := []string{"user:One", "assistant:Reply.", "user:Two"}
	if got := roles(f.lastReq().Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("the library got %q, want %q", got, want)
	}
	if r2.PreviousResponseID != r1.ID {
		t.Errorf("previous_response_id echoed as %q", r2.PreviousResponseID)
	}
	// A chain, streamed.
	evs := streamResponse(t, c, responses.ResponseNewParams{Model: "fake", Input: textInput("Three"), PreviousResponseID: openai.String(r2.ID),
		Instructions: openai.String("New rules.")})
	want = []string{"system:New rules.", "user:One", "assistant:Reply.", "user:Two", "assistant:Reply.", "user:Three"}
	if got := roles(f.lastReq().Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("the library got %q, want %q", got, want)
	}
	r3 := evs[len(evs)-1].Response.ID

	// GET finds a stored response; DELETE removes it.
	got, err := c.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != r1.ID || respText(got) != "Reply." {
		t.Fatalf("get: %v %+v", err, got)
	}
	if err := c.Responses.Delete(ctx, r3); err != nil {
		t.Fatal(err)
	}
	notFound(t, "deleted", func() error {
		_, err := c.Responses.Get(ctx, r3, responses.ResponseGetParams{})
		return err
	}, "response_not_found")

	// store: false is not kept.
	r4, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("Hi"), Store: openai.Bool(false)})
	if err != nil || !strings.Contains(r4.RawJSON(), `"store":false`) {
		t.Fatalf("%v %+v", err, r4)
	}
	for _, id := range []string{r4.ID, "resp_unknown", r3} {
		notFound(t, id, func() error {
			_, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("Hi"), PreviousResponseID: openai.String(id)})
			return err
		}, "previous_response_not_found")
	}
}

// notFound checks err is a 404 of code.
func notFound(t *testing.T, what string, call func() error, code string) {
	t.Helper()
	var e *openai.Error
	if err := call(); !errors.As(err, &e) || e.StatusCode != http.StatusNotFound || e.Code != code {
		t.Errorf("%s: got %v, want a 404 %s", what, err, code)
	}
}

// TestResponsesStoreBounds: stored responses are per API key (one key
// cannot continue, read nor delete another's) and bounded in number, in
// bytes and in time for each key.
func TestResponsesStoreBounds(t *testing.T) {
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeGen{tok: tok, reply: "Reply."}
	keys, err := NewKeys([]Key{{ID: "alice", Secret: "sk-a"}, {ID: "bob", Secret: "sk-b"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "fake", Path: "-"}}, Keys: keys,
		Open: func(Spec) (*Model, error) { return &Model{Gen: f}, nil }})
	ts.waitLoaded()
	ts.srv.responses.max = 3
	alice, bob := ts.client(option.WithAPIKey("sk-a")), ts.client(option.WithAPIKey("sk-b"))
	ctx := context.Background()
	newResp := func(c openai.Client) string {
		t.Helper()
		r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("Hi")})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	a1 := newResp(alice)
	cont := func(c openai.Client, id string) error {
		_, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "fake", Input: textInput("Go on"), PreviousResponseID: openai.String(id)})
		return err
	}
	notFound(t, "bob continues alice's", func() error { return cont(bob, a1) }, "previous_response_not_found")
	notFound(t, "bob reads alice's", func() error {
		_, err := bob.Responses.Get(ctx, a1, responses.ResponseGetParams{})
		return err
	}, "response_not_found")
	notFound(t, "bob deletes alice's", func() error { return bob.Responses.Delete(ctx, a1) }, "response_not_found")
	if err := cont(alice, a1); err != nil {
		t.Fatalf("alice continues her own: %v", err)
	}

	// Count: alice holds a1 and its continuation; two more of hers push
	// a1 out, and bob's do not count against her.
	for range 3 {
		newResp(bob)
	}
	a3, a4 := newResp(alice), newResp(alice)
	notFound(t, "the oldest of 4 with room for 3", func() error { return cont(alice, a1) }, "previous_response_not_found")
	for _, id := range []string{a3, a4} {
		if err := cont(alice, id); err != nil {
			t.Errorf("a recent one: %v", err)
		}
	}
	if n := len(ts.srv.responses.byKey["bob"].ids); n != 3 {
		t.Errorf("bob holds %d responses, want 3", n)
	}
}

// TestResponseStore checks the store's bounds of bytes and time
// directly, with a clock of the test's.
func TestResponseStore(t *testing.T) {
	st := &responseStore{bytes: 4000, ttl: time.Minute}
	now := time.Unix(1000, 0)
	conv := func(n int) []chat.Message { return []chat.Message{{Role: "user", Content: strings.Repeat("x", n)}} }
	obj := func(id string) *responseObject { return &responseObject{ID: id, Output: []responseItem{}} }
	if !st.put("k", obj("a"), conv(1000), now) || !st.put("k", obj("b"), conv(1000), now) || !st.put("k", obj("c"), conv(1000), now) {
		t.Fatal("not stored")
	}
	if st.get("k", "a", now) != nil {
		t.Error("the oldest is kept beyond the key's bytes")
	}
	if st.get("k", "b", now) == nil || st.get("k", "c", now) == nil {
		t.Error("recent ones lost")
	}
	if st.put("k", obj("huge"), conv(5000), now) || st.get("k", "huge", now) != nil {
		t.Error("a response larger than the key's budget is stored")
	}
	if st.get("other", "b", now) != nil {
		t.Error("another key reads it")
	}
	if st.get("k", "b", now.Add(time.Minute)) != nil {
		t.Error("an expired one is found")
	}
	if ks := st.byKey["k"]; len(ks.ids) != 1 || ks.size <= 0 || ks.size > st.bytes {
		t.Errorf("after expiry the key holds %v (%d bytes)", ks.ids, ks.size)
	}
	st.put("k", obj("d"), conv(10), now.Add(2*time.Minute))
	if ks := st.byKey["k"]; !reflect.DeepEqual(ks.ids, []string{"d"}) {
		t.Errorf("a put drops the expired ones: %v", ks.ids)
	}
}

// TestResponsesBadInput: what the Responses API cannot serve is a 400
// naming the field, never a silent drop. (What the library's planner
// refuses, an image part say: TestPlannerErrors.)
func TestResponsesBadInput(t *testing.T) {
	ts, _ := newFakeServer(t, "Reply.")
	for _, tc := range []struct{ body, param string }{
		{`{"model":"fake"}`, "input"},
		{`{"model":"fake","input":[]}`, "input"},
		{`{"model":"fake","input":42}`, "input"},
		{`{"model":"fake","input":[{"type":"reasoning","summary":[]}]}`, "input[0].type"},
		{`{"model":"fake","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0]"},
		{`{"model":"fake","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{`{"model":"fake","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{`{"model":"fake","input":"hi","tools":[{"type":"function","name":"bad name"}]}`, "tools[0].name"},
		{`{"model":"fake","input":"hi","tool_choice":{"type":"file_search"}}`, "tool_choice"},
		{`{"model":"fake","input":"hi","max_output_tokens":0}`, "max_output_tokens"},
		{`{"model":"fake","input":"hi","background":true}`, "background"},
	} {
		status, _, body := ts.do("POST", "/v1/responses", "application/json", tc.body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", tc.body, status, body)
			continue
		}
		e := errorBody(t, body)
		if p, _ := e["param"].(string); tc.param != "" && p != tc.param {
			t.Errorf("%s: param %q, want %q (%s)", tc.body, p, tc.param, body)
		}
	}
}

// FuzzDecodeResponses: any body of POST /v1/responses is decoded and its
// input mapped to messages without a panic, or refused with a clean 4xx.
func FuzzDecodeResponses(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi","instructions":"be brief","max_output_tokens":5}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}],"tools":[{"type":"web_search"}]}`,
		`{"model":"m","input":42,"text":{"format":{"type":"json_schema","schema":{}}},"tool_choice":{"type":"function","name":"f"}}`,
		`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"store":"no"}`,
		`[1,2]`, `null`, ``, `{"input":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req responsesRequest
		if e := decodeBody(body, &req); e != nil {
			checkDecodeError(t, e)
			return
		}
		if _, _, e := responseInput(req.Input); e != nil {
			checkDecodeError(t, e)
		}
	})
}

// TestResponsesTiny runs the tiny model end to end: a forced call is a
// function_call item whose arguments are a JSON object (the library's
// grammar), and a response continued by previous_response_id reuses the
// K/V of the conversation so far from the prefix cache.
func TestResponsesTiny(t *testing.T) {
	ts := newToolServer(t)
	c := ts.client()
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "tiny", Input: textInput("Weather in Paris?"),
		MaxOutputTokens: openai.Int(90), Tools: []responses.ToolUnionParam{weatherFn},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			calls++
			var args map[string]any
			if fc := it.AsFunctionCall(); fc.Name != "get_weather" || json.Unmarshal([]byte(fc.Arguments), &args) != nil {
				t.Errorf("call %s", it.RawJSON())
			}
		}
	}
	if calls == 0 {
		t.Fatalf("no call: %s", resp.RawJSON())
	}

	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)
	r1, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "tiny", Input: textInput(long), MaxOutputTokens: openai.Int(8), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "tiny", Input: textInput("And then?"), MaxOutputTokens: openai.Int(8),
		Temperature: openai.Float(0), PreviousResponseID: openai.String(r1.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Usage.InputTokens <= r1.Usage.InputTokens || r2.Usage.InputTokensDetails.CachedTokens < r1.Usage.InputTokens/2 {
		t.Errorf("continued: %d input tokens, %d cached; the first had %d", r2.Usage.InputTokens, r2.Usage.InputTokensDetails.CachedTokens, r1.Usage.InputTokens)
	}
	ts.settle()
}
