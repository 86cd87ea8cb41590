# vela-worker on Debian bookworm, CPU only (docs/operations.md "docker-compose"); the
# CUDA image is Dockerfile.cuda (docs/operations.md "GPU deployment").
# Build stage: scripts/build-release --cpu, the release build CI runs too
# (scripts/test), so this image's build cannot rot unseen.
# Runtime stage: 12.12-slim with the shared libraries only, as a non-root user.
# Base images pinned to a point release (debian:12.12 = bookworm; its package names
# are checked by tests/test_deploy.c).
# librdkafka: Debian 12's librdkafka1 2.0.2 (the version the test command runs first).
# It speaks the classic group protocol with Kafka 2.x-3.x and 4.0.1+, but not KIP-848
# (group.protocol consumer needs librdkafka 2.12+) nor brokers whose ApiVersions v3
# answer it cannot parse (Tansu 0.6); docs/operations.md "librdkafka versions and brokers"
# says which work-arounds apply and how to run the worker on a newer library.
FROM debian:12.12 AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      librdkafka-dev libjansson-dev libyaml-dev libpcre2-dev libutf8proc-dev \
      libopenblas-dev libssl-dev libmicrohttpd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN scripts/build-release --cpu --build /build

FROM debian:12.12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      librdkafka1 libjansson4 libyaml-0-2 libpcre2-8-0 libutf8proc2 \
      libopenblas0-pthread libssl3 libmicrohttpd12 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/vela-worker /usr/local/bin/vela-worker
COPY config/worker.example.yaml /etc/vela-worker/worker.yaml
# The model bundle is mounted here (model.bundle / VELA_MODEL_BUNDLE).
VOLUME ["/bundle"]
ENV VELA_MODEL_BUNDLE=/bundle \
    VELA_METRICS_LISTEN=0.0.0.0:9464
# Metrics on 0.0.0.0: inside a container 127.0.0.1 is the container alone, and the
# scraper or probe is in the container network. Publish to the host on localhost
# only (docker run -p 127.0.0.1:9464:9464; docs/operations.md "Security").
EXPOSE 9464
USER 65534:65534
# SIGTERM drains and exits 0 within shutdown.grace_ms (30 s by default).
STOPSIGNAL SIGTERM
LABEL org.opencontainers.image.description="vela-worker (CPU), librdkafka 2.0.2 (Debian 12)"
ENTRYPOINT ["vela-worker"]
CMD ["run", "--config", "/etc/vela-worker/worker.yaml"]
