package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/app"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/logging"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

const adminUsage = `Usage:
  shotflow admin account create --name NAME [--credits N]
  shotflow admin installation create --account ACCOUNT_ID --name NAME [--callback-url URL] [--scopes s1,s2] [--rate-limit N] [--test-key]
  shotflow admin installation test-key --installation ID [--name NAME] [--scopes s1,s2] [--expires RFC3339|DURATION]
  shotflow admin credits grant --account ACCOUNT_ID --amount N
  shotflow admin keys issue --account ACCOUNT_ID [--name NAME] [--scopes content.register,content.read] [--expires RFC3339|DURATION] [--test]
  shotflow admin keys list --account ACCOUNT_ID [--mode live|test|all]
  shotflow admin keys revoke KEY_ID

Support (docs/operations.md, "For support staff"):
  shotflow admin jobs list --status STATUS [--category CATEGORY] [--installation ID] [--since RFC3339] [--mode live|test|all] [--limit N]
  shotflow admin jobs retry JOB_ID [--actor NAME] [--reason TEXT]
  shotflow admin jobs stragglers [--older-than DURATION] [--mode live|test|all] [--limit N] [--after CURSOR]
  shotflow admin jobs redrive JOB_ID --action settle|rerun [--actor NAME] [--reason TEXT]
  shotflow admin webhooks replay DELIVERY_ID|EVENT_ID
  shotflow admin webhooks endpoints --installation ID | --account ID [--mode live|test|all]
  shotflow admin webhooks deliveries [--installation ID | --account ID] [--endpoint ID] [--status S] [--event E] [--mode live|test|all] [--limit N] [--cursor C]
  shotflow admin webhooks recover --endpoint ID --since RFC3339 [--until RFC3339]
  shotflow admin orders show ORDER_ID
  shotflow admin usage --installation ID | --account ID [--from RFC3339|DATE] [--to RFC3339|DATE] [--group-by day|ai_model|job_type|key]
  shotflow admin spend-limit show|clear --installation ID | --account ID
  shotflow admin spend-limit set --installation ID | --account ID --monthly-credits N [--alert-at-percent P]

Test mode (docs/operations.md "Test mode"): --test-key, installation test-key and keys issue --test
make pk_test_/mk_test_ keys of the installation's or account's test twin; --mode picks the live
records, the test-mode ones or all (the default), and every listed item says "livemode".
Every command prints JSON. Secrets (API keys, webhook secrets) are printed once and stored only as
hashes (keys) or encrypted (webhook secrets). Uses DATABASE_URL and SECRET_KEY like the API;
jobs retry, stragglers, redrive, webhooks replay and webhooks recover also reach Temporal (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_TASK_QUEUE, and the API key, TLS and profile settings like the worker), and links point
at TEMPORAL_UI_URL.
`

// adminEnv is what admin commands operate on: each builds the engine and calls its use cases.
type adminEnv struct {
	ctx      context.Context
	cfg      config.Config // with the effective Temporal address and namespace
	temporal temporalconn.Connection
	tools    *app.Tools
	closers  []func() // run when the command is done
}

func (e *adminEnv) box() (*secrets.Box, error) {
	master, err := masterKey(e.cfg, false)
	if err != nil {
		return nil, err
	}
	return secrets.NewBox(master)
}

// masterKey returns SECRET_KEY, or the key `shotflow dev` keeps in DATA_DIR/secret.key; create
// makes that file when neither exists.
func masterKey(cfg config.Config, create bool) ([]byte, error) {
	if k := cfg.SecretKeyBytes(); k != nil {
		return k, nil
	}
	path := filepath.Join(cfg.DataDir, "secret.key")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, err
		}
		data = []byte(secrets.NewMasterKey())
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("SECRET_KEY is not set and %s cannot be read: %w", path, err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("%s does not hold a base64 key of 32 bytes", path)
	}
	return key, nil
}

