# syntax=docker/dockerfile:1
#
# The two ops-server images, one target each:
#
#   docker build --target ops-apiserver -t ghcr.io/tidbcloud/ops-apiserver:<tag> .
#   docker build --target ops-operator  -t ghcr.io/tidbcloud/ops-operator:<tag> .
#
# Static binaries (CGO_ENABLED=0) on distroless static, as the nonroot user
# (65532, the UID the Helm chart runs them with). The ops-apiserver image
# carries the catalog's charts (every chart under deploy/charts but
# ops-server: the charts of the default observability stack — vm-operator,
# vmcluster, vmagent — and the charts components install, docs/components.md
# and docs/bootstrap.md) under /etc/charts, the "local chart" source it serves
# to the source-controller sidecar; e2e/deploy TestDockerfile checks that each
# has its COPY line.
# The Flux images are upstream's (see the chart's values.yaml).

ARG GO_VERSION=1.26
# ops_build_info{version,revision}: docker build --build-arg VERSION=v1.2.3
# --build-arg REVISION=$(git rev-parse HEAD).
ARG VERSION=dev
ARG REVISION=
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

# Module downloads, cached apart from the sources.
FROM golang:${GO_VERSION} AS deps
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.work go.work.sum ./
COPY operator/api/go.mod operator/api/go.sum operator/api/
COPY operator/go.mod operator/go.sum operator/
COPY apiserver/go.mod apiserver/go.sum apiserver/
COPY e2e/go.mod e2e/go.sum e2e/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .

FROM deps AS build-apiserver
ARG VERSION
ARG REVISION
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -ldflags="-s -w -X github.com/tidbcloud/ops-server/operator/pkg/buildinfo.Version=${VERSION} -X github.com/tidbcloud/ops-server/operator/pkg/buildinfo.Revision=${REVISION}" -o /out/ops-apiserver ./apiserver/cmd/ops-apiserver

FROM deps AS build-operator
ARG VERSION
ARG REVISION
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -ldflags="-s -w -X github.com/tidbcloud/ops-server/operator/pkg/buildinfo.Version=${VERSION} -X github.com/tidbcloud/ops-server/operator/pkg/buildinfo.Revision=${REVISION}" -o /out/ops-operator ./operator/cmd/ops-operator

FROM ${BASE_IMAGE} AS ops-apiserver
LABEL org.opencontainers.image.title="ops-apiserver" \
      org.opencontainers.image.source="https://github.com/tidbcloud/ops-server"
COPY --from=build-apiserver /out/ops-apiserver /usr/local/bin/ops-apiserver
# One line per catalog chart (TestDockerfile).
COPY deploy/charts/vmcluster /etc/charts/vmcluster
COPY deploy/charts/vm-operator /etc/charts/vm-operator
COPY deploy/charts/vmagent /etc/charts/vmagent
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/ops-apiserver"]

FROM ${BASE_IMAGE} AS ops-operator
LABEL org.opencontainers.image.title="ops-operator" \
      org.opencontainers.image.source="https://github.com/tidbcloud/ops-server"
COPY --from=build-operator /out/ops-operator /usr/local/bin/ops-operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/ops-operator"]
