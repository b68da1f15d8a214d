package archcheck

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/shotflow/shotflow/"

// rule forbids packages under from (a path relative to the module, "" for all) to import any
// package that starts with one of the prefixes (module-relative, or a full path for others). A
// prefix written "!p" allows package p, and the packages under it, that another prefix forbids.
type rule struct {
	from   string
	forbid []string
	why    string
}

var rules = []rule{
	{"api", []string{"gorm.io/gorm", "go.temporal.io/sdk/client", "workflows", "activities", "worker", "internal/support", "internal/providers"},
		"façades parse, call the engine and map its answers; the store, Temporal and the use cases are the engine's"},
	{"internal/engine", []string{"github.com/gin-gonic/gin", "api"}, "the engine knows no HTTP"},
	{"workflows", []string{"api", "internal/engine", "worker", "github.com/gin-gonic/gin", "gorm.io/gorm", "go.temporal.io/sdk/client"},
		"workflow code is deterministic and below the engine: no I/O, no callers' packages"},
	{"workflows", []string{"activities", "!activities/contract", "models", "!models/status", "!models/jobtype"},
		"workflow code links no store: it calls activities by the names and types of activities/contract, and reads states from the leaves of models"},
	{"activities", []string{"api", "internal/engine", "workflows", "worker", "github.com/gin-gonic/gin"}, "activities are below the workflows that call them"},
	{"models", []string{"api", "internal/engine", "workflows", "activities", "worker", "github.com/gin-gonic/gin", "go.temporal.io/"}, "the store is the bottom layer"},
	{"worker", []string{"api", "internal/engine"}, "the worker registers workflows and activities only"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportsPointOneWay(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module)
		for _, r := range rules {
			if from != r.from && !strings.HasPrefix(from, r.from+"/") {
				continue
			}
			for _, imp := range p.Imports {
				rel := strings.TrimPrefix(imp, module)
				if r.allows(rel) {
					continue
				}
				for _, f := range r.forbid {
					f = strings.TrimSuffix(f, "/")
					if rel != f && !strings.HasPrefix(rel, f+"/") {
						continue
					}
					t.Errorf("%s imports %s: %s", from, rel, r.why)
				}
			}
		}
	}
}

// allows reports whether one of the rule's "!" prefixes covers the import rel.
func (r rule) allows(rel string) bool {
	for _, f := range r.forbid {
		if p, ok := strings.CutPrefix(f, "!"); ok && (rel == p || strings.HasPrefix(rel, p+"/")) {
			return true
		}
	}
	return false
}
