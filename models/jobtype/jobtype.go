// Package jobtype names the kinds of generation job. It is a leaf: the workflows, the providers
// and both APIs use these names without linking the store.
package jobtype

// The job types.
const (
	PhotoShoot  = "photo_shoot"  // a photo of an approved packshot in a scene
	Packshot    = "packshot"     // the product cut out of a photo, centred on white
	ModelIdea   = "model_idea"   // an AI model (mannequin) image from preferences text
	SceneryIdea = "scenery_idea" // a scenery image from preferences text
	Video       = "video"        // a short video from one image
	Reel        = "reel"         // a short video from 1 to 10 images
)

// All lists every job type.
var All = []string{PhotoShoot, Packshot, ModelIdea, SceneryIdea, Video, Reel}
