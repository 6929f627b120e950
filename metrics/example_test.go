package metrics_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// A service sets only the hooks it exports: here, the lock events, each
// printed as it is reported (a wait that ended, then the hold).
func ExampleHooks() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	var events []string
	hooks := metrics.Hooks{
		Lock: func(l metrics.Lock) { // quick, never blocks: called inline
			mu.Lock()
			defer mu.Unlock()
			events = append(events, strings.TrimSpace(fmt.Sprintln(l.Recipe, l.Event, l.Path, l.Outcome)))
		},
	}
	sess, err := conn.Connect(ctx, testzk.Servers(), conn.WithMetrics(hooks))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := mutex.New(sess, "/example-metrics/stock")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	if err := m.Release(ctx); err != nil {
		log.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		fmt.Println(e)
	}
	// Output:
	// mutex wait /example-metrics/stock granted
	// mutex hold /example-metrics/stock
}
