package tokenizer

// postProcessor adds the special tokens of a single sequence when Encode is
// called with addSpecial (tokenizers' PostProcessor::process, single input).
type postProcessor interface {
	process(ids []int32) []int32
}

// templatePost is "TemplateProcessing" (its single template), and also
// stands for "BertProcessing" / "RobertaProcessing" ([CLS] A [SEP]).
type templatePost struct {
	items []templateItem
}

// templateItem is the sequence itself (seq) or the ids of a special token.
type templateItem struct {
	seq bool
	ids []int32
}

func (t *templatePost) process(ids []int32) []int32 {
	n := len(ids)
	for _, it := range t.items {
		n += len(it.ids)
	}
	out := make([]int32, 0, n)
	for _, it := range t.items {
		if it.seq {
			out = append(out, ids...)
		} else {
			out = append(out, it.ids...)
		}
	}
	return out
}

// postSeq applies processors in order ("Sequence").
type postSeq []postProcessor

func (q postSeq) process(ids []int32) []int32 {
	for _, p := range q {
		ids = p.process(ids)
	}
	return ids
}
