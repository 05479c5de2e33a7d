// Package deploy_test checks the deploy recipes offline: the Dockerfile
// (parsed and linted by BuildKit's own Dockerfile frontend, its rules
// below), the systemd unit (systemd-analyze verify, and its hardening) and
// the Kubernetes example (parsed, its probes on the server's real routes).
// Each recipe's settings are also given to a real spool serve, whose
// health routes must then answer.
package deploy_test

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"go.yaml.in/yaml/v3"

	"github.com/spool-go/spool/internal/spooltest"
)

func TestMain(m *testing.M) { os.Exit(spooltest.Main(m)) }

const testKey = "deploy-test-key-0123456789"

// probeOK asks url without a key, as a kubelet or a load balancer does.
func probeOK(t *testing.T, url string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
}

// The Dockerfile's rules: multi-stage; the build stage on the Go release
// go.mod names, building ./cmd/spool with CGO_ENABLED=0 (a static binary);
// the final stage distroless or scratch, pinned by tag, holding only what
// it copies from the build stage, run as a non-root user, exposing the
// port of its SPOOL_ADDR and starting spool serve; no ADD; and BuildKit's
// linter (docker build --check) has nothing to say.
func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ast, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ast.Warnings {
		t.Errorf("Dockerfile: %s", w.Short)
	}
	var lint []string
	stages, _, err := instructions.Parse(ast.AST, linter.New(&linter.Config{
		Warn: func(rule, desc, url, msg string, _ []parser.Range) { lint = append(lint, rule+": "+msg) },
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lint {
		t.Errorf("Dockerfile lint: %s", l)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stage(s): the Dockerfile must be multi-stage", len(stages))
	}
	gomod, _ := os.ReadFile("../go.mod")
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	build, final := stages[0], stages[len(stages)-1]
	if goVersion == nil || !strings.HasPrefix(build.BaseName, "golang:"+string(goVersion[1])) {
		t.Errorf("the build stage is FROM %s, not the Go release of go.mod (go %s)", build.BaseName, goVersion[1])
	}
	static := false
	for _, c := range build.Commands {
		if run, ok := c.(*instructions.RunCommand); ok {
			line := strings.Join(run.CmdLine, " ")
			if strings.Contains(line, "go build") && strings.Contains(line, "CGO_ENABLED=0") && strings.Contains(line, "./cmd/spool") {
				static = true
			}
		}
	}
	if !static {
		t.Error("the build stage does not build ./cmd/spool with CGO_ENABLED=0")
	}
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/") && final.BaseName != "scratch" {
		t.Errorf("the final stage is FROM %s, not distroless or scratch", final.BaseName)
	}
	if !strings.Contains(final.BaseName, ":") || strings.HasSuffix(final.BaseName, ":latest") {
		t.Errorf("the final stage's base %s is not pinned by a tag", final.BaseName)
	}
	var user, addr string
	var env []string
	var entrypoint []string
	var exposed []string
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env = append(env, kv.Key+"="+kv.Value)
				if kv.Key == "SPOOL_ADDR" {
					addr = kv.Value
				}
			}
		case *instructions.EntrypointCommand:
			entrypoint = c.CmdLine
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		case *instructions.CopyCommand:
			if c.From != build.Name {
				t.Errorf("the final stage copies from %q, not only from the build stage", c.From)
			}
		case *instructions.RunCommand:
			t.Error("the final stage runs a command: it has no shell (distroless), and should need none")
		case *instructions.AddCommand:
			t.Error("ADD in the final stage; COPY --from the build stage instead")
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("the final stage runs as %q, not a non-root user", user)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || !slices.Contains(exposed, port) {
		t.Errorf("SPOOL_ADDR %q and EXPOSE %v do not agree", addr, exposed)
	}
	if len(entrypoint) < 2 || filepath.Base(entrypoint[0]) != "spool" || entrypoint[1] != "serve" {
		t.Fatalf("ENTRYPOINT %v does not run spool serve", entrypoint)
	}
	// The image's settings, given to spool serve (its store in a
	// temporary folder instead of the volume), make a server whose
	// health routes answer.
	for i, kv := range env {
		if strings.HasPrefix(kv, "SPOOL_STORE=") {
			env[i] = "SPOOL_STORE=file:" + t.TempDir()
		}
	}
	p := spooltest.Serve(t, spooltest.Options{Env: append(env, "SPOOL_API_KEY="+testKey)}, entrypoint[2:]...)
	probeOK(t, p.URL+"/healthz")
	probeOK(t, p.URL+"/readyz")
}

