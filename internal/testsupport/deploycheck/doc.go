// Package deploycheck has no code, only tests. They keep the container deployment at the
// repository root (docker-compose.yml, Dockerfile, .dockerignore and the files under
// deploy/) consistent with itself and with the program: the services and their
// dependencies exist, images are pinned, every variable compose hands to shotflow is a real
// setting of internal/platform/config (so a typo fails the build), the compose defaults load as a
// valid configuration, connection URLs point at the right services, and the Dockerfile
// builds cmd/shotflow in a multi-stage build that runs as a non-root user.
//
// No Docker engine is needed: the files are parsed, not run.
package deploycheck
