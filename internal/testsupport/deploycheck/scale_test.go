package deploycheck

import (
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shotflow/shotflow/api/eventstream"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/platform/config"
)

// The "scale" profile of docker-compose.yml: two api and two worker processes behind one entry
// point (docs/scaling.md).
const (
	scaleProfile  = "scale"
	loadBalancer  = "lb"
	haproxyConfig = "deploy/haproxy/haproxy.cfg"
	// haproxyConfigPath is where the haproxy image reads its configuration.
	haproxyConfigPath = "/usr/local/etc/haproxy/haproxy.cfg"
	// dockerDNS is the address of the DNS server Docker gives every container of a user network.
	dockerDNS = "127.0.0.11:53"
)

// scaleReplicas are the services the profile adds, each the same as the service it names.
var scaleReplicas = map[string]string{"api-2": "api", "worker-2": "worker"}

// replicaDifferences are the keys in which a replica may differ from its original: it publishes
// no port, belongs to the profile and answers to its original's name as a network alias.
var replicaDifferences = []string{"ports", "profiles", "networks"}

// rawServices parses docker-compose.yml's services as plain maps, aliases and merges resolved.
func rawServices(t *testing.T) map[string]map[string]any {
	t.Helper()
	var raw struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &raw); err != nil {
		t.Fatalf("parse docker-compose.yml: %v", err)
	}
	return raw.Services
}

// profiles returns a service's profiles.
func profiles(s map[string]any) []string {
	return stringList(s["profiles"])
}

// aliases returns a service's network aliases on the default network.
func aliases(s map[string]any) []string {
	networks, _ := s["networks"].(map[string]any)
	def, _ := networks["default"].(map[string]any)
	return stringList(def["aliases"])
}

// Without the profile, docker compose up starts what it started before; with it, exactly the
// replicas and the load balancer are added.
func TestComposeScaleProfileOnlyAddsServices(t *testing.T) {
	services := rawServices(t)
	want := append(slices.Collect(maps.Keys(scaleReplicas)), loadBalancer)
	for name, s := range services {
		p := profiles(s)
		switch {
		case slices.Contains(want, name):
			if !slices.Equal(p, []string{scaleProfile}) {
				t.Errorf("service %s: profiles %q, want [%q]", name, p, scaleProfile)
			}
		case len(p) > 0:
			t.Errorf("service %s has profiles %q: only the scale profile's services may have one", name, p)
		}
	}
	for _, name := range want {
		if _, ok := services[name]; !ok {
			t.Errorf("docker-compose.yml has no service %s (profile %s)", name, scaleProfile)
		}
	}
	for _, name := range requiredServices {
		if s, ok := services[name]; ok && len(profiles(s)) > 0 {
			t.Errorf("required service %s must run without a profile", name)
		}
	}
}

// A replica runs what its original runs, with the same settings, dependencies, healthcheck and
// stop grace; it publishes no port (lb is the entry point) and answers to the original's name, the
// name lb's servers and Prometheus's DNS discovery resolve.
func TestComposeScaleReplicasAreTheirOriginals(t *testing.T) {
	services := rawServices(t)
	for replica, original := range scaleReplicas {
		r, ok := services[replica]
		if !ok {
			t.Errorf("no service %s", replica)
			continue
		}
		o := services[original]
		rest := func(s map[string]any) map[string]any {
			c := maps.Clone(s)
			for _, k := range replicaDifferences {
				delete(c, k)
			}
			return c
		}
		if got, want := rest(r), rest(o); !reflect.DeepEqual(got, want) {
			for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
				for k := range got {
					yield(k, true)
				}
				for k := range want {
					yield(k, true)
				}
			}))) {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("service %s differs from %s in %s: %v against %v", replica, original, k, got[k], want[k])
				}
			}
		}
		if r["ports"] != nil {
			t.Errorf("service %s publishes ports %v: the replicas are reached through %s", replica, r["ports"], loadBalancer)
		}
		if !slices.Contains(aliases(r), original) {
			t.Errorf("service %s has aliases %q: it must answer to %q, as lb and Prometheus find %s's containers by that name", replica, aliases(r), original, original)
		}
	}
	// Prometheus scrapes by these names (TestPrometheusScrapesTheAPIAndEveryWorker): every
	// process of each command answers to it.
	f := loadCompose(t)
	for name, s := range f.Services {
		cmd := stringList(s.Command)
		if len(cmd) != 1 || (cmd[0] != "api" && cmd[0] != "worker") {
			continue
		}
		if name != cmd[0] && !slices.Contains(aliases(services[name]), cmd[0]) {
			t.Errorf("service %s runs %s but does not answer to the name %s", name, cmd[0], cmd[0])
		}
	}
}

