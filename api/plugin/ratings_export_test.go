package plugin

// ResolvePackshot exposes resolvePackshot (which packshot a photo-shoot subject starts from) to
// the rating tests of package plugin_test.
var ResolvePackshot = resolvePackshot
