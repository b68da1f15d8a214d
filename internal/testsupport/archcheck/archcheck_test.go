package archcheck

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/shotflow/shotflow/"

// A tier is a set of packages, named by module-relative path prefixes, and what its packages may
// import: the module's packages under mayImport (its own prefixes always), and no third-party
// package under forbid. Every package of the module belongs to exactly one tier, so a package added
// later states where it belongs or this test fails.
type tier struct {
	name      string
	packages  []string
	mayImport []string
	forbid    []string
	why       string
}

// Third-party packages that mark a layer: the store's ORM and drivers, HTTP, Temporal's client.
// gorm and the drivers are the store's alone (models, models/testdb): every other tier forbids them.
const (
	gorm     = "gorm.io/gorm"
	gin      = "github.com/gin-gonic/gin"
	temporal = "go.temporal.io/sdk/client"
	pgx      = "github.com/jackc/pgx"
	pgDriver = "gorm.io/driver/postgres"
	sqlite   = "github.com/libtnb/sqlite"
)

// drivers are the database drivers: imported only where a database is opened, in the store.
var drivers = []string{pgx, pgDriver, sqlite}

// storeLeaves are the store's leaf packages: names and states anyone may use without linking it.
var storeLeaves = []string{"models/status", "models/jobtype", "models/ids", "models/instant", "models/voting", "models/merchantref", "models/presetspec", "models/refblob", "models/catalog"}

// shared are the pieces below both the engine and the worker: the client representation of a
// job, webhook signing, payloads and delivery, and the seeded reference images.
var shared = []string{"internal/jobview", "internal/webhooks", "internal/reference"}

var tiers = []tier{
	{name: "media", packages: []string{"internal/media"},
		forbid: append([]string{gorm, gin, temporal}, drivers...),
		why:    "the renderer, drawings, video and image preparation know nothing of shotflow"},
	{name: "platform", packages: []string{"internal/platform"},
		forbid: append([]string{gorm, gin}, drivers...),
		why:    "infrastructure (config, logging, metrics, secrets, Temporal connection, blobs, URL signing, rate limits) imports nothing of shotflow above it"},
	{name: "store leaves", packages: storeLeaves,
		forbid: []string{gorm, gin, temporal, pgx, pgDriver, sqlite},
		why:    "leaves import nothing: workflows and façades use them without linking the store"},
	{name: "store", packages: []string{"models"},
		mayImport: append([]string{"internal/platform"}, storeLeaves...), forbid: []string{gin, temporal},
		why: "the store is the bottom layer: rows, stores, migrations, seed data"},
	{name: "providers", packages: []string{"internal/providers"},
		mayImport: append([]string{"internal/media", "internal/platform"}, storeLeaves...),
		forbid:    append([]string{gorm, gin, temporal}, drivers...),
		why:       "the provider port, registry and adapters sit on media and platform"},
	{name: "activity contract", packages: []string{"activities/contract"},
		mayImport: []string{"internal/providers/errorcat"}, forbid: append([]string{gorm, gin, temporal}, drivers...),
		why: "the names and types workflows and activities share are a leaf"},
	{name: "workflows", packages: []string{"workflows"},
		mayImport: append([]string{"activities/contract", "internal/providers/errorcat"}, storeLeaves...),
		forbid:    []string{gorm, gin, temporal, pgx, pgDriver, sqlite},
		why:       "workflow code is deterministic: it links no store, no driver, no engine, no HTTP"},
	{name: "shared", packages: shared,
		mayImport: append([]string{"models", "internal/platform", "internal/media"}, append(storeLeaves, shared...)...),
		forbid:    append([]string{gorm, gin, temporal}, drivers...),
		why:       "the pieces the engine and the activities share sit on the store and platform only"},
	{name: "activities", packages: []string{"activities"},
		mayImport: append([]string{"models", "internal/providers", "internal/media", "internal/platform"}, append(storeLeaves, shared...)...),
		forbid:    append([]string{gorm, gin, temporal}, drivers...),
		why:       "activities do the side effects the workflows ask for; they know no engine and no HTTP"},
	{name: "engine", packages: []string{"internal/engine"},
		mayImport: append([]string{"models", "workflows", "activities/contract", "internal/providers", "internal/media", "internal/platform"}, append(storeLeaves, shared...)...),
		forbid:    append([]string{gorm, gin}, drivers...),
		why:       "the use cases know the store and Temporal, never HTTP"},
	{name: "retention", packages: []string{"internal/retention"},
		mayImport: []string{"models", "internal/platform"},
		forbid:    append([]string{gorm, gin, temporal}, drivers...),
		why:       "the retention sweep deletes expired files through the store and the blob store"},
	{name: "worker", packages: []string{"worker"},
		mayImport: []string{"workflows", "activities", "internal/platform"},
		forbid:    append([]string{gorm, gin}, drivers...),
		why:       "the worker registers workflows and activities only"},
	{name: "api", packages: []string{"api"},
		mayImport: append([]string{"internal/engine", "internal/platform", "internal/jobview", "internal/reference"}, storeLeaves...),
		forbid:    []string{gorm, temporal, pgx, pgDriver, sqlite},
		why:       "façades (and api/idempotency, which both share) parse, call the engine and map its answers; the store and Temporal are the engine's"},
	{name: "composition root", packages: []string{"internal/app"},
		mayImport: []string{""}, forbid: append([]string{gorm}, drivers...),
		why: "the composition root wires everything for each subcommand"},
	{name: "commands", packages: []string{"cmd"},
		mayImport: []string{"internal/app", "internal/engine", "internal/platform", "internal/webhooks", "internal/reference", "workflows", "models"},
		forbid:    append([]string{gorm, gin, "github.com/shotflow/shotflow/activities"}, drivers...),
		why:       "the binaries call the composition root and the use cases; they run no query and no activity themselves"},
	{name: "test support", packages: []string{"internal/testsupport"},
		mayImport: []string{""}, forbid: append([]string{gorm}, drivers...),
		why: "test environments, test databases and the contract checker may use everything (tests only)"},
}

