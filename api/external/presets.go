package external

import (
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
)

// Presets (api/external/openapi.yaml, PresetItem): GET lists the system presets and the account's
// own, POST creates an account's preset from a multipart form, PUT changes one.

// Limits of GET /presets and of the preset forms.
const (
	DefaultPresetsLimit  = 20   // maxRecords when omitted
	MaxPresetsLimit      = 1000 // maxRecords is capped at this
	MaxPresetNameLength  = 200  // characters
	MaxPresetTextLength  = 4000 // characters of every other text field
	MaxPresetLabels      = 20   // entries of categories and of tags
	MaxPresetLabelLength = 100  // characters of one category or tag
)

// Fields of the preset forms beyond the texts of presetTexts.
const (
	presetFieldCover      = "cover"
	presetFieldGallery    = "gallery"
	presetFieldID         = "presetId"
	presetFieldKeep       = "existingGalleryIds"
	presetFieldRemove     = "removeCover"
	presetFieldCategories = "categories"
	presetFieldTags       = "tags"
	presetFieldScenery    = "scenery"
)

// PresetImageRef is a preset's cover or one of its gallery images.
type PresetImageRef struct {
	ID  string `json:"id"`  // what PUT's existingGalleryIds names
	URL string `json:"url"` // signed download URL, valid for the handler's DownloadTTL
}

// PresetItem is one preset of GET /presets, and the preset of POST and PUT. The first five
// fields are the original keys; cover and gallery are additive.
type PresetItem struct {
	ID                 string           `json:"id"`
	Name               string           `json:"name"`
	QuantityGuidelines string           `json:"quantityGuidelines"`
	QualityGuidelines  string           `json:"qualityGuidelines"`
	CreatedAt          time.Time        `json:"createdAt"`
	BestFor            string           `json:"bestFor"`
	Do                 string           `json:"do"`
	Dont               string           `json:"dont"`
	InputRequirements  string           `json:"inputRequirements"`
	HeroIntro          string           `json:"heroIntro"`
	Slug               string           `json:"slug"`
	Categories         []string         `json:"categories"`
	Tags               []string         `json:"tags"`
	IsFree             bool             `json:"isFree"`
	Scenery            *string          `json:"scenery"` // required, recommended or null (not reviewed)
	Cover              *PresetImageRef  `json:"cover"`
	Gallery            []PresetImageRef `json:"gallery"`
}

// PresetsPage is the answer of GET /presets.
type PresetsPage struct {
	Presets []PresetItem `json:"presets"`
	Count   int          `json:"count"`
}

// presetText is a text field of the preset forms and the preset field it sets.
type presetText struct {
	field    string
	max      int
	required bool // required by POST; when sent, never empty
	of       func(p *models.Preset) *string
}

var presetTexts = []presetText{
	{"name", MaxPresetNameLength, true, func(p *models.Preset) *string { return &p.Name }},
	{"quantityGuidelines", MaxPresetTextLength, true, func(p *models.Preset) *string { return &p.QuantityGuidelines }},
	{"qualityGuidelines", MaxPresetTextLength, true, func(p *models.Preset) *string { return &p.QualityGuidelines }},
	{"bestFor", MaxPresetTextLength, false, func(p *models.Preset) *string { return &p.BestFor }},
	{"do", MaxPresetTextLength, false, func(p *models.Preset) *string { return &p.DoTips }},
	{"dont", MaxPresetTextLength, false, func(p *models.Preset) *string { return &p.DontTips }},
	{"inputRequirements", MaxPresetTextLength, false, func(p *models.Preset) *string { return &p.InputRequirements }},
	{"heroIntro", MaxPresetTextLength, false, func(p *models.Preset) *string { return &p.HeroIntro }},
}

// registerPresets mounts GET, POST and PUT /presets.
func (h *Handler) registerPresets(add route) {
	form := inputcheck.MultipartBody(maxPresetFormBody)
	add(http.MethodGet, "/presets", inputcheck.NoBody, ScopeRead, h.listPresets)
	add(http.MethodPost, "/presets", form, ScopeRegister, h.createPreset)
	add(http.MethodPut, "/presets", form, ScopeRegister, h.updatePreset)
}

