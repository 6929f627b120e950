package semaphoremutex

import (
	"context"
	"reflect"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/bg"
)

// next waits until one of the attempt's watches fires (a channel closed
// without an event counts as "not watching"), ctx ends or the epoch does.
func (a *attempt) next(ctx context.Context) (string, zk.Event, error) {
	if len(a.watches) == 1 { // the N = 1 case: no reflection
		for name, ch := range a.watches {
			select {
			case ev, ok := <-ch:
				return name, event(ev, ok), nil
			case <-ctx.Done():
				return "", zk.Event{}, bg.CtxErr(ctx)
			case <-a.ep.Done():
				return "", zk.Event{}, a.ep.Err()
			}
		}
	}
	cases := make([]reflect.SelectCase, 0, len(a.watches)+2)
	names := make([]string, 0, len(a.watches))
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.ep.Done())})
	for name, ch := range a.watches {
		names = append(names, name)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, v, ok := reflect.Select(cases)
	switch i {
	case 0:
		return "", zk.Event{}, bg.CtxErr(ctx)
	case 1:
		return "", zk.Event{}, a.ep.Err()
	}
	var ev zk.Event
	if ok {
		ev = v.Interface().(zk.Event)
	}
	return names[i-2], event(ev, ok), nil
}

// event is ev, or a "not watching" event for a channel closed without one.
func event(ev zk.Event, ok bool) zk.Event {
	if !ok {
		return zk.Event{Type: zk.EventNotWatching}
	}
	return ev
}
