package deploycheck

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/workflows"
)

// repoRoot is the repository root seen from this package's directory, where go test runs.
const repoRoot = "../../.."

// requiredServices must all be in docker-compose.yml.
var requiredServices = []string{
	"postgres", "temporal", "temporal-setup", "temporal-ui", "minio", "minio-setup",
	"migrate", "api", "worker", "redis", "prometheus", "grafana",
}

// shotflowServices run the shotflow image with the shared settings (api-2 and worker-2: the
// scale profile's replicas, scale_test.go).
var shotflowServices = []string{"migrate", "api", "worker", "api-2", "worker-2"}

// requiredVariables must be set, non-empty, for both api and worker.
var requiredVariables = []string{
	"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE", "BLOB_URL",
	"SECRET_KEY", "PUBLIC_BASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
}

// searchAttributes are the search attributes the workflows set, as NAME=TYPE; temporal-setup
// must register every one.
var searchAttributes = workflows.SearchAttributeSpecs()

// s3BlobURLParams are the query parameters gocloud.dev v0.47 accepts in an s3:// URL: the
// s3blob ones plus those of gocloud.dev/aws.V2ConfigFromURLParams. Any other parameter
// makes blob.OpenBucket fail at run time.
var s3BlobURLParams = []string{
	"ssetype", "kmskeyid", "accelerate", "use_path_style", "s3ForcePathStyle", "disable_https",
	"region", "anonymous", "profile", "role", "endpoint", "hostname_immutable", "dualstack",
	"fips", "rate_limiter_capacity", "request_checksum_calculation",
	"response_checksum_validation", "awssdk",
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

// composeService holds the fields the tests read. Fields with several accepted shapes in
// the Compose Specification (string or list, list or map) are kept as any and normalised
// by the helpers below.
type composeService struct {
	Image       string       `yaml:"image"`
	Build       any          `yaml:"build"`
	Command     any          `yaml:"command"`
	Entrypoint  any          `yaml:"entrypoint"`
	Environment any          `yaml:"environment"`
	DependsOn   any          `yaml:"depends_on"`
	Healthcheck *healthcheck `yaml:"healthcheck"`
	Volumes     []any        `yaml:"volumes"`
	Ports       []any        `yaml:"ports"`
	Restart     string       `yaml:"restart"`
}

type healthcheck struct {
	Test    any  `yaml:"test"`
	Disable bool `yaml:"disable"`
}

func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return data
}

// loadCompose parses docker-compose.yml; yaml.v3 resolves anchors, aliases and << merges.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var f composeFile
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &f); err != nil {
		t.Fatalf("parse docker-compose.yml: %v", err)
	}
	if len(f.Services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}
	return f
}

func (f composeFile) service(t *testing.T, name string) composeService {
	t.Helper()
	s, ok := f.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q", name)
	}
	return s
}

// interpRE matches what Compose interpolates: $$, ${NAME}, ${NAME<op>value} with op one of
// :- - :? ? :+ +, and $NAME.
var interpRE = regexp.MustCompile(`\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))`)

// interpolate expands s as Compose would with every variable unset, so the result is what
// the file gives by default. It fails on a required variable (${NAME:?…}), which has no
// default, and on anything left unexpanded.
func interpolate(s string) (string, error) {
	var errs []string
	out := interpRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := interpRE.FindStringSubmatch(m)
		switch {
		case sub[1] == "$":
			return "$"
		case sub[5] != "":
			return ""
		}
		switch op := sub[3]; op {
		case "":
			return ""
		case ":-", "-":
			return sub[4]
		case ":+", "+":
			return ""
		default: // :? and ?
			errs = append(errs, fmt.Sprintf("%s is required (%s)", sub[2], sub[4]))
			return ""
		}
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("%q: %s", s, strings.Join(errs, "; "))
	}
	if rest := interpRE.ReplaceAllString(s, ""); strings.Contains(rest, "$") {
		return "", fmt.Errorf("%q: unsupported interpolation", s)
	}
	return out, nil
}

func mustInterpolate(t *testing.T, s string) string {
	t.Helper()
	out, err := interpolate(s)
	if err != nil {
		t.Fatalf("interpolate: %v", err)
	}
	return out
}