func runAdmin(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || isHelpFlag(args[0])) {
		fmt.Fprint(stdout, adminUsage)
		return nil
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: a command is required\n%s", errUsage, adminUsage)
	}
	commands := map[string]func(*adminEnv, []string) (any, error){
		"account create":        (*adminEnv).accountCreate,
		"installation create":   (*adminEnv).installationCreate,
		"installation test-key": (*adminEnv).installationTestKey,
		"credits grant":         (*adminEnv).creditsGrant,
		"keys issue":            (*adminEnv).keysIssue,
		"keys list":             (*adminEnv).keysList,
		"keys revoke":           (*adminEnv).keysRevoke,
		"jobs list":             (*adminEnv).jobsList,
		"jobs retry":            (*adminEnv).jobsRetry,
		"jobs stragglers":       (*adminEnv).jobsStragglers,
		"jobs redrive":          (*adminEnv).jobsRedrive,
		"webhooks replay":       (*adminEnv).webhooksReplay,
		"webhooks endpoints":    (*adminEnv).webhooksEndpoints,
		"webhooks deliveries":   (*adminEnv).webhooksDeliveries,
		"webhooks recover":      (*adminEnv).webhooksRecover,
		"orders show":           (*adminEnv).ordersShow,
		"spend-limit show":      (*adminEnv).spendLimitShow,
		"spend-limit set":       (*adminEnv).spendLimitSet,
		"spend-limit clear":     (*adminEnv).spendLimitClear,
	}
	// One-word commands take the rest as their arguments.
	oneWord := map[string]func(*adminEnv, []string) (any, error){
		"usage": (*adminEnv).usage,
	}
	command, ok, rest := oneWord[args[0]], true, args[1:]
	if command == nil {
		if len(args) < 2 {
			for name := range commands {
				if strings.HasPrefix(name, args[0]+" ") {
					return fmt.Errorf("%w: %q needs a command after it\n%s", errUsage, args[0], adminUsage)
				}
			}
			return fmt.Errorf("%w: unknown admin command %q\n%s", errUsage, args[0], adminUsage)
		}
		command, ok = commands[args[0]+" "+args[1]]
		rest = args[2:]
	}
	if !ok {
		return fmt.Errorf("%w: unknown admin command %q\n%s", errUsage, args[0]+" "+args[1], adminUsage)
	}
	if slices.ContainsFunc(rest, isHelpFlag) { // before anything is opened
		fmt.Fprint(stdout, adminUsage)
		return nil
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	// On the embedded defaults (no DATABASE_URL: the database `make run` keeps under .data/), the
	// commands follow `shotflow dev`'s defaults, which let webhooks reach a receiver on this
	// machine; WEBHOOK_ALLOW_PRIVATE_NETWORKS, when set, still decides.
	if os.Getenv("DATABASE_URL") == "" && os.Getenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS") == "" {
		cfg.WebhookAllowPrivateNetworks = true
	}
	// Resolved before the engine is built, whose Temporal UI links name the effective namespace; a
	// command dials Temporal only when its use case reaches it.
	temporal, err := temporalconn.Resolve(cfg)
	if err != nil {
		return err
	}
	cfg.TemporalAddress, cfg.TemporalNamespace = temporal.Options.HostPort, temporal.Options.Namespace
	tools, err := app.OpenTools(cfg)
	if err != nil {
		return err
	}
	defer tools.Close()
	env := &adminEnv{ctx: ctx, cfg: cfg, temporal: temporal, tools: tools}
	defer func() {
		for _, c := range env.closers {
			c()
		}
	}()
	out, err := command(env, rest)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err != nil {
		// What a command made before it failed, when that holds secrets shown only once.
		var partial *partialError
		if errors.As(err, &partial) {
			if encErr := enc.Encode(partial.made); encErr != nil {
				return errors.Join(err, encErr)
			}
		}
		return err
	}
	return enc.Encode(out)
}

// partialError is the failure of a command after it made something it prints only once (an
// installation's plugin key and webhook secret): runAdmin prints made, then fails with err.
type partialError struct {
	made any
	err  error
}

