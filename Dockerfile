# engaged in a container: built from this repository, run from a distroless image (glibc,
# no shell, no package manager) as a non-root user, with its data on a volume.
#
#   docker build -t engaged .
#   docker run -d --name engaged -p 8443:8443 -v engaged-data:/var/lib/engaged \
#     -e ENGAGED_TLS_NAMES=engaged.example.com engaged
#   docker exec engaged engaged org create acme       # through the admin socket
#   docker cp engaged:/var/lib/engaged/tls/cert.pem .  # the self-signed certificate
#
# Configuration is by ENGAGED_* variables (or a file mounted and named by
# ENGAGED_CONFIG); see config/engaged.toml. The image is not built in CI (no docker
# there).

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin engaged \
    && mkdir -p /out/data \
    && cp target/release/engaged /out/engaged \
    && objcopy --strip-debug /out/engaged

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/engaged /usr/local/bin/engaged
# An empty data directory owned by the image's non-root user (65532), so that a new
# named volume starts with the same owner.
COPY --from=build --chown=65532:65532 /out/data /var/lib/engaged
USER 65532:65532
ENV ENGAGED_DATA_DIR=/var/lib/engaged \
    ENGAGED_LISTEN=0.0.0.0:8443
VOLUME ["/var/lib/engaged"]
EXPOSE 8443
# SIGTERM (docker stop) finishes requests in flight and flushes every acknowledged
# write; give it more than the default 10 s with `docker stop -t 30` if you can.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/engaged"]
CMD ["serve"]
