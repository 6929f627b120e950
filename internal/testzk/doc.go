// Package testzk is what the module's integration tests share around a real
// ZooKeeper (package zktest): one server per test binary, started on first
// use and stopped by Main, which also checks for leaked goroutines; a path
// unique to each call; sessions that close themselves in t.Cleanup; and
// waits on observable state (children, request counts), never bare sleeps.
//
// The contract suite every lock passes is package locktest; this package
// holds only the plumbing the per-package tests repeat.
//
// It is internal so that users do not depend on it.
package testzk
