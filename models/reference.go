package models

import (
	"cmp"
	"database/sql/driver"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/presetspec"
	"github.com/shotflow/shotflow/models/refblob"
	"github.com/shotflow/shotflow/models/voting"
)

// ---- Fashion models and sceneries ----------------------------------------------------------

// ReferenceKind names a table of reference items that share one shape.
type ReferenceKind string

// Reference item kinds.
const (
	KindFashionModel ReferenceKind = "model"   // AI fashion models (mannequins): fashion_models
	KindScenery      ReferenceKind = "scenery" // sceneries
)

// Table is the kind's table.
func (k ReferenceKind) Table() string {
	if k == KindFashionModel {
		return "fashion_models"
	}
	return "sceneries"
}

// Statuses and votes of reference items (the external content API's values).
const (
	RefStatusDone       = "DONE"
	RefStatusInProgress = "INPROGRESS"
	RefStatusFailed     = "FAILED"
	RefStatusArchived   = "ARCHIVED"

	RefVotingApproved = voting.RecordApproved
	RefVotingRejected = voting.RecordRejected
)

// ReferenceItem is a row of fashion_models or sceneries. AccountID nil: the shared marketplace.
// The thumbnail is a blob-store file (ThumbnailKey) or an asset (ThumbnailAssetID); neither while
// the item is still being generated.
type ReferenceItem struct {
	ID               string `gorm:"primaryKey"`
	AccountID        *string
	Name             string
	Preferences      string
	Status           string
	Voting           *string
	VotingAt         *time.Time
	ThumbnailKey     string
	ThumbnailAssetID *string
	OrderID          *string
	JobID            *string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Marketplace reports whether the item is shared by every account.
func (r ReferenceItem) Marketplace() bool { return r.AccountID == nil }

// Usable reports whether the item may be offered for a session: done, and not rejected.
func (r ReferenceItem) Usable() bool {
	return r.Status == RefStatusDone && (r.Voting == nil || *r.Voting != RefVotingRejected)
}

// CreateReferenceItem inserts an item of the kind, filling ID and timestamps when empty.
func CreateReferenceItem(db *gorm.DB, kind ReferenceKind, item *ReferenceItem) error {
	now := time.Now().UTC()
	if item.ID == "" {
		item.ID = NewID()
	}
	if item.CreatedAt.IsZero() {
		item.CreatedAt = now
	}
	if item.UpdatedAt.IsZero() {
		item.UpdatedAt = item.CreatedAt
	}
	return db.Table(kind.Table()).Create(item).Error
}

// usableItems selects the usable items an account may use: its own and the marketplace's.
func usableItems(db *gorm.DB, kind ReferenceKind, accountID string) *gorm.DB {
	return db.Table(kind.Table()).
		Where("(account_id = ? OR account_id IS NULL) AND status = ? AND (voting IS NULL OR voting <> ?)",
			accountID, RefStatusDone, RefVotingRejected)
}

// ListUsableReferenceItems lists up to limit items of the kind an account may use: its own and
// the marketplace's, done and not rejected (archived, failed, in-progress and rejected items are
// left out). The account's own come first, newest first, then the marketplace by name in byte
// order on every database (byteOrder; IDs break ties), ordered and cut by the database.
func ListUsableReferenceItems(db *gorm.DB, kind ReferenceKind, accountID string, limit int) ([]ReferenceItem, error) {
	var items []ReferenceItem
	err := usableItems(db, kind, accountID).
		Clauses(clause.OrderBy{Expression: clause.Expr{SQL: `CASE WHEN account_id IS NULL THEN 1 ELSE 0 END,
			CASE WHEN account_id IS NULL THEN ` + byteOrder(db, "name") + ` ELSE '' END,
			CASE WHEN account_id IS NULL THEN NULL ELSE created_at END DESC, id`}}).
		Limit(limit).Find(&items).Error
	return items, err
}

// FindUsableReferenceItem returns one item the account may use (see ListUsableReferenceItems);
// ErrNotFound for a missing, unusable or other account's item.
func FindUsableReferenceItem(db *gorm.DB, kind ReferenceKind, accountID, id string) (*ReferenceItem, error) {
	var item ReferenceItem
	err := usableItems(db, kind, accountID).Where("id = ?", id).Take(&item).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &item, nil
}

// ---- Presets -------------------------------------------------------------------------------

// Preset types, statuses, visibilities, scenery requirements and image roles.
const (
	PresetTypeSystem = "SYSTEM"
	PresetTypeUser   = "USER"

	PresetPublished = "published"
	PresetDraft     = "draft"
	PresetArchived  = "archived"

	PresetPublic  = "public"
	PresetPrivate = "private"

	SceneryRequired    = presetspec.SceneryRequired
	SceneryRecommended = presetspec.SceneryRecommended

	PresetImageCover   = "cover"
	PresetImageGallery = "gallery"

	// MaxPresetGallery is the most gallery images a preset has.
	MaxPresetGallery = presetspec.MaxGallery
)

// StringList is a list of strings stored as a JSON array; nil is stored as [].
type StringList []string

// Value stores the list as a JSON array.
func (l StringList) Value() (driver.Value, error) {
	if l == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]string(l))
	return string(b), err
}