// under reports whether the module-relative path rel is prefix or a package below it ("" is every
// path).
func under(rel, prefix string) bool {
	return prefix == "" || rel == prefix || strings.HasPrefix(rel, prefix+"/")
}

// tierOf returns the tier whose longest prefix holds rel.
func tierOf(rel string) (*tier, bool) {
	var best *tier
	longest := -1
	for i := range tiers {
		for _, p := range tiers[i].packages {
			if under(rel, p) && len(p) > longest {
				best, longest = &tiers[i], len(p)
			}
		}
	}
	return best, best != nil
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsFollowTheTiers holds every package of the module to its tier's allow-list.
func TestImportsFollowTheTiers(t *testing.T) {
	for _, p := range listPackages(t) {
		from := strings.TrimPrefix(p.ImportPath, module)
		tr, ok := tierOf(from)
		if !ok {
			t.Errorf("%s belongs to no tier: add it to a tier here and to docs/architecture.md", from)
			continue
		}
		for _, imp := range p.Imports {
			if rel, ours := strings.CutPrefix(imp, module); ours {
				allowed := slices.ContainsFunc(append(tr.mayImport, tr.packages...), func(a string) bool { return under(rel, a) })
				if !allowed {
					t.Errorf("%s (%s) imports %s: %s", from, tr.name, rel, tr.why)
				}
				continue
			}
			for _, f := range tr.forbid {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s (%s) imports %s: %s", from, tr.name, imp, tr.why)
				}
			}
		}
	}
}

// TestTheAllowListRefuses shows the allow-list at work on imports the tree does not have.
func TestTheAllowListRefuses(t *testing.T) {
	cases := []struct {
		from, imp string
		ok        bool
	}{
		{"workflows", "models", false},
		{"workflows", "activities", false},
		{"workflows", "activities/contract", true},
		{"internal/media/render", "internal/platform/config", false},
		{"internal/platform/config", "internal/engine", false},
		{"api/plugin", "workflows", false},
		{"api/plugin", "internal/engine", true},
		{"internal/engine", "api/plugin", false},
		{"models", "internal/engine", false},
		{"internal/newthing", "models", false},
		{"internal/providers/local", "models", false},
		{"internal/providers/local", "models/catalog", true},
		{"api/plugin", "models", false},
		{"api/plugin", "models/status", true},
		// The Idempotency-Key mechanism both façades share sits in the api tier, on the engine.
		{"api/idempotency", "internal/engine", true},
		{"api/idempotency", "models", false},
		{"internal/engine", "api/idempotency", false},
	}
	for _, c := range cases {
		tr, ok := tierOf(c.from)
		got := ok && slices.ContainsFunc(append(tr.mayImport, tr.packages...), func(a string) bool { return under(c.imp, a) })
		if got != c.ok {
			t.Errorf("%s importing %s: allowed %v, want %v", c.from, c.imp, got, c.ok)
		}
	}
}