// rawEnv returns a service's environment as written (list or map form).
func rawEnv(t *testing.T, name string, s composeService) map[string]string {
	t.Helper()
	env := map[string]string{}
	switch e := s.Environment.(type) {
	case nil:
	case map[string]any:
		for k, v := range e {
			if v == nil {
				env[k] = "" // passed through from the host environment; empty by default
				continue
			}
			env[k] = fmt.Sprint(v)
		}
	case []any:
		for _, item := range e {
			k, v, _ := strings.Cut(fmt.Sprint(item), "=")
			env[k] = v
		}
	default:
		t.Fatalf("service %s: environment has unexpected type %T", name, s.Environment)
	}
	return env
}

// defaultEnv is a service's environment with every value interpolated as by default.
func defaultEnv(t *testing.T, name string, s composeService) map[string]string {
	t.Helper()
	env := rawEnv(t, name, s)
	for k, v := range env {
		out, err := interpolate(v)
		if err != nil {
			t.Fatalf("service %s: %s: %v", name, k, err)
		}
		env[k] = out
	}
	return env
}

// stringList normalises command, entrypoint and healthcheck test (string or list).
func stringList(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			out = append(out, fmt.Sprint(item))
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

// dependsOn returns target service → condition, for the list and the map form.
func dependsOn(t *testing.T, name string, s composeService) map[string]string {
	t.Helper()
	deps := map[string]string{}
	switch d := s.DependsOn.(type) {
	case nil:
	case []any:
		for _, item := range d {
			deps[fmt.Sprint(item)] = "service_started"
		}
	case map[string]any:
		for target, spec := range d {
			cond := "service_started"
			if m, ok := spec.(map[string]any); ok {
				if c, ok := m["condition"].(string); ok && c != "" {
					cond = c
				}
			}
			deps[target] = cond
		}
	default:
		t.Fatalf("service %s: depends_on has unexpected type %T", name, s.DependsOn)
	}
	return deps
}

func hasHealthcheck(s composeService) bool {
	if s.Healthcheck == nil || s.Healthcheck.Disable {
		return false
	}
	test := stringList(s.Healthcheck.Test)
	return len(test) > 0 && test[0] != "NONE"
}

func TestComposeFileFollowsComposeSpecification(t *testing.T) {
	var raw map[string]any
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &raw); err != nil {
		t.Fatalf("parse docker-compose.yml: %v", err)
	}
	if _, ok := raw["version"]; ok {
		t.Error("docker-compose.yml has a top-level version key: the Compose Specification dropped it")
	}
	allowed := []string{"name", "services", "volumes", "networks", "configs", "secrets", "include", "models"}
	for key := range raw {
		if !slices.Contains(allowed, key) && !strings.HasPrefix(key, "x-") {
			t.Errorf("docker-compose.yml: unknown top-level key %q (extensions must start with x-)", key)
		}
	}
}

func TestComposeHasRequiredServices(t *testing.T) {
	f := loadCompose(t)
	for _, name := range requiredServices {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("docker-compose.yml has no service %q", name)
		}
	}
}

func TestComposeServicesHaveImageOrBuild(t *testing.T) {
	f := loadCompose(t)
	for name, s := range f.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s has neither image nor build", name)
		}
	}
}

// imageTag splits the tag off an image reference; digest reports an @sha256:… pin.
func imageTag(ref string) (tag string, digest bool) {
	if strings.Contains(ref, "@") {
		return "", true
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:], false
	}
	return "", false
}

func TestComposeImagesArePinned(t *testing.T) {
	f := loadCompose(t)
	for name, s := range f.Services {
		if s.Image == "" {
			continue
		}
		ref := mustInterpolate(t, s.Image)
		tag, digest := imageTag(ref)
		switch {
		case digest:
		case tag == "":
			t.Errorf("service %s: image %q has no tag (that means latest): pin one", name, ref)
		case strings.EqualFold(tag, "latest"):
			t.Errorf("service %s: image %q uses latest: pin a version", name, ref)
		}
	}
}