// unitDirectives returns the directives of a unit file, by name.
func unitDirectives(t *testing.T, src string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("not a directive: %q", line)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// The systemd unit passes systemd-analyze verify (from Debian's systemd
// package; the unit's binary is the one the tests build), keeps its
// hardening, keeps the sessions in its state directory, leaves time for
// a graceful stop, and its config file holds valid settings.
func TestSystemdUnit(t *testing.T) {
	src, err := os.ReadFile("systemd/spool.service")
	if err != nil {
		t.Fatal(err)
	}
	d := unitDirectives(t, string(src))
	want := map[string]string{
		"ProtectSystem": "strict", "NoNewPrivileges": "yes", "ProtectHome": "yes", "PrivateTmp": "yes",
		"PrivateDevices": "yes", "DynamicUser": "yes", "StateDirectory": "spool", "CapabilityBoundingSet": "",
		"RestrictSUIDSGID": "yes", "SystemCallArchitectures": "native", "KillSignal": "SIGTERM", "UMask": "0077",
	}
	for k, v := range want {
		if !slices.Contains(d[k], v) {
			t.Errorf("%s=%s is missing (have %v)", k, v, d[k])
		}
	}
	if !slices.ContainsFunc(d["Environment"], func(s string) bool { return strings.HasPrefix(s, "SPOOL_STORE=file:/var/lib/spool/") }) {
		t.Errorf("the file store is not in the state directory: %v", d["Environment"])
	}
	exec0 := strings.Fields(d["ExecStart"][0])
	if len(exec0) < 4 || exec0[1] != "serve" || exec0[2] != "--config" {
		t.Fatalf("ExecStart %v", exec0)
	}
	stop, err := time.ParseDuration(d["TimeoutStopSec"][0] + "s")
	if err != nil {
		t.Fatal(err)
	}

	// The config file the unit names: valid settings whose drain delay
	// and grace fit in TimeoutStopSec.
	bin := spooltest.Binary(t)
	out, err := exec.Command(bin, "serve", "--config", "systemd/spool.toml", "--print-config").CombinedOutput()
	if err != nil {
		t.Fatalf("the unit's config file: %v\n%s", err, out)
	}
	grace := setting(t, string(out), "grace")
	drain := setting(t, string(out), "drain-delay")
	if grace+drain+5*time.Second > stop {
		t.Errorf("TimeoutStopSec %v leaves no room for drain-delay %v and grace %v", stop, drain, grace)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is not installed (CI=true; .ci/run installs systemd)")
		}
		t.Skip("systemd-analyze is not installed (Debian's systemd package); the unit is not verified")
	}
	dir := t.TempDir()
	unit := strings.Replace(string(src), "ExecStart=/usr/local/bin/spool", "ExecStart="+bin, 1)
	path := filepath.Join(dir, "spool.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	// verify may report on other units of the machine too; the lines about
	// this one count.
	var problems []string
	for _, l := range strings.Split(string(res), "\n") {
		if strings.Contains(l, "spool.service") {
			problems = append(problems, l)
		}
	}
	if len(problems) > 0 {
		t.Fatalf("systemd-analyze verify (%v):\n%s", err, strings.Join(problems, "\n"))
	}
	// systemd's own measure of the hardening: an exposure of 2.0 or less
	// ("OK") on its scale of 10.
	if res, err := exec.Command(analyze, "security", "--offline=true", "--threshold=20", "--no-pager", path).CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, res)
	}
}