// listPresets answers GET /presets: the first maxRecords presets the account sees, in the order
// of the plugin API's list (system presets in their order, then the account's own newest first).
func (h *Handler) listPresets(c *gin.Context) {
	limit, ok := parseMaxRecords(c.Query("maxRecords"))
	if !ok {
		h.fail(c, http.StatusBadRequest, "maxRecords must be a positive integer (default 20, capped at 1000).")
		return
	}
	presets, images, err := h.Engine.Records.ListAccountPresets(c.Request.Context(), key(c).AccountID, limit)
	if err != nil {
		h.answer(c, err)
		return
	}
	expires := h.now().Add(h.DownloadTTL)
	page := PresetsPage{Presets: make([]PresetItem, 0, len(presets)), Count: len(presets)}
	for i := range presets {
		page.Presets = append(page.Presets, h.presetItem(&presets[i], images[presets[i].ID], expires))
	}
	c.PureJSON(http.StatusOK, page)
}

// parseMaxRecords reads maxRecords: "" is the default, a positive integer (digits only) is capped
// at MaxPresetsLimit, anything else is refused.
func parseMaxRecords(raw string) (int, bool) {
	if raw == "" {
		return DefaultPresetsLimit, true
	}
	if strings.Trim(raw, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(raw)
	if err != nil { // digits only: out of range, so far above the cap
		return MaxPresetsLimit, true
	}
	if n < 1 {
		return 0, false
	}
	return min(n, MaxPresetsLimit), true
}

// presetItem renders a preset with its images (cover first, gallery in order).
func (h *Handler) presetItem(p *models.Preset, images []models.PresetImage, expires time.Time) PresetItem {
	it := PresetItem{
		ID: p.ID, Name: p.Name, QuantityGuidelines: p.QuantityGuidelines, QualityGuidelines: p.QualityGuidelines,
		CreatedAt: p.CreatedAt.UTC(), BestFor: p.BestFor, Do: p.DoTips, Dont: p.DontTips,
		InputRequirements: p.InputRequirements, HeroIntro: p.HeroIntro, Slug: p.Slug,
		Categories: presetStrings(p.Categories), Tags: presetStrings(p.Tags), IsFree: p.IsFree, Scenery: p.SceneryRequirement,
		Gallery: []PresetImageRef{},
	}
	for _, img := range images {
		ref := PresetImageRef{ID: img.ID, URL: h.presetImageURL(img, expires)}
		if img.Role == models.PresetImageCover {
			it.Cover = &ref
		} else {
			it.Gallery = append(it.Gallery, ref)
		}
	}
	return it
}

// presetImageURL signs the download URL of a preset image: an uploaded asset is served by
// /files/{id}; a seeded image (a blob-store file under models.ReferenceBlobPrefix, rendered by
// internal/reference) by the key-less signed route /files/ref/… that the plugin handler mounts at
// the root of the same router (api.NewRouter), which serves both APIs.
func (h *Handler) presetImageURL(img models.PresetImage, expires time.Time) string {
	if img.AssetID != nil && *img.AssetID != "" {
		return h.Signer.URL(http.MethodGet, jobview.FilePath(*img.AssetID), expires)
	}
	return h.Signer.URL(http.MethodGet, files.RefPath(img.BlobKey), expires)
}

// presetForm is a parsed POST or PUT /presets form.
type presetForm struct {
	edits       []func(p *models.Preset) // the fields sent
	cover       *multipart.FileHeader
	gallery     []*multipart.FileHeader
	presetID    string   // PUT
	keep        []string // PUT: existingGalleryIds; nil when omitted
	removeCover bool     // PUT
}

// readPresetForm parses and checks a preset form: the text fields of presetTexts, categories and
// tags (each a JSON array of strings), scenery, the cover and gallery files and, for PUT (update),
// presetId, existingGalleryIds and removeCover. POST requires the required texts; PUT requires
// presetId. Any other field, a field sent twice or a file in a text field is refused. The error
// is a badRequest naming the field.
func readPresetForm(form *multipart.Form, update bool) (*presetForm, error) {
	known := []string{presetFieldCategories, presetFieldTags, presetFieldScenery}
	for _, t := range presetTexts {
		known = append(known, t.field)
	}
	if update {
		known = append(known, presetFieldID, presetFieldKeep, presetFieldRemove)
	}
	files := []string{presetFieldCover, presetFieldGallery}
	for _, name := range sortedFormKeys(form.File) {
		if !slices.Contains(files, name) {
			if slices.Contains(known, name) {
				return nil, badField("%s must be a text field, not a file.", name)
			}
			return nil, badField("Unknown field %q; the form takes %s and the files cover and gallery.", name, strings.Join(known, ", "))
		}
	}
	values := map[string]string{}
	for _, name := range sortedFormKeys(form.Value) {
		vs := form.Value[name]
		switch {
		case slices.Contains(files, name):
			// A form with no file chosen sends an empty part; anything else is not a file.
			if slices.ContainsFunc(vs, func(v string) bool { return v != "" }) {
				return nil, badField("%s must be a file (an image part with a filename).", name)
			}
		case !slices.Contains(known, name):
			return nil, badField("Unknown field %q; the form takes %s and the files cover and gallery.", name, strings.Join(known, ", "))
		case len(vs) > 1:
			return nil, badField("%s was sent %d times; send it once.", name, len(vs))
		default:
			values[name] = vs[0]
		}
	}
	f := &presetForm{gallery: form.File[presetFieldGallery]}
	if update {
		id, ok := values[presetFieldID]
		if !ok || strings.TrimSpace(id) == "" {
			return nil, badField("presetId is required.")
		}
		if !models.IsUUID(id) {
			return nil, badField("presetId must be a UUID.")
		}
		f.presetID = models.CanonicalID(id)
	}
	for _, t := range presetTexts {
		raw, ok := values[t.field]
		if !ok {
			if t.required && !update {
				return nil, badField("%s is required.", t.field)
			}
			continue
		}
		v := strings.TrimSpace(raw)
		if err := checkText(t.field, v, t.max); err != nil {
			return nil, err
		}
		if t.required && v == "" {
			return nil, badField("%s must not be empty.", t.field)
		}
		of := t.of
		f.edits = append(f.edits, func(p *models.Preset) { *of(p) = v })
	}
	for _, field := range []string{presetFieldCategories, presetFieldTags} {
		raw, ok := values[field]
		if !ok {
			continue
		}
		labels, err := parseLabels(field, raw)
		if err != nil {
			return nil, err
		}
		if field == presetFieldCategories {
			f.edits = append(f.edits, func(p *models.Preset) { p.Categories = labels })
		} else {
			f.edits = append(f.edits, func(p *models.Preset) { p.Tags = labels })
		}
	}
	if raw, ok := values[presetFieldScenery]; ok {
		var scenery *string
		switch v := raw; v {
		case "":
		case models.SceneryRequired, models.SceneryRecommended:
			scenery = &v
		default:
			return nil, badField("scenery must be required or recommended (or empty: not reviewed).")
		}
		f.edits = append(f.edits, func(p *models.Preset) { p.SceneryRequirement = scenery })
	}
	if covers := form.File[presetFieldCover]; len(covers) > 1 {
		return nil, badField("cover: send at most one file; got %d.", len(covers))
	} else if len(covers) == 1 {
		f.cover = covers[0]
	}
	if len(f.gallery) > models.MaxPresetGallery {
		return nil, badField("gallery: at most %d images; got %d.", models.MaxPresetGallery, len(f.gallery))
	}
	if !update {
		return f, nil
	}
	if raw, ok := values[presetFieldKeep]; ok {
		var keep []string
		if err := json.Unmarshal([]byte(raw), &keep); err != nil || keep == nil {
			return nil, badField(`existingGalleryIds must be a JSON array of gallery image ids, such as ["<id>"] ([] removes them all).`)
		}
		for i, id := range keep {
			id = models.CanonicalID(id)
			keep[i] = id
			if slices.Contains(keep[:i], id) {
				return nil, badField("existingGalleryIds lists %q twice.", id)
			}
		}
		f.keep = keep
	}
	if raw, ok := values[presetFieldRemove]; ok {
		switch raw {
		case "false":
		case "true":
			if f.cover != nil {
				return nil, badField("removeCover=true and a cover file contradict each other; send one of them.")
			}
			f.removeCover = true
		default:
			return nil, badField("removeCover must be true or false.")
		}
	}
	return f, nil
}

// checkText refuses text longer than max characters (Input has refused text that is not UTF-8 or
// holds a NUL character).
func checkText(field, v string, max int) error {
	if n := utf8.RuneCountInString(v); n > max {
		return badField("%s is %d characters long; at most %d.", field, n, max)
	}
	return nil
}

// parseLabels reads categories or tags: a JSON array of strings ("" is the empty list), each
// trimmed, non-empty and at most MaxPresetLabelLength characters; duplicates are dropped.
func parseLabels(field, raw string) ([]string, error) {
	if strings.TrimSpace(raw) == "" {
		return []string{}, nil
	}
	var in []string
	if err := json.Unmarshal([]byte(raw), &in); err != nil || in == nil {
		return nil, badField(`%s must be a JSON array of strings, such as ["studio", "food"].`, field)
	}
	out := []string{}
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, badField("%s must not hold empty entries.", field)
		}
		if err := checkText(field, v, MaxPresetLabelLength); err != nil {
			return nil, err
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) > MaxPresetLabels {
		return nil, badField("%s has %d entries; at most %d.", field, len(out), MaxPresetLabels)
	}
	return out, nil
}

