package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models"
)

// References: a request may name a scenery, a fashion model or a preset from the catalog the
// account sees. Nothing is accepted (or charged) that names one it cannot use: a reference that is
// not a UUID, does not exist, is not usable (in progress, failed, rejected; a draft preset) or
// belongs to another account is refused alike with KindInvalid naming the request's field, so
// another account's records cannot be told from missing ones.

// ReferenceKind selects the fashion models or the sceneries of the catalog.
type ReferenceKind string

// The kinds of reference item.
const (
	FashionModels = ReferenceKind(models.KindFashionModel)
	Sceneries     = ReferenceKind(models.KindScenery)
)

// StoredFile is where a file a view shows is stored: an asset (AssetID; Preview asks for its
// thumbnail rather than the file), else a blob-store file (BlobKey, a seeded reference image under
// models/refblob.Prefix). The zero value is no file.
type StoredFile struct {
	AssetID string
	Preview bool
	BlobKey string
	// StoreKey and ContentType, when the download URLs are the store's (FILE_URLS=store), are the
	// key and type of an asset's file in the store (its thumbnail's when Preview), for a URL of
	// the store (fileurl); "" for the API's URL (a purged asset's, whose route answers 410).
	StoreKey    string
	ContentType string
}

// withStoreKeys sets StoreKey and ContentType of the files that are assets, in one query, when
// the download URLs are the store's (a purged asset keeps the API's URL, which answers 410).
func (c *core) withStoreKeys(ctx context.Context, files []*StoredFile) error {
	if c.fileURLs() == nil || c.fileURLs().Mode() != fileurl.ModeStore {
		return nil
	}
	var ids []string
	for _, f := range files {
		if f.AssetID != "" {
			ids = append(ids, f.AssetID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	assets, err := c.store.AssetsByID(ctx, ids)
	if err != nil {
		return err
	}
	for _, f := range files {
		a, ok := assets[f.AssetID]
		switch {
		case f.AssetID == "" || !ok || a.PurgedAt != nil:
		case f.Preview:
			f.StoreKey, f.ContentType = a.ThumbnailBlobKey, "image/jpeg"
		default:
			f.StoreKey, f.ContentType = a.BlobKey, a.ContentType
		}
	}
	return nil
}

// ReferenceItem is a fashion model or scenery an account may use.
type ReferenceItem struct {
	ID          string
	Name        string
	Marketplace bool // shared by every account, not the account's own
	Thumbnail   StoredFile
}

func referenceItemOf(r *models.ReferenceItem) ReferenceItem {
	it := ReferenceItem{ID: r.ID, Name: r.Name, Marketplace: r.Marketplace(), Thumbnail: StoredFile{BlobKey: r.ThumbnailKey}}
	if r.ThumbnailAssetID != nil {
		it.Thumbnail.AssetID = *r.ThumbnailAssetID
	}
	return it
}

// Account is an account's plan and credit position.
type Account struct {
	ID              string
	Name            string
	Plan            string
	CreditBalance   int64 // credits available for new reservations
	CreditsReserved int64 // credits held by jobs that have not settled yet
	// Test marks a test twin (docs/test-mode.md): its balance is test credits, refilled each UTC
	// day; the APIs show it as livemode false.
	Test bool
}

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
	_, err := e.store.FindUsableReferenceItem(ctx, kind, accountID, id)
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
	p, err := e.store.FindVisiblePreset(ctx, accountID, models.CanonicalID(id))
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindInvalid, "", field, "%q is not a preset this account may use; see GET /presets.", id)
	}
	return p, err
}

// notAReference refuses a reference that is not a UUID.
func notAReference(field, id, list string) *Error {
	return refuse(KindInvalid, "", field, "%q is not a valid id; use an id listed by %s.", id, list)
}

// Account returns an account with its credit balance and reservations; KindNotFound when it does
// not exist. A test twin's balance is read after its day's refill (models.Store.RefillTestCredits),
// which only the first read of a UTC day pays; a live account costs the one read.
func (e *Records) Account(ctx context.Context, accountID string) (Account, error) {
	acc, err := e.store.GetAccount(ctx, accountID)
	if err == nil && acc.TestMode {
		if now := e.now(); acc.TestDay != models.TestDay(now) {
			acc, err = e.store.RefillTestCredits(ctx, accountID, now)
		}
	}
	if errors.Is(err, models.ErrNotFound) {
		return Account{}, refuse(KindNotFound, "", "", "No account with this ID.")
	}
	if err != nil {
		return Account{}, err
	}
	return accountOf(acc), nil
}

// accountOf is the view of an account.
func accountOf(acc *models.Account) Account {
	return Account{ID: acc.ID, Name: acc.Name, Plan: acc.Plan, CreditBalance: acc.CreditBalance,
		CreditsReserved: acc.CreditsReserved, Test: acc.TestMode}
}

// MaxReferenceList is the most items one answer of GET /models, /sceneries or /presets holds: an
// account makes them without bound (20 a request), and one answer must stay bounded in work and
// size; the answer says when it left some out (truncated).
const MaxReferenceList = 1000

// UsableReferenceItems lists the first MaxReferenceList fashion models or sceneries (kind) the
// account may use, its own newest first, then the marketplace's by name
// (models.ListUsableReferenceItems), and reports whether there were more.
func (e *Records) UsableReferenceItems(ctx context.Context, accountID string, kind ReferenceKind) ([]ReferenceItem, bool, error) {
	items, err := e.store.ListUsableReferenceItems(ctx, models.ReferenceKind(kind), accountID, MaxReferenceList+1)
	if err != nil {
		return nil, false, err
	}
	truncated := len(items) > MaxReferenceList
	items = items[:min(len(items), MaxReferenceList)]
	out := viewsOf(items, referenceItemOf)
	files := make([]*StoredFile, len(out))
	for i := range out {
		files[i] = &out[i].Thumbnail
	}
	return out, truncated, e.withStoreKeys(ctx, files)
}

// VisiblePresets lists the first MaxReferenceList published presets the account sees, the system
// presets first, each with its cover and gallery (models.ListVisiblePresets), and reports whether
// there were more.
func (e *Records) VisiblePresets(ctx context.Context, accountID string) ([]Preset, bool, error) {
	presets, images, err := e.store.ListVisiblePresets(ctx, accountID, MaxReferenceList+1)
	if err != nil {
		return nil, false, err
	}
	truncated := len(presets) > MaxReferenceList
	presets = presets[:min(len(presets), MaxReferenceList)]
	out := make([]Preset, len(presets))
	views := make([]*Preset, len(presets))
	for i := range presets {
		out[i] = presetOf(&presets[i], images[presets[i].ID])
		views[i] = &out[i]
	}
	return out, truncated, e.presetsWithStoreKeys(ctx, views...)
}
