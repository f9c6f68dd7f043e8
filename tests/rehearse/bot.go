package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/tests/nodescript"
)

// botProcess is workers/test/support/run-realbot.js: the bot with the real
// bot's storage shape (its createStore, DualKVStore, MongoKVStore and
// drift-verifier) and the bridge, in miniflare over one persisted KV
// namespace, driven by one JSON command a line.
type botProcess struct {
	*nodescript.Script
}

func startBot(ctx context.Context, workers string, env []string) (*botProcess, error) {
	s, err := nodescript.Start(ctx, workers, "run-realbot.js", env, "miniflare", "mongodb")
	if err != nil {
		return nil, err
	}
	return &botProcess{s}, nil
}

// do sends one command and decodes its answer into v; an answer with an
// error is the command's failure.
func (b *botProcess) do(command map[string]any, v any, d time.Duration) error {
	line, err := json.Marshal(command)
	if err != nil {
		return err
	}
	if err := b.Say(string(line)); err != nil {
		return err
	}
	return b.next(v, d)
}

func (b *botProcess) next(v any, d time.Duration) error {
	l, err := b.Next(d)
	if err != nil {
		return err
	}
	var failed struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(l), &failed) == nil && failed.Error != "" {
		return errors.New(failed.Error)
	}
	return json.Unmarshal([]byte(l), v)
}

// deploy redeploys the bot with vars, as `wrangler deploy` with these
// [vars] and secrets would; its KV data stays.
func (b *botProcess) deploy(vars map[string]string) error {
	var ok struct {
		Deployed bool `json:"deployed"`
	}
	return b.do(map[string]any{"cmd": "deploy", "vars": vars}, &ok, 2*time.Minute)
}

// read is what the bot, as deployed, reads of full keys (module:key), in
// one invocation.
func (b *botProcess) read(keys []string) ([]*string, error) {
	var r struct {
		Values []*string `json:"values"`
	}
	if err := b.do(map[string]any{"cmd": "read", "keys": keys}, &r, time.Minute); err != nil {
		return nil, err
	}
	if len(r.Values) != len(keys) {
		return nil, fmt.Errorf("the bot read %d values of %d keys", len(r.Values), len(keys))
	}
	return r.Values, nil
}
