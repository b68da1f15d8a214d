package models

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Store of the presets accounts create and change (the external content API's POST and PUT
// /presets). Their images are uploaded assets; a removed image's asset is marked purged and its
// files are for the caller to delete once the change is committed.

// ErrNotPresetOwner is returned for a change to a preset the account sees but does not own: a
// system preset or another account's public one.
var ErrNotPresetOwner = errors.New("the preset is not the account's own")

// UnknownGalleryImageError refuses a change that keeps a gallery image the preset does not have.
type UnknownGalleryImageError struct{ ID string }

func (e *UnknownGalleryImageError) Error() string {
	return fmt.Sprintf("%q is not an image of the preset's gallery", e.ID)
}

// GalleryFullError refuses a change that would leave a preset with more than MaxPresetGallery
// gallery images.
type GalleryFullError struct{ Kept, Added int }

func (e *GalleryFullError) Error() string {
	return fmt.Sprintf("the gallery would have %d images (%d kept, %d added), at most %d",
		e.Kept+e.Added, e.Kept, e.Added, MaxPresetGallery)
}

// CreateUserPreset inserts p as a USER preset of the account, published, private, free (credit
// cost 0), with its uploaded cover (nil: none) and gallery images, whose assets are not yet
// inserted, all in one transaction. It sets p's ID, ownership, type, status, visibility, price and
// timestamps, and returns the preset's images, cover first, gallery in order.
func CreateUserPreset(db *gorm.DB, accountID string, p *Preset, cover *Asset, gallery []*Asset) ([]PresetImage, error) {
	if len(gallery) > MaxPresetGallery {
		return nil, &GalleryFullError{Added: len(gallery)}
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // what PostgreSQL keeps, so p matches its row
	p.ID = NewID()
	p.AccountID = &accountID
	p.Type, p.Status, p.Visibility = PresetTypeUser, PresetPublished, PresetPrivate
	p.IsFree, p.CreditCost = true, 0
	p.Categories, p.Tags = StringList(nonNil(p.Categories)), StringList(nonNil(p.Tags))
	p.CreatedAt, p.UpdatedAt = now, now
	var images []PresetImage
	if cover != nil {
		images = append(images, PresetImage{ID: NewID(), PresetID: p.ID, Role: PresetImageCover, AssetID: &cover.ID, CreatedAt: now})
	}
	for i, a := range gallery {
		images = append(images, PresetImage{ID: NewID(), PresetID: p.ID, Role: PresetImageGallery, Position: i, AssetID: &a.ID, CreatedAt: now})
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(p).Error; err != nil {
			return err
		}
		for _, a := range append([]*Asset{cover}, gallery...) {
			if a == nil {
				continue
			}
			if err := tx.Create(a).Error; err != nil {
				return err
			}
		}
		if len(images) > 0 {
			return tx.Create(&images).Error
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return images, nil
}

// PresetUpdate is a change to an account's own preset.
type PresetUpdate struct {
	// Edit changes the preset's editable fields (name, guidelines, tips, input requirements, hero
	// intro, categories, tags, scenery requirement); nil leaves them as they are.
	Edit func(p *Preset)
	// Cover, when set, is a new cover (an asset not yet inserted) that replaces the current one.
	Cover *Asset
	// RemoveCover removes the current cover.
	RemoveCover bool
	// KeepGallery lists the gallery images to keep (the others are removed); nil keeps them all.
	// The kept images keep their order.
	KeepGallery []string
	// AddGallery are new gallery images (assets not yet inserted), placed after the kept ones.
	AddGallery []*Asset
}

// visiblePreset returns a preset the account sees (published, and public or its own) with its
// images, cover first, gallery in order; ErrNotFound otherwise. lock locks the preset row.
func visiblePreset(db *gorm.DB, accountID, presetID string, lock bool) (*Preset, []PresetImage, error) {
	q := db
	if lock {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	p, err := findVisiblePreset(q, accountID, presetID)
	if err != nil {
		return nil, nil, err
	}
	images, err := presetImages(db, p.ID)
	if err != nil {
		return nil, nil, err
	}
	return p, images, nil
}

// findVisiblePreset returns a preset the account sees (published, and public or its own);
// ErrNotFound otherwise.
func findVisiblePreset(q *gorm.DB, accountID, presetID string) (*Preset, error) {
	var p Preset
	err := q.Where("id = ? AND status = ? AND (visibility = ? OR account_id = ?)", presetID, PresetPublished, PresetPublic, accountID).
		Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// ownPreset is visiblePreset for a change: ErrNotPresetOwner when the account does not own it.
func ownPreset(db *gorm.DB, accountID, presetID string, lock bool) (*Preset, []PresetImage, error) {
	p, images, err := visiblePreset(db, accountID, presetID, lock)
	if err != nil {
		return nil, nil, err
	}
	if p.Type != PresetTypeUser || p.AccountID == nil || *p.AccountID != accountID {
		return nil, nil, ErrNotPresetOwner
	}
	return p, images, nil
}

// presetImages lists a preset's images, cover first, gallery in order.
func presetImages(db *gorm.DB, presetID string) ([]PresetImage, error) {
	var images []PresetImage
	if err := db.Where("preset_id = ?", presetID).Order("role, position").Find(&images).Error; err != nil {
		return nil, err
	}
	return images, nil
}

func coverOf(images []PresetImage) []PresetImage {
	var out []PresetImage
	for _, img := range images {
		if img.Role == PresetImageCover {
			out = append(out, img)
		}
	}
	return out
}

// planGallery splits the current gallery into the images kept (keep nil: all) in position order
// and those removed, and checks that keep names only gallery images and that the kept and added
// ones fit.
func planGallery(images []PresetImage, keep []string, added int) (kept, removed []PresetImage, err error) {
	var gallery []PresetImage
	for _, img := range images {
		if img.Role == PresetImageGallery {
			gallery = append(gallery, img)
		}
	}
	slices.SortFunc(gallery, func(a, b PresetImage) int { return a.Position - b.Position })
	for _, id := range keep {
		if !slices.ContainsFunc(gallery, func(img PresetImage) bool { return img.ID == id }) {
			return nil, nil, &UnknownGalleryImageError{ID: id}
		}
	}
	for _, img := range gallery {
		if keep == nil || slices.Contains(keep, img.ID) {
			kept = append(kept, img)
		} else {
			removed = append(removed, img)
		}
	}
	if len(kept)+added > MaxPresetGallery {
		return nil, nil, &GalleryFullError{Kept: len(kept), Added: added}
	}
	return kept, removed, nil
}