func TestComposeAPIAndWorkerShareSettings(t *testing.T) {
	f := loadCompose(t)
	api := rawEnv(t, "api", f.service(t, "api"))
	worker := rawEnv(t, "worker", f.service(t, "worker"))
	if !maps.Equal(api, worker) {
		var diff []string
		for _, k := range slices.Sorted(maps.Keys(api)) {
			if w, ok := worker[k]; !ok || w != api[k] {
				diff = append(diff, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(worker)) {
			if _, ok := api[k]; !ok {
				diff = append(diff, k)
			}
		}
		t.Errorf("api and worker environments differ in %v: use the shared x-shotflow-env mapping", diff)
	}
}

func TestComposeAPIAndWorkerSetRequiredVariables(t *testing.T) {
	f := loadCompose(t)
	for _, name := range []string{"api", "worker"} {
		env := defaultEnv(t, name, f.service(t, name))
		required := requiredVariables
		if name == "api" {
			required = append(slices.Clone(required), "HTTP_ADDR")
		}
		for _, k := range required {
			if env[k] == "" {
				t.Errorf("service %s: %s is not set (or empty by default)", name, k)
			}
		}
	}
}

// configEnvTags returns every environment variable config.Config reads.
func configEnvTags() map[string]bool {
	tags := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			field := typ.Field(i)
			if !field.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(field.Tag.Get("env"), ",")
			if name != "" {
				tags[name] = true
			} else if field.Type.Kind() == reflect.Struct {
				walk(field.Type)
			}
		}
	}
	walk(reflect.TypeFor[config.Config]())
	return tags
}

func TestComposeVariablesAreConfigSettings(t *testing.T) {
	tags := configEnvTags()
	if len(tags) == 0 {
		t.Fatal("config.Config has no env tags")
	}
	f := loadCompose(t)
	for _, name := range shotflowServices {
		s, ok := f.Services[name]
		if !ok {
			continue // TestComposeHasRequiredServices reports it
		}
		for k := range rawEnv(t, name, s) {
			if strings.HasPrefix(k, "AWS_") {
				continue // read by the AWS SDK (gocloud.dev s3blob), not by config
			}
			if !tags[k] {
				t.Errorf("service %s sets %s, which is not an env tag of config.Config (typo?)", name, k)
			}
		}
	}
}

func TestComposeDefaultsAreValidConfig(t *testing.T) {
	f := loadCompose(t)
	for _, name := range []string{"api", "worker"} {
		environ := defaultEnv(t, name, f.service(t, name))
		for k := range environ {
			if strings.HasPrefix(k, "AWS_") {
				delete(environ, k)
			}
		}
		cfg, err := config.LoadFrom(environ)
		if err != nil {
			t.Errorf("service %s: the compose defaults do not load: %v", name, err)
			continue
		}
		if got := cfg.DatabaseDialect(); got != "postgres" {
			t.Errorf("service %s: database dialect %q, want postgres", name, got)
		}
		if n := len(cfg.SecretKeyBytes()); n < 32 {
			t.Errorf("service %s: SECRET_KEY decodes to %d bytes, want at least 32", name, n)
		}
	}
}