// Scan reads a JSON array from text or bytes.
func (l *StringList) Scan(src any) error {
	var data []byte
	switch v := src.(type) {
	case nil:
		*l = StringList{}
		return nil
	case string:
		data = []byte(v)
	case []byte:
		data = v
	default:
		return fmt.Errorf("StringList: cannot scan %T", src)
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("StringList: %w", err)
	}
	if out == nil {
		out = []string{}
	}
	*l = out
	return nil
}

// Preset is a generation recipe with guidance for its input photos: the external content API's
// preset item. SYSTEM presets have no account; USER presets belong to one. Text fields are ""
// when unset; SceneryRequirement is SceneryRequired, SceneryRecommended or nil (not reviewed).
// CreditCost is a surcharge per generated image on top of the AI model's price; IsFree is true
// exactly when it is 0.
type Preset struct {
	ID                 string `gorm:"primaryKey"`
	AccountID          *string
	Type               string
	Status             string
	Visibility         string
	Slug               string
	Name               string
	QuantityGuidelines string
	QualityGuidelines  string
	BestFor            string
	DoTips             string
	DontTips           string
	InputRequirements  string
	HeroIntro          string
	Categories         StringList
	Tags               StringList
	IsFree             bool
	CreditCost         int64
	SceneryRequirement *string
	Position           int
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// PresetImage is a preset's cover (role cover, position 0) or one of its gallery images (role
// gallery, positions 0 to MaxPresetGallery-1): a blob-store file or an asset.
type PresetImage struct {
	ID        string `gorm:"primaryKey"`
	PresetID  string
	Role      string
	Position  int
	BlobKey   string
	AssetID   *string
	CreatedAt time.Time
}

// ListVisiblePresets lists the published presets an account sees: public ones (the system
// presets) and its own, the first limit of them (limit <= 0: all). System presets come first in
// their seed order (by position, then by name in byte order on every database: byteOrder), then
// the account's own newest first; IDs break ties. images maps a preset ID to its cover and
// gallery, cover first, gallery in order.
func ListVisiblePresets(db *gorm.DB, accountID string, limit int) (presets []Preset, images map[string][]PresetImage, err error) {
	q := db.Where("status = ? AND (visibility = ? OR account_id = ?)", PresetPublished, PresetPublic, accountID).
		Clauses(clause.OrderBy{Expression: clause.Expr{SQL: `CASE WHEN type = ? THEN 0 ELSE 1 END,
			CASE WHEN type = ? THEN position ELSE 0 END, CASE WHEN type = ? THEN ` + byteOrder(db, "name") + ` ELSE '' END,
			CASE WHEN type = ? THEN NULL ELSE created_at END DESC, id`,
			Vars: []any{PresetTypeSystem, PresetTypeSystem, PresetTypeSystem, PresetTypeSystem}}})
	if limit > 0 {
		q = q.Limit(limit)
	}
	if err := q.Find(&presets).Error; err != nil {
		return nil, nil, err
	}
	images = map[string][]PresetImage{}
	if len(presets) == 0 {
		return presets, images, nil
	}
	ids := make([]string, len(presets))
	for i, p := range presets {
		ids[i] = p.ID
	}
	var rows []PresetImage
	for chunk := range slices.Chunk(ids, 500) {
		var part []PresetImage
		if err := db.Where("preset_id IN ?", chunk).Find(&part).Error; err != nil {
			return nil, nil, err
		}
		rows = append(rows, part...)
	}
	slices.SortFunc(rows, func(a, b PresetImage) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Position, b.Position)) // "cover" < "gallery"
	})
	for _, r := range rows {
		images[r.PresetID] = append(images[r.PresetID], r)
	}
	return presets, images, nil
}

// ---- Seed: the marketplace and the system presets -------------------------------------------

//go:embed seed/reference.json
var referenceJSON []byte

