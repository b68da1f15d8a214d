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
	"strings"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/config"
	"github.com/shotflow/shotflow/internal/secrets"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

const adminUsage = `Usage:
  shotflow admin account create --name NAME [--credits N]
  shotflow admin installation create --account ACCOUNT_ID --name NAME [--callback-url URL] [--scopes s1,s2] [--rate-limit N]
  shotflow admin credits grant --account ACCOUNT_ID --amount N
  shotflow admin keys revoke KEY_ID

Every command prints JSON. Secrets (API keys, webhook secrets) are printed once and stored only as
hashes (keys) or encrypted (webhook secrets). Uses DATABASE_URL and SECRET_KEY like the API.
`

// adminEnv is what admin commands operate on.
type adminEnv struct {
	cfg config.Config
	db  *gorm.DB
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

func runAdmin(_ context.Context, args []string, stdout io.Writer) error {
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
		"keys revoke":         (*adminEnv).keysRevoke,
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
	out, err := command(&adminEnv{cfg: cfg, db: db}, args[2:])
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
