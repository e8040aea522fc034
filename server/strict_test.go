package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// openSchema is a schema as a strict client may send it: no
// additionalProperties anywhere, properties out of alphabetical order,
// one optional property. Under strict: true OpenAI closes every object
// and writes the properties in this order.
const openSchema = `{"type":"object","properties":{
 "name":{"type":"string","maxLength":10},
 "age":{"type":"integer","minimum":0,"maximum":120},
 "address":{"type":"object","properties":{"street":{"type":"string","maxLength":12},"city":{"type":"string","maxLength":8}},"required":["street","city"]},
 "nick":{"type":"string","maxLength":6},
 "active":{"type":"boolean"}},
 "required":["name","age","address","active"]}`

// keyOrder is the property names of each object of a schema, in the
// schema's order, by the path of the object in the document ("" the
// root, "/address" a property's).
func keyOrder(t *testing.T, schema string) map[string][]string {
	t.Helper()
	order := map[string][]string{}
	var walk func(dec *json.Decoder, path string)
	walk = func(dec *json.Decoder, path string) {
		// at a schema object's '{' (already read)
		for dec.More() {
			k, _ := dec.Token()
			if k != "properties" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					t.Fatal(err)
				}
				continue
			}
			dec.Token() // '{'
			for dec.More() {
				name, _ := dec.Token()
				order[path] = append(order[path], name.(string))
				dec.Token() // '{'
				walk(dec, path+"/"+name.(string))
			}
			dec.Token() // '}'
		}
		dec.Token() // '}'
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(schema)))
	dec.Token()
	walk(dec, "")
	return order
}

// checkObjects reads a JSON document and reports the first object with a
// key written twice; with order set, also a key the schema does not
// name (a closed object) or one out of the schema's order.
func checkObjects(text string, order map[string][]string) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	var value func(path string) error
	value = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k := kt.(string)
				if slices.Contains(keys, k) {
					return fmt.Errorf("object at %q: key %q twice", path, k)
				}
				if order != nil {
					names := order[path]
					i := slices.Index(names, k)
					if i < 0 {
						return fmt.Errorf("object at %q: key %q is not a property (the object is closed)", path, k)
					}
					if len(keys) > 0 && slices.Index(names, keys[len(keys)-1]) > i {
						return fmt.Errorf("object at %q: key %q after %q, out of the schema's order", path, k, keys[len(keys)-1])
					}
				}
				keys = append(keys, k)
				if err := value(path + "/" + k); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := value(path + "/*"); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := value(""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("text after the document")
	}
	return nil
}

// closed is schema with additionalProperties false in every object, for
// the validator: what strict means.
func closed(t *testing.T, schema string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	var close func(m map[string]any)
	close = func(m map[string]any) {
		if m["type"] == "object" {
			m["additionalProperties"] = false
		}
		if ps, ok := m["properties"].(map[string]any); ok {
			for _, p := range ps {
				close(p.(map[string]any))
			}
		}
	}
	close(m)
	b, _ := json.Marshal(m)
	return string(b)
}

