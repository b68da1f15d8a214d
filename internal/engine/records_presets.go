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

// presetsWithStoreKeys sets the store keys of the presets' images (core.withStoreKeys).
func (e *Records) presetsWithStoreKeys(ctx context.Context, presets ...*Preset) error {
	var files []*StoredFile
	for _, p := range presets {
		if p.Cover != nil {
			files = append(files, &p.Cover.File)
		}
		for i := range p.Gallery {
			files = append(files, &p.Gallery[i].File)
		}
	}
	return e.withStoreKeys(ctx, files)
}

// ListAccountPresets lists the published presets the account sees, the first limit of them
// (limit <= 0: all): system presets in their order, then the account's own newest first, each with
// its cover and gallery.
func (e *Records) ListAccountPresets(ctx context.Context, accountID string, limit int) ([]Preset, error) {
	presets, images, err := e.store.ListVisiblePresets(ctx, accountID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Preset, len(presets))
	views := make([]*Preset, len(presets))
	for i := range presets {
		out[i] = presetOf(&presets[i], images[presets[i].ID])
		views[i] = &out[i]
	}
	return out, e.presetsWithStoreKeys(ctx, views...)
}

// PresetFields are the editable fields of a preset that a request sets; a nil field is left as it
// is (a new preset's is empty). Categories and Tags replace the lists; SceneryRequirement "" clears
// the requirement (not reviewed).
type PresetFields struct {
	Name               *string
	QuantityGuidelines *string
	QualityGuidelines  *string
	BestFor            *string
	DoTips             *string
	DontTips           *string
	InputRequirements  *string
	HeroIntro          *string
	Categories         []string
	Tags               []string
	SceneryRequirement *string
}

// apply sets the fields on p.
func (f PresetFields) apply(p *models.Preset) {
	for _, t := range []struct {
		v   *string
		dst *string
	}{
		{f.Name, &p.Name}, {f.QuantityGuidelines, &p.QuantityGuidelines}, {f.QualityGuidelines, &p.QualityGuidelines},
		{f.BestFor, &p.BestFor}, {f.DoTips, &p.DoTips}, {f.DontTips, &p.DontTips},
		{f.InputRequirements, &p.InputRequirements}, {f.HeroIntro, &p.HeroIntro},
	} {
		if t.v != nil {
			*t.dst = *t.v
		}
	}
	if f.Categories != nil {
		p.Categories = f.Categories
	}
	if f.Tags != nil {
		p.Tags = f.Tags
	}
	if f.SceneryRequirement != nil {
		p.SceneryRequirement = nil
		if v := *f.SceneryRequirement; v != "" {
			p.SceneryRequirement = &v
		}
	}
}

// NewPreset is a preset an account creates: its fields, and its cover (nil: none) and gallery
// image files.
type NewPreset struct {
	Fields  PresetFields
	Cover   *ImageFile
	Gallery []ImageFile
}

// CreateAccountPreset creates a preset of the account (published, private, free): it stores the
// cover and gallery files (storeImage's refusals; ErrFileStore), then inserts the preset and its
// images in one transaction, and removes the stored files again when that fails. KindInvalid
// naming gallery for more than models/presetspec.MaxGallery gallery images.
func (e *Records) CreateAccountPreset(ctx context.Context, accountID string, in NewPreset) (Preset, error) {
	files := []*ImageFile{in.Cover}
	for i := range in.Gallery {
		files = append(files, &in.Gallery[i])
	}
	assets, err := e.storeImages(ctx, accountID, files...)
	if err != nil {
		return Preset{}, err
	}
	p := &models.Preset{}
	in.Fields.apply(p)
	images, err := e.store.CreateUserPreset(ctx, accountID, p, assets[0], assets[1:])
	if err != nil {
		e.deleteFiles(ctx, assets...)
		return Preset{}, presetRefusal(err)
	}
	v := presetOf(p, images)
	return v, e.presetsWithStoreKeys(ctx, &v)
}

// PresetChange is a change to an account's own preset.
type PresetChange struct {
	Fields PresetFields
	// Cover, when set, is a new cover that replaces the current one.
	Cover *ImageFile
	// RemoveCover removes the current cover.
	RemoveCover bool
	// KeepGallery lists the gallery images to keep (the others are removed); nil keeps them all.
	// The kept images keep their order.
	KeepGallery []string
	// AddGallery are new gallery images, placed after the kept ones.
	AddGallery []ImageFile
}

// UpdateAccountPreset applies a change to a preset the account owns and returns the changed
// preset. It refuses the change before storing any file, and again in its transaction:
// KindNotFound for a preset the account does not see; KindForbidden for one it sees but does not
// own (a system preset); KindInvalid naming existingGalleryIds for a kept image the gallery does
// not have, or gallery when the gallery would hold more than models/presetspec.MaxGallery images.
// Then it stores the new files (storeImage's refusals; ErrFileStore) and changes the preset in one
// transaction; the new files are removed when that fails, the removed images' files once it
// committed.
func (e *Records) UpdateAccountPreset(ctx context.Context, accountID, presetID string, c PresetChange) (Preset, error) {
	if err := e.store.CheckPresetUpdate(ctx, accountID, presetID, c.KeepGallery, len(c.AddGallery)); err != nil {
		return Preset{}, presetRefusal(err)
	}
	files := []*ImageFile{c.Cover}
	for i := range c.AddGallery {
		files = append(files, &c.AddGallery[i])
	}
	assets, err := e.storeImages(ctx, accountID, files...)
	if err != nil {
		return Preset{}, err
	}
	u := &models.PresetUpdate{Cover: assets[0], RemoveCover: c.RemoveCover, KeepGallery: c.KeepGallery,
		AddGallery: assets[1:], Edit: c.Fields.apply}
	p, images, removed, err := e.store.UpdateUserPreset(ctx, accountID, presetID, u)
	if err != nil {
		e.deleteFiles(ctx, assets...)
		return Preset{}, presetRefusal(err)
	}
	gone := make([]*models.Asset, len(removed))
	for i := range removed {
		gone[i] = &removed[i]
	}
	e.deleteFiles(ctx, gone...)
	v := presetOf(p, images)
	return v, e.presetsWithStoreKeys(ctx, &v)
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
