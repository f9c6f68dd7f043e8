package service

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/internal/telemetry"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/membudget"
	"github.com/kvshadow/kvshadow/service/admin"
)

// The admin listener's limits: small requests, from operators and probes.
const (
	adminHeaderTimeout = 10 * time.Second
	adminTimeout       = time.Minute
	adminHeaderBytes   = 64 << 10
	// adminMaxConnections bounds the admin listener's connections: operators,
	// probes and one Prometheus.
	adminMaxConnections = 64
)

// Run serves until ctx ends, then shuts down in the order the package doc
// gives (after ShutdownDelay, for load balancers to notice). Its error is
// nil after a shutdown that followed ctx, whatever the lanes left: what
// they left is counted and kept.
func Run(ctx context.Context, c *Config, stdout, stderr io.Writer, opts ...Option) error {
	o := resolve(opts)
	if o.front != nil {
		defer o.front.Close()
	}
	log := cmp.Or(o.logger, slog.New(slog.NewTextHandler(stderr, nil)))
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "kvshadow-proxy", Prometheus: true, Console: stderr})
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel)
	// The key redaction of spans, divergence records and the admin API: an
	// HMAC whose secret instances share when the operator gives one (else
	// one drawn for the process), so that a key hashes alike on every instance.
	redactor, err := compare.NewRedactor(compare.KeyHMAC, []byte(c.secrets.keySecret))
	if err != nil {
		return err
	}
	frontTLS, err := tlsConfig(c.TLSCert, c.TLSKey, "--tls-cert/--tls-key")
	if err != nil {
		return err
	}
	adminTLS := frontTLS // the admin listener takes the front's certificate unless given its own
	if c.AdminTLSCert != "" {
		if adminTLS, err = tlsConfig(c.AdminTLSCert, c.AdminTLSKey, "--admin-tls-cert/--admin-tls-key"); err != nil {
			return err
		}
	}

	// One memory budget for the whole process: the front's requests, the
	// tee's batches, the copies waiting in the lanes, the primary's answers.
	mem, err := membudget.New(membudget.Config{Limit: c.MemoryBudget})
	if err != nil {
		return usage("--memory-budget: %v", err)
	}
	if o.processLimit {
		mem.SetProcessLimit()
	}
	b, err := o.open(ctx, c, Plumbing{Clock: o.clock, Logger: log, Memory: mem})
	if err != nil {
		return err
	}
	dcfg := c.Store
	dcfg.Memory, dcfg.Redactor = mem, redactor
	dcfg.ConsistencyWindow, dcfg.FenceInterval = windowOf(dcfg.ConsistencyWindow), windowOf(dcfg.FenceInterval)
	if c.ShadowRate > 0 {
		dcfg.ShadowBudget = budget.New(budget.Budget{Requests: c.ShadowRate, Per: time.Second}, o.clock)
	}
	a, err := assembly.Start(ctx, assembly.Config{Who: assembly.Who{Name: "kvshadow-proxy", Self: "instance", JournalDir: "--journal-dir"},
		Backends: b, Store: dcfg, Options: []dualwrite.Option{dualwrite.WithClock(o.clock)}, Instance: c.Instance, JournalDir: c.JournalDir, NewPairing: c.NewPairing,
		Poll: c.Poll, Beat: c.Beat, SweepInterval: c.SweepInterval, Tracer: tel.TracerProvider, Meter: tel.MeterProvider, Logger: log, Clock: o.clock})
	if err != nil {
		var se *assembly.SettingsError
		switch {
		case errors.As(err, &se):
			return settingsError{se}
		case errors.Is(err, control.ErrConfig): // control.Read's refusal, one line
			return settingsError{fmt.Errorf("%w; if the settings are right and this is meant, start once with --new-pairing "+
				"(which records the pairing and seeds the board, and never makes an empty MongoDB the truth)", err)}
		}
		return err
	}
	defer func() { _ = a.Close(context.Background()) }()
	fl := &fleet{ns: a.Namespaces}
	if err := a.Watch(fl); err != nil {
		return err
	}

	// The listeners are bound before the instance joins the control board,
	// so that a proxy that cannot listen never appears there as alive.
	frontLn := o.front
	if frontLn == nil {
		frontLn, err = net.Listen("tcp", c.Listen)
	} else if c.Unauthenticated || c.Demo {
		err = loopbackOnly(frontLn.Addr().String(), c.AdminListen)
	}
	if err != nil {
		return err
	}
	defer frontLn.Close() // a second close, after Serve's, is harmless
	adminLn, err := net.Listen("tcp", c.AdminListen)
	if err != nil {
		return err
	}
	defer adminLn.Close()
	if err := a.Follow(ctx); err != nil {
		return err
	}
	follower := a.Follower
	gate := newStageGate(follower, a.Gated)
	ready := &readiness{fleet: fl, follower: follower, gate: gate}
	ready.probe(ctx)
	gauges, err := watch(tel.MeterProvider, ready, mem, b.Pool)
	if err != nil {
		return err
	}
	defer func() { _ = gauges.Unregister() }()

	front, err := kvapi.New(kvapi.Config{Namespaces: fl.stores(), AccountID: c.Account, Token: c.secrets.token, Clock: o.clock,
		FixedNamespaces: fixedNamespaces(c), Memory: mem, RefuseReserved: true,
		WrongToken: "kvshadow-proxy refused the token: it is not the proxy's clients' token (" + EnvToken + ")"})
	if err != nil {
		return err
	}
	var nss []admin.Namespace
	for _, s := range fl.ns {
		nss = append(nss, admin.Namespace{ID: s.ID, Store: s.Dual})
	}
	var ops opCounter
	acfg := admin.Config{Token: c.secrets.admin, Stager: follower, Namespaces: nss, Redactor: redactor,
		Ready: ready.reasons, Metrics: tel.MetricsHandler(), Operations: ops.counts, TeeRefused: fl.teeRefused}
	if b.Ledger != nil {
		// Observed once before the admin API serves, so that an overflow
		// kept by the journal is recorded (and grown) before any clear.
		rec := newReconciler(b.Ledger, follower.Status().Instance, o.clock, log, fl, c)
		rec.observe(ctx)
		defer every(ctx, c.Beat, rec.observe)()
		acfg.Reconciler = rec
	}
	adm, err := admin.New(acfg)
	if err != nil {
		return err
	}

	serve := kvapi.ServeConfig{MaxConcurrent: c.MaxConcurrent, MaxPerClient: c.MaxPerClient, ClientKey: clientKey,
		MinBodyRate: c.MinBodyRate, MaxConnections: c.MaxConnections, Logger: log,
		ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout, TLSConfig: frontTLS,
		Unauthenticated: c.Unauthenticated, Wrap: func(api http.Handler) http.Handler { return gate.wrap(ops.wrap(api)) }}
	if c.secrets.token != "" { // the tee sends the clients' token; ingest requires one
		sink := &ingest.DualWrite{Stores: fl.store, Account: c.Account, Lease: c.TeeLease, Generation: func() uint64 { return follower.Status().Generation }}
		th, err := ingest.New(sink, ingest.Config{Token: c.secrets.token, DefaultNamespace: c.Namespaces[0].ID, Stage: sink, Clock: o.clock, Memory: mem})
		if err != nil {
			return err
		}
		tee := withTee(th)
		serve.Wrap = func(api http.Handler) http.Handler { return gate.wrap(tee(ops.wrap(api))) }
		fl.tee.Store(th)
	}
	scheme := "http"
	if frontTLS != nil {
		scheme = "https"
	}
	frontSrv, err := kvapi.NewHTTPServer(front, serve)
	if err != nil {
		return err
	}
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	frontSrv.HTTP().ErrorLog = errorLog
	adminSrv := &http.Server{Handler: adm, ReadHeaderTimeout: adminHeaderTimeout, ReadTimeout: adminTimeout,
		WriteTimeout: adminTimeout, IdleTimeout: adminTimeout, MaxHeaderBytes: adminHeaderBytes, ErrorLog: errorLog}
	adminScheme, adminServed := "http", kvapi.LimitListener(adminLn, adminMaxConnections, adminTLS != nil, log)
	if adminTLS != nil {
		adminScheme, adminServed = "https", tls.NewListener(adminServed, adminTLS)
	}
	served := make(chan error, 2)
	go func() { served <- frontSrv.Serve(frontLn) }()
	go func() { served <- adminSrv.Serve(adminServed) }()

	defer every(ctx, c.Probe, ready.probe)()

	at := Listening{Origin: scheme + "://" + frontLn.Addr().String(), Admin: adminScheme + "://" + adminLn.Addr().String() + "/"}
	at.API = at.Origin + "/client/v4/"
	printBanner(stdout, c, b, at, follower.Status(), !gate.opened())
	if o.listening != nil {
		o.listening(at)
	}

	var serveErr error
	select {
	case serveErr = <-served:
	case <-ctx.Done():
	}

	// Shutdown, in order.
	log.Info("kvshadow-proxy: shutting down: draining")
	ready.draining.Store(true)
	follower.SetDraining()
	if c.ShutdownDelay > 0 && serveErr == nil {
		time.Sleep(c.ShutdownDelay) // let load balancers see /readyz fail
	}
	gctx, cancel := context.WithTimeout(context.Background(), c.Grace)
	if err := frontSrv.Shutdown(gctx); err != nil {
		log.Warn("kvshadow-proxy: requests still under way at the end of the grace period were cut off", slog.String("error", err.Error()))
	}
	cancel()
	dctx, cancel := context.WithTimeout(context.Background(), c.Drain)
	closeErr := a.Drain(dctx)
	cancel()
	st := fl.Stats()
	journal := ""
	if st.Journal {
		journal = c.JournalDir
	}
	kept := keepDirty(c.DirtyDir, journal, fl, log)
	if closeErr != nil || st.Dirty > 0 {
		log.Warn("kvshadow-proxy: stopped with keys left dirty", slog.Int("dirty", st.Dirty), slog.Int("unsettled", st.Unsettled),
			slog.Uint64("left_undone", st.LeftAtClose), slog.Bool("reconciliation_needed", st.ReconciliationNeeded), slog.String("kept_in", kept))
	}
	if err := a.Leave(context.Background()); err != nil {
		log.Warn("kvshadow-proxy: could not leave the control board", slog.String("error", err.Error()))
	}
	actx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = adminSrv.Shutdown(actx)
	cancel()
	log.Info("kvshadow-proxy: stopped", slog.Int("dirty", st.Dirty), slog.Int("unsettled", st.Unsettled), slog.Bool("journal", st.Journal))
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// every calls fn each interval, with a context that ctx's end does not
// cancel (it goes on through the shutdown), until stop, which waits.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); clock.Every(ctx, interval, func() { fn(ctx) }) }()
	return func() { cancel(); <-done }
}

