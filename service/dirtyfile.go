package service

import (
	"cmp"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvshadow/kvshadow/internal/atomicfile"
)

// keepDirty writes the keys still dirty at exit where shadow-report
// --keys-file reads them (<namespace>.keys in dir), and removes the file of
// a namespace left clean. It returns where the keys went, for the log.
func keepDirty(dir, journal string, fl *fleet, log *slog.Logger) string {
	if journal != "" {
		journal = "the journal in " + journal + ", which the next start on it repairs"
	}
	if dir == "" {
		return cmp.Or(journal, "nowhere: no --dirty-dir or --journal-dir; run a full shadow-report")
	}
	for _, s := range fl.ns {
		path := filepath.Join(dir, s.ID+".keys")
		keys := s.Dual.DirtyKeys()
		if len(keys) == 0 {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				log.Warn("kvshadow-proxy: removing a stale dirty-key file", slog.String("error", err.Error()))
			}
			continue
		}
		var b strings.Builder
		skipped := 0
		for _, k := range keys {
			if strings.ContainsAny(k, "\r\n") { // a line cannot hold it
				skipped++
				continue
			}
			b.WriteString(k)
			b.WriteByte('\n')
		}
		if err := atomicfile.Write(path, []byte(b.String()), 0o600); err != nil {
			log.Error("kvshadow-proxy: the dirty keys could not be kept; run a full shadow-report", slog.String("kv_namespace", s.ID), slog.String("error", err.Error()))
			continue
		}
		if skipped > 0 {
			log.Warn("kvshadow-proxy: dirty keys with line breaks cannot go in a key list; run a full shadow-report",
				slog.String("kv_namespace", s.ID), slog.Int("keys", skipped))
		}
	}
	if journal != "" {
		return dir + " and " + journal
	}
	return dir
}