// haproxySection is one section of an HAProxy configuration: its header and its lines, each split
// into words, comments removed.
type haproxySection struct {
	header []string
	lines  [][]string
}

// parseHAProxy splits an HAProxy configuration into its sections: a section starts at a line
// that is not indented.
func parseHAProxy(text string) []haproxySection {
	var sections []haproxySection
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			sections = append(sections, haproxySection{header: words})
			continue
		}
		if len(sections) > 0 {
			sections[len(sections)-1].lines = append(sections[len(sections)-1].lines, words)
		}
	}
	return sections
}

// find returns the section whose header is kind [name].
func findSection(sections []haproxySection, header ...string) (haproxySection, bool) {
	for _, s := range sections {
		if slices.Equal(s.header, header) {
			return s, true
		}
	}
	return haproxySection{}, false
}

// directive returns the words after the first line of s that starts with keyword (several words
// allowed, e.g. "timeout server"), or nil.
func (s haproxySection) directive(keyword ...string) []string {
	for _, l := range s.lines {
		if len(l) >= len(keyword) && slices.Equal(l[:len(keyword)], keyword) {
			return l[len(keyword):]
		}
	}
	return nil
}

// haproxyDuration parses an HAProxy time (a number with an optional unit, milliseconds by
// default).
func haproxyDuration(t *testing.T, v string) time.Duration {
	t.Helper()
	number, unit := v, time.Millisecond
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			number, unit = n, u.d
			break
		}
	}
	n, err := strconv.Atoi(number)
	if err != nil {
		t.Fatalf("haproxy time %q: %v", v, err)
	}
	return time.Duration(n) * unit
}