// settingsError is a refusal of the settings at start (each store's, one
// line each, or the stage document's pairing): the environment is wrong,
// which a restart does not mend (exit 2).
type settingsError struct{ error }

func (e settingsError) Unwrap() []error { return []error{ErrUsage, e.error} }

// tlsConfig is a listener's TLS with the certificate its flags name; nil
// when they name none.
func tlsConfig(cert, key, flags string) (*tls.Config, error) {
	if cert == "" {
		return nil, nil
	}
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, usage("%s: %v", flags, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}, nil
}

// fixedNamespaces is what a client asking the front to create, rename or
// delete a namespace is told.
func fixedNamespaces(c *Config) string {
	return "kvshadow-proxy serves a fixed set of namespaces (" + strings.Join(c.ids(), ", ") + ") and does not create, rename or delete them: " +
		"manage namespaces in Cloudflare itself (wrangler without " + cfkv.EnvAPIBaseURL + "), then change the proxy's --namespace " +
		"(or " + cfkv.EnvNamespaceID + ") and restart it"
}

// windowOf maps the flag's 0 ("none") to dualwrite's negative.
func windowOf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func shutdownTelemetry(t *telemetry.Telemetry) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.Shutdown(ctx)
}

func printBanner(w io.Writer, c *Config, b *Backends, at Listening, st control.Status, gated bool) {
	api, adminURL, ids := at.API, at.Admin, c.ids()
	stage := fmt.Sprintf("stage %s (generation %d)", st.Stage, st.Generation)
	if gated {
		stage = "no stage until the stage document can be read (every call is answered 503 meanwhile)"
	}
	fmt.Fprintf(w, "kvshadow-proxy: serving the Workers KV API at %s; namespaces %s; %s; instance %s\n",
		api, strings.Join(ids, ", "), stage, c.Instance)
	if b.Note != "" {
		fmt.Fprintf(w, "kvshadow-proxy: %s\n", b.Note)
	}
	fmt.Fprintf(w, "kvshadow-proxy: admin API at %s\n", adminURL)
	if c.secrets.token != "" {
		fmt.Fprintf(w, "kvshadow-proxy: tee mode's endpoints at %s%singest and %sstage\n", at.Origin, TeePath, TeePath)
	}
	// Every start says what a client is told, without a secret: a token is
	// printed only when the demo drew it for a throwaway service.
	fmt.Fprintf(w, "# A Workers KV client (wrangler, cloudflare-go, shadow-report, curl) needs only this environment%s:\n", others(ids))
	fmt.Fprintf(w, "export %s\n", cfkv.ClientEnv(clientRoot(c, at), c.Account, ids[0]))
	switch {
	case c.Demo && c.secrets.token != "":
		fmt.Fprintf(w, "export CLOUDFLARE_API_TOKEN=%s KVSHADOW_ADMIN_TOKEN=%s\n", c.secrets.token, c.secrets.admin)
		fmt.Fprintf(w, "# try: curl -s -H \"Authorization: Bearer $KVSHADOW_ADMIN_TOKEN\" %sstage\n", adminURL)
	case c.secrets.token != "":
		fmt.Fprintf(w, "# and CLOUDFLARE_API_TOKEN set to the clients' token (%s here; not shown)\n", EnvToken)
	default:
		fmt.Fprintln(w, "export CLOUDFLARE_API_TOKEN=unused   # no token is checked (--unauthenticated-loopback)")
		fmt.Fprintf(w, "# try: curl -s %sstage\n", adminURL)
	}
}

// others says which namespaces a client reaches besides the first, which
// the printed environment names.
func others(ids []string) string {
	if len(ids) < 2 {
		return ""
	}
	return " (" + cfkv.EnvNamespaceID + " may also be " + strings.Join(ids[1:], ", ") + ")"
}

// clientRoot is the API root clients reach: --public-url's when given (a
// tunnel's or load balancer's hostname), else the listener's, with a
// wildcard address replaced by the host's name.
func clientRoot(c *Config, at Listening) string {
	if c.PublicURL != "" {
		return strings.TrimSuffix(c.PublicURL, "/") + "/client/v4/"
	}
	u, err := url.Parse(at.API)
	if err != nil {
		return at.API
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		if host, err := os.Hostname(); err == nil && host != "" {
			u.Host = net.JoinHostPort(host, u.Port())
		}
	}
	return u.String()
}
