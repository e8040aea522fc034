package chat

import "testing"

// BenchmarkRender renders the golden conversations of each template.
func BenchmarkRender(b *testing.B) {
	g := loadGoldens(b)
	for _, name := range []string{"qwen3", "llama3.1", "mistral"} {
		gt := loadGoldenTemplate(b, name)
		tpl := MustParse(gt.ChatTemplate)
		var ins []Input
		for i := range g.Cases {
			if c := &g.Cases[i]; c.Template == name && c.Expected != nil {
				ins = append(ins, c.input(gt.SpecialTokens))
			}
		}
		b.Run(name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				for _, in := range ins {
					if _, err := tpl.Render(in); err != nil {
						b.Fatal(err)
					}
				}
				n += len(ins)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n), "µs/render")
		})
	}
}

func BenchmarkParse(b *testing.B) {
	src := loadGoldenTemplate(b, "qwen3").ChatTemplate
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}
