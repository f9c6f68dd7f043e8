package dualwrite

// SetCoalescing turns coalescing off and on, for the benchmark that
// measures the drops it saves; it returns the previous setting.
func SetCoalescing(on bool) bool {
	was := coalescing
	coalescing = on
	return was
}