// The load balancer listens where lb publishes, spreads over every API container on the port
// HTTP_ADDR gives, takes out one whose /readyz fails, and waits longer than any answer the API
// may hold back.
func TestComposeLoadBalancerSpreadsOverTheAPIs(t *testing.T) {
	f := loadCompose(t)
	lb := f.service(t, loadBalancer)
	if mounts(t, loadBalancer, lb)[haproxyConfigPath] != haproxyConfig {
		t.Fatalf("service %s does not mount %s at %s", loadBalancer, haproxyConfig, haproxyConfigPath)
	}
	if !strings.HasPrefix(mustInterpolate(t, lb.Image), "haproxy:") {
		t.Errorf("service %s runs %s, not the haproxy image its configuration is written for", loadBalancer, lb.Image)
	}
	cfg := parseHAProxy(string(readRepoFile(t, haproxyConfig)))

	var frontend haproxySection
	for _, s := range cfg {
		if s.header[0] == "frontend" {
			frontend = s
		}
	}
	if frontend.header == nil {
		t.Fatalf("%s has no frontend", haproxyConfig)
	}
	bind := frontend.directive("bind")
	if len(bind) == 0 {
		t.Fatalf("%s: the frontend binds nothing", haproxyConfig)
	}
	if _, port, err := net.SplitHostPort(bind[0]); err != nil || port != containerPort(t, lb) {
		t.Errorf("%s binds %q, but %s publishes container port %s", haproxyConfig, bind[0], loadBalancer, containerPort(t, lb))
	}
	backendName := frontend.directive("default_backend")
	if len(backendName) != 1 {
		t.Fatalf("%s: the frontend has no default_backend", haproxyConfig)
	}
	backend, ok := findSection(cfg, "backend", backendName[0])
	if !ok {
		t.Fatalf("%s: no backend %s", haproxyConfig, backendName[0])
	}

	// The servers: api:<port of HTTP_ADDR>, as many slots as API containers at least.
	apiPort := listenPort(t, f, "api", func(c config.Config) string { return c.HTTPAddr })
	apis := 0
	for _, s := range f.Services {
		if slices.Equal(stringList(s.Command), []string{"api"}) {
			apis++
		}
	}
	if apis < 2 {
		t.Errorf("docker-compose.yml runs %d api services, want two (api and api-2)", apis)
	}
	slots, dynamic := 0, false
	for _, l := range backend.lines {
		var addr string
		switch {
		case l[0] == "server-template" && len(l) >= 4:
			n, err := strconv.Atoi(l[2])
			if err != nil {
				t.Fatalf("%s: server-template %q: %v", haproxyConfig, l, err)
			}
			slots += n
			addr, dynamic = l[3], true
		case l[0] == "server" && len(l) >= 3:
			slots++
			addr = l[2]
		default:
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "api" || port != apiPort {
			t.Errorf("%s: server %q, want api:%s (the name every API container answers to, HTTP_ADDR's port)", haproxyConfig, addr, apiPort)
		}
	}
	if slots < apis {
		t.Errorf("%s has %d server slots for %d API services", haproxyConfig, slots, apis)
	}
	if dynamic {
		// A template's slots are filled from DNS: the servers must use a resolvers section that
		// asks Docker's DNS, or they would keep the address of start-up.
		def := backend.directive("default-server")
		i := slices.Index(def, "resolvers")
		if i < 0 || i+1 >= len(def) {
			t.Fatalf("%s: the backend's default-server has no resolvers: %q", haproxyConfig, def)
		}
		res, ok := findSection(cfg, "resolvers", def[i+1])
		if !ok {
			t.Fatalf("%s: no resolvers section %s", haproxyConfig, def[i+1])
		}
		if ns := res.directive("nameserver"); len(ns) != 2 || ns[1] != dockerDNS {
			t.Errorf("%s: resolvers %s ask %q, want Docker's DNS %s", haproxyConfig, def[i+1], ns, dockerDNS)
		}
		if !slices.Contains(def, "check") {
			t.Errorf("%s: the backend's servers are not health-checked: %q", haproxyConfig, def)
		}
	}
	if send := backend.directive("http-check", "send"); !slices.Equal(send, []string{"meth", "GET", "uri", "/readyz"}) {
		t.Errorf("%s: health checks send %q, want `meth GET uri /readyz` (the API's readiness)", haproxyConfig, send)
	}

	// Timeouts: a held request (Prefer: wait) is silent up to REQUEST_TIMEOUT + prefer.MaxWait, an
	// event stream up to its keep-alive interval.
	defaults, ok := findSection(cfg, "defaults")
	if !ok {
		t.Fatalf("%s has no defaults section", haproxyConfig)
	}
	defaultCfg, err := config.LoadFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	held := defaultCfg.RequestTimeout + prefer.MaxWait
	for _, which := range []string{"server", "client", "tunnel"} {
		v := defaults.directive("timeout", which)
		if len(v) != 1 {
			t.Errorf("%s sets no timeout %s", haproxyConfig, which)
			continue
		}
		if d := haproxyDuration(t, v[0]); d <= held || d <= eventstream.KeepAlive {
			t.Errorf("%s: timeout %s %s cuts a held request (%s) or an event stream (keep-alive %s)", haproxyConfig, which, v[0], held, eventstream.KeepAlive)
		}
	}

	// lb's own healthcheck asks HAProxy's monitor URI on the bound port.
	monitor := frontend.directive("monitor-uri")
	if len(monitor) != 1 {
		t.Fatalf("%s: the frontend has no monitor-uri", haproxyConfig)
	}
	if !hasHealthcheck(lb) {
		t.Fatalf("service %s has no healthcheck", loadBalancer)
	}
	test := strings.Join(stringList(lb.Healthcheck.Test), " ")
	if !strings.Contains(test, "GET "+monitor[0]+" ") || !strings.Contains(test, "/127.0.0.1/"+containerPort(t, lb)+" ") {
		t.Errorf("service %s's healthcheck %q does not ask %s on port %s", loadBalancer, test, monitor[0], containerPort(t, lb))
	}
	// It starts once every API it spreads over is healthy.
	deps := dependsOn(t, loadBalancer, lb)
	for name, s := range f.Services {
		if slices.Equal(stringList(s.Command), []string{"api"}) && deps[name] != "service_healthy" {
			t.Errorf("service %s does not wait for %s to be healthy", loadBalancer, name)
		}
	}
}

func TestParseHAProxy(t *testing.T) {
	cfg := parseHAProxy("global\n    log stdout # note\n\n# a comment\nbackend api\n    timeout server 5s\n\tserver a api:1 check\n")
	if len(cfg) != 2 {
		t.Fatalf("%d sections, want 2: %+v", len(cfg), cfg)
	}
	b, ok := findSection(cfg, "backend", "api")
	if !ok {
		t.Fatal("no backend api")
	}
	if got := b.directive("timeout", "server"); !slices.Equal(got, []string{"5s"}) {
		t.Errorf("timeout server = %q", got)
	}
	if got := b.directive("server"); !slices.Equal(got, []string{"a", "api:1", "check"}) {
		t.Errorf("server = %q", got)
	}
	if got := cfg[0].directive("log"); !slices.Equal(got, []string{"stdout"}) {
		t.Errorf("log = %q", got)
	}
	for in, want := range map[string]time.Duration{"100": 100 * time.Millisecond, "100s": 100 * time.Second, "2m": 2 * time.Minute, "1d": 24 * time.Hour, "5ms": 5 * time.Millisecond} {
		if got := haproxyDuration(t, in); got != want {
			t.Errorf("haproxyDuration(%q) = %s, want %s", in, got, want)
		}
	}
}
