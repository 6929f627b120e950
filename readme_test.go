package zkrecipes_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsTheExample: README.md's first Go block is
// readme_example_test.go without its package clause, so the snippet a new
// user copies is the code compiled and run by TestReadmeExample.
func TestReadmeShowsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(string(src), "package zkrecipes_test\n\n")
	if block != want {
		t.Errorf("README.md's Go block differs from readme_example_test.go; copy the file, from its imports on, into README.md\n--- README.md\n%s\n--- readme_example_test.go\n%s", block, want)
	}
}

// TestReadmeExample runs sell, the README's example, from three processes'
// worth of sessions at once: each sale takes the lock, so the six sales
// leave six different counts and the stock ends at 4.
func TestReadmeExample(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		left []int
		wg   sync.WaitGroup
	)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2 {
				n, err := sell(ctx, c.Servers())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				left = append(left, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(left)
	if want := []int{4, 5, 6, 7, 8, 9}; !slices.Equal(left, want) {
		t.Errorf("sales left %v, want %v (each count once: no sale lost or doubled)", left, want)
	}
}

// TestReadmeExampleNoServer: copied as it is, the example returns the
// connect error when no server answers; it does not panic on a nil
// session.
func TestReadmeExampleNoServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := sell(ctx, []string{"127.0.0.1:1"}); err == nil {
		t.Fatal("sell without a server: no error")
	}
}
