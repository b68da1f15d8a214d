package models

import "context"

// FindUsableReferenceItem returns one item of the kind the account may use, its own or the
// marketplace's, done and not rejected; ErrNotFound for a missing, unusable or other account's item.
func (s *Store) FindUsableReferenceItem(ctx context.Context, kind ReferenceKind, accountID, id string) (*ReferenceItem, error) {
	return FindUsableReferenceItem(s.conn(ctx), kind, accountID, id)
}

// SeedReference writes the embedded seed's marketplace fashion models and sceneries and its system
// presets, idempotently (SeedReference).
func (s *Store) SeedReference(ctx context.Context) error {
	return SeedReference(s.conn(ctx))
}

// ListUsableReferenceItems lists up to limit fashion models or sceneries the account may use: its
// own, newest first, then the marketplace's by name (ListUsableReferenceItems).
func (s *Store) ListUsableReferenceItems(ctx context.Context, kind ReferenceKind, accountID string, limit int) ([]ReferenceItem, error) {
	return ListUsableReferenceItems(s.conn(ctx), kind, accountID, limit)
}
