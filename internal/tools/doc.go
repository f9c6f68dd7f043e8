// Package tools is test support, used by no production code: it gives the
// tests of the deploy and tests modules (the deployment forms, Prometheus)
// the commands they drive (promtool, prometheus, buildah, podman,
// systemd-analyze), installed from Debian by scripts/need.sh where missing,
// or the test skipped, saying why, where that cannot be done. It lives in
// the library module as the one place both of those modules can import.
package tools
