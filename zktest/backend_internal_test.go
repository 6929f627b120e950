package zktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeProbes stands for a machine: what Docker has (none, the daemon
// without the image, the image) and whether a local install exists. It
// records the probes called, e.g. "docker local docker+pull".
type fakeProbes struct {
	docker string // "none", "noimage", "image"
	local  bool
	calls  []string
}

func (f *fakeProbes) probes() probes {
	return probes{
		external: func(*config) (candidate, error) {
			f.calls = append(f.calls, "external")
			return candidate{name: BackendExternal}, nil
		},
		docker: func(_ context.Context, pull bool) (candidate, error) {
			call := "docker"
			if pull {
				call += "+pull"
			}
			f.calls = append(f.calls, call)
			switch {
			case f.docker == "none":
				return candidate{}, fmt.Errorf("%w: no daemon", ErrDockerUnavailable)
			case f.docker == "image":
				return candidate{name: BackendDocker, source: "docker image"}, nil
			case pull:
				// The pull itself cannot be tested here: no registry.
				return candidate{name: BackendDocker, source: "docker image (pulled)"}, nil
			default:
				return candidate{}, fmt.Errorf("%w: not present locally", ErrImageNotFound)
			}
		},
		local: func() (candidate, error) {
			f.calls = append(f.calls, "local")
			if !f.local {
				return candidate{}, fmt.Errorf("%w: no java", ErrLocalUnavailable)
			}
			return candidate{name: BackendLocal, source: "local"}, nil
		},
	}
}

// TestChooseBackend checks which backend Start picks on which machine and
// environment: ZK_SERVERS first, then an image present, then a local
// install, then a pulled image unless ZK_PULL=never, else ErrNoBackend
// with the commands that provide one.
func TestChooseBackend(t *testing.T) {
	for _, tc := range []struct {
		env    string // ZK_SERVERS ZK_BACKEND ZK_PULL, "-" for unset
		docker string
		local  bool
		want   string // chosen source, or the error's sentinel
		calls  string
	}{
		{"- - -", "image", true, "docker image", "docker"},
		{"- - -", "noimage", true, "local", "docker local"},
		{"- - -", "none", true, "local", "docker local"},
		{"- - -", "noimage", false, "docker image (pulled)", "docker local docker+pull"},
		{"- - missing", "noimage", false, "docker image (pulled)", "docker local docker+pull"},
		{"- - never", "noimage", false, "ErrNoBackend", "docker local"},
		{"- - NEVER", "noimage", false, "ErrNoBackend", "docker local"},
		{"- - -", "none", false, "ErrNoBackend", "docker local"},
		{"- - sometimes", "image", true, "ErrBadOption", ""},
		{"h:1 - never", "image", true, "external", "external"},
		{"- local -", "image", true, "local", "local"},
		{"- docker -", "noimage", true, "docker image (pulled)", "docker+pull"},
		{"- docker never", "noimage", true, "ErrImageNotFound", "docker"},
		{"- docker never", "image", false, "docker image", "docker"},
		{"- local -", "image", false, "ErrLocalUnavailable", "local"},
		{"h:1 docker -", "image", true, "docker image", "docker+pull"},
	} {
		name := tc.env + " docker=" + tc.docker + fmt.Sprintf(" local=%v", tc.local)
		t.Run(name, func(t *testing.T) {
			vals := strings.Fields(tc.env)
			for i, k := range []string{envServers, envBackend, envPull} {
				v := vals[i]
				if v == "-" {
					v = ""
				}
				t.Setenv(k, v)
			}
			f := &fakeProbes{docker: tc.docker, local: tc.local}
			cfg := defaultConfig()
			c, err := choose(context.Background(), &cfg, f.probes())
			got := c.source
			if c.name == BackendExternal {
				got = "external"
			}
			if err != nil {
				got = "error " + err.Error()
				for _, s := range []error{ErrBadOption, ErrImageNotFound, ErrLocalUnavailable, ErrNoBackend} {
					if errors.Is(err, s) {
						got = sentinelName(s)
					}
				}
			}
			if got != tc.want {
				t.Errorf("chose %q, want %q (err %v)", got, tc.want, err)
			}
			if calls := strings.Join(f.calls, " "); calls != tc.calls {
				t.Errorf("probes %q, want %q", calls, tc.calls)
			}
		})
	}
}

func sentinelName(err error) string {
	switch err {
	case ErrBadOption:
		return "ErrBadOption"
	case ErrImageNotFound:
		return "ErrImageNotFound"
	case ErrLocalUnavailable:
		return "ErrLocalUnavailable"
	default:
		return "ErrNoBackend"
	}
}

// TestNoBackendSaysWhatToDo: without any backend the error names both
// reasons, says that pulling is off when ZK_PULL=never, and gives the
// commands that provide a ZooKeeper, the local install first.
func TestNoBackendSaysWhatToDo(t *testing.T) {
	t.Setenv(envServers, "")
	t.Setenv(envBackend, "")
	t.Setenv(envPull, "never")
	f := &fakeProbes{docker: "noimage"}
	cfg := defaultConfig()
	_, err := choose(context.Background(), &cfg, f.probes())
	if !errors.Is(err, ErrNoBackend) || !errors.Is(err, ErrImageNotFound) || !errors.Is(err, ErrLocalUnavailable) {
		t.Fatalf("err = %v, want ErrNoBackend wrapping ErrImageNotFound and ErrLocalUnavailable", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"not pulled: ZK_PULL=never",
		"sudo apt-get install zookeeper default-jre-headless",
		"export ZOOKEEPER_HOME=",
		"zktest.WithDriver(docker.Driver())",
		"pulls " + DefaultImage,
		"sudo scripts/zk-image.sh && export ZK_IMAGE=zkrecipes/zookeeper:3.8-debian",
		"export ZK_SERVERS=",
		"scripts/prereqs.sh",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Index(msg, "apt-get install zookeeper") > strings.Index(msg, "zk-image.sh") {
		t.Errorf("the local install (faster) should come first:\n%s", msg)
	}
}

// TestDockerNeedsDriver: without WithDriver the docker backend is
// unavailable, and the error says which module provides it.
func TestDockerNeedsDriver(t *testing.T) {
	cfg := defaultConfig()
	_, err := probeDocker(context.Background(), &cfg, true)
	if !errors.Is(err, ErrDockerUnavailable) || !strings.Contains(err.Error(), driverModule) {
		t.Fatalf("probeDocker = %v, want ErrDockerUnavailable naming %s", err, driverModule)
	}
	if err := WithDriver(nil)(&cfg); !errors.Is(err, ErrBadOption) {
		t.Fatalf("WithDriver(nil) = %v, want ErrBadOption", err)
	}
}
