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
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/internal/app"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/logging"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/internal/support"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

const adminUsage = `Usage:
  shotflow admin account create --name NAME [--credits N]
  shotflow admin installation create --account ACCOUNT_ID --name NAME [--callback-url URL] [--scopes s1,s2] [--rate-limit N]
  shotflow admin credits grant --account ACCOUNT_ID --amount N
  shotflow admin keys issue --account ACCOUNT_ID [--name NAME] [--scopes content.register,content.read] [--expires RFC3339|DURATION]
  shotflow admin keys list --account ACCOUNT_ID
  shotflow admin keys revoke KEY_ID

Support (README "For support staff"):
  shotflow admin jobs list --status STATUS [--category CATEGORY] [--installation ID] [--since RFC3339] [--limit N]
  shotflow admin jobs retry JOB_ID [--actor NAME] [--reason TEXT]
  shotflow admin jobs stragglers [--older-than DURATION] [--limit N]
  shotflow admin jobs redrive JOB_ID --action settle|rerun [--actor NAME] [--reason TEXT]
  shotflow admin webhooks replay DELIVERY_ID
  shotflow admin orders show ORDER_ID

Every command prints JSON. Secrets (API keys, webhook secrets) are printed once and stored only as
hashes (keys) or encrypted (webhook secrets). Uses DATABASE_URL and SECRET_KEY like the API;
jobs retry, stragglers, redrive and webhooks replay also reach Temporal (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_TASK_QUEUE, and the API key, TLS and profile settings like the worker), and links point
at TEMPORAL_UI_URL.
`

