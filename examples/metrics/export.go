package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/zkrecipes/zkrecipes/metrics"
	zkotel "github.com/zkrecipes/zkrecipes/metrics/otel"
	zkprom "github.com/zkrecipes/zkrecipes/metrics/prometheus"
)

// exporter serves the sessions' metrics over HTTP: the Prometheus adapter
// at /metrics, the OpenTelemetry adapter at /otel.
type exporter struct {
	url      string        // http://host:port, without a path
	hooks    metrics.Hooks // what the sessions report to: both adapters
	provider *sdkmetric.MeterProvider
	srv      *http.Server
	served   chan error // Serve's return
}

// export starts the HTTP server on addr. label is the adapters' path label
// function.
func export(addr string, label func(recipe, path string) string) (*exporter, error) {
	// The Prometheus adapter, on a registry of its own (a service would
	// often give prom.DefaultRegisterer).
	reg := prom.NewRegistry()
	pm, err := zkprom.New(reg, zkprom.WithPathLabel(label))
	if err != nil {
		return nil, err
	}
	// The OpenTelemetry adapter on an SDK MeterProvider, whose reader is
	// OpenTelemetry's Prometheus exporter, on another registry (the two
	// adapters' series have the same names). Its names are Prometheus's
	// (zkrecipes_lock_wait_duration_seconds for zkrecipes.lock.wait.duration
	// in s) whatever the scraper asks for, and the instrumentation scope is
	// not repeated as labels of every series.
	oreg := prom.NewRegistry()
	reader, err := otelprom.New(otelprom.WithRegisterer(oreg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	om, err := zkotel.New(provider.Meter("github.com/zkrecipes/zkrecipes"), zkotel.WithPathLabel(label))
	if err != nil {
		return nil, errors.Join(err, provider.Shutdown(context.Background()))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/otel", promhttp.HandlerFor(oreg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, errors.Join(err, provider.Shutdown(context.Background()))
	}
	e := &exporter{
		url:      "http://" + ln.Addr().String(),
		hooks:    both(pm, om),
		provider: provider,
		srv:      &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		served:   make(chan error, 1),
	}
	go func() { e.served <- e.srv.Serve(ln) }()
	return e, nil
}

// close stops the server and the MeterProvider.
func (e *exporter) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.srv.Shutdown(ctx)
	if serr := <-e.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, e.provider.Shutdown(ctx))
}

// excerpt reads path over HTTP, as a scraper does, and writes the
// zkrecipes lock and session series it serves to out, histograms as their
// _count lines only (buckets and sums left out).
func (e *exporter) excerpt(ctx context.Context, path string, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if !strings.HasPrefix(name, "zkrecipes_lock_") && !strings.HasPrefix(name, "zkrecipes_session_") ||
			strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_sum") {
			continue
		}
		fmt.Fprintf(out, "   %s\n", line)
	}
	return sc.Err()
}

// both returns hooks that report to a and then b: a session takes one
// Hooks. Both adapters set every hook.
func both(a, b metrics.Hooks) metrics.Hooks {
	return metrics.Hooks{
		State:   func(t metrics.Transition) { a.State(t); b.State(t) },
		Request: func(r metrics.Request) { a.Request(r); b.Request(r) },
		Lock:    func(l metrics.Lock) { a.Lock(l); b.Lock(l) },
		Leader:  func(l metrics.Leader) { a.Leader(l); b.Leader(l) },
		Watches: func(delta int) { a.Watches(delta); b.Watches(delta) },
	}
}
