// Package chat renders chat templates (the Jinja chat_template of a
// tokenizer_config.json, a chat_template.jinja, or GGUF's
// tokenizer.chat_template) into a prompt byte for byte as transformers'
// apply_chat_template(..., tokenize=False) does, and parses the tool calls
// out of a model's reply.
//
// # Rendering
//
//	tpl, err := chat.Parse(src)            // *ParseError on a syntax error
//	prompt, err := tpl.Render(chat.Input{
//		Messages:            msgs,           // OpenAI-shaped messages
//		Tools:               tools,          // OpenAI function schemas
//		AddGenerationPrompt: true,
//		BOSToken: "<s>", EOSToken: "</s>",
//		Kwargs: map[string]any{"enable_thinking": false},
//	})                                     // *TemplateError from raise_exception
//
// A model without a template uses DefaultTemplate (ChatML). Config reads a
// HF tokenizer folder; Config.RenderRequest renders a chat request file.
//
// The template engine is github.com/nikolalohinski/gonja/v2 with the
// environment transformers gives Jinja (env.go, pymethods.go): trim_blocks and
// lstrip_blocks, raise_exception, strftime_now, a tojson that is Python's
// json.dumps (ensure_ascii=False, ", " and ": " separators, indent,
// separators, sort_keys), Python's string methods (strip, split, startswith,
// title, ...), dicts that keep insertion order, strict `is true` / `is
// false`, and the {% generation %} tag.
//
// # What the template sees
//
// A message is the dict transformers builds: role, content (list-of-parts
// content flattened to its text parts joined by "\n"), then tool_calls
// ([{id?, type, function: {name, arguments}}] with arguments decoded from
// their JSON text, keys in the order written), tool_call_id, name, and
// reasoning_content (also as thinking, as transformers aliases it). Tools
// are {type, function: {name, description?, parameters?}}. Dicts are
// ordered (*exec.Dict), lists are pyList; integers stay integers, so tojson
// writes numbers as Python would (1, 2.5, 1e+20).
//
// # Known differences from Jinja
//
// gonja cannot tell an undefined variable from None: `x is defined` is false
// for a variable set to None, and {{ none }} renders "" (Jinja: "None").
// dict(**kw) gets its keys sorted (gonja passes keyword arguments as a Go
// map). List literals and lists built by gonja itself (['a'][-1], slices
// with a step, concatenations) keep gonja's indexing, which misses
// x[-len(x)]. `1 in [True]` is false. Parenthesised inline if/else as an
// operand does not parse (Gemma 3). The goldens in testdata/chat (Qwen3,
// Qwen2.5, Llama 3, 3.1, 3.2, Mistral Nemo, SmolLM2, and feature templates
// for each emulated Python behaviour) render byte-identically.
//
// # Limits
//
// Templates load no other templates (no include, import, extends, block),
// nest brackets and blocks at most 200 deep, macro calls at most 100 deep,
// range() yields at most 100000 items and a prompt is at most
// MaxOutputBytes. These keep a template from crashing the process; they do
// not make rendering a sandbox against hostile templates, which can still
// loop long or build huge strings.
//
// # Tool calls
//
// ParseToolCalls(text, format) splits a reply into content and calls for
// the Qwen/Hermes <tool_call> format, Llama 3 JSON calls and Mistral's
// [TOOL_CALLS]; DetectToolFormat picks the format from the template text.
// Arguments come back as JSON text, OpenAI style. Text that does not parse
// as a call stays content.
package chat
