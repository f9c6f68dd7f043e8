package telemetry

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrConfig reports an OTEL_* variable this package cannot honour.
var ErrConfig = errors.New("telemetry: unsupported configuration")

// exporter is one choice of OTEL_TRACES_EXPORTER or OTEL_METRICS_EXPORTER.
type exporter string

const (
	exportOTLP    exporter = "otlp"
	exportConsole exporter = "console"
	exportNone    exporter = "none"
)

// protocol is an OTLP transport.
type protocol string

const (
	protoGRPC protocol = "grpc"
	protoHTTP protocol = "http/protobuf"
)

// signal names the per-signal variables: "TRACES" or "METRICS".
type signal string

const (
	traces  signal = "TRACES"
	metrics signal = "METRICS"
)

func getenv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

func disabled() bool { return strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") }

// exporters returns the exporters chosen for sig, deduplicated, with "none"
// winning over everything as the specification says.
func exporters(sig signal) ([]exporter, error) {
	name := "OTEL_" + string(sig) + "_EXPORTER"
	raw := getenv(name)
	if raw == "" {
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_"+string(sig)+"_ENDPOINT") == "" {
			return nil, nil
		}
		return []exporter{exportOTLP}, nil
	}
	var out []exporter
	seen := map[exporter]bool{}
	for _, part := range strings.Split(raw, ",") {
		e := exporter(strings.ToLower(strings.TrimSpace(part)))
		if e == "stdout" {
			e = exportConsole
		}
		switch e {
		case exportNone:
			return nil, nil
		case exportOTLP, exportConsole:
		default:
			return nil, fmt.Errorf("%w: %s=%q (want otlp, console, stdout or none)", ErrConfig, name, part)
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out, nil
}

func otlpProtocol(sig signal) (protocol, error) {
	name := "OTEL_EXPORTER_OTLP_" + string(sig) + "_PROTOCOL"
	raw := getenv(name)
	if raw == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		raw = getenv(name)
	}
	switch p := protocol(strings.ToLower(raw)); p {
	case "":
		return protoHTTP, nil
	case protoGRPC, protoHTTP:
		return p, nil
	}
	return "", fmt.Errorf("%w: %s=%q (want grpc or http/protobuf)", ErrConfig, name, raw)
}
