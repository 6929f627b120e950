package metrics_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// A service that logs each lost lease and sets no other hook.
func ExampleHooks() {
	hooks := metrics.Hooks{
		Lock: func(l metrics.Lock) {
			if l.Event == metrics.LockLost {
				log.Printf("lock %s (%s) lost: %s", l.Path, l.Recipe, l.Cause)
			}
		},
	}
	sess, err := conn.Connect(context.Background(), []string{"127.0.0.1:2181"}, conn.WithMetrics(hooks))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
}