// ReferenceSeed is seed/reference.json: the shared marketplace of fashion models and sceneries and
// the system presets, under fixed IDs, with what it takes to render their images.
type ReferenceSeed struct {
	Version       int                `json:"version"`
	FashionModels []SeedFashionModel `json:"fashion_models"`
	Sceneries     []SeedScenery      `json:"sceneries"`
	Presets       []SeedPreset       `json:"presets"`
}

// SeedLook describes the figure drawn for a seeded fashion model: colours as #rrggbb, HairStyle
// long, short or bob, Build the relative width of the figure.
type SeedLook struct {
	Skin      string  `json:"skin"`
	Hair      string  `json:"hair"`
	HairStyle string  `json:"hair_style"`
	Top       string  `json:"top"`
	Bottom    string  `json:"bottom"`
	Dress     bool    `json:"dress"`
	Build     float64 `json:"build"`
}

// SeedFashionModel is a marketplace fashion model; its thumbnail is the figure of Look in front of
// the procedural backdrop described by Backdrop.
type SeedFashionModel struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Preferences string   `json:"preferences"`
	Seed        int64    `json:"seed"`
	Backdrop    string   `json:"backdrop"`
	Look        SeedLook `json:"look"`
}

// SeedScenery is a marketplace scenery; its image is the procedural backdrop of Preferences.
type SeedScenery struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Preferences string `json:"preferences"`
	Seed        int64  `json:"seed"`
}

// SeedProduct is the procedural product shown in a preset image: shape bottle, jar, box or mug.
type SeedProduct struct {
	Shape  string `json:"shape"`
	Color  string `json:"color"`
	Accent string `json:"accent"`
}

// SeedPresetImage is a preset's cover or gallery image: Product photographed in Style.
type SeedPresetImage struct {
	ID      string      `json:"id"`
	Style   string      `json:"style"`
	Seed    int64       `json:"seed"`
	Product SeedProduct `json:"product"`
}

// SeedPreset is a system preset.
type SeedPreset struct {
	ID                 string            `json:"id"`
	Slug               string            `json:"slug"`
	Name               string            `json:"name"`
	QuantityGuidelines string            `json:"quantity_guidelines"`
	QualityGuidelines  string            `json:"quality_guidelines"`
	BestFor            string            `json:"best_for"`
	Do                 string            `json:"do"`
	Dont               string            `json:"dont"`
	InputRequirements  string            `json:"input_requirements"`
	HeroIntro          string            `json:"hero_intro"`
	Categories         []string          `json:"categories"`
	Tags               []string          `json:"tags"`
	IsFree             bool              `json:"is_free"`
	CreditCost         int64             `json:"credit_cost"`
	Scenery            *string           `json:"scenery"`
	Cover              *SeedPresetImage  `json:"cover"`
	Gallery            []SeedPresetImage `json:"gallery"`
}

// Thumbnail key prefixes. The render version is part of the key, so changing how seeded images
// are drawn only needs a new version: rows then point at new files, rendered when first needed.
const (
	ReferenceBlobPrefix  = refblob.Prefix
	referenceRenderVer   = "v1"
	referenceImageSuffix = ".jpg"
)

// ReferenceBlobKey is the blob key of a seeded image: group is models, sceneries or presets.
func ReferenceBlobKey(group, id string) string {
	return ReferenceBlobPrefix + referenceRenderVer + "/" + group + "/" + id + referenceImageSuffix
}

var colourRE = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// LoadReferenceSeed parses the embedded seed/reference.json and checks it.
func LoadReferenceSeed() (*ReferenceSeed, error) { return ParseReferenceSeed(referenceJSON) }

