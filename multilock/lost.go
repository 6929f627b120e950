package multilock

import "reflect"

// closed is returned by Lost when nothing is held.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Lost returns a channel closed when any lease of the current grant is
// lost or the MultiLock is released; already closed when not held. The
// first call per grant starts one goroutine, which ends with the grant.
func (m *MultiLock) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != held {
		return closed
	}
	if !m.watching {
		m.watching = true
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.stop)}}
		for _, l := range m.leases {
			if l != nil {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.Lost())})
			}
		}
		go watch(cases, m.lost)
	}
	return m.lost
}

// watch closes lost as soon as any of cases (the stop channel and each
// lease's Lost) is closed. It owns lost for the grant it was started for.
func watch(cases []reflect.SelectCase, lost chan struct{}) {
	reflect.Select(cases)
	close(lost)
}
