package tokenizer

import (
	"encoding/json"
	"fmt"
)

// applyConfig reads the fields of tokenizer_config.json this package
// exposes. Special tokens there are a string or an AddedToken object
// ({"content": "<s>", …}); chat_template is a string or a list of
// {"name", "template"}.
func (t *Tokenizer) applyConfig(data []byte) error {
	var v struct {
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		Pad          json.RawMessage `json:"pad_token"`
		Unk          json.RawMessage `json:"unk_token"`
		AddBOS       *bool           `json:"add_bos_token"`
		AddEOS       *bool           `json:"add_eos_token"`
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return formatErr("tokenizer_config.json", "%w", err)
	}
	var err error
	for _, f := range []struct {
		raw  json.RawMessage
		dst  *string
		name string
	}{{v.BOS, &t.BOSToken, "bos_token"}, {v.EOS, &t.EOSToken, "eos_token"},
		{v.Pad, &t.PadToken, "pad_token"}, {v.Unk, &t.UnkToken, "unk_token"}} {
		if *f.dst, err = configToken(f.raw); err != nil {
			return formatErr("tokenizer_config.json: "+f.name, "%w", err)
		}
	}
	t.AddBOS = v.AddBOS != nil && *v.AddBOS
	t.AddEOS = v.AddEOS != nil && *v.AddEOS
	if isNull(v.ChatTemplate) {
		return nil
	}
	if err := json.Unmarshal(v.ChatTemplate, &t.ChatTemplate); err == nil {
		return nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(v.ChatTemplate, &list); err != nil {
		return formatErr("tokenizer_config.json: chat_template", "neither a string nor a list of {name, template}")
	}
	t.ChatTemplates = map[string]string{}
	for _, e := range list {
		t.ChatTemplates[e.Name] = e.Template
	}
	t.ChatTemplate = t.ChatTemplates["default"]
	return nil
}

func configToken(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("neither a string nor {\"content\": …}")
	}
	return *obj.Content, nil
}
