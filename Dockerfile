# syntax=docker/dockerfile:1
#
# spool serve as a container: a static binary on a distroless base, run as
# an unprivileged user. Build it with
#
#	docker build -t spool .
#
# and run it with a key (a server listening beyond loopback refuses to
# start without one) and a volume for the file store:
#
#	docker run -p 8080:8080 -e SPOOL_API_KEY="$(head -c24 /dev/urandom | base64)" -v spool-data:/data spool
#
# Every flag of spool serve is also a SPOOL_* variable (SPOOL_STORE,
# SPOOL_KEYS, SPOOL_LOG_FORMAT, …). The rules this file keeps are checked by
# TestDockerfile (deploy/deploy_test.go).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary that needs no C library at run time.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/spool ./cmd/spool && \
    mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/spool /usr/local/bin/spool
# The file store's folder, owned by the image's unprivileged user.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV SPOOL_ADDR=0.0.0.0:8080 \
    SPOOL_STORE=file:/data \
    SPOOL_LOG_FORMAT=json \
    SPOOL_DRAIN_DELAY=5s
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/spool", "serve"]
