package models

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Key prefixes: the kind and the mode of a key can be told from its first characters. A test key
// (docs/test-mode.md) belongs to a test twin of its tenant (TestTwinOfInstallation,
// TestTwinOfAccount) and carries test_mode.
const (
	PluginKeyPrefix       = "pk_live_"
	ExternalKeyPrefix     = "mk_live_"
	PluginTestKeyPrefix   = "pk_test_"
	ExternalTestKeyPrefix = "mk_test_"
)

// PluginScopes are the scopes a new plugin installation key gets by default: every scope api/openapi.yaml names.
var PluginScopes = []string{
	"plugin.jobs:write", "plugin.jobs:read", "plugin.assets:write", "plugin.installations.manage",
	"plugin.webhooks:manage", "plugin.presets:read", "plugin.catalog:read", "plugin.catalog:write",
}

// ExternalScopes are the scopes a new external content key gets by default.
var ExternalScopes = []string{"content.register", "content.read", "content.webhooks", "content.billing"}

// ExternalScopeNames are every scope an external key may carry; queue.nudge is reserved.
var ExternalScopeNames = []string{"content.register", "content.read", "content.webhooks", "content.billing", "queue.nudge"}

// ErrInvalidKey is returned for a key that is malformed, unknown, revoked or expired.
var ErrInvalidKey = errors.New("invalid API key")

// IssuedKey is a freshly created key: Secret is the full key string, shown once.
type IssuedKey struct {
	Key    APIKey
	Secret string
}

// IssueKey creates a live key of the given kind and returns its full secret form
// (<prefix><keyId>.<secret>); only a hash of the secret part is stored.
func IssueKey(db *gorm.DB, kind, accountID string, installationID *string, name string, scopes []string, expiresAt *time.Time) (*IssuedKey, error) {
	return issueKey(db, kind, accountID, installationID, name, scopes, expiresAt, false)
}

// IssueTestKey is IssueKey for a test key (pk_test_…, mk_test_…) of a test twin's account or
// installation.
func IssueTestKey(db *gorm.DB, kind, accountID string, installationID *string, name string, scopes []string, expiresAt *time.Time) (*IssuedKey, error) {
	return issueKey(db, kind, accountID, installationID, name, scopes, expiresAt, true)
}

// keyPrefix is the prefix of the keys of a kind and mode.
func keyPrefix(kind string, test bool) string {
	switch {
	case kind == KeyKindExternal && test:
		return ExternalTestKeyPrefix
	case kind == KeyKindExternal:
		return ExternalKeyPrefix
	case test:
		return PluginTestKeyPrefix
	}
	return PluginKeyPrefix
}

func issueKey(db *gorm.DB, kind, accountID string, installationID *string, name string, scopes []string, expiresAt *time.Time, test bool) (*IssuedKey, error) {
	idBytes := make([]byte, 8)
	secretBytes := make([]byte, 32)
	if _, err := rand.Read(idBytes); err != nil {
		return nil, err
	}
	if _, err := rand.Read(secretBytes); err != nil {
		return nil, err
	}
	keyID := hex.EncodeToString(idBytes)
	secret := base64.RawURLEncoding.EncodeToString(secretBytes)
	if expiresAt != nil {
		// Stored in UTC, as every other time: SQLite keeps a time as the text it was given, and
		// its comparisons, and the listings, read that text.
		utc := expiresAt.UTC()
		expiresAt = &utc
	}
	k := APIKey{
		ID: keyID, Kind: kind, AccountID: accountID, InstallationID: installationID, Name: name,
		SecretHash: hashSecret(secret), Scopes: strings.Join(scopes, " "), ExpiresAt: expiresAt,
		CreatedAt: time.Now().UTC(), TestMode: test,
	}
	prefix := keyPrefix(kind, test)
	if err := db.Create(&k).Error; err != nil {
		return nil, err
	}
	return &IssuedKey{Key: k, Secret: prefix + keyID + "." + secret}, nil
}

// ParseKey splits a full key string into its kind, key ID and secret. The key ID is what IssueKey
// makes: 16 lowercase hexadecimal digits; anything else is no key, refused without a look-up.
func ParseKey(full string) (kind, keyID, secret string, ok bool) {
	kind, keyID, secret, _, ok = ParseKeyMode(full)
	return kind, keyID, secret, ok
}

// ParseKeyMode is ParseKey that also tells a test key (pk_test_…, mk_test_…) from a live one.
func ParseKeyMode(full string) (kind, keyID, secret string, test, ok bool) {
	kind, keyID, secret, test, ok = "", "", "", false, false
	switch {
	case strings.HasPrefix(full, PluginKeyPrefix):
		kind, full = KeyKindPlugin, full[len(PluginKeyPrefix):]
	case strings.HasPrefix(full, ExternalKeyPrefix):
		kind, full = KeyKindExternal, full[len(ExternalKeyPrefix):]
	case strings.HasPrefix(full, PluginTestKeyPrefix):
		kind, full, test = KeyKindPlugin, full[len(PluginTestKeyPrefix):], true
	case strings.HasPrefix(full, ExternalTestKeyPrefix):
		kind, full, test = KeyKindExternal, full[len(ExternalTestKeyPrefix):], true
	default:
		return "", "", "", false, false
	}
	keyID, secret, ok = strings.Cut(full, ".")
	if !ok || !isKeyID(keyID) || secret == "" || len(secret) > 128 {
		return "", "", "", false, false
	}
	return kind, keyID, secret, test, true
}

