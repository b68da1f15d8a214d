package worker

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
)

// namesFile is the file of activities/contract that declares the activity names, and nothing else.
const namesFile = "../activities/contract/names.go"

// TestContractNamesAreRegistered: every activity name in activities/contract is one the main
// worker registers (Register), so a method of *activities.Activities renamed without its contract
// name fails here rather than in production, where the workflows would schedule an activity no
// worker runs. Each one takes and returns only contract types and predeclared ones, so the
// workflows can call it without importing activities. contract.Generate is also the name of the
// activity on the providers' queues.
func TestContractNamesAreRegistered(t *testing.T) {
	t.Parallel()
	names := contractNames(t)
	if len(names) == 0 {
		t.Fatalf("no activity names in %s", namesFile)
	}

	main := newRecorder()
	Register(main, &activities.Activities{})
	for constant, name := range names {
		fn, ok := main.activities[name]
		if !ok {
			t.Errorf("contract.%s = %q: the worker registers no activity of that name", constant, name)
			continue
		}
		for _, typ := range signatureTypes(fn) {
			if !ofContract(typ) {
				t.Errorf("activity %s takes or returns %s, which is not a type of activities/contract", name, typ)
			}
		}
	}

	provider := newRecorder()
	registerGenerate(provider, &activities.Activities{})
	if _, ok := provider.activities[contract.Generate]; !ok || len(provider.activities) != 1 {
		t.Errorf("a provider's worker registers %v; want only %q", provider.names(), contract.Generate)
	}
}

// contractNames maps each constant declared in namesFile to its value.
func contractNames(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), namesFile, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			t.Fatalf("%s declares something other than constants", namesFile)
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != len(vs.Values) {
				t.Fatalf("%s: %v: one string literal per name, please", namesFile, vs.Names)
			}
			for i, id := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: %s is not a string literal", namesFile, id.Name)
				}
				names[id.Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return names
}

// recorder is a worker registry that registers everything with the SDK's test environment (which
// checks it) and records the names of the activities as the SDK names them
// (worker.ActivityRegistry): a function by RegisterOptions.Name, and each exported method of a
// struct by its method name prefixed with RegisterOptions.Name.
type recorder struct {
	*testsuite.TestWorkflowEnvironment
	activities map[string]reflect.Type // name → the function's type, receiver bound
}

func newRecorder() *recorder {
	var s testsuite.WorkflowTestSuite
	return &recorder{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(), activities: map[string]reflect.Type{}}
}

var _ worker.Registry = (*recorder)(nil)

func (r *recorder) RegisterActivity(a any) {
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{})
}

func (r *recorder) RegisterActivityWithOptions(a any, opts activity.RegisterOptions) {
	r.TestWorkflowEnvironment.RegisterActivityWithOptions(a, opts)
	v := reflect.ValueOf(a)
	if v.Kind() == reflect.Func {
		if opts.Name == "" {
			// The SDK would name it after the Go function; shotflow registers functions by name only.
			panic("recorder: an activity function registered without a name")
		}
		r.activities[opts.Name] = v.Type()
		return
	}
	for i := range v.NumMethod() {
		if m := v.Type().Method(i); m.IsExported() {
			r.activities[opts.Name+m.Name] = v.Method(i).Type()
		}
	}
}

func (r *recorder) names() []string {
	var names []string
	for name := range r.activities {
		names = append(names, name)
	}
	return names
}

// signatureTypes are the parameters of an activity function after its context and its results
// before its error.
func signatureTypes(fn reflect.Type) []reflect.Type {
	var types []reflect.Type
	for i := range fn.NumIn() {
		if in := fn.In(i); i > 0 || in != reflect.TypeFor[context.Context]() {
			types = append(types, in)
		}
	}
	for i := range fn.NumOut() {
		if out := fn.Out(i); out != reflect.TypeFor[error]() {
			types = append(types, out)
		}
	}
	return types
}

// ofContract reports whether typ is a type of activities/contract or a predeclared one, or a
// slice, array, pointer or map of them.
func ofContract(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Slice, reflect.Array, reflect.Pointer:
		return ofContract(typ.Elem())
	case reflect.Map:
		return ofContract(typ.Key()) && ofContract(typ.Elem())
	}
	return typ.PkgPath() == "" || typ.PkgPath() == reflect.TypeFor[contract.AttemptInput]().PkgPath()
}
