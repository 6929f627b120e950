package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { demo.RunTests(m, main) }

// TestHelp: -h prints the usage, with the flags and the environment, and
// runs nothing.
func TestHelp(t *testing.T) { demo.TestHelp(t, "addr", "linger") }

// endpoints are what the example serves: the Prometheus adapter's
// exposition and the OpenTelemetry adapter's, through OpenTelemetry's
// Prometheus exporter. Both must say the same.
var endpoints = []string{"/metrics", "/otel"}

// TestRun runs the example against a fresh ZooKeeper and, while it runs,
// scrapes both endpoints over HTTP and parses the exposition: once the
// victim's lease is found lost (the others still selling), a lease lost
// with cause expiry and a second epoch of its session; after the sale
// (the sessions still open), exactly what the sellers counted:
// acquisitions (granted waits, no other outcome), holds, local handoffs,
// the one lost lease, the epochs, and no watch left.
func TestRun(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stages []string
	cfg := config{addr: "127.0.0.1:0", observe: func(ctx context.Context, stage, url string, did tally) error {
		stages = append(stages, stage)
		switch stage {
		case "expired":
			for _, ep := range endpoints {
				eventually(ctx, t, url+ep, func(f families) []string {
					return f.want(nil,
						expect{"zkrecipes_lock_lost_total", map[string]string{"cause": "expiry"}, 1},
						expect{"zkrecipes_session_epochs_total", nil, workers + 1},
						expect{"zkrecipes_session_transitions_total", map[string]string{"state": "Lost"}, 1})
				})
			}
		case "sold":
			t.Logf("the sale did %+v", did)
			if did.handoffs == 0 || did.handoffs == did.acquired {
				t.Errorf("%d local handoffs of %d grants: the sale shows no mix of handoffs and ZooKeeper grants", did.handoffs, did.acquired)
			}
			lock := map[string]string{"recipe": "mutex", "path": "/lock"}
			granted := map[string]string{"recipe": "mutex", "path": "/lock", "outcome": "granted"}
			for _, ep := range endpoints {
				eventually(ctx, t, url+ep, func(f families) []string {
					return f.want(map[string]dto.MetricType{
						"zkrecipes_lock_wait_duration_seconds": dto.MetricType_HISTOGRAM,
						"zkrecipes_lock_hold_duration_seconds": dto.MetricType_HISTOGRAM,
						"zkrecipes_lock_handoffs_total":        dto.MetricType_COUNTER,
						"zkrecipes_lock_lost_total":            dto.MetricType_COUNTER,
						"zkrecipes_session_epochs_total":       dto.MetricType_COUNTER,
						"zkrecipes_session_watches":            dto.MetricType_GAUGE,
					},
						expect{"zkrecipes_lock_wait_duration_seconds", granted, did.acquired},
						expect{"zkrecipes_lock_wait_duration_seconds", nil, did.acquired}, // no other outcome
						expect{"zkrecipes_lock_hold_duration_seconds", lock, did.holds},
						expect{"zkrecipes_lock_handoffs_total", lock, did.handoffs},
						expect{"zkrecipes_lock_lost_total", map[string]string{"recipe": "mutex", "path": "/lock", "cause": "expiry"}, did.lost},
						expect{"zkrecipes_lock_lost_total", nil, did.lost}, // no other cause
						expect{"zkrecipes_session_epochs_total", nil, did.epochs},
						expect{"zkrecipes_session_transitions_total", map[string]string{"state": "Connected"}, did.epochs},
						expect{"zkrecipes_session_watches", nil, 0})
				})
			}
		}
		return nil
	}}
	var out bytes.Buffer
	err := run(ctx, cfg, c.Servers(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stages, ","); got != "expired,sold" {
		t.Errorf("observed the stages %s, want expired,sold", got)
	}
	for _, want := range []string{"GET /metrics", "GET /otel", `zkrecipes_lock_lost_total{cause="expiry",path="/lock",recipe="mutex"} 1`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not show %s", want)
		}
	}
}

// families is one parsed scrape.
type families map[string]*dto.MetricFamily

// scrape reads url over HTTP, as Prometheus does, and parses the
// exposition.
func scrape(ctx context.Context, url string) (families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// expect is a value a scrape must show: the sum over the series of name
// whose labels include labels of their value (a counter's or a gauge's)
// or sample count (a histogram's).
type expect struct {
	name   string
	labels map[string]string
	value  int
}

// want returns what differs from types (family types) and expects, empty
// if nothing.
func (f families) want(types map[string]dto.MetricType, expects ...expect) []string {
	var diffs []string
	for name, typ := range types {
		if fam := f[name]; fam == nil || fam.GetType() != typ {
			diffs = append(diffs, fmt.Sprintf("%s: not a %v", name, typ))
		}
	}
	for _, e := range expects {
		if got := f.value(e.name, e.labels); got != float64(e.value) {
			diffs = append(diffs, fmt.Sprintf("%s%v = %v, want %d", e.name, e.labels, got, e.value))
		}
	}
	return diffs
}

func (f families) value(name string, labels map[string]string) float64 {
	fam := f[name]
	if fam == nil {
		return -1
	}
	sum := 0.0
next:
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			sum += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			sum += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// eventually scrapes url until check finds nothing wrong (reports made
// by other goroutines, a new epoch, may come a little later), for up to
// 10 s, then fails t with what it found wrong last.
func eventually(ctx context.Context, t *testing.T, url string, check func(families) []string) {
	t.Helper()
	var diffs []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f, err := scrape(ctx, url)
		if err != nil {
			t.Errorf("scrape: %v", err)
			return
		}
		if diffs = check(f); len(diffs) == 0 {
			return
		}
	}
	t.Errorf("%s:\n  %s", url, strings.Join(diffs, "\n  "))
}