// CanonicalKeyID is s, trimmed and in lower case, when that is a key ID (an operator may paste
// one in capitals); s unchanged otherwise.
func CanonicalKeyID(s string) string {
	if id := strings.ToLower(strings.TrimSpace(s)); isKeyID(id) {
		return id
	}
	return s
}

// isKeyID reports whether s is 16 lowercase hexadecimal digits, the form of every key ID.
func isKeyID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// AuthenticateKey returns the live key of the given kind that full names, or ErrInvalidKey.
func AuthenticateKey(db *gorm.DB, kind, full string, now time.Time) (*APIKey, error) {
	key, _, err := AuthenticateKeyWithInstallation(db, kind, full, now)
	return key, err
}

// KeyInstallation is what authenticating a plugin key reads of the installation the key is bound
// to: whose it is, its name, its rate limit and whether it is active.
type KeyInstallation struct {
	ID, AccountID, Name, Status string
	RateLimitPerMin             int
}

// authQuery reads a key and, by a LEFT JOIN, the installation it is bound to (NULLs when none).
// It is written by hand and scanned column by column: every request of both APIs runs it, and
// gorm's join of two whole models cost a plugin request about 0.3 ms of CPU to build and scan
// (docs/benchmarks.md, "Acceptance and jobs over PostgreSQL at 2,000 sessions").
const authQuery = "SELECT k.account_id, k.installation_id, k.name, k.secret_hash, k.scopes, k.expires_at, " +
	"k.revoked_at, k.last_used_at, k.created_at, k.test_mode, i.id, i.account_id, i.name, i.status, i.rate_limit_per_min " +
	"FROM api_keys k LEFT JOIN installations i ON i.id = k.installation_id WHERE k.id = ? AND k.kind = ?"

// AuthenticateKeyWithInstallation is AuthenticateKey that also returns, read by the same query (a
// LEFT JOIN), what KeyInstallation holds of the installation the key is bound to: nil when it is
// bound to none or its installation does not exist. The installation's status is the caller's to
// judge.
func AuthenticateKeyWithInstallation(db *gorm.DB, kind, full string, now time.Time) (*APIKey, *KeyInstallation, error) {
	k, id, secret, test, ok := ParseKeyMode(full)
	if !ok || k != kind {
		return nil, nil, ErrInvalidKey
	}
	rows, err := db.Raw(authQuery, id, kind).Rows()
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, ErrInvalidKey
	}
	key := &APIKey{ID: id, Kind: kind}
	var expires, revoked, used sql.NullTime
	var instID, instAccount, instName, instStatus sql.NullString
	var instRate sql.NullInt64
	if err := rows.Scan(&key.AccountID, &key.InstallationID, &key.Name, &key.SecretHash, &key.Scopes, &expires,
		&revoked, &used, &key.CreatedAt, &key.TestMode, &instID, &instAccount, &instName, &instStatus, &instRate); err != nil {
		return nil, nil, err
	}
	if err := rows.Close(); err != nil {
		return nil, nil, err
	}
	key.ExpiresAt, key.RevokedAt, key.LastUsedAt = timeOrNil(expires), timeOrNil(revoked), timeOrNil(used)
	if subtle.ConstantTimeCompare([]byte(key.SecretHash), []byte(hashSecret(secret))) != 1 || key.TestMode != test {
		return nil, nil, ErrInvalidKey
	}
	if key.RevokedAt != nil || (key.ExpiresAt != nil && !now.Before(*key.ExpiresAt)) {
		return nil, nil, ErrInvalidKey
	}
	if !instID.Valid {
		return key, nil, nil
	}
	return key, &KeyInstallation{ID: instID.String, AccountID: instAccount.String, Name: instName.String,
		Status: instStatus.String, RateLimitPerMin: int(instRate.Int64)}, nil
}

// timeOrNil is t's time, or nil when t is NULL.
func timeOrNil(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// RevokeKey revokes a key by its ID; revoking twice is not an error.
func RevokeKey(db *gorm.DB, keyID string) error {
	res := db.Model(&APIKey{}).Where("id = ?", keyID).
		Update("revoked_at", gorm.Expr("COALESCE(revoked_at, ?)", time.Now().UTC()))
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// ScopeList returns the key's scopes.
func (k *APIKey) ScopeList() []string { return strings.Fields(k.Scopes) }

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
