package lock_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// Every recipe refuses, with conn.ErrInvalidArgument naming the option and
// the recipe, each option it cannot honour, and takes the others.
func TestNewRefusesOptionsItCannotHonour(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	options := []namedOption{
		{"lock.WithRevocable", lock.WithRevocable()},
		{"lock.WithLocalHandoff", lock.WithLocalHandoff(2, time.Second)},
		{"rwlock.WithHost", rwlock.WithHost("h")},
		{"leader.WithRequeue", leader.WithRequeue()},
	}
	recipes := []struct {
		name  string
		takes map[string]bool
		make  func(...lock.Option) (any, error)
	}{
		{"mutex.New", map[string]bool{"lock.WithRevocable": true, "lock.WithLocalHandoff": true},
			func(o ...lock.Option) (any, error) { return mutex.New(s, "/opts", o...) }},
		{"semaphoremutex.New", map[string]bool{"lock.WithRevocable": true, "lock.WithLocalHandoff": true},
			func(o ...lock.Option) (any, error) { return semaphoremutex.New(s, "/opts", o...) }},
		{"semaphoremutex.NewSemaphore", map[string]bool{"lock.WithRevocable": true},
			func(o ...lock.Option) (any, error) { return semaphoremutex.NewSemaphore(s, "/opts", 2, o...) }},
		{"rwlock.New", map[string]bool{"lock.WithRevocable": true, "rwlock.WithHost": true},
			func(o ...lock.Option) (any, error) { return rwlock.New(s, "/opts", o...) }},
		{"leader.New", map[string]bool{"leader.WithRequeue": true},
			func(o ...lock.Option) (any, error) { return leader.New(s, "/opts", "id", o...) }},
	}
	for _, r := range recipes {
		for _, o := range options {
			t.Run(fmt.Sprintf("%s(%s)", r.name, o.name), func(t *testing.T) {
				h, err := r.make(o.opt)
				if r.takes[o.name] {
					require.NoError(t, err)
					return
				}
				assert.ErrorIs(t, err, conn.ErrInvalidArgument)
				assert.ErrorContains(t, err, o.name+": not an option of "+r.name)
				assert.True(t, reflect.ValueOf(h).IsNil(), "a handle with the error")
				// Refused also among options it takes.
				_, err = r.make(append(optsOf(options, r.takes), o.opt)...)
				assert.ErrorIs(t, err, conn.ErrInvalidArgument)
			})
		}
		t.Run(r.name+"(nil)", func(t *testing.T) {
			_, err := r.make(nil)
			assert.ErrorIs(t, err, conn.ErrInvalidArgument)
			assert.ErrorContains(t, err, "nil option")
		})
	}
}

// A repeated option is refused, naming it, rather than the last one
// silently winning.
func TestNewRefusesRepeatedOption(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	cases := []struct {
		name string
		make func() (any, error)
	}{
		{"lock.WithLocalHandoff", func() (any, error) {
			return mutex.New(s, "/opts", lock.WithLocalHandoff(2, 0), lock.WithRevocable(), lock.WithLocalHandoff(3, 0))
		}},
		{"lock.WithRevocable", func() (any, error) {
			return semaphoremutex.NewSemaphore(s, "/opts", 2, lock.WithRevocable(), lock.WithRevocable())
		}},
		{"rwlock.WithHost", func() (any, error) { return rwlock.New(s, "/opts", rwlock.WithHost("a"), rwlock.WithHost("b")) }},
		{"leader.WithRequeue", func() (any, error) { return leader.New(s, "/opts", "id", leader.WithRequeue(), leader.WithRequeue()) }},
	}
	for _, tc := range cases {
		h, err := tc.make()
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, tc.name)
		assert.ErrorContains(t, err, tc.name+" given twice", tc.name)
		assert.True(t, reflect.ValueOf(h).IsNil(), "a handle with the error")
	}
}

type namedOption struct {
	name string
	opt  lock.Option
}

// optsOf is the options whose names are in takes.
func optsOf(options []namedOption, takes map[string]bool) []lock.Option {
	var o []lock.Option
	for _, x := range options {
		if takes[x.name] {
			o = append(o, x.opt)
		}
	}
	return o
}