func (e *partialError) Error() string { return e.err.Error() }
func (e *partialError) Unwrap() error { return e.err }

// isHelpFlag reports whether a command-line argument asks for help (-h, -help, --help).
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses the arguments of a command that takes only flags. A word left among them is
// refused: Go's flag package stops at it, and every flag after it would silently keep its
// default (keys issue --account A x --test would issue a live key).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseUpToWord(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q (a flag after it would be ignored)", errUsage, fs.Name(), fs.Args())
	}
	return nil
}

func (e *adminEnv) accountCreate(args []string) (any, error) {
	fs := newFlags("account create")
	name := fs.String("name", "", "account name")
	credits := fs.Int64("credits", 0, "initial credits")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(*name) == "" {
		return nil, fmt.Errorf("%w: --name is required", errUsage)
	}
	out, err := e.storeEngine().Accounts.CreateAccount(e.ctx, *name, *credits)
	return out, usageOf(err)
}

func (e *adminEnv) installationCreate(args []string) (any, error) {
	fs := newFlags("installation create")
	account := idFlag(fs, "account", "account ID")
	name := fs.String("name", "", "installation name")
	callback := fs.String("callback-url", "", "webhook callback URL")
	scopes := fs.String("scopes", "", "comma-separated scopes (default: every plugin scope)")
	rate := fs.Int("rate-limit", e.cfg.RateLimitPerMinute, "requests per minute for the key")
	testKey := fs.Bool("test-key", false, "also issue a test key (pk_test_…) of the installation's test twin")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" || strings.TrimSpace(*name) == "" {
		return nil, fmt.Errorf("%w: --account and --name are required", errUsage)
	}
	if *callback != "" {
		if err := webhooks.CheckCallbackURL(*callback, e.cfg.WebhookAllowPrivateNetworks); err != nil {
			return nil, fmt.Errorf("%w: --callback-url %s", errUsage, err)
		}
	}
	if *rate < 1 {
		return nil, fmt.Errorf("%w: --rate-limit must be at least 1", errUsage)
	}
	var scopeList []string // nil: every plugin scope
	if *scopes != "" {
		var err error
		if scopeList, err = parseScopes(*scopes, models.PluginScopes); err != nil {
			return nil, err
		}
	}
	box, err := e.box()
	if err != nil {
		return nil, err
	}
	accounts := e.storeEngine().Accounts
	created, err := accounts.CreateInstallation(e.ctx, box, engine.InstallationRequest{
		AccountID: *account, Name: *name, CallbackURL: *callback, Scopes: scopeList, RateLimitPerMin: *rate,
	})
	if err != nil || !*testKey {
		return created, err
	}
	// A second transaction: should it fail, the installation stands and `installation test-key`
	// issues its test key. Its plugin key and webhook secret are printed all the same: they are
	// shown this once, and no command issues them again.
	test, err := accounts.IssueTestPluginKey(e.ctx, box, created.InstallationID, "test", created.Scopes, nil)
	if err != nil {
		return nil, &partialError{made: created,
			err: fmt.Errorf("installation %s created (its keys are on standard output), its test key not (issue it with installation test-key): %w", created.InstallationID, err)}
	}
	return installationWithTestKey{InstallationCreated: created, TestKey: test}, nil
}

// installationWithTestKey is what installation create --test-key prints.
type installationWithTestKey struct {
	engine.InstallationCreated
	TestKey engine.TestKeyIssued `json:"test_key"`
}

