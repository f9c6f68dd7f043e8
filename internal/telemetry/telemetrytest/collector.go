package telemetrytest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Collector is an OTLP receiver on 127.0.0.1 that decodes the official
// protobuf messages and keeps them, with the request headers and the raw
// bodies, for a test to search.
type Collector struct {
	// Endpoint is what OTEL_EXPORTER_OTLP_ENDPOINT should be set to.
	Endpoint string

	mu      sync.Mutex
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	headers []http.Header
	raw     [][]byte
}

// StartHTTPCollector serves OTLP/HTTP (binary protobuf, optionally gzip) at
// /v1/traces and /v1/metrics until the test ends.
func StartHTTPCollector(t testing.TB) *Collector {
	t.Helper()
	c := &Collector{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		if req := (&coltracepb.ExportTraceServiceRequest{}); c.decode(w, r, req) {
			reply(w, &coltracepb.ExportTraceServiceResponse{})
		}
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		if req := (&colmetricpb.ExportMetricsServiceRequest{}); c.decode(w, r, req) {
			reply(w, &colmetricpb.ExportMetricsServiceResponse{})
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c.Endpoint = srv.URL
	return c
}

// decode reads an OTLP/HTTP request into m and keeps it.
func (c *Collector) decode(w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	c.keep(r.Header.Clone(), b, m)
	return true
}

// keep records a request, of traces or of metrics, with its headers (a
// gRPC request's metadata) and its raw body (a gRPC request's encoding).
func (c *Collector) keep(h http.Header, raw []byte, m proto.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.headers = append(c.headers, h)
	c.raw = append(c.raw, raw)
	switch req := m.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		c.traces = append(c.traces, req)
	case *colmetricpb.ExportMetricsServiceRequest:
		c.metrics = append(c.metrics, req)
	}
}

func reply(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// StartGRPCCollector serves OTLP/gRPC until the test ends.
func StartGRPCCollector(t testing.TB) *Collector {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{Endpoint: "http://" + lis.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, grpcTraces{c: c})
	colmetricpb.RegisterMetricsServiceServer(srv, grpcMetrics{c: c})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return c
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	c *Collector
}

func (g grpcTraces) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.c.keepGRPC(ctx, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	c *Collector
}

func (g grpcMetrics) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	g.c.keepGRPC(ctx, req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func (c *Collector) keepGRPC(ctx context.Context, m proto.Message) {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	b, _ := proto.Marshal(m)
	c.keep(h, b, m)
}

// Spans returns every span received.
func (c *Collector) Spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range c.traces {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// Metrics returns every metric received, in the order received.
func (c *Collector) Metrics() []*metricpb.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*metricpb.Metric
	for _, req := range c.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				out = append(out, sm.Metrics...)
			}
		}
	}
	return out
}

// ResourceAttrs returns the attributes of every resource received.
func (c *Collector) ResourceAttrs() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	add := func(kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			out[kv.Key] = kv.Value.GetStringValue()
		}
	}
	for _, req := range c.traces {
		for _, rs := range req.ResourceSpans {
			add(rs.GetResource().GetAttributes())
		}
	}
	for _, req := range c.metrics {
		for _, rm := range req.ResourceMetrics {
			add(rm.GetResource().GetAttributes())
		}
	}
	return out
}

// Headers returns the headers (or gRPC metadata) of every request.
func (c *Collector) Headers() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...)
}

// Dump returns everything received: each message as protojson and each
// raw body, so that a test can search it for what must never be exported.
func (c *Collector) Dump() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sb strings.Builder
	for _, req := range c.traces {
		sb.WriteString(protojson.Format(req))
	}
	for _, req := range c.metrics {
		sb.WriteString(protojson.Format(req))
	}
	sb.Write(bytes.Join(c.raw, []byte("\n")))
	return sb.String()
}

// SpanAttr returns a span attribute as a string, whatever its type.
func SpanAttr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return anyString(kv.Value), true
		}
	}
	return "", false
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return protojson.Format(v)
}
