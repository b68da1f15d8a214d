package openai

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
)

// maxInputBytes is the size limit of an edit input: for GPT image models "each image should be a
// png, webp, or jpg file less than 50MB" (images/createEdit, image).
const maxInputBytes = 50 << 20

// inputTypes are the content types images/createEdit accepts for an input image.
var inputTypes = []string{"image/png", "image/jpeg", "image/webp"}

// editFile is one input image of an edit.
type editFile struct {
	role        string // names the file part: product, packshot or scenery
	data        []byte
	contentType string
}

// editImages returns the input images of an edit in prompt order: the product photo of a packshot,
// or the packshot of a photo shoot followed by its scenery image when there is one. A missing,
// empty, oversized or unreadable image is INPUT_MISSING.
func editImages(req providers.Request) ([]editFile, error) {
	role := "packshot"
	if req.JobType == jobtype.Packshot {
		role = "product"
	}
	if len(req.Inputs) == 0 {
		return nil, providers.Errorf(errorcat.InputMissing, "%s: %s job has no %s image", Name, req.JobType, role)
	}
	first, err := editInput(role, req.Inputs[0])
	if err != nil {
		return nil, err
	}
	files := []editFile{first}
	if req.JobType == jobtype.PhotoShoot && req.Scenery != nil {
		scenery, err := editInput("scenery", *req.Scenery)
		if err != nil {
			return nil, err
		}
		files = append(files, scenery)
	}
	return files, nil
}

// editInput checks one input image and settles its content type: the declared one when the API
// accepts it, otherwise the one sniffed from the bytes.
func editInput(role string, in providers.Input) (editFile, error) {
	switch {
	case len(in.Data) == 0:
		return editFile{}, providers.Errorf(errorcat.InputMissing, "%s: the %s image is empty", Name, role)
	case len(in.Data) >= maxInputBytes:
		return editFile{}, providers.Errorf(errorcat.InputMissing, "%s: the %s image has %d bytes, the API takes less than %d", Name, role, len(in.Data), maxInputBytes)
	}
	ct := mediaType(in.ContentType)
	if !slices.Contains(inputTypes, ct) {
		ct = mediaType(http.DetectContentType(in.Data))
	}
	if !slices.Contains(inputTypes, ct) {
		return editFile{}, providers.Errorf(errorcat.InputMissing, "%s: the %s image is %s, not one of %s", Name, role, ct, strings.Join(inputTypes, ", "))
	}
	return editFile{role: role, data: in.Data, contentType: ct}, nil
}

// mediaType is the lower-cased media type of a Content-Type value, without parameters.
func mediaType(contentType string) string {
	ct, _, _ := strings.Cut(contentType, ";")
	ct = strings.ToLower(strings.TrimSpace(ct))
	if ct == "image/jpg" {
		return "image/jpeg"
	}
	return ct
}

// editCall encodes an images/edits request as multipart/form-data: the parameters as fields, and
// every input image as an image[] file part, as the guide's "Create a new image using image
// references" example sends them. Each part carries the image's own Content-Type: the API rejects
// a file sent as application/octet-stream ("Invalid file 'image': unsupported mimetype").
func editCall(ps params, files []editFile) (call, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fields := [][2]string{
		{"model", ps.Model}, {"prompt", ps.Prompt}, {"n", strconv.Itoa(ps.N)}, {"size", ps.Size},
		{"quality", ps.Quality}, {"output_format", ps.OutputFormat}, {"background", ps.Background},
	}
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return call{}, providers.Errorf(errorcat.InternalBug, "%s: encoding field %s: %v", Name, f[0], err)
		}
	}
	for _, f := range files {
		if err := writeFile(w, f); err != nil {
			return call{}, providers.Errorf(errorcat.InternalBug, "%s: encoding the %s image: %v", Name, f.role, err)
		}
	}
	if err := w.Close(); err != nil {
		return call{}, providers.Errorf(errorcat.InternalBug, "%s: encoding request: %v", Name, err)
	}
	return call{path: "/images/edits", contentType: w.FormDataContentType(), body: buf.Bytes()}, nil
}

// writeFile adds one image[] file part named after the image's role and content type.
func writeFile(w *multipart.Writer, f editFile) error {
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="image[]"; filename="%s%s"`, f.role, providers.ExtFor(f.contentType)))
	h.Set("Content-Type", f.contentType)
	part, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	_, err = part.Write(f.data)
	return err
}