// storePresetImages stores the form's cover and gallery files and returns their assets, not yet
// inserted. On error it deletes what it stored.
func (h *Handler) storePresetImages(c *gin.Context, accountID string, f *presetForm) (cover *models.Asset, gallery []*models.Asset, err error) {
	defer func() {
		if err != nil {
			h.deleteBlobs(c, append([]*models.Asset{cover}, gallery...))
			cover, gallery = nil, nil
		}
	}()
	if f.cover != nil {
		if cover, err = h.storeImage(c, accountID, presetFieldCover, f.cover, false); err != nil {
			return
		}
	}
	for _, fh := range f.gallery {
		var a *models.Asset
		if a, err = h.storeImage(c, accountID, presetFieldGallery, fh, false); err != nil {
			return
		}
		gallery = append(gallery, a)
	}
	return
}

// deleteBlobs deletes the files of assets (nil entries are skipped), best effort: a failure is
// logged and leaves an orphan file behind. It runs also when the request has run out of time, for
// at most cleanupTimeout.
func (h *Handler) deleteBlobs(c *gin.Context, assets []*models.Asset) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), cleanupTimeout)
	defer cancel()
	for _, a := range assets {
		if a == nil {
			continue
		}
		for _, k := range []string{a.BlobKey, a.PreparedBlobKey, a.ThumbnailBlobKey} {
			if k == "" {
				continue
			}
			if err := h.Blobs.Delete(ctx, k); err != nil && h.Log != nil {
				h.Log.Warn("delete preset image file", zap.String("asset_id", a.ID), zap.String("blob_key", k), zap.Error(err))
			}
		}
	}
}

