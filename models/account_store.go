package models

import "context"

// GetAccount loads an account by ID; ErrNotFound when there is none.
func (s *Store) GetAccount(ctx context.Context, id string) (*Account, error) {
	return GetAccount(s.conn(ctx), id)
}
