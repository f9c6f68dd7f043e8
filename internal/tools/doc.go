// Package tools gives the deployment and Prometheus tests the commands they
// drive (promtool, prometheus, buildah, podman, systemd-analyze): installed
// from Debian by scripts/need.sh where missing, or the test skipped, saying
// why, where that cannot be done.
package tools