// createPreset answers POST /presets: a USER preset of the key's account, published, private and
// free, with its cover and gallery; nothing is created when anything is wrong.
func (h *Handler) createPreset(c *gin.Context) {
	form, err := parseForm(c)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	f, err := readPresetForm(form, false)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	accountID := key(c).AccountID
	cover, gallery, err := h.storePresetImages(c, accountID, f)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	p := &models.Preset{}
	for _, edit := range f.edits {
		edit(p)
	}
	images, err := h.Engine.Records.CreateAccountPreset(c.Request.Context(), accountID, p, cover, gallery)
	if err != nil {
		h.deleteBlobs(c, append([]*models.Asset{cover}, gallery...))
		h.answer(c, err)
		return
	}
	item := h.presetItem(p, images, h.now().Add(h.DownloadTTL))
	c.PureJSON(http.StatusOK, gin.H{"success": true, "presetId": p.ID, "preset": item})
}

// updatePreset answers PUT /presets: changes a preset the key's account owns.
func (h *Handler) updatePreset(c *gin.Context) {
	form, err := parseForm(c)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	f, err := readPresetForm(form, true)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	accountID := key(c).AccountID
	ctx := c.Request.Context()
	// Check before storing any file; UpdateAccountPreset checks again in its transaction.
	if err := h.Engine.Records.CheckAccountPresetUpdate(ctx, accountID, f.presetID, f.keep, len(f.gallery)); err != nil {
		h.answer(c, err)
		return
	}
	cover, gallery, err := h.storePresetImages(c, accountID, f)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	u := &models.PresetUpdate{Cover: cover, RemoveCover: f.removeCover, KeepGallery: f.keep, AddGallery: gallery,
		Edit: func(p *models.Preset) {
			for _, edit := range f.edits {
				edit(p)
			}
		}}
	p, images, removed, err := h.Engine.Records.UpdateAccountPreset(ctx, accountID, f.presetID, u)
	if err != nil {
		h.deleteBlobs(c, append([]*models.Asset{cover}, gallery...))
		h.answer(c, err)
		return
	}
	gone := make([]*models.Asset, len(removed))
	for i := range removed {
		gone[i] = &removed[i]
	}
	h.deleteBlobs(c, gone)
	c.PureJSON(http.StatusOK, gin.H{"success": true, "preset": h.presetItem(p, images, h.now().Add(h.DownloadTTL))})
}

func sortedFormKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func presetStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
