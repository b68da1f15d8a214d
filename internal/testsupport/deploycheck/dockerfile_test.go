package deploycheck

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int    // 1-based line where it starts
	cmd  string // upper case: FROM, RUN, ...
	args string
}

type stage struct {
	from  instruction
	image string // base image or earlier stage
	name  string // AS name, lower case; "" when unnamed
	body  []instruction
}

// parseDockerfile splits a Dockerfile into global instructions (before the first FROM) and
// stages. Comments, parser directives and blank lines are dropped; heredocs are not used
// by the Dockerfile and not supported.
func parseDockerfile(t *testing.T, text string) (global []instruction, stages []stage) {
	t.Helper()
	var insts []instruction
	var cur *instruction
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue // comments may sit inside a continued instruction too
		}
		cont := strings.HasSuffix(line, "\\")
		line = strings.TrimSpace(strings.TrimSuffix(line, "\\"))
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: i + 1, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args += " " + line
		}
		if !cont {
			insts = append(insts, *cur)
			cur = nil
		}
	}
	if cur != nil {
		t.Fatalf("Dockerfile line %d: instruction continues past the end of the file", cur.line)
	}
	for _, in := range insts {
		if in.cmd == "FROM" {
			fields := strings.Fields(in.args)
			fields = slices.DeleteFunc(fields, func(f string) bool { return strings.HasPrefix(f, "--") })
			if len(fields) == 0 {
				t.Fatalf("Dockerfile line %d: FROM without image", in.line)
			}
			st := stage{from: in, image: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = strings.ToLower(fields[2])
			} else if len(fields) != 1 {
				t.Fatalf("Dockerfile line %d: cannot parse FROM %s", in.line, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			global = append(global, in)
		} else {
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return global, stages
}

func loadDockerfile(t *testing.T) (global []instruction, stages []stage) {
	t.Helper()
	global, stages = parseDockerfile(t, string(readRepoFile(t, "Dockerfile")))
	if len(stages) == 0 {
		t.Fatal("Dockerfile has no FROM")
	}
	return global, stages
}

// expandArgs substitutes ${NAME} and $NAME with the defaults of global ARGs.
func expandArgs(s string, global []instruction) string {
	args := map[string]string{}
	for _, in := range global {
		if in.cmd == "ARG" {
			k, v, _ := strings.Cut(in.args, "=")
			args[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	for k, v := range args {
		s = strings.ReplaceAll(s, "${"+k+"}", v)
		s = strings.ReplaceAll(s, "$"+k, v)
	}
	return s
}

func TestDockerfileIsMultiStage(t *testing.T) {
	global, stages := loadDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stage(s), want a build stage and a runtime stage", len(stages))
	}
	named := map[string]bool{}
	for _, st := range stages {
		if st.name != "" {
			named[st.name] = true
		}
	}
	if len(named) == 0 {
		t.Error("Dockerfile has no named stage (FROM … AS name)")
	}
	for _, st := range stages {
		image := expandArgs(st.image, global)
		if named[strings.ToLower(image)] || image == "scratch" {
			continue
		}
		tag, digest := imageTag(image)
		if !digest && (tag == "" || strings.EqualFold(tag, "latest") || strings.Contains(tag, "$")) {
			t.Errorf("Dockerfile line %d: base image %q is not pinned to a tag", st.from.line, image)
		}
	}
}

// stageText joins the arguments of the stage's instructions of the given kinds.
func stageText(st stage, cmds ...string) string {
	var b strings.Builder
	for _, in := range st.body {
		if slices.Contains(cmds, in.cmd) {
			b.WriteString(in.args)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestDockerfileBuildsShotflow(t *testing.T) {
	_, stages := loadDockerfile(t)
	var build *stage
	for i := range stages[:len(stages)-1] {
		if strings.Contains(stageText(stages[i], "RUN"), "go build") {
			build = &stages[i]
			break
		}
	}
	if build == nil {
		t.Fatal("no stage before the last one runs go build")
	}
	if build.name == "" {
		t.Errorf("Dockerfile line %d: the build stage has no name", build.from.line)
	}
	runs := stageText(*build, "RUN")
	if !strings.Contains(runs, "./cmd/shotflow") {
		t.Error("the build stage does not build ./cmd/shotflow")
	}
	if !strings.Contains(runs, "-trimpath") {
		t.Error("the build stage does not build with -trimpath")
	}
	if !strings.Contains(stageText(*build, "RUN", "ENV"), "CGO_ENABLED=0") {
		t.Error("the build stage does not set CGO_ENABLED=0 (static binary, independent of the runtime image's libc)")
	}
	// go mod download must come before the sources are copied, so its layer stays cached.
	download, copyAll := -1, -1
	for i, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go mod download") && download < 0 {
			download = i
		}
		if in.cmd == "COPY" && strings.HasSuffix(strings.TrimSpace(in.args), ". .") && copyAll < 0 {
			copyAll = i
		}
	}
	if download < 0 || copyAll < 0 || download > copyAll {
		t.Error("the build stage should COPY go.mod go.sum, RUN go mod download, then COPY . . (dependency layer first)")
	}

	final := stages[len(stages)-1]
	copied := false
	for _, in := range final.body {
		if in.cmd == "COPY" && slices.Contains(strings.Fields(in.args), "--from="+build.name) && strings.Contains(in.args, "/usr/local/bin/shotflow") {
			copied = true
		}
	}
	if !copied {
		t.Errorf("the final stage does not COPY --from=%s the binary to /usr/local/bin/shotflow", build.name)
	}
}

func TestDockerfileFinalStageRunsAsNonRoot(t *testing.T) {
	_, stages := loadDockerfile(t)
	final := stages[len(stages)-1]
	user := ""
	var entrypoint, expose string
	for _, in := range final.body {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "EXPOSE":
			expose += " " + in.args
		}
	}
	if user == "" {
		t.Fatal("the final stage has no USER: it would run as root")
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil {
		t.Errorf("USER %s: use a numeric uid, so runtimes can verify it is not root", user)
	} else if n == 0 {
		t.Errorf("USER %s is root", user)
	}
	if !strings.Contains(entrypoint, `"/usr/local/bin/shotflow"`) {
		t.Errorf("ENTRYPOINT %s, want the exec form [\"/usr/local/bin/shotflow\"]", entrypoint)
	}
	if !slices.Contains(strings.Fields(expose), "8080") {
		t.Error("the final stage does not EXPOSE 8080")
	}
}

func TestDockerignoreKeepsSecretsAndHistoryOut(t *testing.T) {
	lines := strings.Split(string(readRepoFile(t, ".dockerignore")), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	for _, want := range []string{".git", ".env", ".data"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
}

// TestNoBuildOutputIsTracked: compiled binaries are never committed nor sent to a Docker build.
func TestNoBuildOutputIsTracked(t *testing.T) {
	for _, file := range []string{".gitignore", ".dockerignore"} {
		lines := strings.Split(string(readRepoFile(t, file)), "\n")
		for i := range lines {
			lines[i] = strings.TrimSpace(lines[i])
		}
		for _, want := range []string{"/shotflow", "/loadgen"} {
			if !slices.Contains(lines, want) {
				t.Errorf("%s does not exclude %s", file, want)
			}
		}
	}
	root := repoRoot
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		_ = f.Close()
		if n == 4 && (string(head) == "\x7fELF" || string(head[:2]) == "MZ" || string(head) == "\xcf\xfa\xed\xfe") {
			t.Errorf("%s is a compiled binary; build outputs must not be committed", name)
		}
	}
}
