// Command metrics is the flash sale (see examples/seckill) exporting its
// metrics, as a service would, through both adapters of the repository
// over HTTP while it runs:
//
//   - /metrics: package github.com/zkrecipes/zkrecipes/metrics/prometheus
//     on a prometheus.Registry;
//   - /otel: package github.com/zkrecipes/zkrecipes/metrics/otel on an
//     OpenTelemetry SDK MeterProvider, read by OpenTelemetry's Prometheus
//     exporter (go.opentelemetry.io/otel/exporters/prometheus) on a
//     registry of its own.
//
// Four workers, each on its own ZooKeeper session, sell from one stock
// node under one mutex; each worker's three sellers share the mutex with
// in-process handoff (lock.WithLocalHandoff), so the lock passes between
// them without ZooKeeper. The server expires one worker's session while
// it holds the lock: its lease is lost (cause expiry), its guarded write
// is refused, and it carries on in a second epoch. Then the command prints
// what it did (acquisitions, local handoffs, holds, leases lost, epochs),
// reads both endpoints over HTTP as a scraper would and prints the
// zkrecipes series they serve, which say the same.
//
// Run it with
//
//	go run ./examples/metrics
//	go run ./examples/metrics -addr localhost:9464 -linger 5m   # and curl localhost:9464/metrics meanwhile
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// flags and the environment variables. It exits non-zero if the sale sells
// more or less than the stock.
package main

import (
	"context"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
)

// what is the summary -h prints.
const what = "The flash sale exporting its metrics while it runs: the Prometheus adapter at /metrics, the\n" +
	"OpenTelemetry adapter (through OpenTelemetry's Prometheus exporter) at /otel; one worker's\n" +
	"session expires mid-sale. It prints what it did and what the endpoints serve."

func main() {
	var cfg config
	fs := demo.Flags("metrics", what)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:0", "HTTP address to serve /metrics and /otel on (port 0: any free port)")
	fs.DurationVar(&cfg.linger, "linger", 0, "keep serving this long after the sale, sessions open (to scrape it yourself)")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 0 on -h, 2 on a bad flag
	if fs.NArg() > 0 {
		fs.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+cfg.linger)
	defer cancel()
	servers, stop, err := demo.Start(ctx, nil, os.Stderr)
	if err != nil {
		demo.Fail("metrics", err)
	}
	err = run(ctx, cfg, servers, os.Stdout)
	stop()
	if err != nil {
		demo.Fail("metrics", err)
	}
}
