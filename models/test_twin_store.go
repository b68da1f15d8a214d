package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Test mode (migration 0021, docs/test-mode.md): a test key belongs to a test twin of the tenant it
// was made for, so every record it creates is the twin's and the scoping of every query keeps the
// live and the test world apart. A live installation's twin is an installation of its own on an
// account of its own (the plugin's test credits are per installation); a live account's twin is an
// account (the external API's). Twins are made the first time a test key is issued for their tenant.

// TestDailyCredits are a test twin's credits at the start of each UTC day; TestDailyJobs the jobs it
// may run in a UTC day.
const (
	TestDailyCredits = 1000
	TestDailyJobs    = 1000
)

// TestDay is the UTC day of t as test twins record it.
func TestDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// TestTwinOfAccount returns the test twin of the live account (ErrNotFound when there is no such
// live account), making it, with TestDailyCredits granted through the ledger, the first time.
func (s *Store) TestTwinOfAccount(ctx context.Context, liveAccountID string) (*Account, error) {
	var twin *Account
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		var live Account
		if err := db.Where("id = ? AND test_mode = ?", liveAccountID, false).Take(&live).Error; err != nil {
			return orNotFound(err)
		}
		var err error
		twin, err = ensureTwinAccount(db, "test_of_account_id", liveAccountID, live.Name+" (test)")
		return err
	})
	return twin, err
}

// TestTwinOfInstallation returns the test twin of the live installation (ErrNotFound when there is
// no such live installation), making it and its account, with TestDailyCredits granted through the
// ledger, the first time: the same name, rate limit and scopes, its own webhook secret (sealed by
// box), no callback URL.
func (s *Store) TestTwinOfInstallation(ctx context.Context, box Sealer, liveInstallationID, webhookSecret string) (*Installation, error) {
	var twin *Installation
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		var live Installation
		if err := db.Where("id = ? AND test_mode = ?", liveInstallationID, false).Take(&live).Error; err != nil {
			return orNotFound(err)
		}
		var found Installation
		err := db.Where("test_of_installation_id = ?", liveInstallationID).Take(&found).Error
		if err == nil {
			twin = &found
			return nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		acc, err := ensureTwinAccount(db, "test_of_installation_id", liveInstallationID, live.Name+" (test)")
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		twin = &Installation{
			ID: NewID(), AccountID: acc.ID, Name: live.Name, WebhookSecretEnc: box.Seal(webhookSecret),
			RateLimitPerMin: live.RateLimitPerMin, Status: "active", CreatedAt: now, UpdatedAt: now,
			TestMode: true, TestOfInstallationID: &live.ID,
		}
		return db.Create(twin).Error
	})
	return twin, err
}

// ensureTwinAccount returns the account whose column (test_of_account_id or
// test_of_installation_id) names of, making it with TestDailyCredits the first time.
func ensureTwinAccount(db *gorm.DB, column, of, name string) (*Account, error) {
	var acc Account
	err := db.Where(column+" = ?", of).Take(&acc).Error
	if err == nil || !errors.Is(err, gorm.ErrRecordNotFound) {
		return &acc, err
	}
	now := time.Now().UTC()
	acc = Account{ID: NewID(), Name: name, Plan: "test", CreatedAt: now, UpdatedAt: now, TestMode: true, TestDay: TestDay(now)}
	if column == "test_of_account_id" {
		acc.TestOfAccountID = &of
	} else {
		acc.TestOfInstallationID = &of
	}
	if err := db.Create(&acc).Error; err != nil {
		return nil, err
	}
	if err := GrantCredits(db, acc.ID, TestDailyCredits, "test credits of the day"); err != nil {
		return nil, err
	}
	acc.CreditBalance = TestDailyCredits
	return &acc, nil
}

// IssueTestKey issues a test key (pk_test_…, mk_test_…) of a test twin's account or installation.
func (s *Store) IssueTestKey(ctx context.Context, kind, accountID string, installationID *string, name string, scopes []string, expiresAt *time.Time) (*IssuedKey, error) {
	return IssueTestKey(s.conn(ctx), kind, accountID, installationID, name, scopes, expiresAt)
}

// FindTestTwinOfAccount returns the test twin of the live account without making it;
// ErrNotFound when it has none (no external test key was ever issued for it).
func (s *Store) FindTestTwinOfAccount(ctx context.Context, liveAccountID string) (*Account, error) {
	var twin Account
	if err := s.conn(ctx).Where("test_of_account_id = ?", liveAccountID).Take(&twin).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &twin, nil
}

// FindTestTwinOfInstallation returns the test twin of the live installation without making it;
// ErrNotFound when it has none (no plugin test key was ever issued for it).
func (s *Store) FindTestTwinOfInstallation(ctx context.Context, liveInstallationID string) (*Installation, error) {
	var twin Installation
	if err := s.conn(ctx).Where("test_of_installation_id = ?", liveInstallationID).Take(&twin).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &twin, nil
}
