package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Config is the chat part of a HF tokenizer folder: the chat template(s) of
// tokenizer_config.json (or chat_template.jinja) and the named special
// tokens transformers hands the template.
type Config struct {
	// Template is the default template ("" when the model ships none).
	Template string
	// Templates are the named templates when chat_template is a list of
	// {"name", "template"} ("default", "tool_use", ...).
	Templates map[string]string
	// SpecialTokens maps bos_token, eos_token, unk_token, sep_token,
	// pad_token, cls_token and mask_token to their text, when set.
	SpecialTokens map[string]string
}

// specialTokenNames are transformers' SPECIAL_TOKENS_ATTRIBUTES (v5: the
// named tokens only).
var specialTokenNames = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// ParseTokenizerConfig reads the chat template and special tokens of a
// tokenizer_config.json.
func ParseTokenizerConfig(data []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: tokenizer_config.json: %v", ErrConfig, err)
	}
	c := &Config{SpecialTokens: map[string]string{}}
	if t := bytes.TrimSpace(raw["chat_template"]); len(t) > 0 && string(t) != "null" {
		switch t[0] {
		case '"':
			if err := json.Unmarshal(t, &c.Template); err != nil {
				return nil, fmt.Errorf("%w: chat_template: %v", ErrConfig, err)
			}
		case '[':
			var named []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(t, &named); err != nil {
				return nil, fmt.Errorf("%w: chat_template: %v", ErrConfig, err)
			}
			c.Templates = map[string]string{}
			for _, n := range named {
				c.Templates[n.Name] = n.Template
			}
			c.Template = c.Templates["default"]
		default:
			return nil, fmt.Errorf("%w: chat_template must be a string or a list", ErrConfig)
		}
	}
	for _, name := range specialTokenNames {
		v := bytes.TrimSpace(raw[name])
		if len(v) == 0 || string(v) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			// An AddedToken object: {"content": "<s>", ...}.
			var tok struct {
				Content *string `json:"content"`
			}
			if err := json.Unmarshal(v, &tok); err != nil || tok.Content == nil {
				return nil, fmt.Errorf("%w: %s is neither a string nor a token object", ErrConfig, name)
			}
			s = *tok.Content
		}
		c.SpecialTokens[name] = s
	}
	return c, nil
}

// LoadConfig reads dir/tokenizer_config.json and, when present,
// dir/chat_template.jinja (which transformers prefers to the config's
// chat_template). A folder without either has an empty Config.
func LoadConfig(dir string) (*Config, error) {
	c := &Config{SpecialTokens: map[string]string{}}
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	switch {
	case err == nil:
		if c, err = ParseTokenizerConfig(data); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	tpl, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
	switch {
	case err == nil:
		c.Template = string(tpl)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return c, nil
}

// TemplateFor is the template transformers picks: the named "tool_use"
// template when there are tools and the model has one, else the default;
// DefaultTemplate (ChatML) when the model has none.
func (c *Config) TemplateFor(withTools bool) string {
	if withTools && c.Templates["tool_use"] != "" {
		return c.Templates["tool_use"]
	}
	if c.Template != "" {
		return c.Template
	}
	return DefaultTemplate
}

// Request is a chat request file: an OpenAI chat-completions body (only the
// fields a prompt needs) or, in JSON, a bare array of messages.
type Request struct {
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// AddGenerationPrompt defaults to true (a request asks for a reply).
	AddGenerationPrompt *bool `json:"add_generation_prompt,omitempty"`
	// ChatTemplateKwargs are extra template variables (vLLM's name).
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

// ParseRequest reads a Request from JSON: an object with "messages", or an
// array of messages.
func ParseRequest(data []byte) (*Request, error) {
	data = bytes.TrimSpace(data)
	r := &Request{}
	var err error
	if len(data) > 0 && data[0] == '[' {
		err = json.Unmarshal(data, &r.Messages)
	} else {
		err = json.Unmarshal(data, r)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: chat request: %v", ErrConfig, err)
	}
	if len(r.Messages) == 0 {
		return nil, fmt.Errorf("%w: chat request has no messages", ErrConfig)
	}
	return r, nil
}

// Input is the Input for r with the config's special tokens.
func (c *Config) Input(r *Request) Input {
	in := Input{Messages: r.Messages, Tools: r.Tools, AddGenerationPrompt: true, Kwargs: map[string]any{}}
	if r.AddGenerationPrompt != nil {
		in.AddGenerationPrompt = *r.AddGenerationPrompt
	}
	names := make([]string, 0, len(c.SpecialTokens))
	for k := range c.SpecialTokens {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch v := c.SpecialTokens[k]; k {
		case "bos_token":
			in.BOSToken = v
		case "eos_token":
			in.EOSToken = v
		default:
			in.Kwargs[k] = v
		}
	}
	for k, v := range r.ChatTemplateKwargs {
		in.Kwargs[k] = v
	}
	return in
}

// RenderRequest parses a chat request (JSON) and renders it with the
// config's template (see TemplateFor) and special tokens.
func (c *Config) RenderRequest(request []byte) (string, error) {
	r, err := ParseRequest(request)
	if err != nil {
		return "", err
	}
	tpl, err := Parse(c.TemplateFor(len(r.Tools) > 0))
	if err != nil {
		return "", err
	}
	return tpl.Render(c.Input(r))
}