// TestStrictSchema: with strict: true, 50 seeded samples of the random
// model under a schema that leaves its objects open are documents of the
// closed schema (a JSON Schema validator), with the properties in the
// schema's order and no key twice.
func TestStrictSchema(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	validate := jsonValidator(t, closed(t, openSchema))
	order := keyOrder(t, openSchema)
	// The schema goes as its text: a map would reach the server with its
	// keys sorted (encoding/json), the schema's order lost.
	rf := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: json.RawMessage(openSchema), Strict: openai.Bool(true)}}}
	bad := 0
	for seed := range int64(50) {
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Describe a person."),
			ResponseFormat: rf, MaxTokens: openai.Int(200), Seed: openai.Int(seed)})
		if err != nil {
			t.Fatal(err)
		}
		text := resp.Choices[0].Message.Content
		err = validate(text)
		if err == nil {
			err = checkObjects(text, order)
		}
		if err != nil || resp.Choices[0].FinishReason != "stop" {
			bad++
			t.Errorf("seed %d: %q (finish %s): %v", seed, text, resp.Choices[0].FinishReason, err)
		}
	}
	if bad > 0 {
		t.Errorf("%d of 50 replies break the strict schema", bad)
	}
	// A strict schema that opens an object is refused, as OpenAI does.
	code, _, b := ts.do("POST", "/v1/chat/completions", "application/json", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],
	 "response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object","additionalProperties":true}}}}`)
	if e := errorBody(t, b); code != 400 || e["param"] != "response_format" || !strings.Contains(fmt.Sprint(e["message"]), "additionalProperties") {
		t.Errorf("strict with additionalProperties true: %d %s", code, b)
	}
	ts.settle()
}

// TestNoDuplicateKeys: no JSON mode writes a key twice in an object:
// json_object (50 seeded samples), and a schema whose objects are open
// (not strict), streamed too. A bias toward '"' (token 4 of the tiny
// byte-level vocabulary) makes short keys, "" above all, so a repeat is
// likely wherever one is allowed.
func TestNoDuplicateKeys(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	var schema map[string]any
	if err := json.Unmarshal([]byte(openSchema), &schema); err != nil {
		t.Fatal(err)
	}
	formats := map[string]openai.ChatCompletionNewParamsResponseFormatUnion{
		"json_object": {OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
		"open schema": {OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: schema}}},
	}
	for name, rf := range formats {
		bad := 0
		for seed := range int64(50) {
			p := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("JSON please."),
				ResponseFormat: rf, MaxTokens: openai.Int(200), Seed: openai.Int(seed), LogitBias: map[string]int64{"4": 4}}
			resp, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			text := resp.Choices[0].Message.Content
			if err := checkObjects(text, nil); err != nil || resp.Choices[0].FinishReason != "stop" {
				bad++
				t.Errorf("%s seed %d: %q (finish %s): %v", name, seed, text, resp.Choices[0].FinishReason, err)
			}
			if seed < 5 {
				acc, _ := streamChat(t, c, p)
				if err := checkObjects(acc.Choices[0].Message.Content, nil); err != nil {
					t.Errorf("%s seed %d streamed: %q: %v", name, seed, acc.Choices[0].Message.Content, err)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of 50 replies break", name, bad)
		}
	}
	ts.settle()
}

// TestStrictToolCall: a forced call of a strict function (openai-go's
// FunctionDefinitionParam.Strict) has closed arguments, their keys in
// the schema's order (the client sends the schema as a map, so sorted)
// and none twice: 20 seeded samples.
func TestStrictToolCall(t *testing.T) {
	ts := newToolServer(t)
	c := ts.client()
	const params = `{"type":"object","properties":{"city":{"type":"string","maxLength":8},"days":{"type":"integer","minimum":1,"maximum":7},"unit":{"type":"string","maxLength":3}},"required":["city","days"]}`
	validate := jsonValidator(t, closed(t, params))
	order := keyOrder(t, params)
	var ps shared.FunctionParameters
	if err := json.Unmarshal([]byte(params), &ps); err != nil {
		t.Fatal(err)
	}
	tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: ps, Strict: openai.Bool(true)})
	bad := 0
	for seed := range int64(20) {
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Weather in Paris?"),
			Tools: []openai.ChatCompletionToolUnionParam{tool}, ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
			MaxTokens: openai.Int(120), Seed: openai.Int(seed)})
		if err != nil {
			t.Fatal(err)
		}
		call := checkCall(t, fmt.Sprintf("seed %d", seed), resp.Choices[0], "get_weather")
		err = validate(call.Function.Arguments)
		if err == nil {
			err = checkObjects(call.Function.Arguments, order)
		}
		if err != nil {
			bad++
			t.Errorf("seed %d: %s: %v", seed, call.Function.Arguments, err)
		}
	}
	if bad > 0 {
		t.Errorf("%d of 20 calls break the strict schema", bad)
	}
	ts.settle()
}
