package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/models"
)

// Reference data an account reads: its credit position, the fashion models and sceneries it may
// use, and the presets it sees.

// Account returns an account with its credit balance and reservations; KindNotFound when it does
// not exist.
func (e *Engine) Account(ctx context.Context, accountID string) (*models.Account, error) {
	acc, err := models.GetAccount(e.DB.WithContext(ctx), accountID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No account with this ID.")
	}
	return acc, err
}

// UsableReferenceItems lists the fashion models or sceneries (kind) the account may use: its own,
// newest first, then the marketplace's by name (models.ListUsableReferenceItems).
func (e *Engine) UsableReferenceItems(ctx context.Context, accountID string, kind models.ReferenceKind) ([]models.ReferenceItem, error) {
	return models.ListUsableReferenceItems(e.DB.WithContext(ctx), kind, accountID)
}

// VisiblePresets lists the published presets the account sees, the system presets first, with
// each preset's cover and gallery images by preset ID (models.ListVisiblePresets).
func (e *Engine) VisiblePresets(ctx context.Context, accountID string) ([]models.Preset, map[string][]models.PresetImage, error) {
	return models.ListVisiblePresets(e.DB.WithContext(ctx), accountID, 0)
}
