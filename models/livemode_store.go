package models

import (
	"context"
	"errors"

	"gorm.io/gorm"
)

// AccountTestMode reports whether an account is a test twin (migration 0021): the account of a
// live installation's test twin or a live account's external test twin. Every record of a scope
// (an installation's or an account's own) is of its account's mode, so this is the mode of what
// carries no test_mode of its own: webhook endpoints, deliveries and events. ErrNotFound when
// there is no such account.
func (s *Store) AccountTestMode(ctx context.Context, accountID string) (bool, error) {
	var acc Account
	err := s.conn(ctx).Select("id", "test_mode").Take(&acc, "id = ?", accountID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, ErrNotFound
	}
	return acc.TestMode, err
}
