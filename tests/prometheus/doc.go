// Package prometheus runs a real Prometheus (Debian's prometheus package,
// installed by scripts/need.sh where missing) against a real kvshadow-proxy:
// the proxy serves bot traffic through cloudflare-go over an emulated
// Workers KV account and the embedded MongoDB-compatible server, reached
// through a relay that the test cuts for an outage. Prometheus scrapes
// /metrics with the admin token, as deploy/prometheus/prometheus.yml does,
// and evaluates the alert rules of deploy/prometheus/kvshadow-alerts.yml
// (their "for" shortened). The test evaluates every query of every panel of
// the Grafana dashboard and every alert expression through Prometheus's HTTP
// API and fails, naming the panel or alert, on any that returns no series;
// and the outage makes KVShadowBreakerOpen fire.
package prometheus
