package main

import (
	"archive/zip"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoInstallLatest runs what the README tells users, `go install
// github.com/zkrecipes/zkrecipes/cmd/zkrecipes@latest`, outside the
// workspace, against a module proxy made of this clone (a directory
// GOPROXY serving the command's module as v0.1.0 and the library at the
// version the command's go.mod requires; the other modules come from the
// module cache, copied into a module cache of its own), then runs the installed command's -h. go install refuses a
// module whose go.mod has replace directives, so this fails if
// cmd/zkrecipes/go.mod gains one.
func TestGoInstallLatest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	repo := filepath.Join(wd, "..", "..")
	proxy := t.TempDir()
	const lib, cmdMod, cmdVersion = "github.com/zkrecipes/zkrecipes", "github.com/zkrecipes/zkrecipes/cmd/zkrecipes", "v0.1.0"
	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	libVersion := ""
	for _, l := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == lib {
			libVersion = f[1]
		}
	}
	require.NotEmpty(t, libVersion, "go.mod requires the library")
	publish(t, proxy, lib, libVersion, repo, false)
	publish(t, proxy, cmdMod, cmdVersion, wd, true)

	bin := t.TempDir()
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	cmd := exec.Command("go", "install", cmdMod+"@latest")
	cmd.Dir = t.TempDir()
	// A module cache of its own (writable, so that the test's temporary
	// directory can go), filled from the proxy: the shared cache never
	// holds the versions made up here.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOBIN="+bin, "GOFLAGS=-modcacherw", "GOSUMDB=off", "GOMODCACHE="+t.TempDir(),
		"GOPROXY=file://"+proxy+",file://"+filepath.Join(strings.TrimSpace(string(cache)), "cache", "download"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go install: %s", out)
	help, err := exec.Command(filepath.Join(bin, "zkrecipes"), "-h").CombinedOutput()
	require.NoError(t, err, "zkrecipes -h: %s", help)
	require.Contains(t, string(help), "zkrecipes [flags] locks PATH")
}

// publish puts module mod at version, from dir, into the directory proxy:
// its list (if listed), .info, .mod and .zip.
func publish(t *testing.T, proxy, mod, version, dir string, listed bool) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	if listed {
		require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), []byte(`{"Version":"`+version+`","Time":"2026-01-01T00:00:00Z"}`), 0o644))
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644))
	f, err := os.Create(filepath.Join(at, version+".zip"))
	require.NoError(t, err)
	defer f.Close()
	// What a tag would hold: the files git tracks, as they are in the
	// clone, without the modules nested in dir.
	ls := exec.Command("git", "ls-files", "-z")
	ls.Dir = dir
	files, err := ls.Output()
	require.NoError(t, err, "git ls-files in %s", dir)
	z := zip.NewWriter(f)
	nested := func(rel string) bool {
		for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(dir, d, "go.mod")); err == nil {
				return true
			}
		}
		return false
	}
	for _, rel := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if nested(rel) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed
		}
		require.NoError(t, err)
		w, err := z.Create(mod + "@" + version + "/" + filepath.ToSlash(rel))
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
}