// ParseReferenceSeed parses a reference seed document and checks it: canonical unique IDs, names,
// colours, at most MaxPresetGallery gallery images, is_free exactly when credit_cost is 0, and a
// scenery requirement of required, recommended or null.
func ParseReferenceSeed(data []byte) (*ReferenceSeed, error) {
	var s ReferenceSeed
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("reference seed: %w", err)
	}
	ids := map[string]bool{}
	id := func(what, v string) error {
		if !IsUUID(v) || ids[v] {
			return fmt.Errorf("reference seed: %s has a missing, malformed or repeated id %q", what, v)
		}
		ids[v] = true
		return nil
	}
	for _, m := range s.FashionModels {
		if err := id("model "+m.Name, m.ID); err != nil {
			return nil, err
		}
		l := m.Look
		if m.Name == "" || !colourRE.MatchString(l.Skin) || !colourRE.MatchString(l.Hair) || !colourRE.MatchString(l.Top) ||
			!colourRE.MatchString(l.Bottom) || !slices.Contains([]string{"long", "short", "bob"}, l.HairStyle) || l.Build < 0.7 || l.Build > 1.3 {
			return nil, fmt.Errorf("reference seed: model %q needs a name and a look with #rrggbb colours, a hair style and a build in 0.7-1.3", m.ID)
		}
	}
	for _, sc := range s.Sceneries {
		if err := id("scenery "+sc.Name, sc.ID); err != nil {
			return nil, err
		}
		if sc.Name == "" || sc.Preferences == "" {
			return nil, fmt.Errorf("reference seed: scenery %q needs a name and preferences", sc.ID)
		}
	}
	slugs := map[string]bool{}
	for _, p := range s.Presets {
		if err := id("preset "+p.Name, p.ID); err != nil {
			return nil, err
		}
		if p.Name == "" || p.Slug == "" || slugs[p.Slug] {
			return nil, fmt.Errorf("reference seed: preset %q needs a name and a unique slug", p.ID)
		}
		slugs[p.Slug] = true
		if p.CreditCost < 0 || p.IsFree != (p.CreditCost == 0) {
			return nil, fmt.Errorf("reference seed: preset %q: is_free must be true exactly when credit_cost is 0", p.Slug)
		}
		if p.Scenery != nil && *p.Scenery != SceneryRequired && *p.Scenery != SceneryRecommended {
			return nil, fmt.Errorf("reference seed: preset %q: scenery must be required, recommended or null", p.Slug)
		}
		if len(p.Gallery) > MaxPresetGallery {
			return nil, fmt.Errorf("reference seed: preset %q has %d gallery images, at most %d", p.Slug, len(p.Gallery), MaxPresetGallery)
		}
		images := p.Gallery
		if p.Cover != nil {
			images = append([]SeedPresetImage{*p.Cover}, images...)
		}
		for _, img := range images {
			if err := id("image of preset "+p.Slug, img.ID); err != nil {
				return nil, err
			}
			if !slices.Contains([]string{"bottle", "jar", "box", "mug"}, img.Product.Shape) ||
				!colourRE.MatchString(img.Product.Color) || !colourRE.MatchString(img.Product.Accent) {
				return nil, fmt.Errorf("reference seed: image %q needs a product shape (bottle, jar, box, mug) and #rrggbb colours", img.ID)
			}
		}
	}
	return &s, nil
}

// SeedReference writes the embedded seed's marketplace models and sceneries and its system presets
// into the database. It is idempotent and safe to run from several processes at once: missing rows
// are inserted, seeded rows whose content changed in the seed are updated, and what operators
// decide about a seeded row (status, voting, visibility) is never overwritten. Images are not
// rendered here; internal/reference renders them into the blob store.
func SeedReference(db *gorm.DB) error {
	s, err := LoadReferenceSeed()
	if err != nil {
		return err
	}
	return ApplyReferenceSeed(db, s)
}

// ApplyReferenceSeed is SeedReference for a given seed.
func ApplyReferenceSeed(db *gorm.DB, s *ReferenceSeed) error {
	now := time.Now().UTC()
	return db.Transaction(func(tx *gorm.DB) error {
		fashion := make([]ReferenceItem, len(s.FashionModels))
		for i, m := range s.FashionModels {
			fashion[i] = ReferenceItem{ID: m.ID, Name: m.Name, Preferences: m.Preferences, Status: RefStatusDone,
				ThumbnailKey: ReferenceBlobKey("models", m.ID), CreatedAt: now, UpdatedAt: now}
		}
		if err := seedItems(tx, KindFashionModel, fashion, now); err != nil {
			return err
		}
		sceneries := make([]ReferenceItem, len(s.Sceneries))
		for i, sc := range s.Sceneries {
			sceneries[i] = ReferenceItem{ID: sc.ID, Name: sc.Name, Preferences: sc.Preferences, Status: RefStatusDone,
				ThumbnailKey: ReferenceBlobKey("sceneries", sc.ID), CreatedAt: now, UpdatedAt: now}
		}
		if err := seedItems(tx, KindScenery, sceneries, now); err != nil {
			return err
		}
		for i, sp := range s.Presets {
			if err := seedPreset(tx, sp, i, now); err != nil {
				return err
			}
		}
		return nil
	})
}

