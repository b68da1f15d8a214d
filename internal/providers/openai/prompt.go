package openai

import (
	"strings"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/models/jobtype"
)

// keepProduct asks an edit to leave the product untouched.
const keepProduct = "Keep the product exactly as it is: the same shape, proportions, colours, materials, " +
	"labels, text and logos. Do not add text, watermarks or borders."

// prompt writes the prompt of a request from its job type, the session's style and suggestions
// (edits) or the account's preferences (ideas).
func prompt(req providers.Request) string {
	switch req.JobType {
	case jobtype.Packshot:
		return join(
			"Create a professional e-commerce packshot of the product in the image.",
			"Isolate the product on a pure white (#FFFFFF) seamless background, centred in the frame, "+
				"with a soft, natural contact shadow beneath it. No props and no other objects.",
			keepProduct,
			direction(req.Session),
		)
	case jobtype.PhotoShoot:
		return join(
			"Place this exact product in a new scene and create a photorealistic e-commerce lifestyle photo "+
				"with natural lighting, realistic shadows and reflections, and correct scale and perspective.",
			scene(req),
			keepProduct,
			direction(req.Session),
		)
	case jobtype.ModelIdea:
		return join(
			"A photorealistic full-body photo of a fashion model standing on a plain neutral studio background, "+
				"the whole figure visible from head to toe, soft even lighting.",
			preferences(req.Prompt),
		)
	}
	return join(
		"A photorealistic empty product photography set with no people and no products, "+
			"leaving clear space in the foreground for a product, soft natural lighting.",
		preferences(req.Prompt),
	)
}

// scene tells a photo shoot where the product goes: into the second image when the session chose a
// scenery, otherwise into a setting that follows the style.
func scene(req providers.Request) string {
	if req.Scenery != nil {
		return "Use the second image as the scene: place the product from the first image naturally within it."
	}
	if req.Session.Style == "" && req.Session.Suggestions == "" {
		return "Choose a tasteful setting that suits the product."
	}
	return "Follow the style and directions below for the scene."
}

// direction renders the session's style and suggestions, or "" when it has neither.
func direction(s providers.SessionConfig) string {
	var parts []string
	if style := strings.TrimSpace(s.Style); style != "" {
		parts = append(parts, "Style: "+style+".")
	}
	if sug := strings.TrimSpace(s.Suggestions); sug != "" {
		parts = append(parts, "Directions: "+sug)
	}
	return strings.Join(parts, " ")
}

// preferences renders an idea's preferences text, or "" when there is none.
func preferences(text string) string {
	if text = strings.TrimSpace(text); text == "" {
		return ""
	}
	return "Preferences: " + text
}

// join joins the non-empty sentences with spaces.
func join(sentences ...string) string {
	var out []string
	for _, s := range sentences {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}