// adminEnv is what admin commands operate on.
type adminEnv struct {
	ctx      context.Context
	cfg      config.Config // with the effective Temporal address and namespace
	temporal temporalconn.Connection
	db       *gorm.DB
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
	if len(args) < 2 || args[0] == "help" {
		if len(args) > 0 && args[0] == "help" {
			fmt.Fprint(stdout, adminUsage)
			return nil
		}
		return fmt.Errorf("%w: %s", errUsage, adminUsage)
	}
	commands := map[string]func(*adminEnv, []string) (any, error){
		"account create":      (*adminEnv).accountCreate,
		"installation create": (*adminEnv).installationCreate,
		"credits grant":       (*adminEnv).creditsGrant,
		"keys issue":          (*adminEnv).keysIssue,
		"keys list":           (*adminEnv).keysList,
		"keys revoke":         (*adminEnv).keysRevoke,
		"jobs list":           (*adminEnv).jobsList,
		"jobs retry":          (*adminEnv).jobsRetry,
		"jobs stragglers":     (*adminEnv).jobsStragglers,
		"jobs redrive":        (*adminEnv).jobsRedrive,
		"webhooks replay":     (*adminEnv).webhooksReplay,
		"orders show":         (*adminEnv).ordersShow,
	}
	command, ok := commands[args[0]+" "+args[1]]
	if !ok {
		return fmt.Errorf("%w: unknown admin command %q\n%s", errUsage, args[0]+" "+args[1], adminUsage)
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	db, err := models.Open(cfg.DatabaseURL, models.OpenOptions{})
	if err != nil {
		return err
	}
	defer closeDB(db)
	if err := models.CheckSchema(db); err != nil {
		return err
	}
	temporal, err := temporalconn.Resolve(cfg)
	if err != nil {
		return err
	}
	cfg.TemporalAddress, cfg.TemporalNamespace = temporal.Options.HostPort, temporal.Options.Namespace
	env := &adminEnv{ctx: ctx, cfg: cfg, temporal: temporal, db: db}
	defer func() {
		for _, c := range env.closers {
			c()
		}
	}()
	out, err := command(env, args[2:])
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// AccountCreated is the output of `admin account create`.
type AccountCreated struct {
	AccountID      string `json:"account_id"`
	Name           string `json:"name"`
	Credits        int64  `json:"credits"`
	ExternalKeyID  string `json:"external_key_id"`
	ExternalAPIKey string `json:"external_api_key"`
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
	if *credits < 0 {
		return nil, fmt.Errorf("%w: --credits must not be negative", errUsage)
	}
	var out AccountCreated
	err := e.db.Transaction(func(tx *gorm.DB) error {
		acc, err := models.CreateAccount(tx, strings.TrimSpace(*name), *credits)
		if err != nil {
			return err
		}
		key, err := models.IssueKey(tx, models.KeyKindExternal, acc.ID, nil, "default", models.ExternalScopes, nil)
		if err != nil {
			return err
		}
		out = AccountCreated{AccountID: acc.ID, Name: acc.Name, Credits: *credits, ExternalKeyID: key.Key.ID, ExternalAPIKey: key.Secret}
		return nil
	})
	return out, err
}

// InstallationCreated is the output of `admin installation create`.
type InstallationCreated struct {
	InstallationID string   `json:"installation_id"`
	AccountID      string   `json:"account_id"`
	Name           string   `json:"name"`
	CallbackURL    string   `json:"callback_url"`
	KeyID          string   `json:"key_id"`
	APIKey         string   `json:"api_key"`
	WebhookSecret  string   `json:"webhook_secret"`
	Scopes         []string `json:"scopes"`
	RateLimit      int      `json:"rate_limit_per_min"`
}

func (e *adminEnv) installationCreate(args []string) (any, error) {
	fs := newFlags("installation create")
	account := fs.String("account", "", "account ID")
	name := fs.String("name", "", "installation name")
	callback := fs.String("callback-url", "", "webhook callback URL")
	scopes := fs.String("scopes", "", "comma-separated scopes (default: every plugin scope)")
	rate := fs.Int("rate-limit", e.cfg.RateLimitPerMinute, "requests per minute for the key")
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
	var scopeList []string
	if *scopes != "" {
		for _, s := range strings.Split(*scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				scopeList = append(scopeList, s)
			}
		}
	} else {
		scopeList = models.PluginScopes
	}
	box, err := e.box()
	if err != nil {
		return nil, err
	}
	created, err := models.CreateInstallation(e.db, box, models.NewInstallation{
		AccountID: *account, Name: strings.TrimSpace(*name), CallbackURL: *callback, Scopes: scopeList, RateLimitPerMin: *rate,
	}, webhooks.NewSecret())
	if errors.Is(err, models.ErrNotFound) {
		return nil, fmt.Errorf("account %s does not exist", *account)
	}
	if err != nil {
		return nil, err
	}
	return InstallationCreated{
		InstallationID: created.Installation.ID, AccountID: *account, Name: created.Installation.Name,
		CallbackURL: *callback, KeyID: created.APIKey.Key.ID, APIKey: created.APIKey.Secret,
		WebhookSecret: created.WebhookSecret, Scopes: scopeList, RateLimit: *rate,
	}, nil
}

func (e *adminEnv) creditsGrant(args []string) (any, error) {
	fs := newFlags("credits grant")
	account := fs.String("account", "", "account ID")
	amount := fs.Int64("amount", 0, "credits to add")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" || *amount <= 0 {
		return nil, fmt.Errorf("%w: --account and a positive --amount are required", errUsage)
	}
	if err := models.GrantCredits(e.db, *account, *amount, "granted by operator"); err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return nil, fmt.Errorf("account %s does not exist", *account)
		}
		return nil, err
	}
	acc, err := models.GetAccount(e.db, *account)
	if err != nil {
		return nil, err
	}
	return map[string]any{"account_id": acc.ID, "granted": *amount, "credit_balance": acc.CreditBalance, "credits_reserved": acc.CreditsReserved}, nil
}