func seedItems(tx *gorm.DB, kind ReferenceKind, items []ReferenceItem, now time.Time) error {
	for _, want := range items {
		var have ReferenceItem
		err := tx.Table(kind.Table()).Where("id = ?", want.ID).Take(&have).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			if err := tx.Table(kind.Table()).Clauses(clause.OnConflict{DoNothing: true}).Create(&want).Error; err != nil {
				return fmt.Errorf("seed %s %s: %w", kind, want.ID, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if !have.Marketplace() {
			return fmt.Errorf("seed %s %s: the ID belongs to an account's own item", kind, want.ID)
		}
		if have.Name != want.Name || have.Preferences != want.Preferences || have.ThumbnailKey != want.ThumbnailKey {
			if err := tx.Table(kind.Table()).Where("id = ?", want.ID).Updates(map[string]any{
				"name": want.Name, "preferences": want.Preferences, "thumbnail_key": want.ThumbnailKey, "updated_at": now,
			}).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

func seedPreset(tx *gorm.DB, sp SeedPreset, position int, now time.Time) error {
	want := Preset{ID: sp.ID, Type: PresetTypeSystem, Status: PresetPublished, Visibility: PresetPublic, Slug: sp.Slug,
		Name: sp.Name, QuantityGuidelines: sp.QuantityGuidelines, QualityGuidelines: sp.QualityGuidelines,
		BestFor: sp.BestFor, DoTips: sp.Do, DontTips: sp.Dont, InputRequirements: sp.InputRequirements,
		HeroIntro: sp.HeroIntro, Categories: StringList(nonNil(sp.Categories)), Tags: StringList(nonNil(sp.Tags)),
		IsFree: sp.IsFree, CreditCost: sp.CreditCost, SceneryRequirement: sp.Scenery, Position: position,
		CreatedAt: now, UpdatedAt: now}
	var have Preset
	err := tx.Where("id = ?", sp.ID).Take(&have).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&want).Error; err != nil {
			return fmt.Errorf("seed preset %s: %w", sp.Slug, err)
		}
	case err != nil:
		return err
	case have.Type != PresetTypeSystem:
		return fmt.Errorf("seed preset %s: the ID belongs to a user preset", sp.Slug)
	case presetContentDiffers(have, want):
		if err := tx.Model(&Preset{}).Where("id = ?", sp.ID).Updates(map[string]any{
			"slug": want.Slug, "name": want.Name, "quantity_guidelines": want.QuantityGuidelines,
			"quality_guidelines": want.QualityGuidelines, "best_for": want.BestFor, "do_tips": want.DoTips,
			"dont_tips": want.DontTips, "input_requirements": want.InputRequirements, "hero_intro": want.HeroIntro,
			"categories": want.Categories, "tags": want.Tags, "is_free": want.IsFree, "credit_cost": want.CreditCost,
			"scenery_requirement": want.SceneryRequirement, "position": want.Position, "updated_at": now,
		}).Error; err != nil {
			return err
		}
	}
	var images []PresetImage
	if sp.Cover != nil {
		images = append(images, PresetImage{ID: sp.Cover.ID, PresetID: sp.ID, Role: PresetImageCover,
			BlobKey: ReferenceBlobKey("presets", sp.Cover.ID), CreatedAt: now})
	}
	for i, g := range sp.Gallery {
		images = append(images, PresetImage{ID: g.ID, PresetID: sp.ID, Role: PresetImageGallery, Position: i,
			BlobKey: ReferenceBlobKey("presets", g.ID), CreatedAt: now})
	}
	for _, img := range images {
		var have PresetImage
		err := tx.Where("id = ?", img.ID).Take(&have).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&img).Error; err != nil {
				return fmt.Errorf("seed image %s of preset %s: %w", img.ID, sp.Slug, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if have.BlobKey != img.BlobKey {
			if err := tx.Model(&PresetImage{}).Where("id = ?", img.ID).Update("blob_key", img.BlobKey).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

func presetContentDiffers(a, b Preset) bool {
	return a.Slug != b.Slug || a.Name != b.Name || a.QuantityGuidelines != b.QuantityGuidelines ||
		a.QualityGuidelines != b.QualityGuidelines || a.BestFor != b.BestFor || a.DoTips != b.DoTips ||
		a.DontTips != b.DontTips || a.InputRequirements != b.InputRequirements || a.HeroIntro != b.HeroIntro ||
		!slices.Equal(a.Categories, b.Categories) || !slices.Equal(a.Tags, b.Tags) || a.IsFree != b.IsFree ||
		a.CreditCost != b.CreditCost || !equalPtr(a.SceneryRequirement, b.SceneryRequirement) || a.Position != b.Position
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