// installationTestKey issues a test key (pk_test_…) of an existing live installation, on its test
// twin (made the first time, with the day's test credits).
func (e *adminEnv) installationTestKey(args []string) (any, error) {
	fs := newFlags("installation test-key")
	installation := idFlag(fs, "installation", "live installation ID")
	name := fs.String("name", "test", "a label for the key")
	scopes := fs.String("scopes", "", "comma-separated scopes (default: every plugin scope)")
	expires := fs.String("expires", "", "expiry as an RFC 3339 time or a duration from now (720h); empty never expires")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(*installation) == "" {
		return nil, fmt.Errorf("%w: --installation is required", errUsage)
	}
	var scopeList []string // nil: every plugin scope
	if *scopes != "" {
		var err error
		if scopeList, err = parseScopes(*scopes, models.PluginScopes); err != nil {
			return nil, err
		}
	}
	expiresAt, err := parseExpires(*expires)
	if err != nil {
		return nil, err
	}
	box, err := e.box()
	if err != nil {
		return nil, err
	}
	return e.storeEngine().Accounts.IssueTestPluginKey(e.ctx, box, strings.TrimSpace(*installation), *name, scopeList, expiresAt)
}

// parseScopes reads --scopes, a comma-separated list of names of known.
func parseScopes(list string, known []string) ([]string, error) {
	var out []string
	for _, sc := range strings.Split(list, ",") {
		sc = strings.TrimSpace(sc)
		if !slices.Contains(known, sc) {
			return nil, fmt.Errorf("%w: unknown scope %q (known: %s)", errUsage, sc, strings.Join(known, ", "))
		}
		out = append(out, sc)
	}
	return out, nil
}

// parseExpires reads --expires: an RFC 3339 time or a positive duration from now; "" is nil
// (never expires).
func parseExpires(expires string) (*time.Time, error) {
	if expires == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, expires)
	if err != nil {
		d, derr := time.ParseDuration(expires)
		if derr != nil || d <= 0 {
			return nil, fmt.Errorf("%w: --expires must be an RFC 3339 time or a positive duration", errUsage)
		}
		t = time.Now().Add(d)
	}
	if !t.After(time.Now()) {
		return nil, fmt.Errorf("%w: --expires must be in the future (an RFC 3339 time or a positive duration)", errUsage)
	}
	t = t.UTC()
	return &t, nil
}

// parseMode reads --mode (live, test or all; empty is engine.DefaultMode).
func parseMode(mode string) (engine.Mode, error) {
	m, err := engine.ParseMode(mode)
	if err != nil {
		return "", fmt.Errorf("%w: --mode must be one of %s", errUsage, strings.Join(engine.Modes, ", "))
	}
	return m, nil
}

func (e *adminEnv) creditsGrant(args []string) (any, error) {
	fs := newFlags("credits grant")
	account := idFlag(fs, "account", "account ID")
	amount := fs.Int64("amount", 0, "credits to add")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" || *amount <= 0 {
		return nil, fmt.Errorf("%w: --account and a positive --amount are required", errUsage)
	}
	granted, err := e.storeEngine().Accounts.GrantCredits(e.ctx, *account, *amount)
	return granted, usageOf(err)
}

// keysIssue issues an external content API key of an account with the chosen scopes and expiry.
func (e *adminEnv) keysIssue(args []string) (any, error) {
	fs := newFlags("keys issue")
	account := idFlag(fs, "account", "account ID")
	name := fs.String("name", "api", "a label for the key")
	scopes := fs.String("scopes", strings.Join(models.ExternalScopes, ","), "comma-separated scopes: "+strings.Join(models.ExternalScopeNames, ", "))
	expires := fs.String("expires", "", "expiry as an RFC 3339 time or a duration from now (720h); empty never expires")
	test := fs.Bool("test", false, "a test key (mk_test_…) of the account's test twin")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" {
		return nil, fmt.Errorf("%w: --account is required", errUsage)
	}
	list, err := parseScopes(*scopes, models.ExternalScopeNames)
	if err != nil {
		return nil, err
	}
	expiresAt, err := parseExpires(*expires)
	if err != nil {
		return nil, err
	}
	req := engine.AccountKeyRequest{AccountID: *account, Name: *name, Scopes: list, ExpiresAt: expiresAt}
	if *test {
		return e.storeEngine().Accounts.IssueTestAccountKey(e.ctx, req)
	}
	return e.storeEngine().Accounts.IssueAccountKey(e.ctx, req)
}