// KeyIssued is the output of `admin keys issue`: the secret is shown this once.
type KeyIssued struct {
	KeyID     string     `json:"key_id"`
	AccountID string     `json:"account_id"`
	APIKey    string     `json:"api_key"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// KeyListed is one key of `admin keys list` (never its secret).
type KeyListed struct {
	KeyID      string     `json:"key_id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// keysIssue issues an external content API key of an account with the chosen scopes and expiry.
func (e *adminEnv) keysIssue(args []string) (any, error) {
	fs := newFlags("keys issue")
	account := fs.String("account", "", "account ID")
	name := fs.String("name", "api", "a label for the key")
	scopes := fs.String("scopes", strings.Join(models.ExternalScopes, ","), "comma-separated scopes: "+strings.Join(models.ExternalScopeNames, ", "))
	expires := fs.String("expires", "", "expiry as an RFC 3339 time or a duration from now (720h); empty never expires")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" {
		return nil, fmt.Errorf("%w: --account is required", errUsage)
	}
	var list []string
	for _, sc := range strings.Split(*scopes, ",") {
		sc = strings.TrimSpace(sc)
		if !slices.Contains(models.ExternalScopeNames, sc) {
			return nil, fmt.Errorf("%w: unknown scope %q (known: %s)", errUsage, sc, strings.Join(models.ExternalScopeNames, ", "))
		}
		list = append(list, sc)
	}
	var expiresAt *time.Time
	if *expires != "" {
		t, err := time.Parse(time.RFC3339, *expires)
		if err != nil {
			d, derr := time.ParseDuration(*expires)
			if derr != nil || d <= 0 {
				return nil, fmt.Errorf("%w: --expires must be an RFC 3339 time or a positive duration", errUsage)
			}
			t = time.Now().Add(d)
		}
		t = t.UTC()
		expiresAt = &t
	}
	if _, err := models.GetAccount(e.db, *account); errors.Is(err, models.ErrNotFound) {
		return nil, fmt.Errorf("account %s does not exist", *account)
	} else if err != nil {
		return nil, err
	}
	k, err := models.IssueKey(e.db, models.KeyKindExternal, *account, nil, *name, list, expiresAt)
	if err != nil {
		return nil, err
	}
	return KeyIssued{KeyID: k.Key.ID, AccountID: *account, APIKey: k.Secret, Scopes: list, ExpiresAt: expiresAt}, nil
}

// keysList lists an account's external keys, newest first, without their secrets.
func (e *adminEnv) keysList(args []string) (any, error) {
	fs := newFlags("keys list")
	account := fs.String("account", "", "account ID")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *account == "" {
		return nil, fmt.Errorf("%w: --account is required", errUsage)
	}
	var keys []models.APIKey
	if err := e.db.Where("account_id = ? AND kind = ?", *account, models.KeyKindExternal).
		Order("created_at DESC").Find(&keys).Error; err != nil {
		return nil, err
	}
	out := make([]KeyListed, 0, len(keys))
	for _, k := range keys {
		out = append(out, KeyListed{KeyID: k.ID, Name: k.Name, Scopes: k.ScopeList(), CreatedAt: k.CreatedAt,
			ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, LastUsedAt: k.LastUsedAt})
	}
	return map[string]any{"account_id": *account, "keys": out}, nil
}

func (e *adminEnv) keysRevoke(args []string) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%w: keys revoke takes one KEY_ID", errUsage)
	}
	id := args[0]
	if _, keyID, _, ok := models.ParseKey(id); ok {
		id = keyID // a full key was pasted
	}
	if err := models.RevokeKey(e.db, id); err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return nil, fmt.Errorf("key %s does not exist", id)
		}
		return nil, err
	}
	return map[string]any{"key_id": id, "revoked": true}, nil
}

// parseInterleaved parses flags that may come before or after the positional arguments
// (`jobs retry JOB_ID --reason …`) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(fs, args); err != nil {
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
	return strings.TrimSpace(ids[0]), nil
}

