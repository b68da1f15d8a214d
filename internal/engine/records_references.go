package engine

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// References: a request may name a scenery, a fashion model or a preset from the catalog the
// account sees. Nothing is accepted (or charged) that names one it cannot use: a reference that is
// not a UUID, does not exist, is not usable (in progress, failed, rejected; a draft preset) or
// belongs to another account is refused alike with KindInvalid naming the request's field, so
// another account's records cannot be told from missing ones.

// referenceKinds name each kind of reference item in refusals, with the route (in both APIs) that
// lists the items a reference may name.
var referenceKinds = map[models.ReferenceKind]struct{ name, list string }{
	models.KindScenery:      {"scenery", "GET /sceneries"},
	models.KindFashionModel: {"fashion model", "GET /models"},
}

// UsableReference checks an optional reference to a scenery or fashion model (kind) that the
// account may use (models.FindUsableReferenceItem): "" is none, anything else must be the ID (in
// either case) of one of the account's own usable items or of the marketplace's, else KindInvalid
// naming field. It returns the ID as stored (lower case), "" for none.
func (e *Records) UsableReference(ctx context.Context, accountID string, kind models.ReferenceKind, field, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	if !models.IsUUID(id) {
		return "", notAReference(field, id, referenceKinds[kind].list)
	}
	id = models.CanonicalID(id)
	_, err := models.FindUsableReferenceItem(e.cfg.DB.WithContext(ctx), kind, accountID, id)
	if errors.Is(err, models.ErrNotFound) {
		return "", refuse(KindInvalid, "", field, "%q is not a %s this account may use; see %s.", id,
			referenceKinds[kind].name, referenceKinds[kind].list)
	}
	if err != nil {
		return "", err
	}
	return id, nil
}

// VisiblePreset checks an optional reference to a preset: "" is none (nil), anything else must be
// the ID (in either case) of a published preset that is public or the account's own, else
// KindInvalid naming field.
func (e *Records) VisiblePreset(ctx context.Context, accountID, field, id string) (*models.Preset, error) {
	if id == "" {
		return nil, nil
	}
	if !models.IsUUID(id) {
		return nil, notAReference(field, id, "GET /presets")
	}
	var p models.Preset
	err := e.cfg.DB.WithContext(ctx).Where("id = ? AND status = ? AND (visibility = ? OR account_id = ?)", models.CanonicalID(id),
		models.PresetPublished, models.PresetPublic, accountID).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(KindInvalid, "", field, "%q is not a preset this account may use; see GET /presets.", id)
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// notAReference refuses a reference that is not a UUID.
func notAReference(field, id, list string) *Error {
	return refuse(KindInvalid, "", field, "%q is not a valid id; use an id listed by %s.", id, list)
}

// Account returns an account with its credit balance and reservations; KindNotFound when it does
// not exist.
func (e *Records) Account(ctx context.Context, accountID string) (*models.Account, error) {
	acc, err := models.GetAccount(e.cfg.DB.WithContext(ctx), accountID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No account with this ID.")
	}
	return acc, err
}

// UsableReferenceItems lists the fashion models or sceneries (kind) the account may use: its own,
// newest first, then the marketplace's by name (models.ListUsableReferenceItems).
func (e *Records) UsableReferenceItems(ctx context.Context, accountID string, kind models.ReferenceKind) ([]models.ReferenceItem, error) {
	return models.ListUsableReferenceItems(e.cfg.DB.WithContext(ctx), kind, accountID)
}

// VisiblePresets lists the published presets the account sees, the system presets first, with
// each preset's cover and gallery images by preset ID (models.ListVisiblePresets).
func (e *Records) VisiblePresets(ctx context.Context, accountID string) ([]models.Preset, map[string][]models.PresetImage, error) {
	return models.ListVisiblePresets(e.cfg.DB.WithContext(ctx), accountID, 0)
}
