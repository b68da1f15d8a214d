package models

import (
	"errors"
	"time"

	"gorm.io/gorm"
)

// Sealer encrypts secrets at rest (implemented by secrets.Box).
type Sealer interface {
	Seal(plaintext string) string
	Open(sealed string) (string, error)
}

// CreateAccount creates an account and, when credits > 0, grants them through the ledger.
func CreateAccount(db *gorm.DB, name string, credits int64) (*Account, error) {
	now := time.Now().UTC()
	a := Account{ID: NewID(), Name: name, Plan: "standard", CreatedAt: now, UpdatedAt: now}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&a).Error; err != nil {
			return err
		}
		if credits > 0 {
			return GrantCredits(tx, a.ID, credits, "initial credits")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.CreditBalance = credits
	return &a, nil
}

// GetAccount loads an account by ID.
func GetAccount(db *gorm.DB, id string) (*Account, error) {
	var a Account
	if err := db.Where("id = ?", id).Take(&a).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &a, nil
}

// NewInstallation describes an installation to create.
type NewInstallation struct {
	AccountID       string
	Name            string
	CallbackURL     string
	Scopes          []string // nil: PluginScopes
	RateLimitPerMin int
}

// CreatedInstallation is a new installation with its secrets, shown once.
type CreatedInstallation struct {
	Installation  Installation
	APIKey        IssuedKey
	WebhookSecret string
}

// CreateInstallation creates an installation, its plugin API key and its webhook signing secret.
func CreateInstallation(db *gorm.DB, box Sealer, in NewInstallation, webhookSecret string) (*CreatedInstallation, error) {
	if in.Scopes == nil {
		in.Scopes = PluginScopes
	}
	now := time.Now().UTC()
	inst := Installation{
		ID: NewID(), AccountID: in.AccountID, Name: in.Name, CallbackURL: in.CallbackURL,
		WebhookSecretEnc: box.Seal(webhookSecret), RateLimitPerMin: in.RateLimitPerMin,
		Status: "active", CreatedAt: now, UpdatedAt: now,
	}
	var out *CreatedInstallation
	err := db.Transaction(func(tx *gorm.DB) error {
		if _, err := GetAccount(tx, in.AccountID); err != nil {
			return err
		}
		if err := tx.Create(&inst).Error; err != nil {
			return err
		}
		if in.CallbackURL != "" {
			// A callback URL is the installation's first webhook endpoint, as migration 0016 made
			// of every earlier one.
			if err := tx.Create(&WebhookEndpoint{ID: NewID(), AccountID: in.AccountID, InstallationID: &inst.ID,
				URL: in.CallbackURL, Events: append(StringList{}, CallbackEvents...), Status: EndpointEnabled,
				CreatedAt: now, UpdatedAt: now}).Error; err != nil {
				return err
			}
		}
		key, err := IssueKey(tx, KeyKindPlugin, in.AccountID, &inst.ID, in.Name, in.Scopes, nil)
		if err != nil {
			return err
		}
		out = &CreatedInstallation{Installation: inst, APIKey: *key, WebhookSecret: webhookSecret}
		return nil
	})
	return out, err
}

// GetInstallation loads an installation by ID.
func GetInstallation(db *gorm.DB, id string) (*Installation, error) {
	var i Installation
	if err := db.Where("id = ?", id).Take(&i).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &i, nil
}