func TestComposeConnectionsPointAtServices(t *testing.T) {
	f := loadCompose(t)
	env := defaultEnv(t, "api", f.service(t, "api"))
	wantService := func(what, host, service string) {
		t.Helper()
		if host != service {
			t.Errorf("%s points at host %q, want the %s service", what, host, service)
		}
		if _, ok := f.Services[service]; !ok {
			t.Errorf("%s: there is no %s service", what, service)
		}
	}

	db, err := url.Parse(env["DATABASE_URL"])
	if err != nil {
		t.Fatalf("DATABASE_URL: %v", err)
	}
	if db.Scheme != "postgres" && db.Scheme != "postgresql" {
		t.Errorf("DATABASE_URL scheme %q, want postgres", db.Scheme)
	}
	wantService("DATABASE_URL", db.Hostname(), "postgres")
	if p := db.Port(); p != "" && p != "5432" {
		t.Errorf("DATABASE_URL port %s, want 5432", p)
	}
	// The role and database must be the ones the postgres init script creates, with the
	// password the postgres service hands to it.
	initScript := string(readRepoFile(t, "deploy/postgres/initdb/10-shotflow.sh"))
	dbName := strings.TrimPrefix(db.Path, "/")
	if !strings.Contains(initScript, "CREATE DATABASE "+dbName+" ") {
		t.Errorf("DATABASE_URL names database %q, which deploy/postgres/initdb does not create", dbName)
	}
	if !strings.Contains(initScript, "CREATE ROLE "+db.User.Username()+" ") {
		t.Errorf("DATABASE_URL user %q is not created by deploy/postgres/initdb", db.User.Username())
	}
	pgEnv := defaultEnv(t, "postgres", f.service(t, "postgres"))
	if pw, _ := db.User.Password(); pw != pgEnv["SHOTFLOW_DB_PASSWORD"] {
		t.Errorf("DATABASE_URL password %q differs from postgres SHOTFLOW_DB_PASSWORD %q", pw, pgEnv["SHOTFLOW_DB_PASSWORD"])
	}

	host, port, err := net.SplitHostPort(env["TEMPORAL_ADDRESS"])
	if err != nil {
		t.Errorf("TEMPORAL_ADDRESS: %v", err)
	} else {
		wantService("TEMPORAL_ADDRESS", host, "temporal")
		if port != "7233" {
			t.Errorf("TEMPORAL_ADDRESS port %s, want 7233", port)
		}
	}
	setupEnv := defaultEnv(t, "temporal-setup", f.service(t, "temporal-setup"))
	if setupEnv["TEMPORAL_NAMESPACE"] != env["TEMPORAL_NAMESPACE"] {
		t.Errorf("temporal-setup creates namespace %q but api uses %q", setupEnv["TEMPORAL_NAMESPACE"], env["TEMPORAL_NAMESPACE"])
	}
	if setupEnv["TEMPORAL_ADDRESS"] != env["TEMPORAL_ADDRESS"] {
		t.Errorf("temporal-setup talks to %q but api to %q", setupEnv["TEMPORAL_ADDRESS"], env["TEMPORAL_ADDRESS"])
	}

	blob, err := url.Parse(env["BLOB_URL"])
	if err != nil {
		t.Fatalf("BLOB_URL: %v", err)
	}
	if blob.Scheme != "s3" {
		t.Errorf("BLOB_URL scheme %q, want s3 (MinIO)", blob.Scheme)
	}
	for param := range blob.Query() {
		if !slices.Contains(s3BlobURLParams, param) {
			t.Errorf("BLOB_URL has query parameter %q, which gocloud.dev s3blob does not accept", param)
		}
	}
	endpoint, err := url.Parse(blob.Query().Get("endpoint"))
	if err != nil || endpoint.Host == "" {
		t.Errorf("BLOB_URL endpoint %q is not a URL (err %v)", blob.Query().Get("endpoint"), err)
	} else {
		wantService("BLOB_URL endpoint", endpoint.Hostname(), "minio")
	}
	if blob.Query().Get("use_path_style") != "true" {
		t.Error("BLOB_URL must set use_path_style=true: MinIO's bucket is not a DNS name")
	}
	mcEnv := defaultEnv(t, "minio-setup", f.service(t, "minio-setup"))
	if blob.Host != mcEnv["MINIO_BUCKET"] {
		t.Errorf("BLOB_URL bucket %q, but minio-setup creates %q", blob.Host, mcEnv["MINIO_BUCKET"])
	}
	minioEnv := defaultEnv(t, "minio", f.service(t, "minio"))
	if env["AWS_ACCESS_KEY_ID"] != minioEnv["MINIO_ROOT_USER"] || env["AWS_SECRET_ACCESS_KEY"] != minioEnv["MINIO_ROOT_PASSWORD"] {
		t.Error("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY do not match minio's MINIO_ROOT_USER/MINIO_ROOT_PASSWORD")
	}
	if minioEnv["MINIO_ROOT_USER"] != mcEnv["MINIO_ROOT_USER"] || minioEnv["MINIO_ROOT_PASSWORD"] != mcEnv["MINIO_ROOT_PASSWORD"] {
		t.Error("minio-setup's credentials do not match minio's")
	}

	if r := env["REDIS_URL"]; r != "" {
		u, err := url.Parse(r)
		if err != nil {
			t.Errorf("REDIS_URL: %v", err)
		} else {
			wantService("REDIS_URL", u.Hostname(), "redis")
		}
	}
}

