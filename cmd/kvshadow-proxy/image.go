//go:build image

package main

// The image (make image: -tags image) is FROM scratch: the binary carries
// fallback CA roots and the time zone database.
import (
	_ "time/tzdata"

	_ "golang.org/x/crypto/x509roots/fallback"
)
