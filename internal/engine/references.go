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
func (e *Engine) UsableReference(ctx context.Context, accountID string, kind models.ReferenceKind, field, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	if !models.IsUUID(id) {
		return "", notAReference(field, id, referenceKinds[kind].list)
	}
	id = models.CanonicalID(id)
	_, err := models.FindUsableReferenceItem(e.DB.WithContext(ctx), kind, accountID, id)
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
func (e *Engine) VisiblePreset(ctx context.Context, accountID, field, id string) (*models.Preset, error) {
	if id == "" {
		return nil, nil
	}
	if !models.IsUUID(id) {
		return nil, notAReference(field, id, "GET /presets")
	}
	var p models.Preset
	err := e.DB.WithContext(ctx).Where("id = ? AND status = ? AND (visibility = ? OR account_id = ?)", models.CanonicalID(id),
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

// sessionReferences checks a session config's scenery_id and model_id against what the account
// may use and stores them as the catalog spells them.
func (e *Engine) sessionReferences(ctx context.Context, accountID string, cfg *SessionConfig) error {
	var err error
	if cfg.SceneryID, err = e.UsableReference(ctx, accountID, models.KindScenery, "session_config.scenery_id", cfg.SceneryID); err != nil {
		return err
	}
	cfg.ModelID, err = e.UsableReference(ctx, accountID, models.KindFashionModel, "session_config.model_id", cfg.ModelID)
	return err
}
