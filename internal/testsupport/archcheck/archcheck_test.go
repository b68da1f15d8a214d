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

// rule forbids packages under from (a path relative to the module, "" for all) to import any
// package that starts with one of the prefixes in forbid (module-relative, or a full path for
// others) and, when allowOnly is set, any package of the module outside its prefixes
// (module-relative). Forbidding "models" forbids the store: the package models and those below it
// that link gorm; the leaf packages below it (models/status, models/ids, ...: nothing they import,
// directly or not, is gorm or the store) hold vocabulary, and stay allowed.
type rule struct {
	from      string
	forbid    []string
	why       string
	allowOnly []string
}

var rules = []rule{
	{"api", []string{"gorm.io/gorm", "go.temporal.io/sdk/client", "workflows", "activities", "worker", "internal/support", "internal/providers"},
		"façades parse, call the engine and map its answers; the store, Temporal and the use cases are the engine's", nil},
	{"internal/engine", []string{"github.com/gin-gonic/gin", "api"}, "the engine knows no HTTP", nil},
	{"workflows", []string{"api", "internal/engine", "worker", "github.com/gin-gonic/gin", "gorm.io/gorm", "go.temporal.io/sdk/client"},
		"workflow code is deterministic and below the engine: no I/O, no callers' packages", nil},
	{"activities", []string{"api", "internal/engine", "workflows", "worker", "github.com/gin-gonic/gin"}, "activities are below the workflows that call them", nil},
	{"models", []string{"api", "internal/engine", "workflows", "activities", "worker", "github.com/gin-gonic/gin", "go.temporal.io/"}, "the store is the bottom layer", nil},
	{"worker", []string{"api", "internal/engine"}, "the worker registers workflows and activities only", nil},
	{"internal/media", nil, "the media tier (renderer, drawings, video, image preparation) imports nothing of shotflow outside it",
		[]string{"internal/media"}},
	{from: "api", forbid: []string{"models"},
		why: "façades build their answers from the engine's views and inputs; only the store's leaf vocabulary packages are theirs to import"},
}

// storePrefix is the store; storeLeaf tells its allowed leaf packages apart.
const storePrefix = "models"

// storeLeaf reports whether the module-relative package rel is a leaf below the store: nothing it
// imports, directly or not, is gorm or the store itself.
func storeLeaf(rel string, deps []string) bool {
	if rel == storePrefix || !under(rel, storePrefix) {
		return false
	}
	return !slices.ContainsFunc(deps, func(d string) bool {
		return strings.HasPrefix(d, "gorm.io/") || d == module+storePrefix
	})
}

// under reports whether the module-relative path rel is prefix or a package below it.
func under(rel, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return rel == prefix || strings.HasPrefix(rel, prefix+"/")
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func TestImportsPointOneWay(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	deps := map[string][]string{} // the module's packages' dependencies, by module-relative path
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
		deps[strings.TrimPrefix(p.ImportPath, module)] = p.Deps
	}
	for _, p := range pkgs {
		from := strings.TrimPrefix(p.ImportPath, module)
		for _, r := range rules {
			if !under(from, r.from) {
				continue
			}
			for _, imp := range p.Imports {
				rel := strings.TrimPrefix(imp, module)
				for _, f := range r.forbid {
					if under(rel, f) && !(f == storePrefix && storeLeaf(rel, deps[rel])) {
						t.Errorf("%s imports %s: %s", from, rel, r.why)
					}
				}
				if r.allowOnly != nil && strings.HasPrefix(imp, module) &&
					!slices.ContainsFunc(r.allowOnly, func(a string) bool { return under(rel, a) }) {
					t.Errorf("%s imports %s: %s", from, rel, r.why)
				}
			}
		}
	}
}
