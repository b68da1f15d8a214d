package models

import "context"

// GetInstallation loads an installation by ID; ErrNotFound when there is none.
func (s *Store) GetInstallation(ctx context.Context, id string) (*Installation, error) {
	return GetInstallation(s.conn(ctx), id)
}
