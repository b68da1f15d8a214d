package external

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
)

// MaxImageBytes is the largest image file a multipart route accepts (product photos, preset
// covers and galleries): 20 MiB.
const MaxImageBytes = engine.MaxImageBytes

// ImageTypes are the image types multipart routes accept, sniffed from the bytes.
var ImageTypes = engine.ImageTypes

// badField refuses a multipart form with a 400 whose text names the field.
func badField(format string, args ...any) error {
	return refuse(http.StatusBadRequest, format, args...)
}

// parseForm returns the multipart/form-data body, which Input has parsed, bounded and checked;
// the error is a badField refusal.
func parseForm(c *gin.Context) (*multipart.Form, error) {
	form, err := c.MultipartForm()
	if err != nil {
		return nil, badField("The body must be multipart/form-data: %v.", err)
	}
	return form, nil
}

// imageFile streams a file part of the form field into the engine, which checks and stores it.
func imageFile(field string, fh *multipart.FileHeader) engine.ImageFile {
	return engine.ImageFile{Field: field, Name: fh.Filename, Size: fh.Size,
		Open: func() (io.ReadCloser, error) { return fh.Open() }}
}

// failUpload answers the error of a multipart route: a refusal (the form's or the engine's, 400
// for a file that is not a usable image) as answer does, 503 when the file store was unreachable
// or too slow (see internal), 502 when it refused the file, else 500.
func (h *Handler) failUpload(c *gin.Context, err error) {
	var r *refusal
	_, refused := engine.As(err)
	switch {
	case refused || errors.As(err, &r):
		h.answer(c, err)
	case unavailable.InRequest(c.Request.Context(), err):
		h.internal(c, err)
	case errors.Is(err, engine.ErrFileStore):
		_ = c.Error(err)
		h.fail(c, http.StatusBadGateway, "The file store did not accept the file; retry after a short delay.")
	default:
		h.internal(c, err)
	}
}
