package models

import (
	"context"
	"time"
)

// The store methods of accounts, their credit grants and their API keys (accounts.go, keys.go,
// credits.go).

// CreateAccount creates an account and, when credits > 0, grants them through the ledger, in one
// transaction (CreateAccount).
func (s *Store) CreateAccount(ctx context.Context, name string, credits int64) (*Account, error) {
	return CreateAccount(s.conn(ctx), name, credits)
}

// GetAccount loads an account by ID; ErrNotFound when there is none.
func (s *Store) GetAccount(ctx context.Context, id string) (*Account, error) {
	return GetAccount(s.conn(ctx), id)
}

// GrantCredits adds amount credits to the account's balance with a grant ledger entry noted note
// (GrantCredits); ErrNotFound for an unknown account.
func (s *Store) GrantCredits(ctx context.Context, accountID string, amount int64, note string) error {
	return GrantCredits(s.conn(ctx), accountID, amount, note)
}

// IssueKey creates a key of the kind and returns it with its full secret form, shown once
// (IssueKey).
func (s *Store) IssueKey(ctx context.Context, kind, accountID string, installationID *string, name string, scopes []string, expiresAt *time.Time) (*IssuedKey, error) {
	return IssueKey(s.conn(ctx), kind, accountID, installationID, name, scopes, expiresAt)
}

// AuthenticateKey returns the live key of the kind that full names at now, or ErrInvalidKey.
func (s *Store) AuthenticateKey(ctx context.Context, kind, full string, now time.Time) (*APIKey, error) {
	return AuthenticateKey(s.conn(ctx), kind, full, now)
}

// AuthenticateKeyWithInstallation is AuthenticateKey that also returns, read by the same query,
// what authentication needs of the installation the key is bound to: nil when it is bound to
// none or its installation does not exist (AuthenticateKeyWithInstallation).
func (s *Store) AuthenticateKeyWithInstallation(ctx context.Context, kind, full string, now time.Time) (*APIKey, *KeyInstallation, error) {
	return AuthenticateKeyWithInstallation(s.conn(ctx), kind, full, now)
}

// RecordKeyUse sets the key's last_used_at to now.
func (s *Store) RecordKeyUse(ctx context.Context, keyID string, now time.Time) error {
	return s.conn(ctx).Model(&APIKey{}).Where("id = ?", keyID).Update("last_used_at", now.UTC()).Error
}

// AccountKeys lists the account's keys of the kind, revoked and expired ones included, newest
// first.
func (s *Store) AccountKeys(ctx context.Context, accountID, kind string) ([]APIKey, error) {
	var keys []APIKey
	err := s.conn(ctx).Where("account_id = ? AND kind = ?", accountID, kind).Order("created_at DESC").Find(&keys).Error
	return keys, err
}

// RevokeKey revokes a key by its ID; revoking twice is not an error, an unknown key is
// ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, keyID string) error {
	return RevokeKey(s.conn(ctx), keyID)
}
