package models

import "context"

// GetInstallation loads an installation by ID; ErrNotFound when there is none.
func (s *Store) GetInstallation(ctx context.Context, id string) (*Installation, error) {
	return GetInstallation(s.conn(ctx), id)
}

// CreateInstallation creates an installation of an existing account (ErrNotFound otherwise), its
// plugin API key and its webhook signing secret, which box seals, in one transaction
// (CreateInstallation).
func (s *Store) CreateInstallation(ctx context.Context, box Sealer, in NewInstallation, webhookSecret string) (*CreatedInstallation, error) {
	return CreateInstallation(s.conn(ctx), box, in, webhookSecret)
}
