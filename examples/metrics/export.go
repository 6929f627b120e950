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

	"github.com/zkrecipes/zkrecipes/conn"
	zkotel "github.com/zkrecipes/zkrecipes/metrics/otel"
	zkprom "github.com/zkrecipes/zkrecipes/metrics/prometheus"
)

// exporter serves the sessions' metrics over HTTP: the Prometheus adapter
// at /metrics, the OpenTelemetry adapter at /otel.
type exporter struct {
	url      string       // http://host:port, without a path
	metrics  conn.Metrics // what the sessions report to: both adapters
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
		metrics:  both{pm, om},
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

// both is a conn.Metrics that reports to two: a session takes one.
type both [2]conn.Metrics

func (b both) State(e conn.Event) {
	b[0].State(e)
	b[1].State(e)
}

func (b both) Request(r conn.RequestMetric) {
	b[0].Request(r)
	b[1].Request(r)
}

func (b both) Lock(l conn.LockMetric) {
	b[0].Lock(l)
	b[1].Lock(l)
}

func (b both) Leader(l conn.LeaderMetric) {
	b[0].Leader(l)
	b[1].Leader(l)
}

func (b both) Watches(delta int) {
	b[0].Watches(delta)
	b[1].Watches(delta)
}
