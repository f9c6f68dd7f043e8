package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
)

// openJournals opens one settle journal per namespace in dir
// (<namespace>.journal), or none when dir is empty. The files are locked:
// two instances cannot share one by mistake.
func openJournals(dir string, nss []Namespace) ([]dualwrite.Journal, func() error, error) {
	if dir == "" {
		return nil, func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("--journal-dir: %w", err)
	}
	var opened []*journal.Journal
	closeAll := func() error {
		var errs []error
		for _, j := range opened {
			errs = append(errs, j.Close())
		}
		return errors.Join(errs...)
	}
	out := make([]dualwrite.Journal, len(nss))
	for i, ns := range nss {
		j, err := journal.Open(filepath.Join(dir, ns.ID+".journal"), journal.Options{})
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("the settle journal of namespace %s: %w", ns.ID, err), closeAll())
		}
		opened = append(opened, j)
		out[i] = j
	}
	return out, closeAll, nil
}