// ui is where the commands' Temporal UI links point.
func (e *adminEnv) ui() support.UI {
	return support.UI{BaseURL: e.cfg.TemporalUIURL, Namespace: e.cfg.TemporalNamespace}
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
	installation := fs.String("installation", "", "installation ID")
	since := fs.String("since", "", "only jobs updated at or after this RFC 3339 time")
	limit := fs.Int("limit", support.DefaultListLimit, "at most this many jobs")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: jobs list takes no arguments, got %q", errUsage, fs.Args())
	}
	if *status == "" {
		return nil, fmt.Errorf("%w: --status is required (one of %s)", errUsage, strings.Join(support.JobStatuses, ", "))
	}
	f := support.JobFilter{Status: *status, Category: strings.ToUpper(*category), InstallationID: *installation, Limit: *limit}
	if *limit < 1 {
		return nil, fmt.Errorf("%w: --limit must be between 1 and %d", errUsage, support.MaxListLimit)
	}
	if *since != "" {
		t, err := time.Parse(time.RFC3339, *since)
		if err != nil {
			return nil, fmt.Errorf("%w: --since %q is not an RFC 3339 time such as 2026-06-01T12:00:00Z", errUsage, *since)
		}
		f.Since = t
	}
	out, err := support.ListJobs(e.ctx, e.db, e.ui(), f)
	if errors.Is(err, support.ErrInvalidFilter) {
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
	starter, err := e.starter()
	if err != nil {
		return nil, err
	}
	return support.RetryJob(e.ctx, starter, e.ui(), support.RetryRequest{JobID: id, Actor: *actor, Reason: *reason})
}

// starter starts job runs the way the API's starter does (internal/app).
func (e *adminEnv) starter() (*engine.Engine, error) {
	tc, err := e.dialTemporal()
	if err != nil {
		return nil, err
	}
	return engine.New(engine.Config{
		DB: e.db, Temporal: tc, TaskQueue: e.cfg.TemporalTaskQueue, Log: zap.NewNop(),
		JobOptions: workflows.JobOptions{InputWait: e.cfg.InputWaitTimeout},
	}), nil
}

func (e *adminEnv) jobsStragglers(args []string) (any, error) {
	fs := newFlags("jobs stragglers")
	olderThan := fs.Duration("older-than", 5*time.Minute, "only jobs not updated for this long")
	limit := fs.Int("limit", support.DefaultListLimit, "look at most at this many non-terminal jobs, oldest first")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: jobs stragglers takes no arguments, got %q", errUsage, fs.Args())
	}
	if *limit < 1 || *limit > support.MaxListLimit {
		return nil, fmt.Errorf("%w: --limit must be between 1 and %d", errUsage, support.MaxListLimit)
	}
	if *olderThan < 0 {
		return nil, fmt.Errorf("%w: --older-than must not be negative", errUsage)
	}
	tc, err := e.dialTemporal()
	if err != nil {
		return nil, err
	}
	return support.FindStragglers(e.ctx, e.db, tc, e.ui(), *olderThan, *limit)
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
	if *action != support.RedriveSettle && *action != support.RedriveRerun {
		return nil, fmt.Errorf("%w: --action must be %s or %s", errUsage, support.RedriveSettle, support.RedriveRerun)
	}
	if strings.TrimSpace(*actor) == "" {
		return nil, fmt.Errorf("%w: --actor must not be empty", errUsage)
	}
	starter, err := e.starter()
	if err != nil {
		return nil, err
	}
	master, err := masterKey(e.cfg, false)
	if err != nil {
		return nil, err
	}
	tc, err := e.dialTemporal()
	if err != nil {
		return nil, err
	}
	// The settled run's webhook is recorded as a job's workflow records it.
	acts := &activities.Activities{Store: models.NewStore(e.db), Log: zap.NewNop(), Signer: app.NewSigner(e.cfg, master), DownloadTTL: e.cfg.DownloadURLTTL}
	return support.RedriveJob(e.ctx, starter, e.db, tc, acts, e.ui(), support.RedriveRequest{JobID: id, Action: *action, Actor: *actor, Reason: *reason})
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
	eng, err := e.starter()
	if err != nil {
		return nil, err
	}
	return support.ReplayWebhook(e.ctx, eng, e.db, e.ui(), id)
}

func (e *adminEnv) ordersShow(args []string) (any, error) {
	id, err := oneID(newFlags("orders show"), args, "ORDER_ID")
	if err != nil {
		return nil, err
	}
	return support.ShowOrder(e.ctx, e.db, e.ui(), id)
}
