package zkrecipes_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeTools writes executables named like the tools scripts/prereqs.sh
// asks (dpkg-query, docker, java, javac) into a directory to put first in
// PATH: with present, everything is installed and the image exists; without,
// nothing is installed and the image is missing, while the Docker daemon
// answers.
func fakeTools(t *testing.T, present bool) string {
	t.Helper()
	dir := t.TempDir()
	status := "1"
	if present {
		status = "0"
	}
	scripts := map[string]string{
		"dpkg-query": `[ ` + status + ` = 0 ] && printf 'install ok installed'; exit ` + status,
		"docker": `case "$1 $2" in
  "image inspect") exit ` + status + ` ;;
  "version "*) echo 99.0 ;;
esac
exit 0`,
		"java":  `echo 'openjdk version "17" (fake)' >&2`,
		"javac": `echo 'javac 17 (fake)'`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func prereqs(t *testing.T, fakes string, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"scripts/prereqs.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"), "ZK_IMAGE=", "ZK_SERVERS=", "ZOOKEEPER_HOME=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("prereqs.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPrereqsDryRun: on a machine missing everything, scripts/prereqs.sh
// --dry-run says it would install the Debian packages and build the image
// (and changes nothing: the fakes would not let it); on a machine that has
// everything, a run says every piece is present and runs nothing.
func TestPrereqsDryRun(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to run scripts/prereqs.sh")
	}
	out := prereqs(t, fakeTools(t, false), "--dry-run")
	for _, want := range []string{
		"prereqs: installing Debian packages: zookeeper libcurator-recipes-java python3-kazoo debootstrap postgresql\n",
		"would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper libcurator-recipes-java python3-kazoo debootstrap postgresql\n",
		"prereqs: image zkrecipes/zookeeper:3.8-debian: building with scripts/zk-image.sh",
		"would run: env ZK_IMAGE=zkrecipes/zookeeper:3.8-debian scripts/zk-image.sh\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing everything, --dry-run does not say %q:\n%s", want, out)
		}
	}

	out = prereqs(t, fakeTools(t, true))
	for _, want := range []string{
		"prereqs: package zookeeper: present\n",
		"prereqs: package libcurator-recipes-java: present\n",
		"prereqs: package python3-kazoo: present\n",
		"prereqs: package debootstrap: present\n",
		"prereqs: package postgresql: present\n",
		"prereqs: image zkrecipes/zookeeper:3.8-debian: present\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("with everything present, prereqs.sh does not say %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`installing|would run|building|pulling|downloading`).MatchString(out) {
		t.Errorf("with everything present, prereqs.sh still does something:\n%s", out)
	}

	// --demo on a machine without java (PATH: only the tools the script
	// needs) or ZooKeeper installs both.
	bare := fakeTools(t, false)
	if err := os.Remove(filepath.Join(bare, "java")); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sh", "grep", "id", "env", "head", "go", "apt-get"} {
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(bare, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command("bash", "scripts/prereqs.sh", "--demo", "--dry-run")
	cmd.Env = append(os.Environ(), "PATH="+bare, "ZK_IMAGE=", "ZK_SERVERS=", "ZOOKEEPER_HOME=", "JAVA_HOME=")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("prereqs.sh --demo --dry-run: %v\n%s", err, b)
	}
	if want := "would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper default-jre-headless\n"; !strings.Contains(string(b), want) {
		t.Errorf("--demo without java or ZooKeeper does not say %q:\n%s", want, b)
	}
}
