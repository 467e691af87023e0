// Ollama's side of the Modelfile check: each case's TEMPLATE rendered by Go's text/template (the language Ollama
// reads) with the conversation as .Messages, as Ollama passes it.
// go run ollama_template_check.go CASES.json: a JSON list of the rendered prompts.
package main

import (
	"encoding/json"
	"os"
	"text/template"
)

type Message struct {
	Role    string
	Content string
}

type Case struct {
	Template string
	Messages []Message
}

func main() {
	var cases []Case
	data, _ := os.ReadFile(os.Args[1])
	if err := json.Unmarshal(data, &cases); err != nil {
		panic(err)
	}
	var out []string
	for _, c := range cases {
		t, err := template.New("m").Parse(c.Template)
		if err != nil {
			panic(err)
		}
		var b = new(stringsBuilder)
		if err := t.Execute(b, map[string]any{"Messages": c.Messages}); err != nil {
			panic(err)
		}
		out = append(out, b.s)
	}
	enc, _ := json.Marshal(out)
	os.Stdout.Write(enc)
}

type stringsBuilder struct{ s string }

func (b *stringsBuilder) Write(p []byte) (int, error) { b.s += string(p); return len(p), nil }
