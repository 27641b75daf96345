// Command fleetgate-llmcostcel evaluates cost expressions with Envoy AI Gateway's own CEL
// (internal/llmcostcel), the code its external processor runs on every response, so the
// tests judge Fleetgate's expressions by it rather than by another CEL implementation.
//
// An internal package can be imported only from inside its module: the Makefile lays this
// file into the ai-gateway module at cmd/fleetgate-llmcostcel for the build (go build
// -overlay) and never writes it there. A test tool only, never shipped.
//
// It reads one JSON object per line on standard input, an expression and the variables
// AI Gateway binds (token counts are uint32 there, so a larger one is an error), and
// writes one line for each: {"cost": N}, or {"error": "..."} where AI Gateway would
// refuse the expression (NewProgram) or fail to evaluate it (EvaluateProgram).
package main

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/envoyproxy/ai-gateway/internal/llmcostcel"
)

type query struct {
	Expression               string `json:"expression"`
	Model                    string `json:"model"`
	Backend                  string `json:"backend"`
	RouteName                string `json:"route_name"`
	InputTokens              uint32 `json:"input_tokens"`
	CachedInputTokens        uint32 `json:"cached_input_tokens"`
	CacheCreationInputTokens uint32 `json:"cache_creation_input_tokens"`
	OutputTokens             uint32 `json:"output_tokens"`
	TotalTokens              uint32 `json:"total_tokens"`
	ReasoningTokens          uint32 `json:"reasoning_tokens"`
}

type answer struct {
	Cost  *uint64 `json:"cost,omitempty"`
	Error string  `json:"error,omitempty"`
}

func evaluate(line []byte) answer {
	var q query
	if err := json.Unmarshal(line, &q); err != nil {
		return answer{Error: err.Error()}
	}
	program, err := llmcostcel.NewProgram(q.Expression)
	if err != nil {
		return answer{Error: err.Error()}
	}
	cost, err := llmcostcel.EvaluateProgram(program, q.Model, q.Backend, q.RouteName,
		q.InputTokens, q.CachedInputTokens, q.CacheCreationInputTokens,
		q.OutputTokens, q.TotalTokens, q.ReasoningTokens)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Cost: &cost}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		if err := out.Encode(evaluate(in.Bytes())); err != nil {
			os.Exit(1)
		}
	}
	if in.Err() != nil {
		os.Exit(1)
	}
}