func TestComposeDependencies(t *testing.T) {
	f := loadCompose(t)
	graph := map[string][]string{}
	for name, s := range f.Services {
		for target, cond := range dependsOn(t, name, s) {
			graph[name] = append(graph[name], target)
			ts, ok := f.Services[target]
			if !ok {
				t.Errorf("service %s depends on %q, which is not a service", name, target)
				continue
			}
			switch cond {
			case "service_started":
			case "service_healthy":
				if !hasHealthcheck(ts) {
					t.Errorf("service %s waits for %s to be healthy, but %s has no healthcheck", name, target, target)
				}
			case "service_completed_successfully":
				if ts.Restart == "always" || ts.Restart == "unless-stopped" {
					t.Errorf("service %s waits for %s to complete, but %s restarts %s", name, target, target, ts.Restart)
				}
			default:
				t.Errorf("service %s: depends_on %s has unknown condition %q", name, target, cond)
			}
		}
	}
	// No cycles: compose could never start them.
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var visit func(name string, path []string)
	visit = func(name string, path []string) {
		switch state[name] {
		case visiting:
			t.Errorf("depends_on cycle: %s", strings.Join(slices.Concat(path, []string{name}), " -> "))
			return
		case done:
			return
		}
		state[name] = visiting
		for _, next := range graph[name] {
			visit(next, slices.Concat(path, []string{name}))
		}
		state[name] = done
	}
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		visit(name, nil)
	}

	// The API must not start before its schema, Temporal's setup and the bucket exist.
	api := dependsOn(t, "api", f.service(t, "api"))
	for target, cond := range map[string]string{
		"postgres":       "service_healthy",
		"migrate":        "service_completed_successfully",
		"temporal-setup": "service_completed_successfully",
		"minio-setup":    "service_completed_successfully",
	} {
		if api[target] != cond {
			t.Errorf("api depends on %s with condition %q, want %q", target, api[target], cond)
		}
	}
}

func TestComposeHealthchecks(t *testing.T) {
	f := loadCompose(t)
	for _, name := range []string{"postgres", "temporal", "minio", "api", "api-2", "worker-2", "lb"} {
		if s, ok := f.Services[name]; ok && !hasHealthcheck(s) {
			t.Errorf("service %s has no healthcheck", name)
		}
	}
	api := f.service(t, "api")
	if api.Healthcheck != nil {
		test := strings.Join(stringList(api.Healthcheck.Test), " ")
		if !strings.Contains(test, "/usr/local/bin/shotflow") || !strings.Contains(test, "healthcheck") {
			t.Errorf("api healthcheck %q should run `/usr/local/bin/shotflow healthcheck` (the image has no curl)", test)
		}
	}
}

// buildSpec returns the context and Dockerfile of a build entry (string or mapping form).
func buildSpec(t *testing.T, name string, build any) (context, dockerfile string) {
	t.Helper()
	switch b := build.(type) {
	case string:
		return b, "Dockerfile"
	case map[string]any:
		context, _ = b["context"].(string)
		dockerfile, _ = b["dockerfile"].(string)
		if context == "" {
			context = "."
		}
		if dockerfile == "" {
			dockerfile = "Dockerfile"
		}
		return context, dockerfile
	}
	t.Fatalf("service %s: build has unexpected type %T", name, build)
	return "", ""
}

func TestComposeShotflowServicesBuildTheRepoDockerfile(t *testing.T) {
	f := loadCompose(t)
	commands := map[string]string{"migrate": "migrate", "api": "api", "worker": "worker", "api-2": "api", "worker-2": "worker"}
	for _, name := range shotflowServices {
		s, ok := f.Services[name]
		if !ok {
			continue
		}
		if got := stringList(s.Command); !slices.Equal(got, []string{commands[name]}) {
			t.Errorf("service %s: command %q, want [%q]", name, got, commands[name])
		}
		if s.Build == nil {
			if name != "migrate" {
				t.Errorf("service %s has no build: it must build the repository's Dockerfile", name)
			}
			continue
		}
		context, dockerfile := buildSpec(t, name, s.Build)
		if filepath.Clean(context) != "." {
			t.Errorf("service %s: build context %q, want the repository root (.)", name, context)
		}
		if filepath.Clean(dockerfile) != "Dockerfile" {
			t.Errorf("service %s: builds %q, want the repository's Dockerfile", name, dockerfile)
		}
		if _, err := os.Stat(filepath.Join(repoRoot, context, dockerfile)); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
	}
}

