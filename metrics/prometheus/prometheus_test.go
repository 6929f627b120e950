package prometheus_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/metrics"
	zkprom "github.com/zkrecipes/zkrecipes/metrics/prometheus"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { testzk.Main(m) }

// scrape reads the registry's exposition over HTTP, as Prometheus does,
// and parses it.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// A decoder, not a TextParser: the same call in every client_golang
	// from the module's floor (v1.22) up.
	dec := expfmt.NewDecoder(resp.Body, expfmt.NewFormat(expfmt.TypeTextPlain))
	fams := map[string]*dto.MetricFamily{}
	for {
		f := &dto.MetricFamily{}
		err := dec.Decode(f)
		if errors.Is(err, io.EOF) {
			return fams
		}
		require.NoError(t, err)
		fams[f.GetName()] = f
	}
}

// find returns the metric of family name whose labels include want, nil if
// none.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// A mutex acquired and released, then its holder's session expired, as a
// Prometheus server scraping the service sees it: a granted wait, a hold,
// requests, a lease lost with cause expiry and a second epoch.
func TestExposition(t *testing.T) {
	c := testzk.Shared(t)
	reg := prom.NewRegistry()
	m, err := zkprom.New(reg, zkprom.WithPathLabel(zkprom.PathAsIs))
	require.NoError(t, err)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(m))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	mu, err := mutex.New(s, path)
	require.NoError(t, err)

	_, err = mu.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Release(ctx))
	l, err := mu.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], l.Epoch()))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	testzk.Epoch(t, s)
	_ = mu.Release(ctx)

	var fams map[string]*dto.MetricFamily
	testzk.Eventually(t, 10*time.Second, func() bool {
		fams = scrape(t, srv.URL)
		e := find(fams, "zkrecipes_session_epochs_total", nil)
		return e != nil && e.GetCounter().GetValue() == 2
	}, "no second epoch in the exposition")

	wait := find(fams, "zkrecipes_lock_wait_duration_seconds", map[string]string{"recipe": "mutex", "path": path, "outcome": "granted"})
	require.NotNil(t, wait, "no wait series")
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams["zkrecipes_lock_wait_duration_seconds"].GetType())
	assert.EqualValues(t, 2, wait.GetHistogram().GetSampleCount())
	hold := find(fams, "zkrecipes_lock_hold_duration_seconds", map[string]string{"recipe": "mutex", "path": path})
	require.NotNil(t, hold, "no hold series")
	assert.EqualValues(t, 1, hold.GetHistogram().GetSampleCount())
	assert.Positive(t, hold.GetHistogram().GetSampleSum())
	lostM := find(fams, "zkrecipes_lock_lost_total", map[string]string{"recipe": "mutex", "path": path, "cause": "expiry"})
	require.NotNil(t, lostM, "no lost series with cause expiry")
	assert.EqualValues(t, 1, lostM.GetCounter().GetValue())
	lostN := find(fams, "zkrecipes_session_transitions_total", map[string]string{"state": "Lost"})
	require.NotNil(t, lostN)
	assert.EqualValues(t, 1, lostN.GetCounter().GetValue())
	create := find(fams, "zkrecipes_request_duration_seconds", map[string]string{"op": "create", "outcome": "ok"})
	require.NotNil(t, create, "no create requests")
	assert.GreaterOrEqual(t, create.GetHistogram().GetSampleCount(), uint64(2))
}

// The default path label is "" for every lock: two lock paths make one
// series.
func TestDefaultPathLabelBounded(t *testing.T) {
	reg := prom.NewRegistry()
	m, err := zkprom.New(reg)
	require.NoError(t, err)
	for _, p := range []string{"/orders/1", "/orders/2"} {
		m.Lock(metrics.Lock{Event: metrics.LockWait, Recipe: "mutex", Path: p, Outcome: metrics.OutcomeGranted, Duration: time.Millisecond})
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == "zkrecipes_lock_wait_duration_seconds" {
			require.Len(t, f.GetMetric(), 1)
			assert.EqualValues(t, 2, f.GetMetric()[0].GetHistogram().GetSampleCount())
			return
		}
	}
	t.Fatal("no wait histogram")
}

// zkrecipes_session_watches is the session's watches on the server: 1
// while a waiter waits behind another session's holder, 0 once it gave up.
func TestWatchesGauge(t *testing.T) {
	c := testzk.Shared(t)
	reg := prom.NewRegistry()
	m, err := zkprom.New(reg)
	require.NoError(t, err)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(m))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	gauge := func() float64 {
		g := find(scrape(t, srv.URL), "zkrecipes_session_watches", nil)
		require.NotNil(t, g, "no zkrecipes_session_watches")
		return g.GetGauge().GetValue()
	}
	assert.Zero(t, gauge())

	holder, err := mutex.New(other, path)
	require.NoError(t, err)
	_, err = holder.Acquire(ctx)
	require.NoError(t, err)
	waiter, err := mutex.New(s, path)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(wctx)
		errc <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return gauge() == 1 }, "the waiter's watch not in the gauge")
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	testzk.Eventually(t, 10*time.Second, func() bool { return gauge() == 0 }, "the gauge does not go back to 0")
	require.NoError(t, holder.Release(ctx))
}

// TestUserModuleKeepsGoFloor: a service on Go 1.22, the library's floor,
// can take the adapter without its go line being raised: a module outside
// the repository that requires the adapter (through replaces to this
// clone, as before the first release) keeps "go 1.22.0" through go mod
// tidy, and builds.
func TestUserModuleKeepsGoFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy and go build")
	}
	adapter, err := os.Getwd() // the test runs in the adapter's directory
	require.NoError(t, err)
	root := filepath.Dir(filepath.Dir(adapter))
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/service\n\ngo 1.22.0\n\n" +
			"require github.com/zkrecipes/zkrecipes/metrics/prometheus v0.0.0-00010101000000-000000000000\n\n" +
			"replace github.com/zkrecipes/zkrecipes => " + root + "\n\n" +
			"replace github.com/zkrecipes/zkrecipes/metrics/prometheus => " + adapter + "\n",
		"main.go": "package main\n\nimport _ \"github.com/zkrecipes/zkrecipes/metrics/prometheus\"\n\nfunc main() {}\n",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Outside the workspace; -mod=mod lets go mod tidy write go.sum.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %v: %s", args, out)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "\ngo 1.22.0\n", "the service's go.mod after go mod tidy:\n%s", mod)
}
