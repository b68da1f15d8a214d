package models

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// The store methods of presets: the ones an account sees, creates and changes (presets.go,
// reference.go).

// ListVisiblePresets returns the published presets the account sees, the first limit of them
// (limit <= 0: all), with their images by preset ID (ListVisiblePresets).
func (s *Store) ListVisiblePresets(ctx context.Context, accountID string, limit int) ([]Preset, map[string][]PresetImage, error) {
	return ListVisiblePresets(s.conn(ctx), accountID, limit)
}

// FindVisiblePreset returns a preset the account sees: published, and public or its own (its ID
// as stored); ErrNotFound otherwise.
func (s *Store) FindVisiblePreset(ctx context.Context, accountID, presetID string) (*Preset, error) {
	return findVisiblePreset(s.conn(ctx), accountID, presetID)
}

// CreateUserPreset inserts p as a USER preset of the account with its cover (nil: none) and
// gallery images, whose assets are not yet inserted, in one transaction (CreateUserPreset).
func (s *Store) CreateUserPreset(ctx context.Context, accountID string, p *Preset, cover *Asset, gallery []*Asset) ([]PresetImage, error) {
	return CreateUserPreset(s.conn(ctx), accountID, p, cover, gallery)
}

// CheckPresetUpdate reports, without writing, whether UpdateUserPreset would refuse a change that
// keeps the gallery images keep (nil: all) and adds added new ones: ErrNotFound, ErrNotPresetOwner,
// an *UnknownGalleryImageError or a *GalleryFullError. Callers check before storing uploaded files;
// UpdateUserPreset checks again in its transaction.
func (s *Store) CheckPresetUpdate(ctx context.Context, accountID, presetID string, keep []string, added int) error {
	_, images, err := ownPreset(s.conn(ctx), accountID, presetID, false)
	if err != nil {
		return err
	}
	_, _, err = planGallery(images, keep, added)
	return err
}

// UpdateUserPreset applies u to a preset the account owns, in one transaction: the preset must be
// one the account sees (published, and public or its own; else ErrNotFound) and its own (else
// ErrNotPresetOwner). Gallery positions are repacked 0..n-1: the kept images in their order, then
// the added ones. It returns the changed preset, its images (cover first, gallery in order) and
// the assets of the images it removed, now marked purged, whose files the caller may delete.
func (s *Store) UpdateUserPreset(ctx context.Context, accountID, presetID string, u *PresetUpdate) (*Preset, []PresetImage, []Asset, error) {
	var (
		preset  *Preset
		images  []PresetImage
		removed []Asset
	)
	err := s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		p, current, err := ownPreset(tx, accountID, presetID, true)
		if err != nil {
			return err
		}
		kept, drop, err := planGallery(current, u.KeepGallery, len(u.AddGallery))
		if err != nil {
			return err
		}
		if u.Cover != nil || u.RemoveCover {
			drop = append(drop, coverOf(current)...)
		}
		now := time.Now().UTC()
		// Free the slots first: a kept image only ever moves down to a slot that is free by then.
		for _, img := range drop {
			if err := tx.Delete(&PresetImage{}, "id = ?", img.ID).Error; err != nil {
				return err
			}
		}
		for i, img := range kept {
			if img.Position != i {
				if err := tx.Model(&PresetImage{}).Where("id = ?", img.ID).Update("position", i).Error; err != nil {
					return err
				}
			}
		}
		var added []PresetImage
		if u.Cover != nil {
			added = append(added, PresetImage{ID: NewID(), PresetID: p.ID, Role: PresetImageCover, AssetID: &u.Cover.ID, CreatedAt: now})
		}
		for i, a := range u.AddGallery {
			added = append(added, PresetImage{ID: NewID(), PresetID: p.ID, Role: PresetImageGallery, Position: len(kept) + i, AssetID: &a.ID, CreatedAt: now})
		}
		for _, a := range append([]*Asset{u.Cover}, u.AddGallery...) {
			if a == nil {
				continue
			}
			if err := tx.Create(a).Error; err != nil {
				return err
			}
		}
		if len(added) > 0 {
			if err := tx.Create(&added).Error; err != nil {
				return err
			}
		}
		var purge []string
		for _, img := range drop {
			if img.AssetID != nil {
				purge = append(purge, *img.AssetID)
			}
		}
		if len(purge) > 0 {
			if err := tx.Model(&Asset{}).Where("id IN ? AND purged_at IS NULL", purge).
				Updates(map[string]any{"purged_at": now, "updated_at": now}).Error; err != nil {
				return err
			}
			if err := tx.Where("id IN ?", purge).Find(&removed).Error; err != nil {
				return err
			}
		}
		if u.Edit != nil {
			u.Edit(p)
		}
		p.Categories, p.Tags = StringList(nonNil(p.Categories)), StringList(nonNil(p.Tags))
		if err := tx.Model(&Preset{}).Where("id = ?", p.ID).Updates(map[string]any{
			"name": p.Name, "quantity_guidelines": p.QuantityGuidelines, "quality_guidelines": p.QualityGuidelines,
			"best_for": p.BestFor, "do_tips": p.DoTips, "dont_tips": p.DontTips, "input_requirements": p.InputRequirements,
			"hero_intro": p.HeroIntro, "categories": p.Categories, "tags": p.Tags,
			"scenery_requirement": p.SceneryRequirement, "updated_at": now,
		}).Error; err != nil {
			return err
		}
		preset = &Preset{}
		if err := tx.Where("id = ?", p.ID).Take(preset).Error; err != nil {
			return err
		}
		images, err = presetImages(tx, p.ID)
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return preset, images, removed, nil
}
