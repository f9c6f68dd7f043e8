package kv_test

import (
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

func newStore() kv.Store { return memory.New(memory.Config{}) }
