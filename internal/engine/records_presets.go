package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/shotflow/shotflow/models"
)

// Presets an account sees and owns (api/external/openapi.yaml, PresetItem): the system presets and
// its own, which it creates and changes.

// Preset is a generation recipe with guidance for its input photos, as the APIs list it. Text
// fields are "" when unset; SceneryRequirement is models/presetspec.SceneryRequired,
// SceneryRecommended or nil (not reviewed).
type Preset struct {
	ID                 string
	Slug               string
	Name               string
	QuantityGuidelines string
	QualityGuidelines  string
	BestFor            string
	DoTips             string
	DontTips           string
	InputRequirements  string
	HeroIntro          string
	Categories         []string
	Tags               []string
	IsFree             bool  // true exactly when CreditCost is 0
	CreditCost         int64 // surcharge per generated image, on top of the AI model's price
	SceneryRequirement *string
	System             bool // a preset of the service rather than of an account
	CreatedAt          time.Time
	Cover              *PresetImage  // nil: none
	Gallery            []PresetImage // in order
}

// PresetImage is a preset's cover or one of its gallery images.
type PresetImage struct {
	ID   string // what a change names to keep a gallery image
	File StoredFile
}

// presetOf is the view of a stored preset with its images, cover first, gallery in order.
func presetOf(p *models.Preset, images []models.PresetImage) Preset {
	v := Preset{
		ID: p.ID, Slug: p.Slug, Name: p.Name, QuantityGuidelines: p.QuantityGuidelines, QualityGuidelines: p.QualityGuidelines,
		BestFor: p.BestFor, DoTips: p.DoTips, DontTips: p.DontTips, InputRequirements: p.InputRequirements,
		HeroIntro: p.HeroIntro, Categories: p.Categories, Tags: p.Tags, IsFree: p.IsFree, CreditCost: p.CreditCost,
		SceneryRequirement: p.SceneryRequirement, System: p.Type == models.PresetTypeSystem, CreatedAt: p.CreatedAt,
	}
	for _, img := range images {
		pi := PresetImage{ID: img.ID, File: StoredFile{BlobKey: img.BlobKey}}
		if img.AssetID != nil {
			pi.File.AssetID = *img.AssetID
		}
		if img.Role == models.PresetImageCover {
			v.Cover = &pi
		} else {
			v.Gallery = append(v.Gallery, pi)
		}
	}
	return v
}

// ListAccountPresets lists the published presets the account sees, the first limit of them
// (limit <= 0: all): system presets in their order, then the account's own newest first. images
// maps a preset ID to its cover and gallery, cover first.
func (e *Records) ListAccountPresets(ctx context.Context, accountID string, limit int) ([]models.Preset, map[string][]models.PresetImage, error) {
	return models.ListVisiblePresets(e.cfg.DB.WithContext(ctx), accountID, limit)
}

// CreateAccountPreset inserts p as a preset of the account (published, private, free) with its
// uploaded cover (nil: none) and gallery, whose assets are stored but not yet inserted, in one
// transaction. It sets p's ID and the fields the store owns and returns the preset's images,
// cover first, gallery in order. KindInvalid naming gallery for more than models.MaxPresetGallery
// gallery images.
func (e *Records) CreateAccountPreset(ctx context.Context, accountID string, p *models.Preset, cover *models.Asset, gallery []*models.Asset) ([]models.PresetImage, error) {
	images, err := models.CreateUserPreset(e.cfg.DB.WithContext(ctx), accountID, p, cover, gallery)
	if err != nil {
		return nil, presetRefusal(err)
	}
	return images, nil
}

// CheckAccountPresetUpdate refuses, without writing, a change UpdateAccountPreset would refuse:
// one that keeps the gallery images keep (nil: all) and adds added new ones. Callers check before
// storing uploaded files. Its refusals are UpdateAccountPreset's.
func (e *Records) CheckAccountPresetUpdate(ctx context.Context, accountID, presetID string, keep []string, added int) error {
	return presetRefusal(models.CheckPresetUpdate(e.cfg.DB.WithContext(ctx), accountID, presetID, keep, added))
}

// UpdateAccountPreset applies u to a preset the account owns, in one transaction, and returns the
// changed preset, its images (cover first, gallery in order) and the assets of the images it
// removed, whose files the caller may now delete. KindNotFound for a preset the account does not
// see; KindForbidden for one it sees but does not own (a system preset); KindInvalid naming
// existingGalleryIds for a kept image the gallery does not have, or gallery when the gallery would
// hold more than models.MaxPresetGallery images.
func (e *Records) UpdateAccountPreset(ctx context.Context, accountID, presetID string, u *models.PresetUpdate) (*models.Preset, []models.PresetImage, []models.Asset, error) {
	p, images, removed, err := models.UpdateUserPreset(e.cfg.DB.WithContext(ctx), accountID, presetID, u)
	if err != nil {
		return nil, nil, nil, presetRefusal(err)
	}
	return p, images, removed, nil
}

// presetRefusal is the refusal of a preset change the store turned down, or err itself (nil, or
// an error that is no refusal).
func presetRefusal(err error) error {
	var unknown *models.UnknownGalleryImageError
	var full *models.GalleryFullError
	switch {
	case errors.Is(err, models.ErrNotFound):
		return refuse(KindNotFound, "", "", "Preset not found.")
	case errors.Is(err, models.ErrNotPresetOwner):
		return refuse(KindForbidden, "", "", "Not the owner: only the account that created a preset may change it (system presets cannot be changed).")
	case errors.As(err, &unknown):
		return refuse(KindInvalid, "", "existingGalleryIds", "%s is not an image of this preset's gallery.", strconv.Quote(unknown.ID))
	case errors.As(err, &full):
		return refuse(KindInvalid, "", "gallery", "the preset would have %d gallery images (%d kept, %d new); at most %d.",
			full.Kept+full.Added, full.Kept, full.Added, models.MaxPresetGallery)
	}
	return err
}
