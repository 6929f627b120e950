package main

import (
	"net"
	"time"
)

// perSourceAddress is how many sessions share one source address.
// ZooKeeper accepts at most maxClientCnxns connections from one IP address
// (60 by default, in zktest's servers too), and this command opens up to
// N+1; so when the server is on the loopback network, session i connects
// from 127.0.0.(1 + i/perSourceAddress): Linux routes all of 127.0.0.0/8 to
// the loopback interface. A server elsewhere must allow N+1 connections
// from this host (maxClientCnxns=0 lifts the limit).
const perSourceAddress = 50

// spreadDialer returns the dialer of session i.
func spreadDialer(i int) func(network, addr string, timeout time.Duration) (net.Conn, error) {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		if host, _, err := net.SplitHostPort(addr); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.To4() != nil && ip.IsLoopback() && i >= perSourceAddress {
				src := net.IPv4(127, 0, 0, byte(1+i/perSourceAddress))
				d.LocalAddr = &net.TCPAddr{IP: src}
			}
		}
		return d.Dial(network, addr)
	}
}
