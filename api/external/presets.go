package external

import (
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/presetspec"
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
	// Livemode is the key's mode: an account's own preset is of its mode, and a system one,
	// shared by both, is listed in the mode of the key that lists it.
	Livemode bool `json:"livemode"`
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
	of       func(f *engine.PresetFields) **string
}

var presetTexts = []presetText{
	{"name", MaxPresetNameLength, true, func(f *engine.PresetFields) **string { return &f.Name }},
	{"quantityGuidelines", MaxPresetTextLength, true, func(f *engine.PresetFields) **string { return &f.QuantityGuidelines }},
	{"qualityGuidelines", MaxPresetTextLength, true, func(f *engine.PresetFields) **string { return &f.QualityGuidelines }},
	{"bestFor", MaxPresetTextLength, false, func(f *engine.PresetFields) **string { return &f.BestFor }},
	{"do", MaxPresetTextLength, false, func(f *engine.PresetFields) **string { return &f.DoTips }},
	{"dont", MaxPresetTextLength, false, func(f *engine.PresetFields) **string { return &f.DontTips }},
	{"inputRequirements", MaxPresetTextLength, false, func(f *engine.PresetFields) **string { return &f.InputRequirements }},
	{"heroIntro", MaxPresetTextLength, false, func(f *engine.PresetFields) **string { return &f.HeroIntro }},
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
	presets, err := h.Engine.Records.ListAccountPresets(c.Request.Context(), key(c).AccountID, limit)
	if err != nil {
		h.answer(c, err)
		return
	}
	expires := h.now().Add(h.DownloadTTL)
	page := PresetsPage{Presets: make([]PresetItem, 0, len(presets)), Count: len(presets)}
	for _, p := range presets {
		page.Presets = append(page.Presets, h.presetItem(p, expires, livemode(c)))
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

// presetItem renders a preset with its images (cover, gallery in order).
func (h *Handler) presetItem(p engine.Preset, expires time.Time, live bool) PresetItem {
	it := PresetItem{Livemode: live,
		ID: p.ID, Name: p.Name, QuantityGuidelines: p.QuantityGuidelines, QualityGuidelines: p.QualityGuidelines,
		CreatedAt: p.CreatedAt.UTC(), BestFor: p.BestFor, Do: p.DoTips, Dont: p.DontTips,
		InputRequirements: p.InputRequirements, HeroIntro: p.HeroIntro, Slug: p.Slug,
		Categories: presetStrings(p.Categories), Tags: presetStrings(p.Tags), IsFree: p.IsFree, Scenery: p.SceneryRequirement,
		Gallery: []PresetImageRef{},
	}
	if p.Cover != nil {
		it.Cover = &PresetImageRef{ID: p.Cover.ID, URL: h.presetImageURL(p.Cover.File, expires)}
	}
	for _, img := range p.Gallery {
		it.Gallery = append(it.Gallery, PresetImageRef{ID: img.ID, URL: h.presetImageURL(img.File, expires)})
	}
	return it
}

// presetImageURL signs the download URL of a preset image: an uploaded asset is served by
// /files/{id}, or by the store with FILE_URLS=store (assetFileURL); a seeded image (a blob-store file under refblob.Prefix, rendered by
// internal/reference) by the key-less signed route /files/ref/… that the plugin handler mounts at
// the root of the same router (api.NewRouter), which serves both APIs.
func (h *Handler) presetImageURL(f engine.StoredFile, expires time.Time) string {
	if f.AssetID != "" {
		return h.assetFileURL(f, expires)
	}
	return h.Signer.URL(http.MethodGet, files.RefPath(f.BlobKey), expires)
}

// presetForm is a parsed POST or PUT /presets form.
type presetForm struct {
	fields      engine.PresetFields // the fields sent
	cover       *multipart.FileHeader
	gallery     []*multipart.FileHeader
	presetID    string   // PUT
	keep        []string // PUT: existingGalleryIds; nil when omitted
	removeCover bool     // PUT
}

// files are the form's cover (nil: none) and gallery, for the engine to check and store.
func (f *presetForm) files() (*engine.ImageFile, []engine.ImageFile) {
	var cover *engine.ImageFile
	if f.cover != nil {
		c := imageFile(presetFieldCover, f.cover)
		cover = &c
	}
	gallery := make([]engine.ImageFile, len(f.gallery))
	for i, fh := range f.gallery {
		gallery[i] = imageFile(presetFieldGallery, fh)
	}
	return cover, gallery
}

// readPresetForm parses and checks a preset form: the text fields of presetTexts, categories and
// tags (each a JSON array of strings), scenery, the cover and gallery files and, for PUT (update),
// presetId, existingGalleryIds and removeCover. POST requires the required texts; PUT requires
// presetId. Any other field, a field sent twice or a file in a text field is refused. The error
// is a badField refusal naming the field.
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
		if !ids.IsUUID(id) {
			return nil, badField("presetId must be a UUID.")
		}
		f.presetID = ids.Canonical(id)
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
		*t.of(&f.fields) = &v
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
			f.fields.Categories = labels
		} else {
			f.fields.Tags = labels
		}
	}
	if raw, ok := values[presetFieldScenery]; ok {
		switch raw {
		case "", presetspec.SceneryRequired, presetspec.SceneryRecommended: // "": not reviewed
		default:
			return nil, badField("scenery must be required or recommended (or empty: not reviewed).")
		}
		f.fields.SceneryRequirement = &raw
	}
	if covers := form.File[presetFieldCover]; len(covers) > 1 {
		return nil, badField("cover: send at most one file; got %d.", len(covers))
	} else if len(covers) == 1 {
		f.cover = covers[0]
	}
	if len(f.gallery) > presetspec.MaxGallery {
		return nil, badField("gallery: at most %d images; got %d.", presetspec.MaxGallery, len(f.gallery))
	}
	if !update {
		return f, nil
	}
	if raw, ok := values[presetFieldKeep]; ok {
		var keep []string
		if err := json.Unmarshal([]byte(raw), &keep); err != nil || keep == nil {
			return nil, badField(`existingGalleryIds must be a JSON array of gallery image ids, such as ["<id>"] ([] removes them all).`)
		}
		// Counted before anything is compared: a gallery holds at most MaxGallery images, so a
		// longer list names one that is not there, or one twice.
		if len(keep) > presetspec.MaxGallery {
			return nil, badField("existingGalleryIds: a gallery holds at most %d images; got %d ids.", presetspec.MaxGallery, len(keep))
		}
		for i, id := range keep {
			id = ids.Canonical(id)
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
	seen := make(map[string]bool, MaxPresetLabels+1)
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, badField("%s must not hold empty entries.", field)
		}
		if err := checkText(field, v, MaxPresetLabelLength); err != nil {
			return nil, err
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
		// Refused at the first entry past the limit, whatever follows: the work stays bounded
		// by the limit, not by the length of the list.
		if len(out) > MaxPresetLabels {
			return nil, badField("%s has more than %d distinct entries; at most %d.", field, MaxPresetLabels, MaxPresetLabels)
		}
	}
	return out, nil
}

// createPreset answers POST /presets: a USER preset of the key's account, published, private and
// free, with its cover and gallery (engine.CreateAccountPreset); nothing is created when anything
// is wrong.
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
	cover, gallery := f.files()
	p, err := h.Engine.Records.CreateAccountPreset(c.Request.Context(), key(c).AccountID,
		engine.NewPreset{Fields: f.fields, Cover: cover, Gallery: gallery})
	if err != nil {
		h.failUpload(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"success": true, "presetId": p.ID, "preset": h.presetItem(p, h.now().Add(h.DownloadTTL), livemode(c))})
}

// updatePreset answers PUT /presets: changes a preset the key's account owns
// (engine.UpdateAccountPreset, which checks the change before it stores any file).
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
	cover, gallery := f.files()
	p, err := h.Engine.Records.UpdateAccountPreset(c.Request.Context(), key(c).AccountID, f.presetID, engine.PresetChange{
		Fields: f.fields, Cover: cover, RemoveCover: f.removeCover, KeepGallery: f.keep, AddGallery: gallery})
	if err != nil {
		h.failUpload(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"success": true, "preset": h.presetItem(p, h.now().Add(h.DownloadTTL), livemode(c))})
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
