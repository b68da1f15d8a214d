package plugin_test

import (
	"errors"
	"testing"

	"github.com/gin-gonic/gin/binding"
	"github.com/go-playground/validator/v10"
)

// Registering the plugin API leaves gin's global validator as it was: its errors still name Go
// fields, not the plugin API's json names.
func TestRegisterLeavesGinsValidatorAlone(t *testing.T) {
	t.Parallel()
	newEnv(t) // registers the plugin API on a router
	var probe struct {
		ProductRef string `json:"product_ref" binding:"required"`
	}
	var verrs validator.ValidationErrors
	if err := binding.Validator.ValidateStruct(&probe); !errors.As(err, &verrs) || verrs[0].Field() != "ProductRef" {
		t.Fatalf("gin's validator names the field %v; it was changed", err)
	}
}
