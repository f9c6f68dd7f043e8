// Package admin is the kvshadow-proxy's admin API, served on a listener of
// its own (loopback by default) with a token of its own, apart from the
// clients' Workers KV API:
//
//	GET    /stage            the stage this instance runs, its generation, the
//	                         control document and every instance's heartbeat
//	PUT    /stage            {"stage": "live"}: change the stage of every
//	                         instance (control.Follower.SetStage's rules)
//	GET    /stats            a summary first (stage, generation, operations and
//	                         errors, breaker, dirty, unsettled, divergences), then
//	                         the dual-write counters summed and per namespace
//	GET    /dirty            the dirty keys, HMAC-redacted; ?keys=plain shows
//	                         them as stored; ?limit= (default 1000)
//	GET    /unsettled        the keys copied and not yet verified, likewise
//	POST   /repair           repair the dirty keys now
//	DELETE /instances/{id}   forget a stopped or silent instance's heartbeat
//	GET    /metrics          Prometheus exposition of the OpenTelemetry instruments
//	GET    /healthz          200 while the process serves
//	GET    /readyz           200, or 503 with the reasons it should get no traffic
//
// Every route but /healthz and /readyz requires "Authorization: Bearer
// <admin token>" when a token is configured; the probes carry no data, so
// that a load balancer or an orchestrator needs no secret. Errors are JSON,
// {"error": "..."}, saying in plain words what was refused and why: 400 for
// a request the API cannot read, 401 without the token, 404 for an unknown
// route, 409 for a stage change the rules refuse, 503 when the control board
// cannot be reached. docs/admin-api.md documents every field of every
// answer (a test holds it to the views); an instance's heartbeat says
// "alive", never "live", which is a stage.
package admin
