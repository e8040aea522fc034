package server

import (
	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// outputBuilder turns a reply's deltas into output items, in the order
// they are written, and, when streaming, into their events.
type outputBuilder struct {
	obj   *responseObject
	open  int         // the item being written; -1: none
	calls map[int]int // tool-call index → item index
	emit  func(responseEvent) error
	seq   int
}

// send emits ev with the next sequence number (nothing when not
// streaming).
func (b *outputBuilder) send(ev responseEvent) error {
	if b.emit == nil {
		return nil
	}
	ev.SequenceNumber = b.seq
	b.seq++
	return b.emit(ev)
}

func (b *outputBuilder) add(d engine.Delta) error {
	items := &b.obj.Output
	if d.TextDelta != "" {
		if b.open < 0 || (*items)[b.open].Type != "message" {
			if err := b.start(responseItem{Type: "message", ID: newID("msg_"), Role: "assistant", Content: []outputText{}}); err != nil {
				return err
			}
			part := newOutputText("")
			(*items)[b.open].Content = append((*items)[b.open].Content, part)
			if err := b.send(responseEvent{Type: "response.content_part.added", OutputIndex: ip(b.open), ItemID: (*items)[b.open].ID, ContentIndex: ip(0), Part: &part}); err != nil {
				return err
			}
		}
		it := &(*items)[b.open]
		it.Content[0].Text += d.TextDelta
		delta := d.TextDelta
		if err := b.send(responseEvent{Type: "response.output_text.delta", OutputIndex: ip(b.open), ItemID: it.ID, ContentIndex: ip(0), Delta: &delta, Logprobs: &[]any{}}); err != nil {
			return err
		}
	}
	for _, tc := range d.ToolCalls {
		k, ok := b.calls[tc.Index]
		if !ok {
			empty := ""
			if err := b.start(responseItem{Type: "function_call", ID: newID("fc_"), CallID: tc.ID, Name: tc.Function.Name, Arguments: &empty}); err != nil {
				return err
			}
			k = b.open
			b.calls[tc.Index] = k
		}
		if a := tc.Function.Arguments; a != "" {
			it := &(*items)[k]
			*it.Arguments += a
			if err := b.send(responseEvent{Type: "response.function_call_arguments.delta", OutputIndex: ip(k), ItemID: it.ID, Delta: &a}); err != nil {
				return err
			}
		}
	}
	if !d.Finished {
		return nil
	}
	b.obj.Status = "completed"
	if d.FinishReason == "length" {
		b.obj.Status = "incomplete"
		b.obj.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
	}
	if len(*items) == 0 { // an empty reply is an empty message
		if err := b.start(responseItem{Type: "message", ID: newID("msg_"), Role: "assistant", Content: []outputText{newOutputText("")}}); err != nil {
			return err
		}
	}
	return b.finish()
}

// start opens item it, after finishing the one being written.
func (b *outputBuilder) start(it responseItem) error {
	if err := b.finish(); err != nil {
		return err
	}
	it.Status = "in_progress"
	b.obj.Output = append(b.obj.Output, it)
	b.open = len(b.obj.Output) - 1
	c := it.clone()
	return b.send(responseEvent{Type: "response.output_item.added", OutputIndex: ip(b.open), Item: &c})
}

// finish ends the item being written, if any: "incomplete" when
// max_output_tokens cut the reply.
func (b *outputBuilder) finish() error {
	if b.open < 0 {
		return nil
	}
	k := b.open
	b.open = -1
	it := &b.obj.Output[k]
	it.Status = "completed"
	if b.obj.Status == "incomplete" {
		it.Status = "incomplete"
	}
	switch it.Type {
	case "message":
		for j, p := range it.Content {
			text, part := p.Text, p
			if err := b.send(responseEvent{Type: "response.output_text.done", OutputIndex: ip(k), ItemID: it.ID, ContentIndex: ip(j), Text: &text, Logprobs: &[]any{}}); err != nil {
				return err
			}
			if err := b.send(responseEvent{Type: "response.content_part.done", OutputIndex: ip(k), ItemID: it.ID, ContentIndex: ip(j), Part: &part}); err != nil {
				return err
			}
		}
	case "function_call":
		a := *it.Arguments
		if err := b.send(responseEvent{Type: "response.function_call_arguments.done", OutputIndex: ip(k), ItemID: it.ID, Arguments: &a, Name: it.Name}); err != nil {
			return err
		}
	}
	c := it.clone()
	return b.send(responseEvent{Type: "response.output_item.done", OutputIndex: ip(k), Item: &c})
}

// message is the reply as the next turn's assistant message: its text
// and its calls.
func (b *outputBuilder) message() chat.Message {
	m := chat.Message{Role: "assistant"}
	for _, it := range b.obj.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				m.Content += p.Text
			}
		case "function_call":
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: it.CallID, Type: "function",
				Function: chat.FunctionCall{Name: it.Name, Arguments: *it.Arguments}})
		}
	}
	return m
}