// setting returns a duration setting of --print-config's output.
func setting(t *testing.T, printed, name string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` = "([^"]*)"`).FindStringSubmatch(printed)
	if m == nil {
		t.Fatalf("no %s in:\n%s", name, printed)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string         `yaml:"name"`
		Value     string         `yaml:"value"`
		ValueFrom map[string]any `yaml:"valueFrom"`
	} `yaml:"env"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	StartupProbe    *probe `yaml:"startupProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type manifest struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
				SecurityContext               struct {
					RunAsNonRoot bool `yaml:"runAsNonRoot"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// The Kubernetes example: its liveness probe on /healthz and readiness
// probe on /readyz, on the container port its SPOOL_ADDR listens on; a
// container that runs unprivileged; a termination grace period longer
// than the drain delay and the grace together. Its container's settings
// given to a real spool serve, the probes' routes answer without a key.
func TestKubernetesExample(t *testing.T) {
	src, err := os.ReadFile("kubernetes/spool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep *manifest
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var m manifest
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m.Kind == "Deployment" {
			dep = &m
		}
	}
	if dep == nil || len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("no Deployment with one container")
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	env := map[string]string{}
	var procEnv []string
	for _, e := range c.Env {
		env[e.Name] = e.Value
		switch {
		case e.ValueFrom != nil:
			// Secrets: a store and a key of the test's own.
		case e.Name == "SPOOL_ADDR", e.Name == "SPOOL_METRICS_ADDR":
			// The test listens on free loopback ports.
		default:
			procEnv = append(procEnv, e.Name+"="+e.Value)
		}
	}
	_, port, err := net.SplitHostPort(env["SPOOL_ADDR"])
	if err != nil {
		t.Fatalf("SPOOL_ADDR %q", env["SPOOL_ADDR"])
	}
	portName := ""
	for _, p := range c.Ports {
		if p.Name != "" && port == strconv.Itoa(p.ContainerPort) {
			portName = p.Name
		}
	}
	for name, pr := range map[string]struct {
		p    *probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"}} {
		if pr.p == nil || pr.p.HTTPGet.Path != pr.path || pr.p.HTTPGet.Port != portName || portName == "" {
			t.Errorf("the %s probe is not GET %s on the port SPOOL_ADDR listens on (%s)", name, pr.path, port)
		}
	}
	if !pod.SecurityContext.RunAsNonRoot || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation ||
		!c.SecurityContext.ReadOnlyRootFilesystem || !slices.Contains(c.SecurityContext.Capabilities.Drop, "ALL") {
		t.Errorf("the container is not unprivileged: %+v %+v", pod.SecurityContext, c.SecurityContext)
	}
	drain, err1 := time.ParseDuration(env["SPOOL_DRAIN_DELAY"])
	grace, err2 := time.ParseDuration(env["SPOOL_GRACE"])
	if err1 != nil || err2 != nil || time.Duration(pod.TerminationGracePeriodSeconds)*time.Second <= drain+grace {
		t.Errorf("terminationGracePeriodSeconds %d is not longer than SPOOL_DRAIN_DELAY %q and SPOOL_GRACE %q", pod.TerminationGracePeriodSeconds, env["SPOOL_DRAIN_DELAY"], env["SPOOL_GRACE"])
	}

	procEnv = append(procEnv, "SPOOL_STORE=memory:", "SPOOL_API_KEY="+testKey, "SPOOL_METRICS_ADDR=127.0.0.1:0")
	p := spooltest.Serve(t, spooltest.Options{Env: procEnv}, c.Args...)
	probeOK(t, p.URL+c.LivenessProbe.HTTPGet.Path)
	probeOK(t, p.URL+c.ReadinessProbe.HTTPGet.Path)
	if m := regexp.MustCompile(`metrics on (http://\S+)`).FindStringSubmatch(p.Stderr.String()); m == nil {
		t.Errorf("SPOOL_METRICS_ADDR did not start the metrics listener:\n%s", p.Stderr.String())
	} else {
		probeOK(t, m[1])
	}
}

// The unit's config file, installed as its header says, can be read by
// the service: DynamicUser runs spool serve as a user made for it, and
// ConfigurationDirectory= (unlike StateDirectory=) is not given to that
// user, so /etc/spool and spool.toml stay root's and the service reads
// them as "other". The modes come from the install lines; as root the
// test also runs spool serve --config as such a user (uid 61184, the
// first of systemd's dynamic range, no groups).
func TestSystemdConfigReadable(t *testing.T) {
	src, err := os.ReadFile("systemd/spool.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`install -m (0[0-7]{3}) deploy/systemd/spool\.toml /etc/spool/`).FindSubmatch(src)
	if m == nil {
		t.Fatal("the unit's header does not say how spool.toml is installed")
	}
	mode, err := strconv.ParseUint(string(m[1]), 8, 32)
	if err != nil {
		t.Fatal(err)
	}
	if mode&0o004 == 0 {
		t.Errorf("spool.toml is installed with mode %s: the service's dynamic user, neither its owner nor in its group, cannot read it", m[1])
	}
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		return
	}
	// /etc/spool as systemd leaves it at start (ConfigurationDirectoryMode
	// 0755 by default), owned by root; the file with the unit's mode.
	root, err := os.MkdirTemp("", "spool-unit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	etc := filepath.Join(root, "etc-spool")
	bin := filepath.Join(root, "spool")
	toml, _ := os.ReadFile("systemd/spool.toml")
	b, _ := os.ReadFile(spooltest.Binary(t))
	if err := errors.Join(os.Chmod(root, 0o755), os.Mkdir(etc, 0o755), os.WriteFile(filepath.Join(etc, "spool.toml"), toml, 0o600),
		os.Chmod(filepath.Join(etc, "spool.toml"), os.FileMode(mode)), os.WriteFile(bin, b, 0o755)); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(setpriv, "--reuid", "61184", "--regid", "61184", "--clear-groups",
		bin, "serve", "--config", filepath.Join(etc, "spool.toml"), "--print-config").CombinedOutput()
	if err != nil {
		t.Errorf("spool serve --config as the service's dynamic user: %v\n%s", err, out)
	}
}