// keysList lists an account's external keys and its test twin's, newest first, without their
// secrets.
func (e *adminEnv) keysList(args []string) (any, error) {
	fs := newFlags("keys list")
	account := idFlag(fs, "account", "account ID")
	modeFlag := fs.String("mode", "", "live, test (the keys of the account's test twin) or all (default)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" {
		return nil, fmt.Errorf("%w: --account is required", errUsage)
	}
	mode, err := parseMode(*modeFlag)
	if err != nil {
		return nil, err
	}
	return e.storeEngine().Accounts.ListAccountKeys(e.ctx, *account, mode)
}

func (e *adminEnv) keysRevoke(args []string) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%w: keys revoke takes one KEY_ID", errUsage)
	}
	return e.storeEngine().Accounts.RevokeKey(e.ctx, args[0]) // an ID, or a pasted full key
}

// parseUpToWord parses the flags of args up to the first word that is not one (fs.Args() holds
// the rest).
func parseUpToWord(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// parseInterleaved parses flags that may come before or after the positional arguments
// (`jobs retry JOB_ID --reason …`) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parseUpToWord(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// oneID parses the flags and the one positional ID of a command.
func oneID(fs *flag.FlagSet, args []string, what string) (string, error) {
	ids, err := parseInterleaved(fs, args)
	if err != nil {
		return "", err
	}
	if len(ids) != 1 || strings.TrimSpace(ids[0]) == "" {
		return "", fmt.Errorf("%w: %s takes one %s", errUsage, fs.Name(), what)
	}
	return engine.CanonicalID(ids[0]), nil
}

// canonicalID is a flag holding an ID, kept as engine.CanonicalID says (a UUID in lower case).
type canonicalID string

func (v *canonicalID) String() string     { return string(*v) }
func (v *canonicalID) Set(s string) error { *v = canonicalID(engine.CanonicalID(s)); return nil }

// idFlag defines a flag holding an ID of a record (an account, installation or endpoint), which
// a command may be given in capitals.
func idFlag(fs *flag.FlagSet, name, usage string) *string {
	v := new(string)
	fs.Var((*canonicalID)(v), name, usage)
	return v
}

// dialTemporal connects to Temporal with a logger that only reports errors; the client is closed
// when the command is done.
func (e *adminEnv) dialTemporal() (client.Client, error) {
	log, err := logging.New("error", e.cfg.LogFormat)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	c, err := e.temporal.Dial(ctx, log)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, c.Close)
	return c, nil
}