func TestComposeTemporalSetupRegistersSearchAttributes(t *testing.T) {
	f := loadCompose(t)
	s := f.service(t, "temporal-setup")
	var tokens []string
	for _, part := range slices.Concat(stringList(s.Entrypoint), stringList(s.Command), slices.Collect(maps.Values(rawEnv(t, "temporal-setup", s)))) {
		tokens = append(tokens, strings.FieldsFunc(part, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == ',' || r == '"' || r == '\''
		})...)
	}
	for _, spec := range searchAttributes {
		if !slices.Contains(tokens, spec) {
			t.Errorf("temporal-setup does not register search attribute %s (want an argument %s)", spec, spec)
		}
	}
}

func TestComposeMountsExist(t *testing.T) {
	f := loadCompose(t)
	for name, s := range f.Services {
		for _, v := range s.Volumes {
			var source string
			switch v := v.(type) {
			case string:
				// SOURCE:TARGET[:MODE]; a lone TARGET is an anonymous volume.
				if src, _, ok := strings.Cut(mustInterpolate(t, v), ":"); ok {
					source = src
				}
			case map[string]any:
				source, _ = v["source"].(string)
			}
			switch {
			case source == "":
				// anonymous volume
			case strings.HasPrefix(source, ".") || strings.HasPrefix(source, "/") || strings.HasPrefix(source, "~"):
				if !strings.HasPrefix(source, ".") {
					t.Errorf("service %s mounts %q: use a path relative to the repository", name, source)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, source)); err != nil {
					t.Errorf("service %s mounts %s, which does not exist: %v", name, source, err)
				}
			default:
				if _, ok := f.Volumes[source]; !ok {
					t.Errorf("service %s uses volume %q, which is not declared under volumes", name, source)
				}
			}
		}
	}
}

// readmeCodeRE finds inline code spans in README.md.
var readmeCodeRE = regexp.MustCompile("`([^`\n]+)`")

// serviceMentions returns the words of candidates that text shows in inline code spans
// (`api`, `docker compose logs -f worker`), in order of first appearance.
func serviceMentions(text string, candidates []string) []string {
	var found []string
	for _, m := range readmeCodeRE.FindAllStringSubmatch(text, -1) {
		for _, word := range strings.Fields(m[1]) {
			if slices.Contains(candidates, word) && !slices.Contains(found, word) {
				found = append(found, word)
			}
		}
	}
	return found
}

func TestReadmeNamesExistingServices(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if os.IsNotExist(err) {
		t.Skip("no README.md")
	}
	if err != nil {
		t.Fatal(err)
	}
	f := loadCompose(t)
	// Only names of this fixed list are checked: other code spans are left alone.
	candidates := append(slices.Clone(requiredServices), "temporal-schema")
	for _, name := range serviceMentions(string(data), candidates) {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("README.md mentions `%s`, which is not a docker-compose.yml service", name)
		}
	}
}

func TestServiceMentions(t *testing.T) {
	text := "Run `docker compose up -d`, then `docker compose logs -f worker api`.\n" +
		"The `temporal-setup` service registers search attributes; the api is `api`.\n" +
		"```\ndocker compose ps redis\n```\n"
	got := serviceMentions(text, requiredServices)
	if want := []string{"worker", "api", "temporal-setup"}; !slices.Equal(got, want) {
		t.Errorf("serviceMentions = %q, want %q", got, want)
	}
}

func TestInterpolate(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                     "plain",
		"${A:-x}":                   "x",
		"${A-x}":                    "x",
		"${A}":                      "",
		"$A/b":                      "/b",
		"${A:+x}":                   "",
		"a$$b":                      "a$b",
		"$${NOT_INTERPOLATED}":      "${NOT_INTERPOLATED}",
		"p://u:${P:-pw}@h:1/d?x=1":  "p://u:pw@h:1/d?x=1",
		"${A:-http://x:1}&${B:-y}z": "http://x:1&yz",
	} {
		got, err := interpolate(in)
		if err != nil || got != want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := interpolate("${A:?must be set}"); err == nil {
		t.Error("interpolate accepted a required variable without value")
	}
}
