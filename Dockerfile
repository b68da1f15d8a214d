# syntax=docker/dockerfile:1
#
# shotflow: one image for every subcommand (api, worker, migrate, admin, healthcheck).
#   docker build -t shotflow:local .
#   docker run --rm shotflow:local api
# docker-compose.yml builds it for its migrate, api and worker services.

# ---- build stage ----------------------------------------------------------------------
FROM golang:1.26-bookworm AS build

# The golang image sets GOTOOLCHAIN=local; with "auto" an image whose Go is older than the
# go line of go.mod fetches that toolchain through the module proxy instead of failing.
# Pass --build-arg GOTOOLCHAIN=local to forbid that.
ARG GOTOOLCHAIN=auto
ENV GOTOOLCHAIN=${GOTOOLCHAIN} \
    CGO_ENABLED=0

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/shotflow ./cmd/shotflow

# ---- runtime stage --------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime

# ffmpeg for image/video processing, ca-certificates for TLS to S3, model APIs and the like.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates ffmpeg \
    && rm -rf /var/lib/apt/lists/*

# Unprivileged user with a fixed uid/gid, so volume permissions are predictable. Its home
# is the working directory: the default DATA_DIR (.data) and file:// blob URLs land there.
RUN groupadd --system --gid 10001 shotflow \
    && useradd --system --uid 10001 --gid 10001 --home-dir /home/shotflow --create-home \
        --shell /usr/sbin/nologin shotflow

COPY --from=build /out/shotflow /usr/local/bin/shotflow

WORKDIR /home/shotflow
USER 10001:10001

# HTTP API (HTTP_ADDR defaults to :8080) and a worker's /metrics and /healthz
# (WORKER_METRICS_ADDR defaults to :9090). No HEALTHCHECK here: each subcommand answers on its
# own port (and migrate on none), so `shotflow healthcheck [URL]` is declared per service in
# docker-compose.yml.
EXPOSE 8080 9090

ENTRYPOINT ["/usr/local/bin/shotflow"]
CMD ["api"]