func (e *adminEnv) jobsList(args []string) (any, error) {
	fs := newFlags("jobs list")
	status := fs.String("status", "", "job status (required), e.g. failed")
	category := fs.String("category", "", "errorCategory, e.g. CONTENT_POLICY")
	installation := idFlag(fs, "installation", "installation ID")
	since := fs.String("since", "", "only jobs updated at or after this RFC 3339 time")
	modeFlag := fs.String("mode", "", "live, test (test keys' jobs) or all (default)")
	limit := fs.Int("limit", engine.DefaultSupportListLimit, "at most this many jobs")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	mode, err := parseMode(*modeFlag)
	if err != nil {
		return nil, err
	}
	if *status == "" {
		return nil, fmt.Errorf("%w: --status is required (one of %s)", errUsage, strings.Join(engine.JobStatuses, ", "))
	}
	f := engine.SupportJobFilter{Status: *status, Category: strings.ToUpper(*category), InstallationID: *installation, Mode: mode, Limit: *limit}
	if *limit < 1 {
		return nil, fmt.Errorf("%w: --limit must be between 1 and %d", errUsage, engine.MaxSupportListLimit)
	}
	if *since != "" {
		t, err := time.Parse(time.RFC3339, *since)
		if err != nil {
			return nil, fmt.Errorf("%w: --since %q is not an RFC 3339 time such as 2026-06-01T12:00:00Z", errUsage, *since)
		}
		f.Since = t
	}
	out, err := e.storeEngine().Support.ListJobs(e.ctx, f)
	if errors.Is(err, engine.ErrInvalidFilter) {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return out, err
}

func (e *adminEnv) jobsRetry(args []string) (any, error) {
	fs := newFlags("jobs retry")
	actor := fs.String("actor", defaultActor(), "who retries (recorded in the audit row)")
	reason := fs.String("reason", "", "why (recorded in the audit row)")
	id, err := oneID(fs, args, "JOB_ID")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(*actor) == "" {
		return nil, fmt.Errorf("%w: --actor must not be empty", errUsage)
	}
	eng, err := e.temporalEngine(nil)
	if err != nil {
		return nil, err
	}
	return eng.Support.RetryJob(e.ctx, engine.RetryRequest{JobID: id, Actor: *actor, Reason: *reason})
}

// storeEngine builds the engine over the database alone, for the use cases that reach no Temporal.
func (e *adminEnv) storeEngine() *engine.Engine { return e.tools.Engine(nil, nil) }

// temporalEngine dials Temporal and builds the engine over it, for the use cases that start,
// signal or describe workflows; master, when not nil, signs the webhooks the engine records.
func (e *adminEnv) temporalEngine(master []byte) (*engine.Engine, error) {
	tc, err := e.dialTemporal()
	if err != nil {
		return nil, err
	}
	return e.tools.Engine(tc, master), nil
}

func (e *adminEnv) jobsStragglers(args []string) (any, error) {
	fs := newFlags("jobs stragglers")
	olderThan := fs.Duration("older-than", 5*time.Minute, "only jobs not updated for this long")
	limit := fs.Int("limit", engine.DefaultSupportListLimit, "look at most at this many non-terminal jobs, oldest first")
	afterFlag := fs.String("after", "", "go on behind this cursor: the next of the previous page")
	modeFlag := fs.String("mode", "", "live, test (test keys' jobs) or all (default)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	mode, err := parseMode(*modeFlag)
	if err != nil {
		return nil, err
	}
	var after *engine.StragglerCursor
	if *afterFlag != "" {
		cur, err := engine.ParseStragglerCursor(*afterFlag)
		if err != nil {
			return nil, fmt.Errorf("%w: --after: %w", errUsage, err)
		}
		after = cur
	}
	if *limit < 1 || *limit > engine.MaxSupportListLimit {
		return nil, fmt.Errorf("%w: --limit must be between 1 and %d", errUsage, engine.MaxSupportListLimit)
	}
	if *olderThan < 0 {
		return nil, fmt.Errorf("%w: --older-than must not be negative", errUsage)
	}
	eng, err := e.temporalEngine(nil)
	if err != nil {
		return nil, err
	}
	return eng.Support.FindStragglersIn(e.ctx, mode, *olderThan, after, *limit)
}

func (e *adminEnv) jobsRedrive(args []string) (any, error) {
	fs := newFlags("jobs redrive")
	action := fs.String("action", "", "settle (end it failed, release its credits) or rerun (run it again)")
	actor := fs.String("actor", defaultActor(), "who re-drives (recorded in the audit row)")
	reason := fs.String("reason", "", "why (recorded in the audit row)")
	id, err := oneID(fs, args, "JOB_ID")
	if err != nil {
		return nil, err
	}
	if *action != engine.RedriveSettle && *action != engine.RedriveRerun {
		return nil, fmt.Errorf("%w: --action must be %s or %s", errUsage, engine.RedriveSettle, engine.RedriveRerun)
	}
	if strings.TrimSpace(*actor) == "" {
		return nil, fmt.Errorf("%w: --actor must not be empty", errUsage)
	}
	// The master key signs the output URLs of the settled run's webhook.
	master, err := masterKey(e.cfg, false)
	if err != nil {
		return nil, err
	}
	eng, err := e.temporalEngine(master)
	if err != nil {
		return nil, err
	}
	return eng.Support.RedriveJob(e.ctx, engine.RedriveRequest{JobID: id, Action: *action, Actor: *actor, Reason: *reason})
}

// defaultActor is the operator's login name.
func defaultActor() string {
	if u := strings.TrimSpace(os.Getenv("USER")); u != "" {
		return u
	}
	return "operator"
}

func (e *adminEnv) webhooksReplay(args []string) (any, error) {
	id, err := oneID(newFlags("webhooks replay"), args, "DELIVERY_ID")
	if err != nil {
		return nil, err
	}
	// Checked again by the use case; here so that a delivery that cannot be replayed (exit 1, as
	// any refusal of the record's state) is told before Temporal is dialled.
	if err := e.storeEngine().Support.CheckWebhookReplay(e.ctx, id); err != nil {
		return nil, err
	}
	eng, err := e.temporalEngine(nil)
	if err != nil {
		return nil, err
	}
	return eng.Support.ReplayWebhook(e.ctx, id)
}

// fieldFlags maps the fields the use cases name in their refusals to the flags that carry them
// (usageOf), for every admin command.
var fieldFlags = map[string]string{
	"installation": "--installation", "endpoint_id": "--endpoint", "status": "--status", "event": "--event",
	"limit": "--limit", "cursor": "--cursor", "since": "--since", "until": "--until", "mode": "--mode",
	"from": "--from", "to": "--to", "group_by": "--group-by", "amount": "--amount", "credits": "--credits",
	"monthly_credits": "--monthly-credits", "alert_at_percent": "--alert-at-percent",
}

// usageOf turns a refusal of invalid input into a usage error naming the flag; other errors pass.
func usageOf(err error) error {
	if ee, ok := engine.As(err); ok && ee.Kind == engine.KindInvalid {
		flagName := fieldFlags[ee.Field]
		if flagName == "" {
			flagName = ee.Field
		}
		return fmt.Errorf("%w: %s: %s", errUsage, flagName, ee.Message)
	}
	return err
}

// webhooksEndpoints lists the live webhook endpoints of an installation, or an account's own
// (external API) ones, and those of its test twin.
func (e *adminEnv) webhooksEndpoints(args []string) (any, error) {
	fs := newFlags("webhooks endpoints")
	installation := idFlag(fs, "installation", "installation ID (its plugin API endpoints)")
	account := idFlag(fs, "account", "account ID (its own, external API endpoints)")
	modeFlag := fs.String("mode", "", "live (the named one's), test (its test twin's) or all (default)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	mode, err := parseMode(*modeFlag)
	if err != nil {
		return nil, err
	}
	if (*installation == "") == (*account == "") {
		return nil, fmt.Errorf("%w: give --installation or --account (one of them)", errUsage)
	}
	out, err := e.storeEngine().Support.ListWebhookEndpoints(e.ctx, strings.TrimSpace(*installation), strings.TrimSpace(*account), mode)
	return out, usageOf(err)
}

// webhooksDeliveries prints a page of the webhook delivery log, newest first, with every attempt.
func (e *adminEnv) webhooksDeliveries(args []string) (any, error) {
	fs := newFlags("webhooks deliveries")
	installation := idFlag(fs, "installation", "installation ID")
	account := idFlag(fs, "account", "account ID (its own, external API deliveries)")
	endpoint := idFlag(fs, "endpoint", "webhook endpoint ID (alone, its installation's or account's log)")
	status := fs.String("status", "", "delivery status: "+strings.Join(engine.DeliveryStatuses, ", "))
	event := fs.String("event", "", "event type, e.g. job.failed")
	limit := fs.Int("limit", engine.DefaultWebhookPageLimit, fmt.Sprintf("at most this many deliveries (1 to %d)", engine.MaxWebhookPageLimit))
	cursor := fs.String("cursor", "", "the next_cursor of the previous page")
	modeFlag := fs.String("mode", "", "live (the named one's), test (its test twin's) or all (default)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	mode, err := parseMode(*modeFlag)
	if err != nil {
		return nil, err
	}
	if *installation != "" && *account != "" {
		return nil, fmt.Errorf("%w: give --installation or --account, not both", errUsage)
	}
	if *installation == "" && *account == "" && *endpoint == "" {
		return nil, fmt.Errorf("%w: give --installation, --account or --endpoint", errUsage)
	}
	if *limit < 1 || *limit > engine.MaxWebhookPageLimit {
		return nil, fmt.Errorf("%w: --limit must be between 1 and %d", errUsage, engine.MaxWebhookPageLimit)
	}
	out, err := e.storeEngine().Support.ListWebhookDeliveries(e.ctx, engine.SupportDeliveryFilter{
		InstallationID: strings.TrimSpace(*installation), AccountID: strings.TrimSpace(*account), EndpointID: strings.TrimSpace(*endpoint),
		Status: *status, Event: *event, Mode: mode, Limit: *limit, Cursor: *cursor,
	})
	return out, usageOf(err)
}

// webhooksRecover re-sends an endpoint's deliveries that ended failed or are held in a window, as
// POST /webhook-endpoints/{id}/recover does for the endpoint's owner.
func (e *adminEnv) webhooksRecover(args []string) (any, error) {
	fs := newFlags("webhooks recover")
	endpoint := idFlag(fs, "endpoint", "webhook endpoint ID")
	sinceFlag := fs.String("since", "", "re-send deliveries created at or after this RFC 3339 time (at most 14 days back)")
	untilFlag := fs.String("until", "", "and before this RFC 3339 time (default: now)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(*endpoint) == "" || *sinceFlag == "" {
		return nil, fmt.Errorf("%w: --endpoint and --since are required", errUsage)
	}
	since, err := time.Parse(time.RFC3339, *sinceFlag)
	if err != nil {
		return nil, fmt.Errorf("%w: --since %q is not an RFC 3339 time such as 2026-06-01T12:00:00Z", errUsage, *sinceFlag)
	}
	var until *time.Time
	if *untilFlag != "" {
		t, err := time.Parse(time.RFC3339, *untilFlag)
		if err != nil {
			return nil, fmt.Errorf("%w: --until %q is not an RFC 3339 time such as 2026-06-01T12:00:00Z", errUsage, *untilFlag)
		}
		until = &t
	}
	// Checked again by the use case; here so that a mistake is told before Temporal is dialled.
	if since.Before(time.Now().Add(-engine.RecoverWindow)) {
		return nil, fmt.Errorf("%w: --since reaches at most 14 days back", errUsage)
	}
	if until != nil && !until.After(since) {
		return nil, fmt.Errorf("%w: --until must be later than --since", errUsage)
	}
	eng, err := e.temporalEngine(nil)
	if err != nil {
		return nil, err
	}
	out, err := eng.Support.RecoverWebhookEndpoint(e.ctx, strings.TrimSpace(*endpoint), since, until)
	return out, usageOf(err)
}

func (e *adminEnv) ordersShow(args []string) (any, error) {
	id, err := oneID(newFlags("orders show"), args, "ORDER_ID")
	if err != nil {
		return nil, err
	}
	return e.storeEngine().Support.ShowOrder(e.ctx, id)
}

// usage prints an installation's or an account's usage (GET /usage's figures; an account's may be
// grouped by key too).
func (e *adminEnv) usage(args []string) (any, error) {
	fs := newFlags("usage")
	installation := idFlag(fs, "installation", "installation ID")
	account := idFlag(fs, "account", "account ID")
	from := fs.String("from", "", "start of the range (RFC 3339 or YYYY-MM-DD; default: the start of the current UTC month)")
	to := fs.String("to", "", "end of the range, exclusive (default: the start of the next UTC month)")
	groupBy := fs.String("group-by", "", "day (default), ai_model, job_type or key (an account's)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if (*installation == "") == (*account == "") {
		return nil, fmt.Errorf("%w: usage takes one of --installation and --account", errUsage)
	}
	report, err := e.storeEngine().Support.UsageOf(e.ctx, *installation, *account,
		engine.UsageQuery{From: *from, To: *to, GroupBy: *groupBy})
	return report, usageOf(err)
}
