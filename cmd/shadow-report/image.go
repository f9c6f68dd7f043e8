//go:build image

package main

// In the container image (make image builds with -tags image), which is
// FROM scratch, the binary carries what a system would provide: CA roots,
// used when the system has none, and the time zone database.
import (
	_ "time/tzdata"

	_ "golang.org/x/crypto/x509roots/fallback"
)
